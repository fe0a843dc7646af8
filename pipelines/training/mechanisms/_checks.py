"""Argument checks shared by the label-DP mechanisms.

Every failure is a ``LabelDPInputError`` that names the argument, its allowed range and the value received.
"""

from __future__ import annotations

import math

import numpy as np

from labeldp.errors import LabelDPInputError


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """eps in (0, inf]; ``math.inf`` means the non-private mechanism (the identity on labels)."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be a number > 0 (or inf for no privacy); got {epsilon!r}") from None
    if math.isnan(value) or value <= 0.0:
        raise LabelDPInputError(f"{name} must be > 0 (or inf for no privacy); got {epsilon!r}")
    return value


def check_num_classes(num_classes: int, name: str = "num_classes") -> int:
    if isinstance(num_classes, bool) or int(num_classes) != num_classes or not 2 <= int(num_classes) <= 127:
        raise LabelDPInputError(f"{name} must be a whole number in 2..127; got {num_classes!r}")
    return int(num_classes)


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """Every random choice of a mechanism comes from a Generator the caller seeded (and recorded)."""
    if not isinstance(rng, np.random.Generator):
        raise LabelDPInputError(f"{name} must be a numpy.random.Generator (e.g. np.random.default_rng(seed)); "
                                f"got {type(rng).__name__}")
    return rng


def check_labels(labels: object, num_classes: int, name: str = "labels") -> np.ndarray:
    """A 1-d array of whole numbers in 0..num_classes-1, returned as int64."""
    array = np.asarray(labels)
    if array.ndim != 1:
        raise LabelDPInputError(f"{name} must be a 1-d array; got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise LabelDPInputError(f"{name} must hold integer class ids; got dtype {array.dtype}")
    array = array.astype(np.int64, copy=False)
    bad = int(np.count_nonzero((array < 0) | (array >= num_classes)))
    if bad:
        raise LabelDPInputError(f"{name}: {bad} value(s) are outside the classes 0..{num_classes - 1}")
    return array


def check_probabilities(prior: object, num_rows: int, name: str = "prior", atol: float = 1e-6) -> np.ndarray:
    """An (num_rows, k) array of rows that are probability vectors (non-negative, summing to 1 within atol).

    Rows are renormalised exactly after the check, so tiny float drift from a model's output is harmless.
    """
    array = np.asarray(prior, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] != num_rows or array.shape[1] < 2:
        raise LabelDPInputError(f"{name} must have shape (rows={num_rows}, classes>=2); got {array.shape}")
    bad = int(np.count_nonzero(~np.all(np.isfinite(array) & (array >= 0.0), axis=1)))
    if bad:
        raise LabelDPInputError(f"{name}: {bad} row(s) hold negative, NaN or infinite probabilities")
    sums = array.sum(axis=1)
    bad = int(np.count_nonzero(np.abs(sums - 1.0) > atol))
    if bad:
        raise LabelDPInputError(f"{name}: {bad} row(s) do not sum to 1 (tolerance {atol})")
    return array / sums[:, None]


def exp_neg(epsilon: float) -> float:
    """e^-eps, exactly 0 for eps = inf; the stable way to write e^eps/(e^eps + k - 1) = 1/(1 + (k-1) e^-eps)."""
    return 0.0 if math.isinf(epsilon) else math.exp(-epsilon)
