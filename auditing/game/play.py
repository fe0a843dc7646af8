"""The observational label-inference game (paper Algorithm 2, Sec. 6.2), one repetition at a time.

For every example i with public features x_i and training label y0_i:
  1. a counterfactual label y1_i ~ Multinoulli(M'(x_i)) is drawn from the reference (proxy) model;
  2. a fair bit b_i ~ Bernoulli(1/2) chooses the released label y^{b_i} (b = 0: the training label);
  3. the attacker scores (M(x_i)[y^b], M'(x_i)[y^b]) and guesses b' = 0 where the score is > 0, else 1;
  4. it guesses only on the c' examples with the largest |score| (the sweep in `auditing.game.sweep`).

All randomness is keyed by (seed, repetition, row_id) through `auditing.game.keyed_random`, so a repetition is a
pure per-row function: chunking, ordering or distributing rows never changes any draw. The audit passes its game's
draw seed (`auditing.game.config.GameConfig.draw_seed`: the seed mixed with the night audited, if any). Memory is O(n) per
repetition: callers loop over repetitions and never hold R x n arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from auditing.game.keyed_random import STREAM_BIT, STREAM_COUNTERFACTUAL, keyed_uniform
from auditing.game.scores import ScoreFunction
from labeldp.errors import LabelDPInputError, mention

# Rows whose probabilities sum to 1 within this tolerance are accepted (float32 model outputs included).
SUM_TOLERANCE = 1e-4


def as_class_probabilities(values, name: str, n: int | None = None, n_from: str = "the labels") -> np.ndarray:
    """Validates model outputs and returns an (n, k) float64 array of class probabilities.

    A 1-D array is a binary model's probability of class 1; a 2-D array (or a sequence of equal-length rows)
    holds one column per class. Errors name the argument and count the bad rows.
    """
    return _checked_probabilities(values, name, n, n_from)[0]


def _checked_probabilities(values, name: str, n: int | None, n_from: str) -> tuple[np.ndarray, int]:
    """`as_class_probabilities`'s array and its count of certain rows (`certain_count`), from one pass."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise LabelDPInputError(f"{name}: cannot read as numbers ({exc})") from None
    if arr.ndim not in (1, 2):
        raise LabelDPInputError(f"{name}: expected a 1-D (binary) or 2-D (n x classes) array; got {arr.ndim} dims")
    if n is not None and arr.shape[0] != n:
        raise LabelDPInputError(f"{name}: has {arr.shape[0]} rows; expected {n}, the number of rows in {n_from}")
    if arr.ndim == 1:  # a binary model's class-1 probabilities: stacked as [1 - p, p] and checked in one pass
        stacked = np.empty((arr.shape[0], 2))
        nan_rows, out_of_range, certain = _binary_rows(arr, stacked)
        _refuse_bad_rows(name, nan_rows, out_of_range)
        return stacked, int(certain)
    if arr.shape[1] < 2:
        raise LabelDPInputError(f"{name}: needs at least 2 classes; got {arr.shape[1]} column(s)")
    nan_rows, out_of_range, certain = _row_flags(np.ascontiguousarray(arr)) if arr.shape[0] else (0, 0, 0)
    _refuse_bad_rows(name, nan_rows, out_of_range)
    bad_sum = int((np.abs(arr.sum(axis=1) - 1.0) > SUM_TOLERANCE).sum())
    if bad_sum:
        raise LabelDPInputError(
            f"{name}: {bad_sum} row(s) do not sum to 1 (tolerance {SUM_TOLERANCE:g})"
        )
    return arr, int(certain)


def _refuse_bad_rows(name: str, nan_rows: int, out_of_range: int) -> None:
    if nan_rows:
        raise LabelDPInputError(f"{name}: {nan_rows} row(s) contain NaN")
    if out_of_range:
        raise LabelDPInputError(f"{name}: {out_of_range} row(s) have probabilities outside [0, 1]")


@njit(cache=True, parallel=True)
def _binary_rows(p, out):
    """A binary model's class-1 probabilities as the (n, 2) rows [1 - p, p] (the doubles of numpy's ``1.0 - p``),
    written to ``out``, with `_row_flags`'s three counts of those rows, in one pass."""
    nan_rows = 0
    out_rows = 0
    certain = 0
    for i in prange(p.size):
        v1 = p[i]
        v0 = 1.0 - v1
        out[i, 0] = v0
        out[i, 1] = v1
        has_nan = v0 != v0 or v1 != v1
        nan_rows += has_nan
        out_rows += (not has_nan) and (v0 < 0.0 or v0 > 1.0 or v1 < 0.0 or v1 > 1.0)
        certain += v0 <= 0.0 or v0 >= 1.0 or v1 <= 0.0 or v1 >= 1.0
    return nan_rows, out_rows, certain


