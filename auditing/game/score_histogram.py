"""Repetition 0's attack-score histogram for the report's score panel.

The game (paper Alg. 2, Sec. 6.2) guesses on the rows with the largest |score|; how the scores of correct and
wrong guesses separate is what a reader wants to see next to the eps_lb curve. The Beam job already
histograms |score| per repetition with correctness in order-preserving bins (`auditing.game.sweep_reduce`,
pass 1); this module coarsens repetition 0's fine histogram to one bin per power of two of |score|, so the
in-process audit (`run_audit`, which bins the same scores the same way) and the Beam job give the same
record exactly. A histogram, not a confidence figure: it is descriptive.
"""

from __future__ import annotations

import numpy as np

from auditing.game.sweep_reduce import BinSpec, bin_index
from auditing.records.game import ScoreHistogram

# Display window: one bin per octave 2**e <= |score| < 2**(e+1) for e in [LOW, HIGH); below goes to the
# first bin (0 included), above to the last.
DISPLAY_LOW_EXPONENT = -24
DISPLAY_HIGH_EXPONENT = 6


def display_bin_of_fine(spec: BinSpec) -> np.ndarray:
    """For every fine bin of `spec`, its display bin (0 = below 2**LOW, then one per octave, last = above)."""
    fine = np.arange(spec.num_bins)
    exponent = spec.min_exponent + ((fine - 1) >> spec.mantissa_bits)
    display = np.clip(exponent - DISPLAY_LOW_EXPONENT + 1, 0, DISPLAY_HIGH_EXPONENT - DISPLAY_LOW_EXPONENT + 1)
    display[0] = 0  # underflow (0 and anything below the spec's window)
    display[-1] = DISPLAY_HIGH_EXPONENT - DISPLAY_LOW_EXPONENT + 1  # overflow
    return display


def coarsen(rows, correct, spec: BinSpec) -> ScoreHistogram:
    """The display record from a fine histogram (rows and correct guesses per `spec` bin) of repetition 0.

    edges: the octave edges 2**LOW .. 2**HIGH; bin i holds |score| in [edges[i-1], edges[i]) with bin 0 below
    edges[0] (|score| = 0 included) and the last bin at or above edges[-1].
    """
    rows = np.asarray(rows, dtype=np.int64)
    correct = np.asarray(correct, dtype=np.int64)
    display = display_bin_of_fine(spec)
    size = DISPLAY_HIGH_EXPONENT - DISPLAY_LOW_EXPONENT + 2
    out_rows = np.bincount(display, weights=rows, minlength=size).astype(np.int64)
    out_correct = np.bincount(display, weights=correct, minlength=size).astype(np.int64)
    edges = tuple(float(2.0 ** e) for e in range(DISPLAY_LOW_EXPONENT, DISPLAY_HIGH_EXPONENT + 1))
    return ScoreHistogram(repetition=0, statistic="|score| of the released label (attack confidence)", edges=edges,
                          rows=tuple(out_rows.tolist()), correct=tuple(out_correct.tolist()))


def score_histogram(scores, correct, spec: BinSpec | None = None) -> ScoreHistogram:
    """The display record from one repetition's per-row scores and correctness (in-process path)."""
    spec = spec or BinSpec()
    bins = bin_index(np.asarray(scores, dtype=np.float64), spec)
    rows = np.bincount(bins, minlength=spec.num_bins)
    hits = np.bincount(bins[np.asarray(correct, dtype=bool)], minlength=spec.num_bins)
    return coarsen(rows, hits, spec)
