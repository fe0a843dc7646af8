"""The run report's "Reference check" card, and the labels that say which assumption a figure rests on.

kappa is the audit's one assumption about the reference M': on every audited row, |log D'(y|x) - log D(y|x)|
<= kappa, i.e. M' misjudges no row's click odds by more than a factor e^kappa (docs/soundness.md, section 1
"The game and the hypothesis", condition 2 of H). The night corrects M' on a keyed share of day D's training rows before the
game (`reference_calibration` boost); the misfit that remains is judged per verdict by the capacity check (the
Trust card, `auditing.sinks.report.trust_panel`).
The check is `auditing.verdict.reference_check.ReferenceCheck`; a night written while the label-blind
control ran (retired: the capacity check replaced it) carries its figures, which this card still shows.

Results and rows written before kappa carry a total-variation ``tau`` instead; they are labelled legacy here
and their tau is never shown as a kappa.
"""

from __future__ import annotations

import math
from typing import Any

from auditing.bounds.methods import BOUND_METHODS, bound_method
from auditing.result import AuditResult
from auditing.sinks.report.svg import esc
from auditing.verdict.reference_check import ReferenceCheck

FDP_LEGACY_LABEL = "Gaussian reading (legacy; not a valid ε bound for non-Gaussian mechanisms)"
CALIBRATION_TEXT = {
    "boost": "boost: M′ corrected on day D before the game",
    "none": "none: the raw M′ (not corrected for day D)",
}
EXPLAIN_KAPPA = ("κ is the audit's one assumption about the reference M′: on every audited row, M′'s probability "
                 "of each label is within a factor e^κ of day D's true one (|log D′(y|x) − log D(y|x)| ≤ κ), so a "
                 "verdict at κ allows M′ to misjudge any row's click odds by up to that factor.")
EXPLAIN_RECALIBRATION = ("Recalibration corrects M′ (a model of an earlier day) on a keyed share of day D's "
                         "training rows, which then leave every game of the night, so that the day's drift is not "
                         "read as leakage; it is judged on rows of that share it was not fitted on. Every held-out "
                         "row is left to the capacity check.")
EXPLAIN_CHECK = ("The misfit that remains is judged per verdict by the capacity check (the Trust card): the audited "
                 "model itself, on rows of day D it never saw.")
EXPLAIN_LABEL_BLIND = ("On this night the label-blind control ran (retired since: the capacity check replaced it): a "
                       "model trained like the targets but only on held-out rows the correction did not use; a "
                       "positive valid bound at the plan's κ said the reference does not fit day D and made the "
                       "night untrusted; the smallest κ that brought its bound to 0 was the night's measured misfit.")


def odds_factor(kappa: float) -> str:
    """e^kappa as a reader's factor: 3 significant digits, or 1 + kappa when that would print as 1."""
    kappa = float(kappa)
    if kappa >= 0.005 or kappa == 0.0:
        return f"{math.exp(kappa):.3g}"
    return f"1 + {kappa:.2g}"


def method_label(result: AuditResult) -> str:
    """The bound method's label (binomial; f-DP on the (eps, delta) curve)."""
    return bound_method(result.bound.method).label if result.bound.method in BOUND_METHODS else str(result.bound.method)


def kappa_text(result: AuditResult) -> str:
    """'κ = 0.1'."""
    return f"κ = {result.bound.kappa:g}"


def row_method_label(row) -> str:
    """`method_label` of a warehouse row (`auditing.sinks.warehouse.records.ResultRow`): it states its curve,
    NULL on an fdp row written before kappa (the legacy Gaussian reading)."""
    if row.method not in BOUND_METHODS:
        return str(row.method)
    method = bound_method(row.method)
    if method.curve is None:
        return method.label
    return method.label if row.fdp_curve == method.curve else FDP_LEGACY_LABEL


def row_kappa_text(row) -> str:
    """`kappa_text` of a warehouse row: a row written before kappa has none (the migration dropped its tau)."""
    return "legacy (written before κ)" if row.kappa is None else f"κ = {row.kappa:g}"


def calibration_text(result: AuditResult) -> str:
    return f"reference calibration: {result.game.reference_calibration}"


def gdp_text(value: Any) -> str | None:
    """'not μ-GDP for μ < X' (a statement about μ, never an ε), or None."""
    if value is None:
        return None
    return f"not μ-GDP for μ < {float(value):.4g}"


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}g}"


