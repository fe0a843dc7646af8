"""Selection strategies: choosing c' over the sweep without losing validity (where we go beyond the paper).

The paper reports the max over c' of the 95% bounds, but a max over G looks is not a 95% bound. A strategy is
one frozen class registered in `STRATEGIES_REGISTRY`; the built-in ones:

  - `bonferroni` (default): every grid point is bounded at confidence 1 - (1 - confidence) / G. By the union
    bound, the chance that ANY point's bound exceeds the true epsilon is at most G * (1 - confidence) / G =
    1 - confidence, so the max over the grid is valid at the stated confidence.
  - `split`: rows are split in two halves by a keyed hash of (seed, row_id). c' (as a fraction of the half)
    is chosen where the uncorrected bound is largest on the selection half; the bound is then computed once,
    at the full confidence, on the other half, whose game outcomes played no part in the choice.
  - `max`: the paper's statistic (max over the grid of uncorrected bounds). OPTIMISTIC: not a valid bound at
    the stated confidence; reported for comparison with the paper, never used for a decision.

A strategy answers: is its bound valid, does it need the two halves' counts, the confidence of each grid point,
how it selects (`select`), whether the bound recomputed at another kappa still exceeds a claim (`exceeds`,
for the robustness figures) and which grid a perfect attacker's exposed labels face (`floor_setup`). Adding
one is a new registered class plus its statistical tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from auditing.bounds.lower_bound import MethodChoice, any_point_exceeds, best_bound, pointwise_bounds
from auditing.game.sweep import SweepCounts
from labeldp.choices import Choices
from labeldp.errors import LabelDPInputError


@dataclass(frozen=True)
class Selection:
    """The selected point of the sweep and its bound, with everything needed to interpret it."""

    strategy: str
    epsilon_lower_bound: float
    valid: bool  # False only for an optimistic strategy (`max`, the paper's statistic)
    point_confidence: float  # confidence at which each grid point was bounded
    selected_index: int
    selected_guesses: int
    selected_correct: int
    m: int  # examples in the game that produced the selected point (half of them for `split`)
    curve_guesses: np.ndarray
    curve_correct: np.ndarray
    curve_epsilon: np.ndarray  # per-point bounds at point_confidence (the selection half for `split`)


@dataclass(frozen=True)
class Evidence:
    """What a stored result keeps for judging it again at another claim or kappa: repetition 0's grid and
    counts, m, the confidences, and the split halves (selection, bound) when the strategy used them."""

    guesses: np.ndarray
    correct: np.ndarray
    m: int
    confidence: float
    point_confidence: float
    halves: tuple[SweepCounts, SweepCounts] | None = None


def bonferroni_confidence(confidence: float, grid_size: int) -> float:
    """1 - (1 - confidence) / G: each of the G looks gets an equal share of the error budget."""
    return 1.0 - (1.0 - confidence) / grid_size


@dataclass(frozen=True)
class SelectionStrategy(ABC):
    """One way to pick c' over the sweep; see the module docstring for the contract."""

    name: ClassVar[str]
    label: ClassVar[str]  # how reports and tables name it
    description: ClassVar[str]  # one sentence for --help and the docs
    valid: ClassVar[bool] = True  # False: an optimistic statistic, never stored as a verdict
    uses_halves: ClassVar[bool] = False  # needs both halves' counts of repetition 0 (the keyed split)

    @abstractmethod
    def point_confidence(self, confidence: float, grid_size: int) -> float:
        """The confidence each grid point is bounded at."""

    @abstractmethod
    def select(self, counts: SweepCounts, halves: tuple[SweepCounts, SweepCounts] | None, *,
               method: MethodChoice, confidence: float, delta: float, kappa: float) -> Selection:
        """Selects a point of repetition 0 and bounds it."""

    def certifiable(self, counts: SweepCounts, halves: tuple[SweepCounts, SweepCounts] | None,
                    confidence: float) -> tuple[np.ndarray, int, float]:
        """(grid, m, per-point confidence) a perfect attacker's bound is computed on (max certifiable eps)."""
        return counts.guesses[0], counts.m, self.point_confidence(confidence, counts.guesses.shape[1])

    def exceeds(self, evidence: Evidence, claimed: float, *, method: MethodChoice, delta: float,
                kappa: float) -> bool:
        """Would the valid bound, recomputed at ``kappa`` from the same counts, exceed ``claimed``? By default
        the selection is run again on the stored counts; a strategy may answer faster."""
        counts = SweepCounts(m=evidence.m, guesses=evidence.guesses[None, :], correct=evidence.correct[None, :])
        chosen = self.select(counts, evidence.halves, method=method, confidence=evidence.confidence, delta=delta,
                             kappa=kappa)
        return chosen.epsilon_lower_bound > claimed

    def floor_setup(self, evidence: Evidence) -> tuple[np.ndarray, int, float, int]:
        """(grid, m, confidence, rows per exposed label) for the perfect-attacker detection floor, which assumes
        the selection can pick any grid point; a strategy that cannot says so here.

        Raises:
            LabelDPInputError: the floor does not model this strategy (the verdict then has no floor).
        """
        raise LabelDPInputError(f"strategy {self.name!r}: the perfect-attacker floor models selections over the "
                                "whole grid only")

    def exposure_floor_reason(self) -> str | None:
        """Why the game-aware exposure floor (auditing.verdict.exposure_floor) does not model this strategy; None: it
        does (bonferroni only)."""
        return f"strategy {self.name!r}: the game-aware floor models the bonferroni selection only"

    def describe(self, grid_size: int, point_confidence: str) -> str:
        """How the report words the selection (grid size and per-point confidence as text)."""
        return f"strategy {self.name}"