@njit(cache=True)
def _row_flags(p):
    """Per-row checks of an (n, k) array in one pass: how many rows hold a NaN, how many hold no NaN but a value
    outside [0, 1], and how many are certain (a value <= 0 or >= 1: `certain_rows`). The counts of the numpy
    expressions for each check, without an (n, k) temporary per check."""
    n, k = p.shape
    nan_rows = 0
    out_rows = 0
    certain = 0
    for i in range(n):
        has_nan = 0
        has_out = 0
        is_certain = 0
        for j in range(k):
            v = p[i, j]
            if v != v:
                has_nan = 1
            elif v < 0.0 or v > 1.0:
                has_out = 1
            if v <= 0.0 or v >= 1.0:
                is_certain = 1
        nan_rows += has_nan
        out_rows += has_out * (1 - has_nan)
        certain += is_certain
    return nan_rows, out_rows, certain


@njit(cache=True)
def _row_checks(p, tolerance, bad, certain, empty):
    """Per row of an (n, k) array, in one pass: ``bad`` (a value NaN, +-inf, below 0 or above 1, or the sum off 1
    by more than ``tolerance``), ``certain`` (a value <= 0 or >= 1) and ``empty`` (every value NaN)."""
    n, k = p.shape
    for i in range(n):
        off = False
        sure = False
        nans = 0
        rest = 0.0
        for j in range(k):
            v = p[i, j]
            if v != v:
                nans += 1
                off = True
            elif v < 0.0 or v > 1.0:
                off = True
            if v <= 0.0 or v >= 1.0:
                sure = True
            if j > 0:
                rest += v
        bad[i] = off or not (abs((p[i, 0] + rest) - 1.0) <= tolerance)
        certain[i] = sure
        empty[i] = nans == k


