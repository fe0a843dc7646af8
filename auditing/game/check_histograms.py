"""The capacity check's histograms, counted with the game (`auditing.verdict.capacity_check` reads them): repetition
0's guesses and correct guesses per stratum of the guessed views and per |score| bin, for the audited rows' two keyed
halves and the check rows. Stored in the game's counts (`auditing.game.counts.GameCounts`); the strata and the
rule that reads them are docs/soundness.md section 8.3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditing.game.sweep_reduce import BinSpec
from labeldp.errors import LabelDPInputError

# The |score| bins every check is counted on (eight per power of two); finer kernel bins merge into them exactly.
CHECK_BINS = BinSpec(mantissa_bits=3)
# The reference's log-odds of the released label, binned at whole numbers from -8 to 8 (18 bins with the two open
# ends); the plan merges them into at most COARSE_REFERENCE_BINS strata per released label and direction.
REFERENCE_EDGES = np.arange(-8.0, 9.0)
FINE_REFERENCE_BINS = REFERENCE_EDGES.size + 1


def strata_count(classes: int) -> int:
    """Fine strata of a k-class game: released label x direction x reference bin."""
    return classes * 2 * FINE_REFERENCE_BINS


@dataclass(frozen=True)
class LegacyCheck:
    """A game stored before the stratified layout (`auditing.verdict.capacity_check.CHECK_LAYOUT` 1): its check rows
    counted, nothing a check can use; the capacity check says so."""

    check_rows: int


@dataclass(frozen=True)
class CheckHistograms:
    """Repetition 0's guesses per (fine stratum, `CHECK_BINS` bin of |score|), and the correct ones, for the audited
    rows' selection half, their bound half and the check rows of a ``classes``-label game whose draws were keyed by
    ``seed`` (the subsampling draws are keyed by it too). Histograms of disjoint row chunks add (`merge`)."""

    classes: int
    seed: int
    selection_rows: np.ndarray
    selection_correct: np.ndarray
    bound_rows: np.ndarray
    bound_correct: np.ndarray
    check_rows: np.ndarray
    check_correct: np.ndarray

    _FIELDS = ("selection_rows", "selection_correct", "bound_rows", "bound_correct", "check_rows", "check_correct")

    def __post_init__(self):
        if isinstance(self.classes, bool) or int(self.classes) != self.classes or self.classes < 2:
            raise LabelDPInputError(f"check histograms: classes must be a whole number >= 2; got {self.classes!r}")
        object.__setattr__(self, "classes", int(self.classes))
        object.__setattr__(self, "seed", int(self.seed))
        shape = (strata_count(self.classes), CHECK_BINS.num_bins)
        for name in self._FIELDS:
            value = np.asarray(getattr(self, name), dtype=np.int64)
            if value.shape != shape:
                raise LabelDPInputError(f"check histogram {name}: shape {value.shape}; expected {shape}")
            object.__setattr__(self, name, value)
        for part in ("selection", "bound", "check"):
            rows, correct = getattr(self, f"{part}_rows"), getattr(self, f"{part}_correct")
            if np.any(correct < 0) or np.any(correct > rows):
                raise LabelDPInputError(f"check histogram {part}: need 0 <= correct <= rows in every cell")

    @classmethod
    def empty(cls, classes: int, seed: int) -> CheckHistograms:
        shape = (strata_count(classes), CHECK_BINS.num_bins)
        return cls(classes, seed, *(np.zeros(shape, dtype=np.int64) for _ in cls._FIELDS))

    def merge(self, other: CheckHistograms) -> CheckHistograms:
        if (self.classes, self.seed) != (other.classes, other.seed):
            raise LabelDPInputError(f"cannot merge check histograms of {other.classes} classes and seed "
                                    f"{other.seed} into {self.classes} classes and seed {self.seed}")
        return CheckHistograms(self.classes, self.seed,
                               *(getattr(self, f) + getattr(other, f) for f in self._FIELDS))

    def arrays(self) -> dict[str, np.ndarray]:
        """The stored form (`auditing.game.counts.GameCounts.save`): every field as an array."""
        return {"classes": np.array(self.classes), "seed": np.array(self.seed, dtype=np.uint64),
                **{name: getattr(self, name) for name in self._FIELDS}}

    @classmethod
    def from_arrays(cls, arrays) -> CheckHistograms | LegacyCheck:
        """The histograms `arrays` stored, or a `LegacyCheck` for a game stored in the unstratified layout."""
        if "classes" not in arrays:
            return LegacyCheck(int(np.asarray(arrays["check_rows"]).sum()))
        return cls(int(arrays["classes"]), int(np.asarray(arrays["seed"], dtype=np.uint64)),
                   *(arrays[name] for name in cls._FIELDS))
