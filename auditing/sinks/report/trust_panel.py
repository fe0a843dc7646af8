"""The run report's trust sections, on the first screen: the banner of a verdict that is not trusted, the "Trust in
this verdict" card (its trust and why, the capacity check's figures each with its confidence, what a PASS's
floors are worth, the row groups, why nothing was bounded), and on a control's own page what the control checks
and whether it passed.

Every figure comes from the `Verdict` (`auditing.verdict.trust` decided it, `auditing.verdict.capacity_check` measured it);
this module only renders. The rules and their derivation: docs/soundness.md sections 8 and 9.
"""

from __future__ import annotations

import math

from auditing.game.row_groups import RowGroups
from auditing.sinks.report.html import fmt_eps, fmt_g, fmt_int, fmt_pct
from auditing.sinks.report.html import table as _table
from auditing.sinks.report.reference_panel import odds_factor
from auditing.sinks.report.svg import esc
from auditing.sinks.report.wording import (
    ASSUMPTION_T,
    CONTROL_TRUST,
    DETECTABILITY_MEANINGS,
    TRUST_MEANINGS,
    TRUSTED_PLAIN,
)
from auditing.verdict.controls import LABEL_BLIND, NEGATIVE, POSITIVE
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    MEASURED,
    PASSING,
    TRUSTED,
    UNCHECKED,
    UNTRUSTED,
    VIOLATION,
    VOID,
    Verdict,
)

# The CSS class of each trust state (the banner and the state's colour).
TRUST_CLASS = {TRUSTED: "trusted", UNTRUSTED: "untrusted", UNCHECKED: "unchecked", ACCEPTED_UNCHECKED: "accepted"}
EXPLAIN_CHECK = ("The capacity check: the audited model plays the same game, with the same guess threshold, on "
                 "check rows, rows of day D whose labels trained neither it nor the reference's correction. There "
                 "its guesses are right only as often as the reference's misfit allows, so the accuracy it shows on "
                 "its training rows beyond that is evidence κ cannot explain.")
def _num(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}g}"


def decision_card(verdict: Verdict) -> str:
    """The first thing on a target's page: its decision (auditing.verdict.decision), what it means, why, and the one
    next step; "" for a verdict without a decision (a control, which its own card describes)."""
    decision = verdict.decision
    if decision is None:
        return ""
    step = f"<p id=\"decision-next\"><strong>Next:</strong> {esc(decision.next_step)}</p>" if decision.next_step else ""
    return (f"<section class=\"decision decision-{esc(decision.decision)}\" id=\"decision\" role=\"status\">"
            f"<h2 id=\"decision-headline\">{esc(decision.headline[0].upper() + decision.headline[1:])}</h2>"
            f"<p id=\"decision-meaning\">{esc(decision.meaning[0].upper() + decision.meaning[1:])}.</p>"
            f"<p id=\"decision-reason\"><strong>Why:</strong> {esc(decision.reason)}</p>{step}</section>")


def trust_banner(verdict: Verdict) -> str:
    """The banner above everything for a control that is not trusted ("" when trusted, and for a target, whose
    decision card says what its trust means for acting): red for untrusted and reference unchecked, amber for an
    unchecked reference the run accepted."""
    trust = verdict.trust
    if trust.state == TRUSTED or verdict.decision is not None:
        return ""
    if trust.state == UNTRUSTED:
        headline = ("UNTRUSTED: do not act on this VIOLATION as a violation." if verdict.status == VIOLATION else
                    "UNTRUSTED: read this verdict as unknown.")
        css = "untrusted"
    elif trust.state == UNCHECKED:
        headline, css = "REFERENCE UNCHECKED: this verdict is not trusted.", "untrusted"
    else:
        headline, css = "REFERENCE UNCHECKED, ACCEPTED: this verdict is read by its status, never as trusted.", "accepted"
    reason = trust.reason or verdict.untrusted_reason or ""
    return (f"<div class=\"banner {css}\" id=\"trust-banner\" role=\"alert\"><strong>{esc(headline)}</strong> "
            f"<span id=\"trust-banner-reason\">{esc(reason)}</span>"
            f"<span class=\"labels\">{esc(trust.state[0].upper() + trust.state[1:])}: "
            f"{esc(TRUST_MEANINGS[trust.state])}.</span></div>")


def _state_cell(verdict: Verdict) -> str:
    trust = verdict.trust
    if verdict.kind == "control":
        why = trust.reason or CONTROL_TRUST
    elif trust.state == TRUSTED and not trust.reason:
        why = TRUSTED_PLAIN
    else:
        why = trust.reason or TRUST_MEANINGS[trust.state]
    return (f"<span class=\"trust-state {TRUST_CLASS[trust.state]}\" id=\"trust-state\">{esc(trust.state)}</span>"
            f"<span class=\"labels\" id=\"trust-reason\">{esc(why)}</span>")


