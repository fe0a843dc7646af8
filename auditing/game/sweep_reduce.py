"""Exact guess-sweep counts from mergeable pieces: what a distributed job needs to reproduce `auditing.game.sweep`.

The in-process audit ranks one repetition's rows by |score| descending, ties by row_id ascending
(`auditing.game.sweep.rank_order`), and counts the correct guesses among the first c' rows for each c' of the grid
(`correct_at`). That needs every row in one place. This module splits the same computation into pieces that
merge by addition, so a job can compute it with memory O(bins x repetitions + boundary rows):

1. `bin_index`: an order-preserving bin of |score|. For a non-negative double the IEEE-754 bit pattern read
   as an unsigned integer is monotone in the value, so its top bits (the exponent and the first
   `mantissa_bits` bits of the mantissa) are a monotone bin: a larger bin always means a larger |score|, and
   rows of different bins never need to be compared again. Exponents outside a window are clipped into one
   underflow and one overflow bin (still monotone).
2. `histogram`: per repetition, rows and correct guesses per bin; histograms of disjoint row chunks add.
3. `boundary_bins`: from the merged histogram, for each c' of the grid, the bin holding the c'-th ranked row,
   how many rows (and correct guesses) lie strictly above it, and how many of the bin's rows are taken
   (`take`). A grid point that takes the whole bin (`take == bin_rows`) is complete from the histogram alone.
4. `exact_counts`: given the rows of the bins cut strictly inside (`cut_bins`) -- their |score|, row_id and
   correctness, in any order -- ranks them with `rank_order` itself and completes every grid point's count.
   `RankedCounts` does the same for rows streamed already in rank order, a chunk at a time, when a cut bin holds
   more rows than memory should (a constant score puts a whole slot in one bin).

The result equals `correct_at(correct, rank_order(scores, row_ids), grid)` exactly, for any chunking of the
rows (tests/auditing/game/test_sweep_reduce.py). Nothing here approximates: the bins only decide which rows
must be looked at again. Their resolution trades histogram size (`BinSpec.num_bins` per repetition) against
boundary rows (about one bin's worth of rows per grid point whose c'-th row falls inside a bin).

Pure numpy: no Beam, no I/O. The Beam job (pipelines/scoring/beam_scoring.py) wires these functions into combiners.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditing.game.sweep import rank_key, rank_order
from labeldp.errors import LabelDPInputError

_EXPONENT_BIAS = 1023  # IEEE-754 binary64
_MANTISSA_BITS = 52


@dataclass(frozen=True)
class BinSpec:
    """An order-preserving binning of |score|: `mantissa_bits` bins per power of two inside
    [2**min_exponent, 2**max_exponent), one underflow bin (0, subnormals and anything smaller) and one overflow
    bin (anything larger, inf included).

    The default window covers both built-in scores: the paper's score has |s| <= 1 and the log-ratio score
    |s| <= log(1e15) < 64; 2**-40 ~ 1e-12 is far below any difference two models' probabilities show.
    """

    mantissa_bits: int = 8
    min_exponent: int = -40
    max_exponent: int = 6

    def __post_init__(self):
        if isinstance(self.mantissa_bits, bool) or not isinstance(self.mantissa_bits, int | np.integer) or not (
                0 <= self.mantissa_bits <= 20):
            raise LabelDPInputError(f"mantissa_bits must be a whole number in 0..20; got {self.mantissa_bits!r}")
        for name in ("min_exponent", "max_exponent"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or not -1022 <= value <= 1024:
                raise LabelDPInputError(f"{name} must be a whole number in -1022..1024; got {value!r}")
        if self.min_exponent >= self.max_exponent:
            raise LabelDPInputError(f"min_exponent ({self.min_exponent}) must be below max_exponent "
                                    f"({self.max_exponent})")
        if self.num_bins > 2**24:
            raise LabelDPInputError(f"the bin spec gives {self.num_bins} bins per repetition; at most 2**24 are "
                                    f"allowed (fewer mantissa bits or a narrower exponent window)")

    @property
    def low_code(self) -> int:
        """The bit-pattern code (`pattern_shift`) of the window's lowest bin, whose index is 1."""
        return (_EXPONENT_BIAS + self.min_exponent) << self.mantissa_bits

    @property
    def pattern_shift(self) -> int:
        """How far a |score|'s binary64 bit pattern is shifted right to give its code (exponent and leading
        mantissa bits)."""
        return _MANTISSA_BITS - self.mantissa_bits

    @property
    def num_bins(self) -> int:
        """Window bins plus the underflow (index 0) and overflow (index num_bins - 1) bins."""
        return ((self.max_exponent - self.min_exponent) << self.mantissa_bits) + 2


