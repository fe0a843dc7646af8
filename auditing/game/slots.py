"""The game's slot plan: which sweeps are counted, with which grids, and how per-slot counts become the
`SweepCounts` the bounds read. One plan for the in-process audit (`auditing.audit`) and the Beam job
(`pipelines.scoring.scoring_batches`), so a strategy that works in one works in the other.

A slot is one sweep to count: repetition r over all audited rows, or one keyed half of repetition 0 (the
selection half and the bound half, `selection_half_mask`). Every game counts the R repetitions and both halves:
which strategy reads the halves is a bound setting (`auditing.config.BoundConfig`), never the job's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditing.game.config import GameConfig
from auditing.game.kernel import SlotKeys, keyed_below_half, slot_keys
from auditing.game.keyed_random import STREAM_SPLIT, key_word
from auditing.game.sweep import SweepCounts

SELECTION_HALF, BOUND_HALF = 0, 1


@dataclass(frozen=True)
class Slot:
    """One sweep to count: repetition ``repetition`` over all rows (half None), or one keyed half of it."""

    repetition: int
    half: int | None = None  # SELECTION_HALF or BOUND_HALF


def selection_half_mask(row_ids: np.ndarray, seed: int) -> np.ndarray:
    """True for rows in the selection half; keyed by (seed, row_id) only, the same for every repetition (``seed``:
    the game's `auditing.game.config.GameConfig.draw_seed`)."""
    ids = np.asarray(row_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"row ids must be integers; got dtype {ids.dtype}")
    return keyed_below_half(ids, key_word(seed, 0, STREAM_SPLIT))


@dataclass(frozen=True)
class SlotPlan:
    """The slots of a game: its R repetitions, then the selection and bound halves of repetition 0."""

    game: GameConfig

    @property
    def slots(self) -> tuple[Slot, ...]:
        return (*(Slot(r) for r in range(self.game.repetitions)), Slot(0, SELECTION_HALF), Slot(0, BOUND_HALF))

    @property
    def size(self) -> int:
        return self.game.repetitions + 2

    @property
    def half_slots(self) -> tuple[int, int]:
        """The slot indices of the selection and the bound half."""
        return self.game.repetitions, self.game.repetitions + 1

    def keys(self) -> SlotKeys:
        """The slots' key words for the compiled game (`auditing.game.kernel`), in `slots` order."""
        return slot_keys(self.game.draw_seed, [(slot.repetition, slot.half) for slot in self.slots])

    def grids(self, slot_rows) -> list[np.ndarray]:
        """Each slot's guess grid from the rows counted in it: the repetitions' grid over m rows (every
        repetition counts the same m), each half's fixed-fraction grid over its rows (empty for an empty half)."""
        rows = [int(v) for v in slot_rows]
        full = self.game.grid_for(rows[0])
        return [full] * self.game.repetitions + [self.game.half_grid(rows[i]) for i in self.half_slots]

    def counts(self, m: int, slot_rows, grids, slot_counts) -> tuple[SweepCounts, tuple[SweepCounts, SweepCounts]
                                                                     | None]:
        """The repetitions' `SweepCounts` and the halves' (None when a half is empty) from per-slot counts."""
        reps = self.game.repetitions
        grid = grids[0]
        counts = SweepCounts(m=int(m), guesses=np.broadcast_to(grid, (reps, grid.size)).copy(),
                             correct=np.stack([np.asarray(slot_counts[r], dtype=np.int64) for r in range(reps)]))
        if any(int(slot_rows[i]) == 0 for i in self.half_slots):
            return counts, None
        halves = tuple(SweepCounts(m=int(slot_rows[i]), guesses=np.asarray(grids[i])[None, :],
                                   correct=np.asarray(slot_counts[i], dtype=np.int64)[None, :])
                       for i in self.half_slots)
        return counts, halves
