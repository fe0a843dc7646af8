"""Repetition 0's label-inference attack read as a classifier of the coin: its ROC curve (docs/attack-curve.md).

The game (paper Alg. 2, `auditing.game.play`) draws a fair coin b per row (b = 0: the released label is the training
label) and the attacker guesses b' = 0 where its score s > 0. Ranked by the signed score s, the rows give an ROC
curve of the attack: a positive is a row whose coin b = 0, larger s says "positive" more confidently. Each row's
coin follows from its score and its correctness, correct = (s > 0) == (b == 0), so b = 0 exactly where
(s > 0) == correct: the per-row (s, correct) that the game already reduces are enough.

The curve is the raw empirical ROC over thresholds at the edges of a signed-score histogram: the octaves of
|s| of `auditing.game.score_histogram` on each side of 0 (a bin never straddles 0, so the attack's own guess is one
of the thresholds). Only achievable points: not the convex hull, which sits above the diagonal even under the
null. Reported: the largest TPR among points whose FPR is at most 0.1% and 1%, the AUROC by the trapezoid rule
over the points (rows of one bin are ties, counted one half), the positives and the negatives, with percentile
bootstrap intervals from seeded multinomial resamples of the per-bin counts.

Both paths reduce to the same integer counts, rows per (octave of |s|, s > 0, coin b): in-process from per-row
scores (`attack_curve_from_rows`) or the compiled game (`auditing.game.kernel.SignedCounts`), and in the Beam
job from pass 1's merged counts (`attack_curve_from_outcomes`); the record is a pure function of those counts and
the game's draw seed (`auditing.game.config.GameConfig.draw_seed`: the seed and the night), so both give it byte for byte. Descriptive: how well this attack separates the labels, never a
bound on epsilon. Pure numpy.
"""

from __future__ import annotations

import numbers

import numpy as np

from auditing.game.keyed_random import STREAM_ATTACK_BOOTSTRAP, key_word
from auditing.game.score_histogram import DISPLAY_HIGH_EXPONENT, DISPLAY_LOW_EXPONENT, display_bin_of_fine
from auditing.game.sweep_reduce import BinSpec, bin_index
from auditing.records.game import AttackCurve
from labeldp.errors import LabelDPInputError

# Octaves of |s| (as the score histogram: below 2**LOW, one per power of two, at or above 2**HIGH) and signed bins.
OCTAVES = DISPLAY_HIGH_EXPONENT - DISPLAY_LOW_EXPONENT + 2
SIGNED_BINS = 2 * OCTAVES
# The FPR targets of the record's two TPR figures.
FPR_TARGETS = (0.001, 0.01)
CONFIDENCE = 0.95
RESAMPLES = 1000
STATISTIC = "signed score s of the released label; positive: coin b = 0 (the training label was released)"


def signed_edges() -> tuple[float, ...]:
    """The histogram's edges, ascending: -2**HIGH .. -2**LOW, 0, 2**LOW .. 2**HIGH (2 * OCTAVES - 1 edges)."""
    positive = [float(2.0**e) for e in range(DISPLAY_LOW_EXPONENT, DISPLAY_HIGH_EXPONENT + 1)]
    return (*(-v for v in reversed(positive)), 0.0, *positive)


def octave_of_fine(spec: BinSpec) -> np.ndarray:
    """For each bin of ``spec`` (`auditing.game.sweep_reduce.bin_index`), its octave of |s| (0 .. OCTAVES - 1)."""
    if spec.min_exponent > DISPLAY_LOW_EXPONENT or spec.max_exponent < DISPLAY_HIGH_EXPONENT:
        raise LabelDPInputError(
            f"bins: the attack curve's octaves need the window [2**{DISPLAY_LOW_EXPONENT}, 2**{DISPLAY_HIGH_EXPONENT})"
            f" inside the bins' [2**{spec.min_exponent}, 2**{spec.max_exponent})")
    return display_bin_of_fine(spec).astype(np.int64)