def _select_on_grid(strategy: SelectionStrategy, counts: SweepCounts, *, method, confidence, delta,
                    kappa) -> Selection:
    guesses, correct = counts.guesses[0], counts.correct[0]
    point_confidence = strategy.point_confidence(confidence, guesses.size)
    curve = pointwise_bounds(correct, guesses, counts.m, method=method, delta=delta, confidence=point_confidence,
                             kappa=kappa)
    index = int(np.argmax(curve))
    return Selection(
        strategy=strategy.name, epsilon_lower_bound=float(curve[index]), valid=strategy.valid,
        point_confidence=point_confidence, selected_index=index, selected_guesses=int(guesses[index]),
        selected_correct=int(correct[index]), m=counts.m, curve_guesses=guesses.copy(),
        curve_correct=correct.copy(), curve_epsilon=curve,
    )


@dataclass(frozen=True)
class GridMax(SelectionStrategy, ABC):
    """A strategy whose bound is the max over the grid of per-point bounds at one per-point confidence: the
    robustness figures then need no re-selection (`any_point_exceeds`) and the perfect-attacker floor applies."""

    def exceeds(self, evidence, claimed, *, method, delta, kappa):
        return any_point_exceeds(evidence.correct, evidence.guesses, evidence.m, claimed, method=method,
                                 delta=delta, confidence=evidence.point_confidence, kappa=kappa)

    def floor_setup(self, evidence):
        return evidence.guesses, evidence.m, evidence.point_confidence, 1


STRATEGIES_REGISTRY: Choices[SelectionStrategy] = Choices("strategy")


@STRATEGIES_REGISTRY.register
@dataclass(frozen=True)
class Bonferroni(GridMax):
    name: ClassVar[str] = "bonferroni"
    label: ClassVar[str] = "bonferroni"
    description: ClassVar[str] = "every grid point at confidence 1 - (1 - confidence) / G; the max is valid"

    def point_confidence(self, confidence, grid_size):
        return bonferroni_confidence(confidence, grid_size)

    def describe(self, grid_size, point_confidence):
        return f"c′ chosen over {grid_size} sweep points, each bounded at {point_confidence} (Bonferroni)"

    def exposure_floor_reason(self):
        return None

    def select(self, counts, halves, *, method, confidence, delta, kappa):
        return _select_on_grid(self, counts, method=method, confidence=confidence, delta=delta, kappa=kappa)