def reference_panel(result: AuditResult, check: ReferenceCheck | None, day: str = "D") -> str:
    """The <section id="reference"> card: the calibration before/after, or "reference not checked" with the
    reason; one sentence each on kappa, recalibration and the capacity check; a legacy night's label-blind control
    (its bound and measured misfit). ``check``: the night's check or None."""
    kappa = result.bound.kappa
    calibration = (check.calibration if check is not None else None) or result.game.reference_calibration
    if kappa == 0:
        plan = ("0<span class=\"labels\">the verdict assumes M′ gives day D's own label probabilities on every "
                "audited row (a factor e^0 = 1)</span>")
    else:
        plan = (f"{kappa:g}<span class=\"labels\">the verdict allows M′ to misjudge every audited row's click odds "
                f"by up to a factor {odds_factor(kappa)} (e^κ)</span>")
    rows = [("Plan's κ", plan),
            ("Reference calibration", esc(CALIBRATION_TEXT.get(calibration, "none (written before recalibration)")
                                          if calibration else "none (written before recalibration)"))]
    if check is None:
        status = ("<p class=\"missing\" id=\"reference-not-checked\">Reference not checked: no reference check was "
                  "recorded for this run (the nightly flow runs it on day D's rows).</p>")
    elif not check.checked:
        status = (f"<p class=\"missing\" id=\"reference-not-checked\">Reference not checked: "
                  f"{esc(check.not_checked_reason())}</p>")
    else:
        status = ""
        figures = check.calibration_figures
        if figures is not None:
            rows.append((
                "Correction on day D",
                f"<table class=\"before-after\" id=\"calibration-figures\"><tr><th></th><th>before</th><th>after</th>"
                f"</tr><tr><th>log-loss</th><td>{_num(figures.logloss_before)}</td>"
                f"<td>{_num(figures.logloss_after)}</td></tr><tr><th>calibration error (ECE)</th>"
                f"<td>{_num(figures.ece_before, 3)}</td><td>{_num(figures.ece_after, 3)}</td></tr></table>"
                f"<span class=\"labels\">fitted on {figures.rows_fit:,} rows ({figures.rounds:,} "
                f"boosting rounds), measured on {figures.rows_validation:,} other rows</span>"))
        elif calibration == "boost":
            rows.append(("Correction on day D", "<span class=\"missing\">no figures recorded</span>"))
        blind = check.label_blind
        if blind is not None:  # a night written while the label-blind control ran
            confidence = result.bound.confidence
            chance = 1.0 - confidence
            flagged = blind.flagged
            outcome = (f"<span class=\"reference-flagged\" id=\"label-blind-outcome\">FLAGGED: the reference does "
                       f"not fit day {esc(day)}</span><span class=\"labels\">every verdict of this night is "
                       f"untrusted (a reference that fits flags by chance on about {chance:.0%} of nights, at "
                       f"{confidence:.0%} confidence)</span>"
                       if flagged else
                       "<span class=\"reference-fits\" id=\"label-blind-outcome\">passed: the reference fits day "
                       f"{esc(day)} within κ</span>")
            rows.append(("Label-blind control (retired)",
                         f"valid ε lower bound <span class=\"value\">{_num(blind.epsilon_lower_bound)}</span>"
                         + f" at κ = {kappa:g} · {outcome}"))
            misfit = blind.misfit_kappa
            within = f"; {'within' if misfit <= kappa else 'beyond'} the plan's κ = {kappa:g}"
            meaning = ("its bound is 0 already at κ = 0: no misfit measured" if misfit == 0 else
                       f"the reference misjudges some row's click odds by up to a factor {odds_factor(misfit)}"
                       f"{within}")
            rows.append(("Measured reference misfit",
                         f"<span id=\"reference-misfit\">κ = {_num(misfit)}</span><span class=\"labels\">the "
                         f"smallest κ that brings the label-blind control's bound to 0: {esc(meaning)}</span>"))
        if check.note:
            status = f"<p class=\"caption\" id=\"reference-note\">{esc(check.note)}</p>"
    table = "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
    legacy_blind = check is not None and check.label_blind is not None
    explain = "".join(f"<li>{esc(text)}</li>" for text in (EXPLAIN_KAPPA, EXPLAIN_RECALIBRATION, EXPLAIN_CHECK,
                                                            *((EXPLAIN_LABEL_BLIND,) if legacy_blind else ())))
    return ("<section class=\"card\" id=\"reference\"><h2>Reference check</h2>"
            f"{table}{status}<ul class=\"explain\">{explain}</ul></section>")
