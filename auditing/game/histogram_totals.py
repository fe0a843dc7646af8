"""The compiled step of `auditing.game.sweep_reduce.boundary_bins`: a histogram's descending totals and its checks in
one pass. A module of its own so that reading a result (which imports sweep_reduce for its bins) does not import
numba."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def descending_totals(rows, correct, cum_rows, cum_correct):
    """cum_rows[t], cum_correct[t]: the totals of the top t + 1 bins of a histogram (bins visited from the last
    down), in one pass that also checks 0 <= correct <= rows in every bin (returned: whether all hold)."""
    n = rows.size
    total_rows = np.int64(0)
    total_correct = np.int64(0)
    valid = True
    for t in range(n):
        r = rows[n - 1 - t]
        c = correct[n - 1 - t]
        valid &= (c >= 0) & (c <= r)
        total_rows += r
        total_correct += c
        cum_rows[t] = total_rows
        cum_correct[t] = total_correct
    return valid
