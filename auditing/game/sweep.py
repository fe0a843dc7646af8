"""The guess sweep: how many of the attacker's c' most confident guesses are correct, for every c' of a grid.

The attacker of paper Sec. 6.2 guesses on the c' examples with the largest |score| and abstains on the rest
(Algorithm 2 allows abstention, the symbol "bot"). Ranking is by |score| descending with ties broken by
row_id ascending, so the guess set is a deterministic function of the rows' (score, row_id) pairs: the same
rows give the same counts in any order or chunking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError

GRID_KINDS = ("log", "paper")
DEFAULT_GRID_POINTS = 100
DEFAULT_MIN_FRACTION = 1e-4


def guess_grid(
    m: int,
    *,
    kind: str = "log",
    points: int = DEFAULT_GRID_POINTS,
    min_fraction: float = DEFAULT_MIN_FRACTION,
) -> np.ndarray:
    """The c' values to sweep, sorted and unique, each in [1, m].

    `paper`: c' = ceil(k% of m) for k = 1..100 (the paper's sweep, Sec. 6.2). `log`: `points` values
    geometrically spaced from `min_fraction * m` to m, which also covers the small guess sets where strong
    leakage shows (the paper's Fig. 2 uses 0.1%). Small m collapses duplicates, so the grid can be shorter.
    """
    if m < 1:
        raise LabelDPInputError(f"m must be >= 1 to build a guess grid; got {m}")
    if kind == "paper":
        fractions = np.arange(1, 101) / 100.0
    elif kind == "log":
        if points < 1:
            raise LabelDPInputError(f"grid points must be >= 1; got {points}")
        if not (0 < min_fraction <= 1):
            raise LabelDPInputError(f"grid min_fraction must be in (0, 1]; got {min_fraction}")
        fractions = np.geomspace(min_fraction, 1.0, points)
    else:
        raise LabelDPInputError(f"grid kind must be one of {GRID_KINDS}; got {kind!r}")
    grid = np.clip(np.ceil(fractions * m - 1e-9).astype(np.int64), 1, m)
    return np.unique(grid)


def grid_from_fractions(m: int, fractions) -> np.ndarray:
    """c' = ceil(fraction * m) for explicit fractions in (0, 1] (e.g. the pre-registered 0.1% and 1%)."""
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.size == 0 or np.any(~(fr > 0)) or np.any(fr > 1):
        raise LabelDPInputError(f"guess fractions must be in (0, 1]; got {fr.tolist()}")
    return np.unique(np.clip(np.ceil(fr * m - 1e-9).astype(np.int64), 1, m))


def rank_order(scores: np.ndarray, row_ids: np.ndarray) -> np.ndarray:
    """Indices by |score| descending, ties by row_id ascending.

    The same order as a full lexsort on (-|score|, row_id), computed as an unstable sort on |score| followed by
    re-sorting only the runs of tied scores by row_id (tree models do produce real ties); the cheaper path's
    timing is in benchmarks/results/notes_from_code.md.
    """
    key = -np.abs(scores)
    order = np.argsort(key)
    sorted_key = key[order]
    tie_with_next = sorted_key[1:] == sorted_key[:-1]
    if tie_with_next.any():
        in_tie = np.zeros(order.size, dtype=bool)
        in_tie[:-1] |= tie_with_next
        in_tie[1:] |= tie_with_next
        run_id = np.concatenate(([0], np.cumsum(~tie_with_next)))
        tied = np.flatnonzero(in_tie)
        # Runs are contiguous, so sorting the tied positions by (run, row_id) keeps every run in place.
        within = np.lexsort((row_ids[order[tied]], run_id[tied]))
        order[tied] = order[tied][within]
    return order


def rank_key(abs_scores: np.ndarray, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(primary, secondary): two ascending keys whose lexicographic order is `rank_order`'s, for code that
    compares or merges ranked rows without a float sort.

    primary is the complement of |score|'s binary64 bit pattern: for a non-negative double the pattern read as
    an unsigned integer is monotone in the value, so its complement ascends as |score| descends (-0.0 and +0.0
    share the key of 0). secondary is the row id. Row ids are unique, so no two rows share a key.
    """
    magnitude = np.abs(np.asarray(abs_scores, dtype=np.float64))
    return ~magnitude.view(np.uint64), np.asarray(row_ids, dtype=np.int64)


def correct_at(correct: np.ndarray, order: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Number of correct guesses among the first c' ranked rows, for each c' in the grid."""
    cumulative = np.cumsum(correct[order], dtype=np.int64)
    return cumulative[grid - 1]


@dataclass(frozen=True)
class SweepCounts:
    """Per-repetition sweep counts: the whole reduction the bounds need (O(R x G), never O(n)).

    guesses[r, g] is c' and correct[r, g] is c at grid point g of repetition r, over m examples.
    """

    m: int
    guesses: np.ndarray  # (R, G) int64
    correct: np.ndarray  # (R, G) int64

    def __post_init__(self):
        if self.guesses.shape != self.correct.shape or self.guesses.ndim != 2:
            raise LabelDPInputError(
                f"sweep counts: guesses {self.guesses.shape} and correct {self.correct.shape} must be equal 2-D shapes"
            )
        if np.any(self.correct < 0) or np.any(self.correct > self.guesses) or np.any(self.guesses > self.m):
            raise LabelDPInputError("sweep counts: need 0 <= correct <= guesses <= m at every point")

    @property
    def repetitions(self) -> int:
        return int(self.guesses.shape[0])