@STRATEGIES_REGISTRY.register
@dataclass(frozen=True)
class Split(SelectionStrategy):
    name: ClassVar[str] = "split"
    label: ClassVar[str] = "split"
    description: ClassVar[str] = ("c' chosen on a keyed half of the rows, bounded once on the other half at the "
                                  "full confidence")
    uses_halves: ClassVar[bool] = True

    def exposure_floor_reason(self):
        return ("split strategy: its power hangs on the noisy choice of c' on the selection half, which this floor "
                "does not model (see the perfect-attacker floor, a necessary condition)")

    def point_confidence(self, confidence, grid_size):
        return confidence

    def select(self, counts, halves, *, method, confidence, delta, kappa):
        if halves is None:
            raise LabelDPInputError("strategy split needs the two halves' counts of repetition 0")
        return select_split(*halves, method=method, confidence=confidence, delta=delta, kappa=kappa)

    def describe(self, grid_size, point_confidence):
        return "c′ chosen on one half of the rows, bound computed on the other half"

    def certifiable(self, counts, halves, confidence):
        bound_half = halves[1]
        return bound_half.guesses[0], bound_half.m, confidence

    def exceeds(self, evidence, claimed, *, method, delta, kappa):
        chosen = select_split(*self._halves(evidence), method=method, confidence=evidence.confidence, delta=delta,
                              kappa=kappa)
        return chosen.epsilon_lower_bound > claimed

    def floor_setup(self, evidence):
        # The bound half holds about half the exposed labels: about 2 c' in all reach c' there.
        bound_half = self._halves(evidence)[1]
        return bound_half.guesses[0], bound_half.m, evidence.confidence, 2

    @staticmethod
    def _halves(evidence: Evidence) -> tuple[SweepCounts, SweepCounts]:
        if evidence.halves is None:
            raise LabelDPInputError("result: the split strategy's halves are missing (split_halves); the result "
                                    "was written before they were recorded: re-run the audit")
        return evidence.halves


@STRATEGIES_REGISTRY.register
@dataclass(frozen=True)
class PaperMax(GridMax):
    name: ClassVar[str] = "max"
    label: ClassVar[str] = "max (paper's statistic, optimistic)"
    description: ClassVar[str] = "the paper's max over uncorrected bounds: OPTIMISTIC, for comparison only"
    valid: ClassVar[bool] = False

    def exposure_floor_reason(self):
        return "strategy 'max': only bonferroni (and split) give a valid verdict"

    def point_confidence(self, confidence, grid_size):
        return confidence

    def select(self, counts, halves, *, method, confidence, delta, kappa):
        return _select_on_grid(self, counts, method=method, confidence=confidence, delta=delta, kappa=kappa)


def selection_strategy(choice: str | SelectionStrategy, name: str = "strategy") -> SelectionStrategy:
    """The registered strategy for a name (see `labeldp.choices.Choices.get`)."""
    return STRATEGIES_REGISTRY.get(choice, name)


def strategy_names() -> tuple[str, ...]:
    return STRATEGIES_REGISTRY.names()


def check_strategy(strategy: str | SelectionStrategy) -> str:
    """The name of a registered strategy; raises LabelDPInputError naming the known ones."""
    return selection_strategy(strategy).name


def select_over_grid(
    counts: SweepCounts, *, strategy: str | SelectionStrategy, method: MethodChoice, confidence: float, delta: float,
    kappa: float, repetition: int = 0,
) -> Selection:
    """Applies a strategy that needs no halves to one repetition of the sweep (repetition 0 is the
    pre-registered one)."""
    chosen = selection_strategy(strategy)
    if chosen.uses_halves:
        raise LabelDPInputError(f"the {chosen.name} strategy needs the two halves' counts: use select_split")
    one = SweepCounts(m=counts.m, guesses=counts.guesses[repetition:repetition + 1],
                      correct=counts.correct[repetition:repetition + 1])
    return chosen.select(one, None, method=method, confidence=confidence, delta=delta, kappa=kappa)


def select_split(
    selection_half: SweepCounts, bound_half: SweepCounts, *, method: MethodChoice, confidence: float, delta: float,
    kappa: float,
) -> Selection:
    """`split`: choose the grid index on one half (uncorrected), bound the same index on the other half.

    Both halves use grids built from the same fractions of their own size, so index g means the same
    fraction of guesses in each half.
    """
    if selection_half.guesses.shape[1] != bound_half.guesses.shape[1]:
        raise LabelDPInputError("split halves must share the grid of guess fractions")
    guesses, correct = selection_half.guesses[0], selection_half.correct[0]
    curve = pointwise_bounds(correct, guesses, selection_half.m, method=method, delta=delta, confidence=confidence,
                             kappa=kappa)
    index = int(np.argmax(curve))
    c, g = int(bound_half.correct[0, index]), int(bound_half.guesses[0, index])
    value = best_bound([c], [g], bound_half.m, method=method, delta=delta, confidence=confidence, kappa=kappa)[0]
    return Selection(
        strategy="split", epsilon_lower_bound=value, valid=True, point_confidence=confidence,
        selected_index=index, selected_guesses=g, selected_correct=c, m=bound_half.m,
        curve_guesses=guesses.copy(), curve_correct=correct.copy(), curve_epsilon=curve,
    )


def __getattr__(name: str):
    # STRATEGIES is the registry's current list of names.
    if name == "STRATEGIES":
        return strategy_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