def _check_rows(verdict: Verdict) -> list[tuple[str, str]]:
    """The capacity check's rows of the card: epsilon_check in one sentence with its confidence and assumption,
    the misfit figures with theirs, the check rows; or why it did not run."""
    trust, result = verdict.trust, verdict.result
    check = result.capacity_check
    confidence = float(check.confidence if check is not None and check.confidence else result.bound.confidence)
    if not trust.check_rows or trust.epsilon_check is None:
        why = (check.reason if check is not None else None) or "no check rows: nothing checked the reference"
        return [("Capacity check", f"<span class=\"missing\" id=\"capacity-check\">did not run: {esc(why)}</span>")]
    claimed = verdict.claimed_epsilon
    eps_check = float(trust.epsilon_check)
    verdict_text = ""
    if verdict.status == VIOLATION:
        verdict_text = (f" &gt; claimed ε {fmt_eps(claimed)}: the check vouches for this VIOLATION" if trust.trusted
                        and eps_check > claimed else
                        f" ≤ claimed ε {fmt_eps(claimed)}: the reference's misfit can explain this VIOLATION"
                        if eps_check <= claimed else "")
    cannot = None if check is None else check.reason
    sentence = (f"ε_check is a lower bound on ε at {fmt_pct(confidence)} confidence that needs no κ: what the "
                f"model's guesses on its training rows show beyond what the same guesses show on "
                f"{fmt_int(trust.check_rows)} rows it never saw; valid under {ASSUMPTION_T}."
                + (f" The check cannot vouch here: {cannot}." if cannot else ""))
    upper = trust.misfit_kappa_upper
    upper_text = (f"κ ≤ {_num(upper, 3)} <span class=\"labels\">upper confidence limit (one of ε_check's two limits, "
                  f"within the same {fmt_pct(confidence)}): the misfit, in units of κ, the model shows on rows it "
                  f"never saw at this verdict's guess threshold (click odds off by up to a factor "
                  f"{odds_factor(upper)})</span>" if upper is not None and math.isfinite(upper) else
                  "no finite limit<span class=\"labels\">no check row's |score| reached this verdict's guess "
                  "threshold, so the check rows say nothing about the misfit there</span>")
    kappa = result.bound.kappa
    lower = trust.check_misfit_kappa
    sees = ""
    if lower is not None:
        sees = (f"; above the verdict's κ = {fmt_g(kappa)}: the check sees misfit" if lower > kappa else
                f"; within the verdict's κ = {fmt_g(kappa)}")
    grid = None if check is None else check.check_grid_size
    lower_text = (f"κ ≥ {_num(lower, 3)}<span class=\"labels\">lower confidence figure at {fmt_pct(confidence)} (the "
                  "check rows' own game bounded at κ = 0"
                  + (f", Bonferroni over its {fmt_int(grid)} thresholds" if grid else "")
                  + f"): misfit the model shows on rows it never saw at all{sees}</span>"
                  if lower is not None else "<span class=\"missing\">not computed</span>")
    return [
        ("Capacity check (ε_check)",
         f"<span class=\"value\" id=\"epsilon-check\">{_num(eps_check)}</span>{verdict_text}"
         f"<span class=\"labels\" id=\"epsilon-check-sentence\">{esc(sentence)}</span>"),
        ("Misfit where the guesses are", f"<span id=\"misfit-kappa-upper\">{upper_text}</span>"),
        ("Misfit the model shows at all", f"<span id=\"check-misfit-kappa\">{lower_text}</span>"),
        ("Check rows", f"<span id=\"check-rows\">{fmt_int(trust.check_rows)}</span><span class=\"labels\">rows of "
                       "day D whose labels trained neither the model nor the reference's correction (the model "
                       "never saw them)</span>"),
    ]


def _detectability_row(verdict: Verdict) -> tuple[str, str]:
    trust = verdict.trust
    css = "" if trust.detectability == MEASURED else (
        " detectability-void" if trust.detectability == VOID else " detectability-misfit")
    why = trust.detectability_reason or DETECTABILITY_MEANINGS[trust.detectability]
    return ("Detectability of the floors",
            f"<span class=\"value{css}\" id=\"detectability\">{esc(trust.detectability)}</span>"
            f"<span class=\"labels\">{esc(why)}; the floors are in the card below</span>")