def outcomes_from_rows(scores, correct, spec: BinSpec | None = None) -> np.ndarray:
    """Rows per (octave of |s|, s > 0, coin b), an int64 (OCTAVES, 2, 2) array, from one repetition's per-row
    scores and correctness: b = 0 where (s > 0) == correct."""
    scores = np.asarray(scores, dtype=np.float64)
    correct = np.asarray(correct)
    if scores.ndim != 1 or correct.shape != scores.shape:
        raise LabelDPInputError(f"scores and correct must be 1-D of one length; got shapes {scores.shape} and "
                                f"{correct.shape}")
    if correct.dtype != bool:
        raise LabelDPInputError(f"correct must be booleans; got dtype {correct.dtype}")
    if np.isnan(scores).any():
        raise LabelDPInputError(f"scores: {int(np.isnan(scores).sum())} NaN value(s)")
    spec = spec or BinSpec()
    octave = octave_of_fine(spec)[bin_index(scores, spec)]
    positive = scores > 0
    coin = positive != correct  # correct = (s > 0) == (b == 0), so b = 1 exactly where they differ
    index = (octave * 2 + positive) * 2 + coin
    return np.bincount(index, minlength=OCTAVES * 4).astype(np.int64).reshape(OCTAVES, 2, 2)


def histogram_from_outcomes(outcomes) -> tuple[np.ndarray, np.ndarray]:
    """(positives, negatives) per signed bin (ascending in s) from rows per (octave, s > 0, coin b): s <= 0 in
    octave j is bin OCTAVES - 1 - j, s > 0 in octave j is bin OCTAVES + j; coin 0 is a positive."""
    counts = _counts(outcomes, "outcomes", (OCTAVES, 2, 2))
    positives = np.concatenate([counts[::-1, 0, 0], counts[:, 1, 0]])
    negatives = np.concatenate([counts[::-1, 0, 1], counts[:, 1, 1]])
    return positives, negatives


