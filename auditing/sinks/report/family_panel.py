"""The run report's "Evidence across nights" panel: the model family's anytime-valid test (docs/soundness.md
section 10), with the running evidence per night against the flag line 1/alpha on a log axis."""

from __future__ import annotations

import math

from auditing.sinks.report import svg
from auditing.sinks.report.svg import esc
from auditing.verdict.family_evidence import FamilyEvidence

FAMILY_CSS = """
svg .family-line, svg g.family-line line { fill:none; stroke:var(--accent); stroke-width:2; }
svg g.family-flag-line line { stroke:var(--bad); stroke-width:1.5; stroke-dasharray:5 4; }
svg g.family-flag-line text { fill:var(--bad); font-size:11px; }
svg .family-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .family-flagged { fill:var(--bad); stroke:#fff; stroke-width:1; }
"""
MEANING = ("Each night's e-value is the likelihood ratio of its repetition-0 guesses against the claim at that "
           "night's kappa, with an alternative fixed from earlier nights; their running mixture is a test that "
           "stays valid however often it is looked at (Ville's inequality), so a flag means the nights together "
           "disprove the claims at false-alarm rate alpha, even when no single night did. It assumes every night's "
           "kappa covers its reference (a misfit beyond it compounds across nights: read the capacity check of each "
           "night), each row audited at most once in the family and fresh coins each night (keyed by the night, "
           "or, for a result without a coins night, row ids that do not repeat across days). Nights "
           "with delta > 0 or an infinite claim count as 1. See docs/soundness.md section 10.")


def family_chart(family: FamilyEvidence) -> str:
    """log10 of the running evidence per night (in the order computed), with the flag line log10(1/alpha)."""
    values = [math.log10(max(n.evidence, 1e-300)) if math.isfinite(n.evidence) else 308.0 for n in family.nights]
    flag = math.log10(1.0 / family.alpha)
    lo, hi = min([*values, 0.0]), max([*values, flag])
    plot = svg.Plot(svg.LinearScale(0.0, max(1.0, len(values) - 1.0)), svg.LinearScale.nice(lo - 0.2, hi + 0.2),
                    height=260)
    points = [(float(i), v) for i, v in enumerate(values)]
    parts = [svg.open_svg(plot, "family evidence across nights", "family-chart"),
             svg.axes(plot, x_label="night (in the order computed)", y_label="log10 evidence"),
             svg.hline(plot, flag, "family-flag-line", f"flag: 1/alpha = {1 / family.alpha:g}"),
             svg.polyline(plot, points, "family-line")]
    for (x, y), night in zip(points, family.nights, strict=True):
        parts.append(svg.marker(plot, x, y, "family-flagged" if night.flagged else "family-point",
                                f"{night.partition_date.isoformat()}: e-value {night.e_value:.3g}, evidence "
                                f"{night.evidence:.3g}" + (f" ({night.reason})" if night.reason else "")))
    parts.append(svg.legend(plot, [("family-line", "the family's evidence after each night"),
                                   ("family-flag-line", f"flag at 1/alpha = {1 / family.alpha:g}")]))
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
            f"{esc(this.partition_date.isoformat())}, e-value {this.e_value:.3g}.</p></section>")