def groups_cell(groups: RowGroups | None) -> str:
    """The row groups: the rule, the rows left out and why, the label agreement observed against independent
    labels (a diagnostic); "no grouping" when the result records none."""
    if groups is None:
        return ("<span class=\"missing\" id=\"row-groups\">no grouping: this result records none, so every row was "
                "taken as independent of the others (docs/soundness.md section 9)</span>")
    excluded = int(groups.rows_excluded or 0)
    parts = [f"<span id=\"row-groups\">{esc(groups.rule or '')}</span>",
             f"<span class=\"labels\" id=\"rows-excluded\">{excluded:,} audited row(s) left out for sharing a group "
             f"({fmt_int(groups.excluded_with_day)} with another row of the day, "
             f"{fmt_int(groups.excluded_with_inputs)} with rows of another day an input used); "
             f"{fmt_int(groups.check_rows_excluded)} check row(s) too. Which rows are left out depends on "
             "the group keys only, never on labels.</span>"]
    observed, expected = groups.agreement_observed, groups.agreement_expected
    if observed is None or expected is None:
        parts.append("<span class=\"labels\" id=\"label-agreement\">no two rows of the day share a group: no label "
                     "agreement to measure</span>")
    else:
        parts.append(f"<span class=\"labels\" id=\"label-agreement\">labels agree in {observed:.1%} of the "
                     f"{fmt_int(groups.agreement_pairs)} pairs of rows sharing a group, against "
                     f"{expected:.1%} for independent labels at the reference's probabilities (a diagnostic, not a "
                     "confidence figure: an excess says how much a per-row claim leaves unprotected)</span>")
    return "".join(parts)


def trust_card(verdict: Verdict) -> str:
    """The <section id="trust"> card (module docstring)."""
    rows = [("Trust", _state_cell(verdict))]
    if verdict.kind != "control":
        rows += _check_rows(verdict)
        if verdict.status in PASSING:
            rows.append(_detectability_row(verdict))
    rows.append(("Row groups", groups_cell(verdict.result.row_groups)))
    if verdict.result.inconclusive_reason:
        rows.append(("Nothing to bound", f"<span id=\"inconclusive-reason\">"
                                         f"{esc(verdict.result.inconclusive_reason)}</span>"))
    explain = "" if verdict.kind == "control" else f"<p class=\"caption\">{esc(EXPLAIN_CHECK)}</p>"
    return (f"<section class=\"card\" id=\"trust\"><h2>Trust in this verdict</h2>{_table(rows)}{explain}"
            "</section>")


# What each control checks (a control's own page). The label-blind control is retired (the capacity check
# replaced it); its description stays for pages of the nights it ran.
CONTROL_TEXT = {
    POSITIVE: "Positive control: a synthetic model that reveals each audited row's label through randomized "
                "response at a known ε_c (label-DP at exactly ε_c by construction). Its valid bound must exceed a "
                "pre-registered floor (reached with ≥ 99.9% probability by a working audit at this m) and never "
                "exceed ε_c: above ε_c the night's VIOLATIONs are untrusted, below the floor the PASSes' "
                "detectability figures are void.",
    NEGATIVE: "Negative control: a copy of the reference model M′, which never saw an audited row's label. Its valid "
                "bound must be 0; above 0 the audit itself is broken and every verdict of the night is untrusted.",
    LABEL_BLIND: "Label-blind control (retired: the capacity check replaced it): a model trained like the targets "
                   "but only on day D's held-out rows that the reference correction did not use; its valid bound "
                   "had to be 0 at the plan's κ.",
}


def control_card(verdict: Verdict) -> str:
    """On a control's own page, what it checks and whether it passed ("" on a target's page)."""
    control = verdict.control
    if verdict.kind != "control" or control is None:
        return ""
    outcome = "passed" if control.passed else "FAILED"
    rows = [("Control", esc(CONTROL_TEXT.get(control.control, CONTROL_TEXT[NEGATIVE]))),
            ("Outcome", f"<span class=\"value control-{esc(outcome.lower())}\">{esc(outcome)}</span>"
                        f"<span class=\"labels\">{esc(control.message)}</span>")]
    if control.misfit_kappa is not None:  # a label-blind control's row, from the nights it ran
        misfit = float(control.misfit_kappa)
        rows.append(("Measured reference misfit",
                     f"κ = {misfit:.4g}<span class=\"labels\">the smallest κ that brought this control's bound to 0 "
                     f"(a lower confidence figure): click odds off by up to a factor {odds_factor(misfit)}</span>"))
    if control.floor is not None:
        detail = control.floor_detail or {}
        rows.append(("Pre-registered floor",
                     f"{fmt_eps(control.floor)}<span class=\"labels\">bound at c′ = "
                     f"{fmt_int(detail.get('guesses'))} with the {fmt_pct(1 - float(detail.get('power', 0.95)))}"
                     f" quantile {fmt_int(detail.get('correct_quantile'))} of Binomial(c′, "
                     f"{fmt_g(detail.get('expected_rate'))}) correct guesses; ceiling ε_c = "
                     f"{fmt_eps(control.ceiling)}</span>"))
    return f"<section class=\"card\" id=\"control\"><h2>Nightly control</h2>{_table(rows)}</section>"
