"""Choosing the guess count c' over the sweep (auditing/bounds/selection.py): bonferroni bounds every point at the
shared-out confidence and keeps the max, max does the same uncorrected and is marked not valid, split chooses on one
half and bounds that index once on the other."""

import numpy as np
import pytest

from auditing.bounds.lower_bound import pointwise_bounds
from auditing.bounds.selection import (
    bonferroni_confidence,
    check_strategy,
    select_over_grid,
    select_split,
    strategy_names,
)
from auditing.game.sweep import SweepCounts
from labeldp.errors import LabelDPInputError

GUESSES = np.array([[10, 100, 1000], [10, 100, 1000]])
CORRECT = np.array([[10, 90, 600], [5, 50, 800]])  # repetition 0 is best at 100 guesses
SETTINGS = dict(method="binomial", confidence=0.95, delta=0.0, kappa=0.0)


def test_bonferroni_shares_the_error_budget_equally_over_the_grid():
    assert bonferroni_confidence(0.95, 1) == 0.95
    assert bonferroni_confidence(0.95, 10) == pytest.approx(0.995)


def test_bonferroni_and_max_keep_the_best_point_of_repetition_zero_at_their_point_confidence():
    counts = SweepCounts(m=10_000, guesses=GUESSES, correct=CORRECT)
    for strategy, point_confidence, valid in (("bonferroni", bonferroni_confidence(0.95, 3), True),
                                              ("max", 0.95, False)):
        chosen = select_over_grid(counts, strategy=strategy, **SETTINGS)
        curve = pointwise_bounds(CORRECT[0], GUESSES[0], 10_000, method="binomial", delta=0.0,
                                 confidence=point_confidence)
        assert (chosen.selected_index, chosen.selected_guesses, chosen.selected_correct) == (1, 100, 90)
        assert chosen.epsilon_lower_bound == curve.max() and chosen.point_confidence == point_confidence
        assert chosen.valid is valid and chosen.strategy == strategy
    corrected = select_over_grid(counts, strategy="bonferroni", **SETTINGS).epsilon_lower_bound
    assert 0 < corrected < select_over_grid(counts, strategy="max", **SETTINGS).epsilon_lower_bound
    assert select_over_grid(counts, strategy="max", repetition=1, **SETTINGS).selected_correct == 800


def test_split_chooses_on_the_selection_half_and_bounds_the_same_index_on_the_other():
    selection = SweepCounts(m=5_000, guesses=GUESSES[:1], correct=CORRECT[:1])
    bound_half = SweepCounts(m=5_000, guesses=GUESSES[:1], correct=np.array([[10, 60, 900]]))
    chosen = select_split(selection, bound_half, **SETTINGS)
    assert (chosen.selected_index, chosen.selected_guesses, chosen.selected_correct) == (1, 100, 60)
    expected = pointwise_bounds([60], [100], 5_000, method="binomial", delta=0.0, confidence=0.95)[0]
    assert chosen.epsilon_lower_bound == pytest.approx(expected) and chosen.valid and chosen.m == 5_000
    with pytest.raises(LabelDPInputError, match="use select_split"):
        select_over_grid(selection, strategy="split", **SETTINGS)
    with pytest.raises(LabelDPInputError, match="share the grid"):
        select_split(selection, SweepCounts(m=5_000, guesses=GUESSES[:1, :2], correct=CORRECT[:1, :2]), **SETTINGS)


def test_an_unknown_strategy_is_refused_naming_the_known_ones():
    assert {"bonferroni", "split", "max"} <= set(strategy_names()) and check_strategy("split") == "split"
    with pytest.raises(LabelDPInputError, match="bonferroni"):
        check_strategy("best")