def roc_points(positives, negatives) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of the achievable points, from (0, 0) (no row called positive) to (1, 1): one point per
    threshold at a bin edge, calling positive the rows of every bin above it. Works on stacked histograms
    (leading axes), e.g. bootstrap resamples."""
    positives, negatives = np.asarray(positives, dtype=np.int64), np.asarray(negatives, dtype=np.int64)
    tp, fp = _above(positives), _above(negatives)
    with np.errstate(invalid="ignore", divide="ignore"):
        return fp / fp[..., :1], tp / tp[..., :1]


def figures(positives, negatives) -> dict[str, np.ndarray]:
    """The record's figures (`AttackCurve.FIGURES`) of per-bin counts, stacked histograms allowed.

    tpr_at_fpr_F: the largest TPR among achievable points whose FPR does not exceed F (the point (0, 0) always
    qualifies). auroc: the trapezoid rule over the achievable points, i.e. P(s+ > s-) + P(same bin) / 2 for a
    random positive and negative, from exact integer sums. NaN where there is no positive or no negative.
    """
    positives, negatives = np.asarray(positives, dtype=np.int64), np.asarray(negatives, dtype=np.int64)
    tp, fp = _above(positives), _above(negatives)
    p, n = tp[..., 0], fp[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        fpr, tpr = fp / n[..., None], tp / p[..., None]
        out = {f"tpr_at_fpr_{str(target).replace('.', '_')}": np.where(fpr <= target, tpr, 0.0).max(axis=-1)
               for target in FPR_TARGETS}
        # Each negative beats the positives of higher bins and ties the positives of its own bin (one half).
        pairs = (negatives * (2 * tp[..., 1:] + positives)).sum(axis=-1)
        out["auroc"] = pairs / (2.0 * p * n)
    empty = (p == 0) | (n == 0)
    return {name: np.where(empty, np.nan, value) for name, value in out.items()}


def bootstrap_seed(seed: int) -> int:
    """The bootstrap's seed, derived from the game's draw seed (53 bits: exact in any JSON reader)."""
    return int(key_word(int(seed), 0, STREAM_ATTACK_BOOTSTRAP) >> np.uint64(11))


def attack_curve(positives, negatives, *, seed: int, resamples: int = RESAMPLES,
                 confidence: float = CONFIDENCE) -> AttackCurve:
    """The record of per-bin positives and negatives (``SIGNED_BINS`` each, ascending in s): the figures and
    their percentile bootstrap intervals. The bootstrap resamples the positives' and the negatives' per-bin
    counts, each a multinomial of its own total (a numpy Generator seeded by `bootstrap_seed` of the audit's
    ``seed``), and recomputes the figures; figures and intervals are None without a positive or a negative."""
    positives = _counts(positives, "positives", (SIGNED_BINS,))
    negatives = _counts(negatives, "negatives", (SIGNED_BINS,))
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise LabelDPInputError(f"seed must be a whole number >= 0; got {seed!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, numbers.Integral) or resamples < 1:
        raise LabelDPInputError(f"resamples must be a whole number >= 1; got {resamples!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) or not 0 < confidence < 1:
        raise LabelDPInputError(f"confidence must be a number in (0, 1); got {confidence!r}")
    point = figures(positives, negatives)
    values = {}
    p, n = int(positives.sum()), int(negatives.sum())
    derived = bootstrap_seed(seed)
    if p and n:
        rng = np.random.default_rng(derived)
        drawn = figures(rng.multinomial(p, positives / p, size=int(resamples)),
                        rng.multinomial(n, negatives / n, size=int(resamples)))
        alpha = 1.0 - float(confidence)
        for name in AttackCurve.FIGURES:
            lower, upper = np.quantile(drawn[name], [alpha / 2, 1 - alpha / 2])
            values.update({name: float(point[name]), f"{name}_lower": float(lower), f"{name}_upper": float(upper)})
    else:
        values = {f"{name}{part}": None for name in AttackCurve.FIGURES for part in ("", "_lower", "_upper")}
    return AttackCurve(repetition=0, statistic=STATISTIC, edges=signed_edges(),
                       positives=tuple(positives.tolist()), negatives=tuple(negatives.tolist()), **values,
                       bootstrap_confidence=float(confidence), bootstrap_resamples=int(resamples),
                       bootstrap_seed=derived)


def attack_curve_from_outcomes(outcomes, *, seed: int, resamples: int = RESAMPLES,
                               confidence: float = CONFIDENCE) -> AttackCurve:
    """The record from rows per (octave, s > 0, coin b) of repetition 0 (the Beam job's merged pass-1 counts, or
    the compiled game's, `auditing.game.kernel.signed_outcomes`)."""
    return attack_curve(*histogram_from_outcomes(outcomes), seed=seed, resamples=resamples, confidence=confidence)


def attack_curve_from_rows(scores, correct, *, seed: int, spec: BinSpec | None = None, resamples: int = RESAMPLES,
                           confidence: float = CONFIDENCE) -> AttackCurve:
    """The record from repetition 0's per-row scores and correctness (the in-process numpy path)."""
    return attack_curve_from_outcomes(outcomes_from_rows(scores, correct, spec), seed=seed, resamples=resamples,
                                      confidence=confidence)


def _above(counts: np.ndarray) -> np.ndarray:
    """[..., t] = rows in bins t.. (t = 0 .. K, the last 0): the rows called positive at each threshold."""
    tail = np.cumsum(counts[..., ::-1], axis=-1)[..., ::-1]
    return np.concatenate([tail, np.zeros((*counts.shape[:-1], 1), dtype=tail.dtype)], axis=-1)


def _counts(values, name: str, shape: tuple[int, ...]) -> np.ndarray:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise LabelDPInputError(f"{name}: cannot read as counts ({exc})") from None
    if array.shape != shape:
        raise LabelDPInputError(f"{name}: expected counts of shape {shape}; got {array.shape}")
    if array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and np.all(np.isfinite(array))
                                             and np.all(array == np.round(array))):
        raise LabelDPInputError(f"{name}: counts must be whole numbers; got dtype {array.dtype}")
    array = array.astype(np.int64)
    if np.any(array < 0):
        raise LabelDPInputError(f"{name}: counts must be >= 0")
    return array


__all__ = [
    "FPR_TARGETS", "OCTAVES", "SIGNED_BINS", "attack_curve", "attack_curve_from_outcomes", "attack_curve_from_rows",
    "bootstrap_seed", "figures", "histogram_from_outcomes", "octave_of_fine", "outcomes_from_rows", "roc_points",
    "signed_edges",
]
