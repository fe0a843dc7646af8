"""Nightly controls (item 6), without Prefect.

- The positive control (randomized response at a known eps_c) is detected (valid bound above its
  pre-registered floor) and never above eps_c, over many seeds; the negative control (a copy of the
  reference) gives 0. Statistical claims are checked against the binomial tail: over N independent seeds an
  event of probability <= 5% happens more than `allowed(N)` times with probability < 0.1%.
- The game's expected curve (the floor's input) and the score histogram: tests/auditing/game/test_expected.py and
  test_score_histogram.py; the Beam job on a registered RR-label oracle: tests/pipelines/reference/test_controls.py.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
from scipy import stats

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.verdict.controls import (
    FLOOR_POWER,
    NEGATIVE,
    NEGATIVE_CONFIDENCE,
    POSITIVE,
    check_control,
    check_control_epsilon,
    positive_control_floor,
    rr_keep_probability,
    rr_oracle_probabilities,
)
from labeldp.errors import LabelDPInputError
from tests.support.control_worlds import world

logging.getLogger("apache_beam").setLevel(logging.ERROR)

SEEDS = 60


def allowed(trials: int, rate: float = 0.05, tail: float = 1e-3) -> int:
    """The count an event of probability `rate` exceeds over `trials` independent trials with prob < `tail`."""
    return int(stats.binom.isf(tail, trials, rate))


def test_rr_oracle_is_randomized_response_at_eps_c():
    ids = np.arange(200_000, dtype=np.int64)
    labels = (ids % 3).astype(np.int64)
    for k, eps in ((2, 2.0), (3, 1.0)):
        y = labels % k
        probs = rr_oracle_probabilities(ids, y, eps, seed=7, num_classes=k)
        q = rr_keep_probability(eps, k)
        assert np.allclose(probs.sum(axis=1), 1.0) and np.allclose(probs.max(axis=1), q)
        released = probs.argmax(axis=1)
        kept = (released == y).mean()
        assert abs(kept - q) < 4 * np.sqrt(q * (1 - q) / ids.size)
        # each other class equally likely: the likelihood ratio of any output is at most e^eps
        for other in range(1, k):
            share = ((released - y) % k == other).mean()
            assert abs(share - (1 - q) / (k - 1)) < 4 * np.sqrt(q * (1 - q) / ids.size)
        assert np.array_equal(probs, rr_oracle_probabilities(ids, y, eps, seed=7, num_classes=k))
        assert not np.array_equal(probs, rr_oracle_probabilities(ids, y, eps, seed=8, num_classes=k))


def test_control_epsilon_must_be_positive():
    for bad in (0, -1, float("inf"), float("nan"), "x", None):
        with pytest.raises(LabelDPInputError, match=r"positive_epsilon|epsilon"):
            check_control_epsilon(bad)


@pytest.mark.parametrize(("eps_c", "strategy", "method", "seeds"), [
    (2.0, "bonferroni", "binomial", SEEDS), (1.0, "bonferroni", "binomial", SEEDS), (2.0, "split", "binomial", SEEDS),
    (2.0, "bonferroni", "fdp", SEEDS // 2),
])
def test_positive_control_detected_and_never_above_eps_c_over_many_seeds(eps_c, strategy, method, seeds):
    """Stated margins: P[eps_lb <= floor] <= 1 - FLOOR_POWER = 0.1% (the floor's pre-registered power) and
    P[eps_lb > eps_c] <= 5% (the bound's validity at 95%); over the seeds each may happen at most
    allowed(seeds, rate) times (a 1e-3 binomial tail). Measured (100 seeds each, 20K rows): 0 below the floor
    in all four settings; above eps_c 0 times for bonferroni, 2 times for split."""
    below_floor = above_eps = 0
    floors = []
    for seed in range(seeds):
        p, labels, ids = world(seed)
        target = rr_oracle_probabilities(ids, labels, eps_c, seed=seed)
        config_game, bound = GameConfig(repetitions=1, seed=seed), BoundConfig(strategy=strategy, method=method, delta=1e-5 if method == "fdp" else None)
        result = run_audit(target, p, labels, ids, config_game, bound, expected_curve=True)
        check = check_control(POSITIVE, result, eps_c)
        floors.append(check.floor)
        below_floor += result.epsilon_lower_bound <= check.floor
        above_eps += result.epsilon_lower_bound > eps_c
        if check.floor > 0:
            assert check.passed == (check.floor < result.epsilon_lower_bound <= eps_c)
    assert np.median(floors) > 0.2 * eps_c  # the floor is informative at this m, not a vacuous 0
    assert below_floor <= allowed(seeds, 1 - FLOOR_POWER), f"{below_floor} of {seeds} seeds below the floor"
    assert above_eps <= allowed(seeds), f"{above_eps} of {seeds} seeds above eps_c = {eps_c}"


def test_negative_control_gives_zero_over_many_seeds():
    """A copy of the reference: every score is 0, guesses are fair coins; P[eps_lb > 0] <= 5% (validity), and the
    control, judged at 99.9%, fails a correct night at most once in a thousand."""
    positive = failed = 0
    for seed in range(SEEDS):
        p, labels, ids = world(seed, 5000)
        result = run_audit(p, p, labels, ids, GameConfig(repetitions=1, seed=seed), BoundConfig())
        check = check_control(NEGATIVE, result)
        positive += result.epsilon_lower_bound > 0.0
        failed += not check.passed
        assert check.passed or result.epsilon_lower_bound > 0.0  # stricter than the audit's 95%
        assert result.score_histogram.rows[0] == 5000  # every |score| is 0: the lowest bin
    assert positive <= allowed(SEEDS)
    assert failed <= allowed(SEEDS, rate=1 - NEGATIVE_CONFIDENCE)


def test_negative_control_fails_for_a_model_that_leaks():
    """The control can fail for what it guards: a model that is not a copy of the reference (broken plumbing,
    e.g. the target's file scored as the control) shows evidence at 99.9%."""
    p, labels, ids = world(3, 20_000)
    leaky = run_audit(rr_oracle_probabilities(ids, labels, 3.0, seed=0), p, labels, ids, GameConfig(repetitions=1), BoundConfig())
    check = check_control(NEGATIVE, leaky)
    assert not check.passed and "plumbing is broken" in check.message and "99.9%" in check.message


def test_the_capacity_check_sees_a_wrong_reference_the_label_blind_control_used_to():
    """What the retired label-blind control measured, the capacity check measures with the model itself: a model
    that knows day D's click rates but never read an audited label (true eps 0), a reference that halves every
    row's click odds. Its VIOLATION of a claim of 0 is real evidence of misfit, not of leakage: the check rows
    (same law, never seen) show the same accuracy, so epsilon_check stays 0, and the misfit it sees (lower
    confidence) is within what kappa = 0.7 covers."""
    from auditing.audit import CheckRows

    rng = np.random.default_rng(21)
    n = 100_000
    labels = (rng.random(n) < 0.02).astype(np.int64)
    target, reference = np.full(n, 0.02), np.full(n, 0.01)
    ids = np.arange(n, dtype=np.int64)
    check_labels = (rng.random(n // 5) < 0.02).astype(np.int64)
    rows = CheckRows(np.full(n // 5, 0.02), np.full(n // 5, 0.01), check_labels, ids[: n // 5] + n)
    wrong = run_audit(target, reference, labels, ids, GameConfig(repetitions=1), BoundConfig(), check=rows)
    capacity = wrong.capacity_check
    assert wrong.epsilon_lower_bound > 0.3 and capacity.epsilon_check == 0.0 and not capacity.vouches_for(0.0)
    assert 0.0 < capacity.check_misfit_kappa < 0.7 and capacity.sees_misfit(0.0) and not capacity.sees_misfit(0.7)


def test_failing_controls_say_why():
    p, labels, ids = world(0, 5000)
    leaky = run_audit(rr_oracle_probabilities(ids, labels, 4.0, seed=0), p, labels, ids,
                      GameConfig(repetitions=1), BoundConfig(), expected_curve=True)
    # the same leakage judged as a control of a smaller eps_c: the bound exceeds eps_c
    check = check_control(POSITIVE, leaky, 0.5)
    assert not check.passed and "exceeds the control's true eps_c" in check.message
    # a control at a tiny eps_c has no power at this m: floor 0, which fails it
    weak = run_audit(rr_oracle_probabilities(ids, labels, 0.01, seed=0), p, labels, ids,
                     GameConfig(repetitions=1), BoundConfig(), expected_curve=True)
    check = check_control(POSITIVE, weak, 0.01)
    assert not check.passed and check.floor == 0.0 and "no power" in check.message
    # a non-private model judged as the negative control
    check = check_control(NEGATIVE, leaky)
    assert not check.passed and "> 0" in check.message
    # no expected curve recorded: floor 0, never a silent pass
    assert positive_control_floor(dataclasses.replace(leaky, expected_correct=None))["floor"] == 0.0
