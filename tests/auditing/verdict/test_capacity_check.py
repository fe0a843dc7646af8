"""The capacity check (auditing/verdict/capacity_check.py, docs/soundness.md section 8): its epsilon_check is a
lower bound on the target's true eps over seeded nights (tests/support/capacity_nights.py: segment worlds
built outside the code under test, tests/support/segment_worlds.py), and its histogram arithmetic. Its exact
test (its level at the null boundary): tests/auditing/bounds/test_misfit_test.py. Its verdicts (a trusted false
VIOLATION at most at the stated rate, real leaks vouched for): tests/behaviour/test_capacity_check_verdicts.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from auditing.audit import CheckRows, run_audit
from auditing.config import BoundConfig
from auditing.game.check_histograms import CHECK_BINS, CheckHistograms, LegacyCheck, strata_count
from auditing.game.config import GameConfig
from auditing.game.sweep_reduce import BinSpec, bin_index
from auditing.verdict.capacity_check import (
    DELTA_NOT_SUPPORTED,
    LEGACY_CHECK,
    CapacityCheck,
    bin_lower_edge,
    capacity_check,
    rebin,
)
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.capacity_nights import nights, not_above_rate
from tests.support.segment_worlds import night


# ------------------------------------------------------------------------------------------- validity
@pytest.mark.slow
@pytest.mark.parametrize(("label", "world"), [
    ("no drift, rare clicks", dict(drift=0.0, click_rate=0.01)),
    ("drift, 5 classes", dict(classes=5, click_rate=0.03, memorize=0.3)),
    ("drift, eps 2, memorising", dict(epsilon=2.0, memorize=0.8)),
])
def test_epsilon_check_is_a_lower_bound(label, world):
    """epsilon_check alone exceeds the target's true eps at most at the stated rate (kappa plays no part)."""
    trials = 100
    results = nights(trials, **world)
    above = int((results[:, 1] > world.get("epsilon", 0.3)).sum())
    assert not_above_rate(above, trials), (label, above, trials)


# ------------------------------------------------------------------------------------------- the arithmetic
def test_rebin_merges_whole_bins_exactly():
    fine = BinSpec(mantissa_bits=10)
    scores = np.random.default_rng(0).standard_normal(20_000) * np.geomspace(1e-9, 10, 20_000)
    direct = np.bincount(bin_index(scores, CHECK_BINS), minlength=CHECK_BINS.num_bins)
    merged = rebin(np.bincount(bin_index(scores, fine), minlength=fine.num_bins), fine)
    assert merged.dtype == np.int64
    np.testing.assert_array_equal(merged, direct)
    with pytest.raises(LabelDPInputError, match="coarser"):
        rebin(direct, CHECK_BINS, fine)


def test_bin_lower_edge_is_the_smallest_score_of_its_bin():
    for score in (1e-9, 3.3e-4, 0.0123, 0.5, 1.0, 7.9):
        index = int(bin_index(np.array([score]), CHECK_BINS)[0])
        edge = bin_lower_edge(index)
        assert edge <= score
        assert bin_index(np.array([edge]), CHECK_BINS)[0] == index
        assert bin_index(np.array([np.nextafter(edge, 0)]), CHECK_BINS)[0] == index - 1


def test_compiled_and_numpy_paths_give_the_same_check():
    """The kernel path (built-in score) and the numpy path (the same score passed as a callable) agree."""
    from auditing.game.scores import paper_score

    world = night(7, rows=30_000, private=False, memorize=0.2)
    config_game, bound = GameConfig(repetitions=1, seed=3), BoundConfig()
    compiled = run_audit(*world.audited, game=config_game, bound=bound, check=world.check).capacity_check
    numpy_path = run_audit(*world.audited, game=config_game, bound=bound, check=world.check, score_function=paper_score)
    assert numpy_path.capacity_check == compiled
    assert compiled.checked and compiled.bound_guesses > 0


def test_check_rows_must_be_unseen_rows():
    world = night(1, rows=5_000)
    p_t, p_r, y, ids = world.audited
    overlapping = CheckRows(p_t[:10], p_r[:10], y[:10], ids[:10])
    with pytest.raises(LabelDPInputError, match="also audited rows"):
        run_audit(*world.audited, game=GameConfig(repetitions=1), check=overlapping)


def test_no_check_rows_and_delta_say_why():
    world = night(2, rows=5_000)
    result = run_audit(*world.audited, game=GameConfig(repetitions=1))
    check = result.capacity_check
    assert not check.checked and "no check rows" in check.reason and not check.vouches_for(0.0)
    histograms = CheckHistograms.empty(2, 0)
    assert capacity_check(histograms, confidence=0.95, delta=1e-6).reason == DELTA_NOT_SUPPORTED


def test_histograms_round_trip_and_merge():
    world = night(3, rows=20_000, private=False, memorize=0.2)
    result = run_audit(*world.audited, game=GameConfig(repetitions=1), check=world.check)
    check = result.capacity_check
    assert decode(CapacityCheck, encode(check)) == check
    assert check.stratified and check.strata_table and check.strata >= 1
    rng = np.random.default_rng(0)
    shape = (strata_count(2), CHECK_BINS.num_bins)

    def part():
        rows = [rng.integers(0, 5, shape) for _ in range(3)]
        return CheckHistograms(2, 11, *(x for r in rows for x in (r, rng.integers(0, r + 1))))

    parts = [part(), part()]
    merged = parts[0].merge(parts[1])
    again = CheckHistograms.from_arrays(merged.arrays())
    for name in CheckHistograms._FIELDS:
        np.testing.assert_array_equal(getattr(again, name), getattr(merged, name))
    assert (again.classes, again.seed) == (2, 11)
    with pytest.raises(LabelDPInputError, match="cannot merge"):
        merged.merge(CheckHistograms.empty(2, 12))
    legacy = CheckHistograms.from_arrays({"check_rows": np.ones(CHECK_BINS.num_bins, dtype=np.int64)})
    assert legacy == LegacyCheck(CHECK_BINS.num_bins)
    assert capacity_check(legacy, confidence=0.95).reason == LEGACY_CHECK


def test_plan_reads_no_outcome_of_the_bound_half_or_the_check_rows():
    """The threshold, the strata and the composition are a function of the views' guess counts and the selection
    half's outcomes: other outcomes of the bound half and the check rows (same views) never move them, while the
    check's verdict follows the outcomes (the figures that could fail if the plan peeked at them)."""
    from auditing.audit import play_game

    world = night(4, rows=40_000, private=False, memorize=0.2)
    game = play_game(*world.audited, game=GameConfig(repetitions=1), check=world.check)
    base = capacity_check(game.check, confidence=0.95)
    rng = np.random.default_rng(1)
    h = game.check
    other = CheckHistograms(h.classes, h.seed, h.selection_rows, h.selection_correct, h.bound_rows,
                            rng.binomial(h.bound_rows, 0.5), h.check_rows, rng.binomial(h.check_rows, 0.5))
    moved = capacity_check(other, confidence=0.95)
    plan = ("threshold_bin", "strata", "composition_power", "composition_favourable_only", "matched_bound_guesses",
            "matched_check_guesses", "composition_slack", "selection_matched_accuracy")
    assert {f: getattr(moved, f) for f in plan} == {f: getattr(base, f) for f in plan}
    assert [(r.matched_bound_guesses, r.matched_check_guesses) for r in moved.strata_table] == \
        [(r.matched_bound_guesses, r.matched_check_guesses) for r in base.strata_table]
    assert (moved.matched_check_correct, moved.epsilon_check) != (base.matched_check_correct, base.epsilon_check)
