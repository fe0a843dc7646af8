"""The run report's trust sections: the untrusted-night banner and, on a control's own page, what the control
checks and whether it passed."""

from __future__ import annotations

from collections.abc import Mapping

from auditing.report.html import fmt_eps, fmt_g, fmt_int, fmt_pct
from auditing.report.html import table as _table
from auditing.report.reference_panel import is_legacy, misfit_sentence, odds_factor, reference_banner_headline
from auditing.report.svg import esc


def trust_sections(trust: Mapping | None, reference_check: Mapping | None = None, day: str = "D",
                   data: Mapping | None = None) -> tuple[str, str]:
    """(banner, control card) HTML: a banner when the night's verdicts are untrusted (a control failed: the
    audit itself is broken; or the label-blind control flagged the reference: it does not fit day D), and for
    a control's own page what it checks and whether it passed."""
    trust = dict(trust or {})
    banner = ""
    if trust.get("untrusted_reason"):
        headline = reference_banner_headline(reference_check, day)
        kappa = None if data is None or is_legacy(data) else float(data["kappa"])
        if headline is not None:
            lead = (f"<strong>{esc(headline)}</strong> The label-blind control flagged it "
                    f"({esc(misfit_sentence(reference_check, kappa))}), so no verdict of this night can be relied "
                    "on.")
        else:
            lead = ("<strong>UNTRUSTED: the audit itself is broken tonight.</strong> A nightly control failed, so no "
                    "verdict of this night can be relied on.")
        reason = str(trust["untrusted_reason"])
        detail = "" if headline and reason.lower().rstrip(".") in headline.lower() else (
            f" <span class=\"labels\">{esc(reason)}</span>")
        banner = f"<div class=\"banner untrusted\" id=\"untrusted\" role=\"alert\">{lead}{detail}</div>"
    control = trust.get("control")
    card = ""
    if trust.get("kind") == "control" and control:
        outcome = "passed" if control.get("passed") else "FAILED"
        what = {
            "positive": "Positive control: a synthetic model that reveals each audited row's label through randomized "
                        "response at a known ε_c (label-DP at exactly ε_c by construction). Its valid bound must "
                        "exceed a pre-registered floor (reached with ≥ 99.9% probability by a working audit at this "
                        "m) and never exceed ε_c.",
            "label-blind": "Label-blind control: a model trained like the targets but only on day D's held-out rows "
                           "that the reference correction did not use. It never saw an audited label (true ε = 0 on "
                           "the audited rows) yet knows the day's rates, so its valid bound must be 0 at the plan's "
                           "κ; a positive bound says the reference does not fit day D.",
        }.get(control.get("control"), "Negative control: a copy of the reference model M′, which never saw this "
                                      "day's labels. Its valid bound must be 0.")
        rows = [("Control", f"{esc(what)}"),
                ("Outcome", f"<span class=\"value control-{esc(outcome.lower())}\">{esc(outcome)}</span>"
                            f"<span class=\"labels\">{esc(control.get('message', ''))}</span>")]
        if control.get("misfit_kappa") is not None:
            misfit = float(control["misfit_kappa"])
            rows.append(("Measured reference misfit",
                         f"κ = {misfit:.4g}<span class=\"labels\">the smallest κ that brings this control's bound "
                         f"to 0: the reference misjudges some row's click odds by up to a factor "
                         f"{odds_factor(misfit)}</span>"))
        if control.get("floor") is not None:
            detail = control.get("floor_detail") or {}
            rows.append(("Pre-registered floor",
                         f"{fmt_eps(control['floor'])}<span class=\"labels\">bound at c′ = "
                         f"{fmt_int(detail.get('guesses'))} with the {fmt_pct(1 - float(detail.get('power', 0.95)))}"
                         f" quantile {fmt_int(detail.get('correct_quantile'))} of Binomial(c′, "
                         f"{fmt_g(detail.get('expected_rate'))}) correct guesses; ceiling ε_c = "
                         f"{fmt_eps(control.get('ceiling'))}</span>"))
        card = f"<section class=\"card\" id=\"control\"><h2>Nightly control</h2>{_table(rows)}</section>"
    return banner, card