def bin_index(scores: np.ndarray, spec: BinSpec) -> np.ndarray:
    """The bin of each |score| (int64 in [0, spec.num_bins)); non-decreasing in |score|.

    NaN is not a score (the game rejects it); it would land in the overflow bin.
    """
    magnitude = np.abs(np.asarray(scores, dtype=np.float64))  # abs(-0.0) is +0.0: bit pattern 0
    # Top bits of the pattern: (biased exponent << mantissa_bits) | leading mantissa bits; monotone for x >= 0.
    code = (magnitude.view(np.uint64) >> np.uint64(spec.pattern_shift)).astype(np.int64)
    index = code - (spec.low_code - 1)
    np.clip(index, 0, spec.num_bins - 1, out=index)
    return index


def histogram(bins: np.ndarray, correct: np.ndarray, num_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows per bin, correct guesses per bin), both int64 of length num_bins; histograms of disjoint chunks add."""
    rows = np.bincount(bins, minlength=num_bins).astype(np.int64, copy=False)
    hits = np.bincount(bins[np.asarray(correct, dtype=bool)], minlength=num_bins).astype(np.int64, copy=False)
    return rows, hits


@dataclass(frozen=True)
class Boundaries:
    """Where each grid point's c'-th ranked row falls. All arrays have one entry per grid point.

    bin: the bin holding the c'-th row; rows_above / correct_above: rows and correct guesses in higher bins;
    take: c' - rows_above, how many of the bin's rows (in rank order) are guessed on (1..bin_rows);
    bin_rows / bin_correct: the bin's totals. `complete` grid points (take == bin_rows) need no rows.
    """

    grid: np.ndarray
    bin: np.ndarray
    rows_above: np.ndarray
    correct_above: np.ndarray
    take: np.ndarray
    bin_rows: np.ndarray
    bin_correct: np.ndarray

    @property
    def complete(self) -> np.ndarray:
        return self.take == self.bin_rows

    def cut_bins(self) -> np.ndarray:
        """Sorted bins cut strictly inside by some grid point: the only bins whose rows are needed."""
        return np.unique(self.bin[~self.complete])

    def boundary_rows(self) -> int:
        """How many rows `exact_counts` needs (the rows of the cut bins)."""
        cut, first = np.unique(self.bin[~self.complete], return_index=True)
        return int(self.bin_rows[~self.complete][first].sum()) if cut.size else 0


def boundary_bins(rows: np.ndarray, correct: np.ndarray, grid: np.ndarray) -> Boundaries:
    """Locates each c' of `grid` in a merged histogram (`rows`, `correct` per bin, bins ascending in |score|)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    correct = np.ascontiguousarray(correct, dtype=np.int64)
    grid = np.asarray(grid, dtype=np.int64)
    if rows.ndim != 1 or rows.shape != correct.shape:
        raise LabelDPInputError(f"histogram rows {rows.shape} and correct {correct.shape} must be equal 1-D shapes")
    from auditing.game.histogram_totals import descending_totals  # here: reading a result needs no numba

    # Rank order visits bins from the top: accumulate the histogram from its last bin down.
    cum_rows, cum_correct = np.empty_like(rows), np.empty_like(correct)
    if rows.size and not descending_totals(rows, correct, cum_rows, cum_correct):
        raise LabelDPInputError("histogram: need 0 <= correct <= rows in every bin")
    total = int(cum_rows[-1]) if rows.size else 0
    if grid.size and (grid.min() < 1 or grid.max() > total):
        raise LabelDPInputError(f"grid values must be in 1..{total} (the histogram's rows); got "
                                f"{int(grid.min())}..{int(grid.max())}")
    j = np.searchsorted(cum_rows, grid, side="left")  # first top-down position holding >= c' rows
    at = rows.size - 1 - j
    bin_rows, bin_correct = rows[at], correct[at]
    rows_above = cum_rows[j] - bin_rows
    return Boundaries(
        grid=grid, bin=at, rows_above=rows_above, correct_above=cum_correct[j] - bin_correct,
        take=grid - rows_above, bin_rows=bin_rows, bin_correct=bin_correct,
    )


