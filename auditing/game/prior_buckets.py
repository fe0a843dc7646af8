"""The compiled steps of `auditing.game.prior_histogram.PriorHistogram.from_probabilities`: the float32 operations
of `PriorHistogram.bucket_of` before and after numpy's own log (which stays numpy's, so the buckets are the same),
in two passes instead of ten. A module of its own so that reading a result does not import numba."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def odds32(p, out):
    """`PriorHistogram.bucket_of`'s first steps: x / (1 - x) in float32, x the probability rounded to float32."""
    one = np.float32(1.0)
    for i in range(p.size):
        x = np.float32(p[i])
        out[i] = x / (one - x)


@njit(cache=True, error_model="numpy")
def count_buckets(log_odds, low, inv_width, interior, counts):
    """`PriorHistogram.bucket_of`'s last steps on float32 log-odds, counted: floor((l - LOW) / WIDTH) in float32,
    NaN and +inf to the overflow bucket, -inf to the underflow one, clipped to -1 .. INTERIOR, plus 1."""
    for i in range(log_odds.size):
        v = np.floor((log_odds[i] - low) * inv_width)
        if v != v or v > interior:
            b = interior
        elif v < -1:
            b = -1
        else:
            b = np.int64(v)
        counts[b + 1] += 1
