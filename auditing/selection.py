"""Choosing c' over the sweep without losing validity (where we go beyond the paper).

The paper reports the max over c' of the 95% bounds, but a max over G looks is not a 95% bound. Strategies:

  - `bonferroni` (default): every grid point is bounded at confidence 1 - (1 - confidence) / G. By the union
    bound, the chance that ANY point's bound exceeds the true epsilon is at most G * (1 - confidence) / G =
    1 - confidence, so the max over the grid is valid at the stated confidence.
  - `split`: rows are split in two halves by a keyed hash of (seed, row_id). c' (as a fraction of the half)
    is chosen where the uncorrected bound is largest on the selection half; the bound is then computed once,
    at the full confidence, on the other half, whose game outcomes played no part in the choice.
  - `max`: the paper's statistic (max over the grid of uncorrected bounds). OPTIMISTIC: not a valid bound at
    the stated confidence; reported for comparison with the paper, never used for a decision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditing.bounds import best_bound, pointwise_bounds
from auditing.errors import LabelDPInputError
from auditing.sweep import SweepCounts

STRATEGIES = ("bonferroni", "split", "max")


def check_strategy(strategy: str) -> str:
    if strategy not in STRATEGIES:
        raise LabelDPInputError(f"strategy must be one of {list(STRATEGIES)}; got {strategy!r}")
    return strategy


@dataclass(frozen=True)
class Selection:
    """The selected point of the sweep and its bound, with everything needed to interpret it."""

    strategy: str
    epsilon_lower_bound: float
    valid: bool  # False only for `max`, the paper's optimistic statistic
    point_confidence: float  # confidence at which each grid point was bounded
    selected_index: int
    selected_guesses: int
    selected_correct: int
    m: int  # examples in the game that produced the selected point (half of them for `split`)
    curve_guesses: np.ndarray
    curve_correct: np.ndarray
    curve_epsilon: np.ndarray  # per-point bounds at point_confidence (the selection half for `split`)


def bonferroni_confidence(confidence: float, grid_size: int) -> float:
    """1 - (1 - confidence) / G: each of the G looks gets an equal share of the error budget."""
    return 1.0 - (1.0 - confidence) / grid_size


def select_over_grid(
    counts: SweepCounts, *, strategy: str, method: str, confidence: float, delta: float, kappa: float,
    repetition: int = 0,
) -> Selection:
    """Applies `bonferroni` or `max` to one repetition of the sweep (repetition 0 is the pre-registered one)."""
    check_strategy(strategy)
    if strategy == "split":
        raise LabelDPInputError("the split strategy needs the two halves' counts: use select_split")
    guesses, correct = counts.guesses[repetition], counts.correct[repetition]
    grid_size = guesses.size
    point_confidence = bonferroni_confidence(confidence, grid_size) if strategy == "bonferroni" else confidence
    curve = pointwise_bounds(correct, guesses, counts.m, method=method, delta=delta, confidence=point_confidence, kappa=kappa)
    index = int(np.argmax(curve))
    return Selection(
        strategy=strategy, epsilon_lower_bound=float(curve[index]), valid=strategy != "max",
        point_confidence=point_confidence, selected_index=index, selected_guesses=int(guesses[index]),
        selected_correct=int(correct[index]), m=counts.m, curve_guesses=guesses.copy(),
        curve_correct=correct.copy(), curve_epsilon=curve,
    )


def select_split(
    selection_half: SweepCounts, bound_half: SweepCounts, *, method: str, confidence: float, delta: float, kappa: float
) -> Selection:
    """`split`: choose the grid index on one half (uncorrected), bound the same index on the other half.

    Both halves use grids built from the same fractions of their own size, so index g means the same
    fraction of guesses in each half.
    """
    if selection_half.guesses.shape[1] != bound_half.guesses.shape[1]:
        raise LabelDPInputError("split halves must share the grid of guess fractions")
    guesses, correct = selection_half.guesses[0], selection_half.correct[0]
    curve = pointwise_bounds(correct, guesses, selection_half.m, method=method, delta=delta, confidence=confidence, kappa=kappa)
    index = int(np.argmax(curve))
    c, g = int(bound_half.correct[0, index]), int(bound_half.guesses[0, index])
    value = best_bound([c], [g], bound_half.m, method=method, delta=delta, confidence=confidence, kappa=kappa)[0]
    return Selection(
        strategy="split", epsilon_lower_bound=value, valid=True, point_confidence=confidence,
        selected_index=index, selected_guesses=g, selected_correct=c, m=bound_half.m,
        curve_guesses=guesses.copy(), curve_correct=correct.copy(), curve_epsilon=curve,
    )