def _disagreement(bin_, rows, correct, histogram_rows, histogram_correct) -> RuntimeError:
    return RuntimeError(f"boundary rows disagree with the histogram in bin {int(bin_)}: got {int(rows)} rows / "
                        f"{int(correct)} correct, the histogram holds {int(histogram_rows)} / "
                        f"{int(histogram_correct)} (rows lost or duplicated between the passes)")


def exact_counts(boundaries: Boundaries, bins: np.ndarray, abs_scores: np.ndarray, row_ids: np.ndarray,
                 correct: np.ndarray) -> np.ndarray:
    """Correct guesses among the first c' ranked rows, for each grid point of `boundaries`.

    `bins`, `abs_scores`, `row_ids`, `correct` describe the rows of (at least) every bin in
    `boundaries.cut_bins()`, in any order; rows of other bins are ignored. The rows are ranked with
    `auditing.game.sweep.rank_order` itself, so ties break exactly as in-process. A cut bin whose rows or correct
    guesses disagree with the histogram raises (rows lost or duplicated on the way would otherwise give a
    wrong count silently).
    """
    bins = np.asarray(bins, dtype=np.int64)
    abs_scores = np.abs(np.asarray(abs_scores, dtype=np.float64))
    row_ids = np.asarray(row_ids, dtype=np.int64)
    correct = np.asarray(correct, dtype=bool)
    if not (bins.shape == abs_scores.shape == row_ids.shape == correct.shape) or bins.ndim != 1:
        raise LabelDPInputError(f"boundary rows: bins {bins.shape}, abs_scores {abs_scores.shape}, row_ids "
                                f"{row_ids.shape} and correct {correct.shape} must be equal 1-D shapes")
    counts = boundaries.correct_above + boundaries.bin_correct  # complete grid points
    partial = np.flatnonzero(~boundaries.complete)
    if partial.size == 0:
        return counts.astype(np.int64)
    order = rank_order(abs_scores, row_ids)
    # Bins are monotone in |score|, so in rank order they are non-increasing: negate to search ascending.
    neg_bins = -bins[order]
    cum_correct = np.concatenate(([0], np.cumsum(correct[order], dtype=np.int64)))
    cut = boundaries.bin[partial]
    start = np.searchsorted(neg_bins, -cut, side="left")
    stop = np.searchsorted(neg_bins, -cut, side="right")
    got_rows = stop - start
    got_correct = cum_correct[stop] - cum_correct[start]
    bad = (got_rows != boundaries.bin_rows[partial]) | (got_correct != boundaries.bin_correct[partial])
    if bad.any():
        g = int(partial[np.flatnonzero(bad)[0]])
        raise _disagreement(boundaries.bin[g], got_rows[bad][0], got_correct[bad][0], boundaries.bin_rows[g],
                            boundaries.bin_correct[g])
    within = cum_correct[start + boundaries.take[partial]] - cum_correct[start]
    counts = counts.astype(np.int64)
    counts[partial] = boundaries.correct_above[partial] + within
    return counts


