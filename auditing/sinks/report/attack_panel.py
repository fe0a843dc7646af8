"""The run report's attack-curve panel: repetition 0's label-inference attack as a classifier of the coin.

A ROC chart on a log FPR axis (1e-4 to 1) with the chance diagonal, and one sentence giving TPR at FPR <= 0.1% and
1% and the AUROC with their bootstrap intervals, from the result's ``attack_curve`` (`auditing.game.attack_curve`,
docs/attack-curve.md). Descriptive: how well this attack separates the labels, never a bound on epsilon.
"""

from __future__ import annotations

import numpy as np

from auditing.game.attack_curve import roc_points
from auditing.records.game import AttackCurve
from auditing.result import AuditResult
from auditing.sinks.report import svg
from auditing.sinks.report.svg import esc

LABEL = "descriptive: how well this attack separates the labels; not a bound on epsilon"
# The chart's FPR axis; a point at FPR 0 is drawn on its left edge.
FPR_LOW = 1e-4
_TARGETS = (("tpr_at_fpr_0_001", 0.001, "0.1%"), ("tpr_at_fpr_0_01", 0.01, "1%"))


def _pct(value: float) -> str:
    return f"{100 * value:.3g}%"


def _interval(curve: AttackCurve, name: str, fmt) -> str:
    lower, upper = getattr(curve, f"{name}_lower"), getattr(curve, f"{name}_upper")
    return f"{fmt(getattr(curve, name))} ({fmt(lower)} – {fmt(upper)})"


def attack_sentence(curve: AttackCurve) -> str:
    """TPR at FPR <= 0.1% and 1% and the AUROC with their bootstrap intervals, the rows, and the label."""
    confidence = f"{100 * curve.bootstrap_confidence:g}%"
    return (f"Repetition 0, {confidence} bootstrap intervals in parentheses: TPR at FPR ≤ 0.1% "
            f"{_interval(curve, 'tpr_at_fpr_0_001', _pct)}; TPR at FPR ≤ 1% {_interval(curve, 'tpr_at_fpr_0_01', _pct)}; "
            f"AUROC {_interval(curve, 'auroc', lambda v: f'{v:.3f}')}; {curve.rows_positive:,} positives, "
            f"{curve.rows_negative:,} negatives ({LABEL}).")


def roc_chart(curve: AttackCurve) -> str:
    """The achievable ROC points (log FPR axis, FPR 0 on the left edge) joined as a staircase, the largest TPR
    at each FPR budget (a straight segment would claim points between them that no threshold reaches), the chance
    diagonal and the two TPR figures at their FPR targets."""
    fpr, tpr = roc_points(curve.positives, curve.negatives)
    points = []
    for x, y in zip(fpr[::-1].tolist(), tpr[::-1].tolist(), strict=True):  # ascending FPR
        if not points or points[-1] != (x, y):
            points.append((x, y))
    plot = svg.Plot(svg.LogScale(FPR_LOW, 1.0), svg.LinearScale(0.0, 1.0), height=320)
    chance = [(float(v), float(v)) for v in np.geomspace(FPR_LOW, 1.0, 49)]
    parts = [svg.open_svg(plot, "ROC curve of the label-inference attack", "attack-chart"),
             svg.axes(plot, x_label="false positive rate (log scale; FPR 0 on the left edge)",
                      y_label="true positive rate", y_format=lambda v: f"{100 * v:.0f}%"),
             svg.polyline(plot, chance, "attack-chance-line"),
             svg.step_line(plot, [(max(x, FPR_LOW), y) for x, y in points], "attack-roc-line")]
    for x, y in points:
        parts.append(svg.marker(plot, max(x, FPR_LOW), y, "attack-point", f"FPR {_pct(x)}, TPR {_pct(y)}",
                                radius=3))
    for name, target, text in _TARGETS:
        value = getattr(curve, name)
        parts.append(svg.marker(plot, target, value, "attack-target", f"TPR at FPR ≤ {text}: {_pct(value)}",
                                radius=5, shape="diamond"))
    parts.append(svg.legend(plot, [("attack-roc-line", "attack: largest TPR at each FPR (achievable points)"),
                                   ("attack-chance-line", "chance (TPR = FPR)"),
                                   ("attack-target", "TPR at FPR ≤ 0.1% and ≤ 1%")]))
    parts.append(svg.close_svg())
    return "".join(parts)


def attack_panel(result: AuditResult) -> str:
    """The <section id="attack"> of the run report."""
    curve = result.attack_curve
    head = "<section class=\"card\" id=\"attack\"><h2>Attack ROC (descriptive)</h2>"
    if curve is None:
        return head + "<p class=\"missing\">No attack curve was recorded for this run.</p></section>"
    if curve.auroc is None:
        return (head + f"<p class=\"missing\">No attack curve: repetition 0 has {curve.rows_positive:,} positives and "
                f"{curve.rows_negative:,} negatives.</p></section>")
    caption = (
        "Repetition 0 (the pre-registered one): a positive is a row whose coin released its training label; the "
        "attack ranks rows by its signed score (it guesses “training label” where the score is > 0). The curve is "
        "the raw empirical ROC over thresholds at the edges of a signed-score histogram (octaves of |score|): "
        "achievable points only, not their convex hull. TPR at FPR ≤ f: the largest TPR among the points whose FPR "
        "is at most f; AUROC: trapezoid rule over the points, rows of one bin counted as ties (one half). Under "
        "the game's null (a model that does not depend on the training label, a correct reference) the points lie "
        f"near the diagonal and the AUROC is 0.5 in expectation. Intervals: percentile bootstrap, {curve.bootstrap_resamples:,} seeded "
        "multinomial resamples of the per-bin counts. See docs/attack-curve.md.")
    return (head + f"<p class=\"attack-figures\"><strong>{esc(attack_sentence(curve))}</strong></p>"
            f"{roc_chart(curve)}<p class=\"caption\">{esc(caption)}</p></section>")
