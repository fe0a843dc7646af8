"""The run report's "Evidence across nights" panel: the model family's anytime-valid test (docs/soundness.md
section 10), with the running evidence per night against the flag line 1/alpha on a log axis."""

from __future__ import annotations

import math

from auditing.sinks.report import svg
from auditing.sinks.report.svg import esc
from auditing.verdict.family_evidence import FamilyEvidence

MEANING = ("The solid line is the check's evidence: each night's capacity check gives an e-value for its own null "
           "(the model at its claim, under the check's assumption T_u, with no kappa), its exact test's p-value "
           "calibrated as 1 / (2 sqrt(p)); their product stays valid however often it is looked at (Ville's "
           "inequality). The family is confirmed the first night it reaches 1/alpha while the kappa-based evidence "
           "(dashed, secondary: the likelihood ratio of the nights' guesses against the claim at each night's "
           "kappa) does too, so a confirmation needs both tests wrong. The kappa-based evidence alone is not a "
           "reason to act: it holds only if kappa covers every night's reference, and a small misfit beyond it "
           "compounds across nights. A night counts only when its claim is finite and pure (delta 0) and its coins "
           "were keyed by its own day; its first run counts. See docs/soundness.md section 10.")


def _log10(value: float) -> float:
    return math.log10(max(value, 1e-300)) if math.isfinite(value) else 308.0


def family_chart(family: FamilyEvidence) -> str:
    """log10 of both running evidences per night (in the order computed), with the line log10(1/alpha)."""
    check = [_log10(n.check_evidence) for n in family.nights]
    kappa = [_log10(n.evidence) for n in family.nights]
    flag = math.log10(1.0 / family.alpha)
    lo, hi = min([*check, *kappa, 0.0]), max([*check, *kappa, flag])
    # half a night of room on each side, and room at the top for the legend (three entries, 18 px each): no point
    # on the frame or under the legend
    usable = 260 - svg.Plot.top - svg.Plot.bottom
    top = hi + 0.3 + (hi + 0.3 - (lo - 0.3)) * (3 * 18 + 12) / (usable - 3 * 18 - 12)
    plot = svg.Plot(svg.LinearScale(-0.5, max(1.0, len(check) - 1.0) + 0.5), svg.LinearScale.nice(lo - 0.3, top),
                    height=260)
    points = [(float(i), v) for i, v in enumerate(check)]
    parts = [svg.open_svg(plot, "family evidence across nights", "family-chart"),
             svg.axes(plot, x_label="night (in the order computed)", y_label="log10 evidence"),
             svg.hline(plot, flag, "family-flag-line", f"confirmation: 1/alpha = {1 / family.alpha:g}"),
             svg.polyline(plot, [(float(i), v) for i, v in enumerate(kappa)], "family-kappa-line"),
             svg.polyline(plot, points, "family-line")]
    for (x, y), night in zip(points, family.nights, strict=True):
        why = night.check_reason or night.reason
        parts.append(svg.marker(plot, x, y, "family-confirmed" if night.confirmed else "family-point",
                                f"{night.partition_date.isoformat()}: check e-value {night.check_e_value:.3g}, "
                                f"check evidence {night.check_evidence:.3g}; kappa-based {night.evidence:.3g}"
                                + (f" ({why})" if why else "")))
    parts.append(svg.legend(plot, [("family-line", "the check's evidence (kappa-free; confirms)"),
                                   ("family-kappa-line", "kappa-based evidence (secondary)"),
                                   ("family-flag-line", f"confirmation at 1/alpha = {1 / family.alpha:g}")]))
    parts.append(svg.close_svg())
    return "".join(parts)


def family_panel(family: FamilyEvidence | None) -> str:
    """The <section id="family"> of the run report (a sentence when the family's test is not known)."""
    head = "<section class=\"card\" id=\"family\"><h2>Evidence across nights</h2>"
    if family is None or not family.nights:
        return (head + "<p class=\"missing\">No family evidence for this run: a control, a guardrail or re-judged "
                "verdict, or a night whose warehouse could not be read.</p></section>")
    this = family.nights[-1]
    return (head + f"<p class=\"family-sentence\"><strong>{esc(family.sentence())}</strong></p>"
            f"{family_chart(family)}<p class=\"caption\">{esc(MEANING)} The last night shown: "
            f"{esc(this.partition_date.isoformat())}, check e-value {this.check_e_value:.3g}.</p></section>")