class RankedCounts:
    """`exact_counts` for rows that arrive already in rank order, a chunk at a time: memory O(chunk + grid), so
    a cut bin may hold more rows than fit in memory at once (a constant score puts every row of a slot in one
    bin). Feed the rows of every cut bin with `add`, in `auditing.game.sweep.rank_order` across all chunks, then
    call `counts`. Rows of other bins are ignored.

    The order is checked, not trusted: each chunk's (|score|, row_id) keys (`auditing.game.sweep.rank_key`) must
    ascend strictly, also across chunks, and each cut bin's rows and correct guesses must match the histogram,
    so rows out of order, lost or duplicated raise instead of giving a wrong count.
    """

    def __init__(self, boundaries: Boundaries):
        self._bounds = boundaries
        self._partial = np.flatnonzero(~boundaries.complete)
        self._cut = np.unique(boundaries.bin[self._partial])  # ascending
        # Each partial grid point's cut bin, as an index into _cut.
        self._point_cut = np.searchsorted(self._cut, boundaries.bin[self._partial])
        self._seen_rows = np.zeros(self._cut.size, np.int64)
        self._seen_correct = np.zeros(self._cut.size, np.int64)
        self._within = np.full(self._partial.size, -1, np.int64)  # correct guesses among the first `take` rows
        self._last = None  # the last row's rank key

    def add(self, bins: np.ndarray, abs_scores: np.ndarray, row_ids: np.ndarray, correct: np.ndarray) -> None:
        bins = np.asarray(bins, dtype=np.int64)
        if bins.size == 0 or self._cut.size == 0:
            return
        primary, secondary = rank_key(abs_scores, row_ids)
        correct = np.asarray(correct, dtype=bool)
        if not (bins.shape == primary.shape == secondary.shape == correct.shape) or bins.ndim != 1:
            raise LabelDPInputError("ranked rows: bins, abs_scores, row_ids and correct must be equal 1-D shapes")
        ascending = (primary[1:] > primary[:-1]) | ((primary[1:] == primary[:-1]) & (secondary[1:] > secondary[:-1]))
        first = (int(primary[0]), int(secondary[0]))
        if not ascending.all() or (self._last is not None and first <= self._last):
            raise RuntimeError("ranked rows arrive out of rank order (|score| descending, row_id ascending); the "
                               "merge that feeds them is wrong")
        self._last = (int(primary[-1]), int(secondary[-1]))
        keep = np.isin(bins, self._cut)
        if not keep.all():
            bins, correct = bins[keep], correct[keep]
        if bins.size == 0:
            return
        # In rank order the bins do not increase: each cut bin's rows of the chunk are one contiguous run.
        cum = np.concatenate(([0], np.cumsum(correct, dtype=np.int64)))
        neg = -bins
        for index in np.unique(np.searchsorted(self._cut, bins)):
            lo = int(np.searchsorted(neg, -self._cut[index], side="left"))
            hi = int(np.searchsorted(neg, -self._cut[index], side="right"))
            seen = int(self._seen_rows[index])
            points = np.flatnonzero(self._point_cut == index)
            take = self._bounds.take[self._partial[points]]
            here = (take > seen) & (take <= seen + hi - lo)
            if here.any():
                at = lo + take[here] - seen
                self._within[points[here]] = self._seen_correct[index] + cum[at] - cum[lo]
            self._seen_rows[index] += hi - lo
            self._seen_correct[index] += cum[hi] - cum[lo]

    def counts(self) -> np.ndarray:
        """Correct guesses among the first c' ranked rows, for each grid point; raises when the rows fed disagree
        with the histogram."""
        bounds = self._bounds
        expected_rows = np.zeros(self._cut.size, np.int64)
        expected_correct = np.zeros(self._cut.size, np.int64)
        expected_rows[self._point_cut] = bounds.bin_rows[self._partial]
        expected_correct[self._point_cut] = bounds.bin_correct[self._partial]
        bad = (self._seen_rows != expected_rows) | (self._seen_correct != expected_correct)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _disagreement(self._cut[i], self._seen_rows[i], self._seen_correct[i], expected_rows[i],
                                expected_correct[i])
        counts = (bounds.correct_above + bounds.bin_correct).astype(np.int64)
        counts[self._partial] = bounds.correct_above[self._partial] + self._within
        return counts


def cut_bin_mask(boundaries: Boundaries, num_bins: int, margin: int = 0, out: np.ndarray | None = None
                 ) -> np.ndarray:
    """Boolean mask over bins: True for the cut bins and the `margin` bins on either side of each; set in ``out``
    (a zeroed bool array of num_bins) when given."""
    mask = np.zeros(num_bins, dtype=bool) if out is None else out
    cut = boundaries.cut_bins()
    for shift in range(-margin, margin + 1):
        mask[np.clip(cut + shift, 0, num_bins - 1)] = True
    return mask
