"""The records the game produces and the result, the verdict and the sinks read: repetition 0's curve and
split halves, its |score| histogram, its attack curve and a control's expected curve, and the names of the
reference corrections a game can be played on.

Data only: this module imports nothing else from auditing, so the game (which writes these records) and the
result and the verdict (which hold and read them) all sit above it. Stored through `labeldp.codec`.
"""

from __future__ import annotations

from dataclasses import dataclass

from labeldp.stored import NUMBER, stored

# How the reference M' is corrected on the day's held-out rows before the game (pipelines/reference/recalibration.py):
# `boost` (a few regularized boosting rounds from M''s logits, able to learn feature-dependent drift) or
# `none` (the paper's raw M'). The core plays the game on whatever reference it is given; the label is part of
# the game's configuration because it changes the counts.
REFERENCE_CALIBRATIONS = ("boost", "none")


@dataclass(frozen=True)
class CurvePoint:
    """One grid point of repetition 0's sweep: c' guesses, the correct ones, and the bound the point gives."""

    guesses: int
    correct: int
    epsilon_lower_bound: float


@dataclass(frozen=True)
class HalfCounts:
    """One keyed half of repetition 0: its rows m and, per grid point, guesses and correct guesses."""

    m: int
    guesses: tuple[int, ...]
    correct: tuple[int, ...]


@dataclass(frozen=True)
class SplitHalves:
    """Both keyed halves of repetition 0, for a strategy that selects on one half and bounds on the other, so
    that claim-dependent figures (auditing.verdict.robustness) can redo the selection at another kappa."""

    selection: HalfCounts
    bound: HalfCounts


@dataclass(frozen=True)
class ScoreHistogram:
    """Repetition 0's |score| per octave with the correct guesses in each (auditing.game.score_histogram): bin i
    holds |score| in [edges[i-1], edges[i]), bin 0 below edges[0] (0 included), the last at or above edges[-1].
    Descriptive, not a confidence figure."""

    repetition: int
    statistic: str
    edges: tuple[float, ...]
    rows: tuple[int, ...]
    correct: tuple[int, ...]


# The attack curve's stored figures' comments (descriptive, never a bound on epsilon).
_ROC = "attack ROC (descriptive, not a bound on epsilon): "
_TPR = _ROC + "largest TPR among the achievable points with FPR <= {} (positive: the training label was released)"
_AUROC = _ROC + "area under the empirical ROC of the signed score, ties within a bin counted one half"
_LOWER = "; lower end of its 95% bootstrap interval"
_UPPER = "; upper end of its 95% bootstrap interval"


@dataclass(frozen=True)
class AttackCurve:
    """Repetition 0's label-inference attack as a classifier of the coin (auditing.game.attack_curve,
    docs/attack-curve.md): a positive is a row whose coin b = 0 (the released label is the training label), ranked
    by the signed score s. ``positives`` / ``negatives``: rows per signed-score bin, bins ascending in s; bin i lies
    between edges[i-1] and edges[i] (bin 0 below edges[0], the last above edges[-1]); ``edges`` are the octaves of
    ``ScoreHistogram`` mirrored around 0, a bin never straddles 0 and s = 0 lies left of it (the guess b' = 1).

    The figures are the raw empirical ROC over thresholds at those edges (achievable points, not the convex hull):
    the largest TPR among points whose FPR is at most 0.1% / 1%, and the AUROC by the trapezoid rule (ties within a
    bin count one half); None when there is no positive or no negative. ``*_lower`` / ``*_upper``: percentile
    bootstrap interval at ``bootstrap_confidence`` from ``bootstrap_resamples`` seeded multinomial resamples of
    the per-bin counts (``bootstrap_seed``, derived from the audit's seed). Descriptive: how well this attack
    separates the labels, never a bound on epsilon."""

    repetition: int
    statistic: str
    edges: tuple[float, ...]
    positives: tuple[int, ...]
    negatives: tuple[int, ...]
    # stored in the warehouse as attack_<figure>[_lower|_upper] (schema version 6); NULL on rows written before it
    # and where the curve has no positive or negative
    tpr_at_fpr_0_001: float | None = stored(NUMBER, _TPR.format("0.1%"), column="attack_tpr_at_fpr_0_001", high=1.0)
    tpr_at_fpr_0_001_lower: float | None = stored(NUMBER, _TPR.format("0.1%") + _LOWER,
                                                  column="attack_tpr_at_fpr_0_001_lower", high=1.0)
    tpr_at_fpr_0_001_upper: float | None = stored(NUMBER, _TPR.format("0.1%") + _UPPER,
                                                  column="attack_tpr_at_fpr_0_001_upper", high=1.0)
    tpr_at_fpr_0_01: float | None = stored(NUMBER, _TPR.format("1%"), column="attack_tpr_at_fpr_0_01", high=1.0)
    tpr_at_fpr_0_01_lower: float | None = stored(NUMBER, _TPR.format("1%") + _LOWER,
                                                 column="attack_tpr_at_fpr_0_01_lower", high=1.0)
    tpr_at_fpr_0_01_upper: float | None = stored(NUMBER, _TPR.format("1%") + _UPPER,
                                                 column="attack_tpr_at_fpr_0_01_upper", high=1.0)
    auroc: float | None = stored(NUMBER, _AUROC, column="attack_auroc", high=1.0)
    auroc_lower: float | None = stored(NUMBER, _AUROC + _LOWER, column="attack_auroc_lower", high=1.0)
    auroc_upper: float | None = stored(NUMBER, _AUROC + _UPPER, column="attack_auroc_upper", high=1.0)
    bootstrap_confidence: float
    bootstrap_resamples: int
    bootstrap_seed: int

    # The figures and their intervals, in the order the record stores them.
    FIGURES = ("tpr_at_fpr_0_001", "tpr_at_fpr_0_01", "auroc")

    @property
    def rows_positive(self) -> int:
        return sum(self.positives)

    @property
    def rows_negative(self) -> int:
        return sum(self.negatives)


@dataclass(frozen=True)
class ExpectedCorrect:
    """A control's expected correct guesses at each grid point of repetition 0 (auditing.game.expected), which
    its floor reads."""

    guesses: tuple[int, ...]
    correct: tuple[float, ...]