def probability_row_checks(p: np.ndarray, tolerance: float = SUM_TOLERANCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bad, certain, empty) boolean rows of an (n, k) float64 array: rows no probabilistic classifier outputs
    (NaN or +-inf, a value outside [0, 1], or not summing to 1 within ``tolerance``: the checks of
    `as_class_probabilities`), rows certain of a class (`certain_rows`), rows without any prediction (all NaN).
    Equal to the numpy expressions of each: compiled in one pass for a binary model's two columns, whose sum has one
    order; numpy otherwise, whose order of the additions in ``p.sum(axis=1)`` depends on k and on the memory layout
    (tests/auditing/game/test_sweep.py)."""
    n, k = p.shape
    if k != 2:
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(p).all(axis=1) | (p < 0.0).any(axis=1) | (p > 1.0).any(axis=1)
            bad |= ~(np.abs(p.sum(axis=1) - 1.0) <= tolerance)
        return bad, certain_rows(p), np.isnan(p).all(axis=1)
    bad, certain, empty = np.empty(n, bool), np.empty(n, bool), np.empty(n, bool)
    _row_checks(np.ascontiguousarray(p, dtype=np.float64), float(tolerance), bad, certain, empty)
    return bad, certain, empty


def certain_count(p: np.ndarray) -> int:
    """How many rows of an (n, k) probability array put probability exactly 0 (hence 1 elsewhere) on some class
    (the rows of `certain_rows`, counted in one pass)."""
    p = np.ascontiguousarray(p, dtype=np.float64)
    return int(_row_flags(p)[2]) if p.shape[0] else 0


def certain_rows(p: np.ndarray) -> np.ndarray:
    """Rows of an (n, k) probability array that put probability exactly 0 (hence 1 elsewhere) on some class."""
    return (p <= 0.0).any(axis=1) | (p >= 1.0).any(axis=1)


def as_reference_probabilities(values, name: str, n: int | None = None, n_from: str = "the labels") -> np.ndarray:
    """`as_class_probabilities` for the reference M', which must also give every class a probability strictly
    between 0 and 1: a reference that is certain of a row's label has an infinite likelihood ratio against a
    true label law that is not (|log D'(y|x) - log D(y|x)| = inf), so no kappa covers it and the counterfactual
    label of that row always equals the certain class (docs/soundness.md)."""
    arr, certain = _checked_probabilities(values, name, n, n_from)
    if certain:
        raise LabelDPInputError(
            f"{name}: {certain} row(s) give a class probability of exactly 0 or 1; a reference must not be certain "
            "of any label (an infinite likelihood ratio, which no kappa covers). Clip the reference to "
            f"[p, 1 - p] before auditing, with {mention('kappa')} (in a plan: audit.kappa) at least the largest "
            "|log| ratio that clipping can hide, or drop those rows", field=name)
    return arr


def as_labels(values, num_classes: int, name: str = "labels") -> np.ndarray:
    """Validates training labels as integers in [0, num_classes)."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise LabelDPInputError(f"{name}: expected a 1-D array; got {arr.ndim} dims")
    if arr.dtype.kind == "f":
        bad = int((~np.isfinite(arr) | (arr != np.round(arr))).sum())
        if bad:
            raise LabelDPInputError(f"{name}: {bad} row(s) are not whole numbers (NaN or fractional)")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iub":
        raise LabelDPInputError(f"{name}: expected integer class labels; got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    bad = int(((arr < 0) | (arr >= num_classes)).sum())
    if bad:
        raise LabelDPInputError(f"{name}: {bad} row(s) are outside the classes 0..{num_classes - 1}")
    return arr


def duplicate_count(ids: np.ndarray) -> int:
    """How many values of ``ids`` repeat an earlier one (n minus the number of distinct values).

    Row ids are often already increasing (a day's rows in key order): one pass checks that, and only ids that
    are not increasing are sorted (a sorted copy; equal values are then neighbours).
    """
    if ids.size < 2:
        return 0
    if bool(np.all(ids[1:] > ids[:-1])):
        return 0
    ordered = np.sort(ids)
    return int(np.count_nonzero(ordered[1:] == ordered[:-1]))


def as_row_ids(values, n: int, name: str = "row_ids") -> np.ndarray:
    """Validates row identities: n unique integers (they key the game's randomness)."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise LabelDPInputError(f"{name}: expected {n} values; got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise LabelDPInputError(f"{name}: expected integers; got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    duplicates = duplicate_count(arr)
    if duplicates:
        raise LabelDPInputError(f"{name}: {duplicates} duplicate value(s); each row needs its own identity")
    return arr


@dataclass(frozen=True)
class GameRows:
    """One repetition's per-row outcome: the attack score of the released label and whether b' = b."""

    scores: np.ndarray  # float64, attack score s(x, y^b)
    correct: np.ndarray  # bool, the attacker's guess b' equals the secret bit b
    released: np.ndarray | None = None  # int64, the released label y^b (None where a caller did not keep it)


def sample_counterfactual(p_reference: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """y1 ~ Multinoulli(M'(x)) by inverse CDF on keyed uniforms (vectorized over rows)."""
    if p_reference.shape[1] == 2:
        return (uniforms < p_reference[:, 1]).astype(np.int64)
    cdf = np.cumsum(p_reference, axis=1)
    # Normalise the last column to exactly 1 so float round-off never yields an out-of-range class.
    cdf[:, -1] = 1.0
    return (cdf <= uniforms[:, None]).sum(axis=1).astype(np.int64)


def secret_bits_and_released(p_reference: np.ndarray, labels: np.ndarray, row_ids: np.ndarray, *, seed: int,
                             repetition: int) -> tuple[np.ndarray, np.ndarray]:
    """(b, y^b) of Algorithm 2 steps 1-2 for one repetition: the secret bit (1: the released label is the
    counterfactual y1 ~ M'(x)) and the released label, from the same keyed draws as `play_repetition`
    (for ``--write-scored``; tests/pipelines/scoring/test_beam_scoring.py checks they reproduce the game's scores)."""
    y1 = sample_counterfactual(p_reference, keyed_uniform(seed, repetition, STREAM_COUNTERFACTUAL, row_ids))
    bit = keyed_uniform(seed, repetition, STREAM_BIT, row_ids) < 0.5
    return bit, np.where(bit, y1, labels)


def play_repetition(
    p_target: np.ndarray,
    p_reference: np.ndarray,
    labels: np.ndarray,
    row_ids: np.ndarray,
    *,
    seed: int,
    repetition: int,
    score: ScoreFunction,
) -> GameRows:
    """Plays one repetition of Algorithm 2 on already-validated arrays (see `as_class_probabilities`).

    Pure per-row function: rows can be split into any chunks and the outputs concatenated.
    """
    y1 = sample_counterfactual(p_reference, keyed_uniform(seed, repetition, STREAM_COUNTERFACTUAL, row_ids))
    bit = keyed_uniform(seed, repetition, STREAM_BIT, row_ids) < 0.5  # True: the released label is y1
    released = np.where(bit, y1, labels)
    rows = np.arange(labels.shape[0])
    s = np.asarray(score(p_target[rows, released], p_reference[rows, released]), dtype=np.float64)
    if s.shape != labels.shape:
        raise LabelDPInputError(f"score function returned shape {s.shape}; expected {labels.shape}")
    if np.isnan(s).any():
        raise LabelDPInputError(f"score function returned NaN for {int(np.isnan(s).sum())} row(s)")
    guess_counterfactual = ~(s > 0)  # b' = 0 where s > 0, else 1
    return GameRows(scores=s, correct=guess_counterfactual == bit, released=released)
