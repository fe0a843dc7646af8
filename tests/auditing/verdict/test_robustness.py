"""breaking_kappa and the detection floor (auditing/verdict/robustness.py) against brute force on small sweeps."""

import dataclasses
import math

import numpy as np
import pytest

from auditing.audit import audit_from_counts
from auditing.bounds.selection import select_over_grid, select_split
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.sweep import SweepCounts
from auditing.result import AuditResult
from auditing.verdict.robustness import (
    KAPPA_TOLERANCE,
    breaking_kappa,
    detection_floor_rows,
    is_weak_pass,
    valid_bound_exceeds,
    verdict_robustness,
)
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError


def _result(m, correct_rate, *, method="binomial", strategy="bonferroni", delta=None, seed=0, points=12, kappa=0.0):
    """An AuditResult from synthetic counts: at each grid point c ~ Binomial(c', rate) (nested via cumsum)."""
    rng = np.random.default_rng(seed)
    game, bound = GameConfig(repetitions=1, grid_points=points, grid_min_fraction=0.01), BoundConfig(method=method, strategy=strategy, delta=delta, kappa=kappa)

    def counts(size):
        grid = game.grid_for(size)
        hits = np.cumsum(rng.random(size) < correct_rate)
        return SweepCounts(m=size, guesses=grid[None, :], correct=hits[grid - 1][None, :])

    split = None
    if strategy == "split":
        fractions = np.geomspace(game.grid_min_fraction, 1.0, game.grid_points)
        halves = []
        for size in (m // 2, m - m // 2):
            grid = np.clip(np.ceil(fractions * size - 1e-9).astype(np.int64), 1, size)
            hits = np.cumsum(rng.random(size) < correct_rate)
            halves.append(SweepCounts(m=size, guesses=grid[None, :], correct=hits[grid - 1][None, :]))
        split = tuple(halves)
    return audit_from_counts(counts(m), game, bound, split_counts=split)


def _brute_force_bound(result, kappa):
    """The valid bound recomputed at kappa with the product's own selection functions (no pruning)."""
    data = encode(result)
    kw = dict(method=data["method"], confidence=data["confidence"], delta=data["delta"], kappa=kappa)
    if data["strategy"] == "split":
        halves = [SweepCounts(m=h["m"], guesses=np.array([h["guesses"]]), correct=np.array([h["correct"]]))
                  for h in (data["split_halves"]["selection"], data["split_halves"]["bound"])]
        return select_split(*halves, **kw).epsilon_lower_bound
    guesses = np.array([[p["guesses"] for p in data["curve"]]])
    correct = np.array([[p["correct"] for p in data["curve"]]])
    return select_over_grid(SweepCounts(m=data["m"], guesses=guesses, correct=correct),
                            strategy=data["strategy"], **kw).epsilon_lower_bound


# A fine kappa grid: steps of 0.01 up to 4 (beyond every bound below) and a log-spaced run near 0.
KAPPA_GRID = np.unique(np.concatenate([np.linspace(0.0, 4.0, 401), np.geomspace(1e-6, 0.5, 60)]))

CASES = [
    dict(m=4000, correct_rate=0.75, claimed=0.5),
    dict(m=4000, correct_rate=0.75, claimed=0.9, delta=1e-5),
    dict(m=20000, correct_rate=0.9, claimed=1.0),
    dict(m=4000, correct_rate=0.8, claimed=0.3, strategy="split"),
    dict(m=3000, correct_rate=0.8, claimed=0.3, method="fdp"),
    dict(m=3000, correct_rate=0.9, claimed=0.5, method="fdp", strategy="split"),
    dict(m=3000, correct_rate=0.85, claimed=0.4, method="fdp", delta=0.0),
    dict(m=3000, correct_rate=0.8, claimed=0.3, kappa=0.2),  # the result's own kappa plays no part
    dict(m=4000, correct_rate=0.55, claimed=2.0),  # no violation at kappa = 0
    dict(m=3000, correct_rate=0.55, claimed=2.0, method="fdp"),  # no violation at kappa = 0
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_breaking_kappa_equals_brute_force_over_a_kappa_grid(case):
    case = dict(case)
    claimed = case.pop("claimed")
    result = _result(**case)
    found = breaking_kappa(result, claimed)
    bounds = np.array([_brute_force_bound(result, kappa) for kappa in KAPPA_GRID])
    exceeds = bounds > claimed
    # The valid bound is non-increasing in kappa (the monotone decision the bisection relies on); the f-DP
    # bound is found to EPSILON_TOLERANCE = 1e-4 by bisection, so its steps may wobble by that much.
    assert np.all(np.diff(bounds) <= (2e-4 if case.get("method") == "fdp" else 1e-9))
    assert bounds[-1] == 0.0  # the grid reaches past every bound
    if not exceeds[0]:
        assert found == 0.0
        return
    last = KAPPA_GRID[exceeds].max()
    following = KAPPA_GRID[KAPPA_GRID > last]
    assert last <= found * (1 + KAPPA_TOLERANCE) + 1e-9
    if following.size:
        assert found < following[0]
    assert valid_bound_exceeds(result, claimed, found)  # the returned kappa is one where the claim still breaks
    assert _brute_force_bound(result, found) > claimed


@pytest.mark.parametrize("strategy", ["bonferroni", "split"])
def test_binomial_breaking_kappa_has_the_closed_form_of_theorem_17(strategy):
    """delta = 0: bound(kappa) = max(0, bound(0) - kappa) at every point, so bound(kappa*) = claimed at
    kappa* = bound(0) - claimed (for split too: subtracting kappa from every point keeps the selected index)."""
    result = _result(20000, 0.8, strategy=strategy)
    claimed = 0.4
    expected = result.epsilon_lower_bound - claimed
    assert expected > 0.5
    for kappa in (0.0, 0.3, expected / 2):
        assert _brute_force_bound(result, kappa) == pytest.approx(result.epsilon_lower_bound - kappa, abs=1e-12)
    found = breaking_kappa(result, claimed)
    assert found <= expected <= found * (1 + KAPPA_TOLERANCE) + 1e-9


def test_fdp_breaking_kappa_with_delta_0_is_the_bound_minus_the_claim():
    """f-DP at delta = 0 tests f_{eps + kappa, 0}: the bound at kappa is max(0, bound at 0 - kappa) up to the
    bisection tolerance, so breaking_kappa is bound(0) - claimed within it."""
    result = _result(3000, 0.85, method="fdp", delta=0.0)
    claimed = 0.3
    expected = result.epsilon_lower_bound - claimed
    assert expected > 0.2
    for kappa in (0.1, expected / 2):
        assert _brute_force_bound(result, kappa) == pytest.approx(result.epsilon_lower_bound - kappa, abs=3e-4)
    found = breaking_kappa(result, claimed)  # from below, to a relative KAPPA_TOLERANCE
    assert expected * (1 - KAPPA_TOLERANCE) - 3e-4 <= found <= expected + 3e-4


def _brute_force_floor(result, claimed, limit):
    """Smallest N such that an attacker with N exposed labels (c = min(c', N), wrong elsewhere) is flagged."""
    data = encode(result)
    kw = dict(method=data["method"], confidence=data["confidence"], delta=data["delta"], kappa=data["kappa"])
    if data["strategy"] == "split":
        bound_half = data["split_halves"]["bound"]
        grid, m = np.array(bound_half["guesses"]), bound_half["m"]
        for n in range(1, limit):
            c = np.minimum(grid, n)
            half = SweepCounts(m=m, guesses=grid[None, :], correct=c[None, :])
            # the selection half sees the same exposure, so it picks the same (best) index
            if select_split(half, half, **kw).epsilon_lower_bound > claimed:
                return 2 * n
        return None
    grid = np.array([p["guesses"] for p in data["curve"]])
    for n in range(1, limit):
        counts = SweepCounts(m=data["m"], guesses=grid[None, :], correct=np.minimum(grid, n)[None, :])
        if select_over_grid(counts, strategy=data["strategy"], **kw).epsilon_lower_bound > claimed:
            return n
    return None


@pytest.mark.parametrize(("case", "claimed"), [
    (dict(m=2000, correct_rate=0.5), 0.5),
    (dict(m=2000, correct_rate=0.5), 2.0),
    (dict(m=5000, correct_rate=0.5, delta=1e-5), 1.0),
    (dict(m=1000, correct_rate=0.5, method="fdp"), 1.0),
    (dict(m=2000, correct_rate=0.5, strategy="split"), 1.0),
    (dict(m=300, correct_rate=0.5, points=5), 3.0),
    (dict(m=2000, correct_rate=0.5, kappa=0.3), 0.5),  # the floor is computed at the result's kappa
    (dict(m=1000, correct_rate=0.5, method="fdp", kappa=0.2), 1.0),
])
def test_detection_floor_equals_the_smallest_exposure_found_by_brute_force(case, claimed):
    result = _result(**case)
    floor = detection_floor_rows(result, claimed)
    expected = _brute_force_floor(result, claimed, limit=case["m"] + 1)
    assert floor == expected
    # INCONCLUSIVE <=> no exposure can be flagged <=> a perfect attacker cannot certify the claim
    assert (floor is None) == (result.max_certifiable_epsilon <= claimed)


def test_detection_floor_is_none_when_even_a_perfect_attacker_cannot_flag_the_claim():
    result = _result(300, 0.5, points=5)
    assert result.max_certifiable_epsilon < 50
    assert detection_floor_rows(result, 50.0) is None
    assert detection_floor_rows(result, math.inf) is None
    assert breaking_kappa(result, math.inf) == 0.0


def test_weak_pass_is_a_pass_whose_floor_exceeds_one_percent_of_the_audited_rows():
    assert is_weak_pass("PASS", 101, 10_000) and not is_weak_pass("PASS", 100, 10_000)
    assert not is_weak_pass("VIOLATION", 10_000, 10_000) and not is_weak_pass("PASS", None, 10)


def test_weak_pass_uses_the_game_aware_floor_where_it_is_computed():
    # computed: the game-aware floor decides; None there (no exposure flags with 95% power) is the weakest PASS
    assert is_weak_pass("PASS", 5, 10_000, 101, True) and not is_weak_pass("PASS", 500, 10_000, 100, True)
    assert is_weak_pass("PASS", 5, 10_000, None, True) and not is_weak_pass("VIOLATION", 5, 10_000, None, True)
    # not computed (split, custom score, old result): the perfect-attacker floor decides
    assert not is_weak_pass("PASS", 5, 10_000, None, False) and is_weak_pass("PASS", 101, 10_000, None, False)


def test_verdict_robustness_carries_both_floors_and_why_the_game_aware_one_is_missing():
    from auditing.audit import run_audit
    from auditing.verdict.exposure_floor import game_detection_floor

    rng = np.random.default_rng(2)
    p_reference = rng.beta(1.0, 3.0, 20_000)
    labels = (rng.random(p_reference.size) < p_reference).astype(np.int64)
    result = run_audit(p_reference, p_reference, labels, game=GameConfig(repetitions=1))  # nothing leaks
    figures = verdict_robustness(result, 0.5, "PASS")
    assert figures["exposed_rows_floor"] == game_detection_floor(result, 0.5)
    assert figures["exposed_rows_floor"] > figures["detection_floor_rows"] > 0
    assert figures["exposed_rows_floor_note"] is None and figures["exposed_rows_floor_power"] == 0.95
    assert figures["weak_pass"] == (figures["exposed_rows_floor"] > 0.01 * result.m)
    high = verdict_robustness(result, 3.0, "PASS")  # below max certifiable, beyond what the game can show
    assert high["detection_floor_rows"] is not None and high["exposed_rows_floor"] is None
    assert "below 95%" in high["exposed_rows_floor_note"] and high["weak_pass"]
    for data, claimed, reason in ((_result(2000, 0.7), 0.5, "prior_histogram"),
                                  (_result(4000, 0.7, strategy="split"), 0.5, "split strategy"),
                                  (result, 50.0, "INCONCLUSIVE"),
                                  (dataclasses.replace(result, custom_score=True), 0.5, "custom")):
        figures = verdict_robustness(data, claimed, "PASS")
        assert figures["exposed_rows_floor"] is None and reason in figures["exposed_rows_floor_note"], reason


def test_bad_input():
    result = _result(2000, 0.7)
    with pytest.raises(LabelDPInputError, match="claimed_epsilon must be >= 0"):
        breaking_kappa(result, -1.0)
    data = encode(_result(2000, 0.7, strategy="split"))
    data["split_halves"] = {}
    with pytest.raises(LabelDPInputError, match="split_halves"):
        detection_floor_rows(decode(AuditResult, data), 0.5)
    for kappa in (-0.1, math.inf, math.nan, "x"):
        with pytest.raises(LabelDPInputError, match=r"kappa must be"):
            BoundConfig(kappa=kappa)
    BoundConfig(kappa=1.5)  # kappa is a log-ratio bound, not a TV distance: above 1 is allowed
    with pytest.raises(TypeError, match="tau"):
        BoundConfig(tau=0.0)  # the core has no tau; plans and flags handle the legacy key (test_cli_audit.py)
