"""A second halves strategy, registered by the tests that need one: the split strategy with the halves' roles swapped
(c' chosen on the bound half, bounded on the selection half). It shows that a new strategy is a bound setting of the
same game, in process and on Beam."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from auditing.bounds.selection import SelectionStrategy, select_split


@dataclass(frozen=True)
class SwappedSplit(SelectionStrategy):
    """A second halves strategy: c' chosen on the bound half, bounded on the selection half."""

    name: ClassVar[str] = "swapped-split"
    label: ClassVar[str] = "swapped split"
    description: ClassVar[str] = "the split strategy with the halves' roles swapped"
    uses_halves: ClassVar[bool] = True

    def point_confidence(self, confidence, grid_size):
        return confidence

    def select(self, counts, halves, *, method, confidence, delta, kappa):
        return select_split(halves[1], halves[0], method=method, confidence=confidence, delta=delta, kappa=kappa)

    def certifiable(self, counts, halves, confidence):
        return halves[0].guesses[0], halves[0].m, confidence
