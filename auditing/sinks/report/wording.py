"""The words of a verdict, one place for the command line's text (`auditing.sinks.report.text`), the HTML report's
panels and pages, and the alerts: what each status, trust state, decision and detectability means, and the sentences
that phrase a verdict's trust figures (the capacity check, the row groups, the floors' detectability) and its
slices. Renderers only: every figure comes from a `Verdict` or a stored row computed elsewhere; this module imports
no panel and no page.
"""

from __future__ import annotations

import math

from auditing.sinks.warehouse.records import ResultRow, trust_state
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    ACT,
    INCONCLUSIVE,
    MEASURED,
    MEASURED_UNDER_MISFIT,
    NO_EVIDENCE,
    NO_POWER,
    PASS,
    TRUSTED,
    UNCHECKED,
    UNCONFIRMED,
    UNTRUSTED,
    VIOLATION,
    VOID,
    WEAK_PASS,
    WEAK_PASS_FRACTION,
    TrustFigures,
)

# What each verdict status means, in the words of --help, docs/concepts.md, the report's first screen and the legend.
STATUS_MEANINGS = {
    PASS: "no evidence of a violation: the audit could have disproved the claim and did not (not a proof of "
          "privacy)",
    WEAK_PASS: f"a PASS on weak evidence: this audit would have flagged the claim only if more than "
               f"{WEAK_PASS_FRACTION:.0%} of the audited labels were fully exposed (or not even then), so a smaller "
               "leak could have gone unseen",
    VIOLATION: "the valid lower bound exceeds the claimed epsilon: the claim is disproved at the stated confidence",
    INCONCLUSIVE: "even a perfect attacker could not have disproved the claim with this many rows: the audit had "
                  "no power here",
}

# A VIOLATION whose decision is not "act", beside its badge: the bound's fact without the claim it cannot yet carry
# (the decision card above it says what would confirm it).
VIOLATION_UNCONFIRMED_TEXT = ("The valid lower bound exceeds the claimed epsilon at the stated κ, but this is not "
                              "confirmed: the reference's misfit could explain it (the decision above says what "
                              "would confirm it).")
# The run report's collapsible section of trust and robustness figures, and what it holds.
TRUST_DETAILS_SUMMARY = "Trust and robustness details"
TRUST_DETAILS_HINT = ("why the decision is what it is: the capacity check, the reference's misfit, the row groups, "
                      "the robustness to the reference and the detection floors, the reference check")

# The page across models (`auditing.sinks.report.index_page`).
INDEX_CAPTION = ("Each model's latest verdict per run kind, by its decision (a link to its report): confirmed leak: act; "
                 "unconfirmed leak (the reference's misfit could explain it; its report says what would confirm "
                 "it); no evidence of a leak (not a proof of privacy); no power. Family: the model's nights together, "
                 "kappa-free (docs/decisions.md). Slices flagged: declared slices whose valid bound exceeds the claim "
                 "at the slices' own confidence.")
INDEX_FAMILY_WORDS = {"confirmed": "confirmed: a leak, act", "flagged": "kappa-based evidence at 1/alpha only (not a "
                      "reason to act)", "watching": "not confirmed", "none": "no family (no nightly or backfill night)"}

# What each trust state means, in the words of --help and docs/concepts.md.
TRUST_MEANINGS = {
    TRUSTED: "a VIOLATION the capacity check vouches for (its evidence exceeds what the reference's misfit "
             "explains, judged by the model itself on rows it never saw); any other verdict of a night no control "
             "voided",
    UNTRUSTED: "a VIOLATION the reference's misfit can explain, or any verdict of a night the negative "
                     "control voided (exit 4)",
    UNCHECKED: "no check row could check the reference (pass the model's training rows so that the day's other "
               "rows can; exit 4)",
    ACCEPTED_UNCHECKED: "the same, accepted by the plan (accept_unchecked_reference) or --accept-unchecked-reference: "
                        "exits by its status, never shown as trusted",
}
# The trust column's short words (the table, `results --trust`), one per trust state.
TRUST_SHORT = {TRUSTED: "trusted", UNTRUSTED: "untrusted", UNCHECKED: "unchecked", ACCEPTED_UNCHECKED: "accepted"}
# What a PASS's detectability figures (its floors) are worth, in the words of the report, the alert and `results`.
DETECTABILITY_MEANINGS = {
    MEASURED: "no control voided them and the capacity check saw no misfit beyond the verdict's kappa",
    MEASURED_UNDER_MISFIT: "the model shows the reference misfitting beyond the verdict's kappa on rows it never saw, "
                           "and a reference too sure of itself also hides leaks: a leak near the floors could have "
                           "gone unseen",
    VOID: "the positive control fell below its floor tonight: the audit did not show the power the floors promise, "
          "so they say nothing",
}
# What a failed control voids (the CONTROL_FAILED alert), by the control's kind (auditing.verdict.controls).
NEGATIVE_CONTROL_FAILED = ("the audit itself is broken: the negative control (a copy of the reference) was not 0, so "
                           "every verdict of this night is untrusted")
POSITIVE_CONTROL_FAILED = ("the positive control (randomized response at a known eps_c) did not come out as "
                           "constructed: above eps_c the night's VIOLATIONs are untrusted, below its floor the PASSes' "
                           "detectability figures are void (both when it could not run)")
CONTROL_FAILED = "a nightly control failed: what it guards is void tonight"
# The figures of one verdict's trust are labelled with their confidence wherever they are printed.
ASSUMPTION_T = ("assumption T_u: within each kind of guessed view, the label-free part of the model's choice of "
                "guesses on its training rows carries no more misfit-only accuracy than its guesses on rows it never "
                "saw; docs/soundness.md section 8")
# A decision as the table's column shows it (auditing.verdict.decision; "-" for a control), one word each.
DECISION_SHORT = {ACT: "ACT", UNCONFIRMED: "unconfirmed", NO_EVIDENCE: "no-evidence", NO_POWER: "no-power"}
# Why a trusted verdict is trusted, and how a control's trust is judged (the report's trust card).
TRUSTED_PLAIN = ("no control voided this night and check rows checked the reference; a verdict other than a "
                 "VIOLATION keeps its status (what a PASS's floors are worth is its detectability, below)")
CONTROL_TRUST = ("a control is judged by its own rule (the Nightly control card): only a night the negative control "
                 "voided makes it untrusted")


# ------------------------------------------------------------------------------------------ one verdict's trust
# The sentences read a verdict's `TrustFigures` (`Verdict.trust_figures`, or `TrustFigures.read` of a warehouse row
# or an alert payload).


def _finite(value) -> bool:
    return value is not None and math.isfinite(float(value))


def _misfit_upper(figures: TrustFigures) -> str:
    upper = figures.misfit_kappa_upper
    return (f"kappa <= {float(upper):.3g}" if _finite(upper) else
            "no finite limit (no check row reached the verdict's guess threshold)")


def _checked(figures: TrustFigures) -> bool:
    return bool(figures.check_rows) and figures.epsilon_check is not None


CHECK_DID_NOT_RUN = "capacity check: did not run (no check rows: nothing checked the reference)"


def capacity_check_clauses(figures: TrustFigures, confidence: float | None = None) -> list[str]:
    """The capacity check's figures as clauses, each with its confidence (``confidence``: the verdict's): what it
    ran on, epsilon_check, the misfit where the verdict's guesses are, the misfit the model shows at all; one
    clause when it did not run."""
    if not _checked(figures):
        return [CHECK_DID_NOT_RUN]
    at = f"{confidence:.0%}" if confidence is not None else "the verdict's"
    lower = figures.check_misfit_kappa
    lower = "not computed" if lower is None else f"kappa >= {float(lower):.3g}"
    return [f"capacity check on {int(figures.check_rows):,} check rows (rows of the day the model never saw)",
            f"epsilon_check {float(figures.epsilon_check):.4g}, a lower bound on eps at {at} confidence that "
            f"needs no kappa (under {ASSUMPTION_T})",
            f"misfit where the verdict's guesses are: {_misfit_upper(figures)} (upper confidence limit, within the "
            f"same {at})",
            f"misfit the model shows at all: {lower} (lower confidence figure at {at})"]


def capacity_check_sentence(figures: TrustFigures, confidence: float | None = None, *, brief: bool = False) -> str:
    """`capacity_check_clauses` in one sentence; ``brief`` (the alert): epsilon_check and the misfit where the
    guesses are, the assumption by name."""
    if not brief or not _checked(figures):
        clauses = capacity_check_clauses(figures, confidence)
        return clauses[0] + "".join(f"{': ' if i == 0 else '; '}{c}" for i, c in enumerate(clauses[1:]))
    at = f"{confidence:.0%}" if confidence is not None else "the verdict's"
    return (f"capacity check on {int(figures.check_rows):,} check rows: epsilon_check "
            f"{float(figures.epsilon_check):.4g} (a kappa-free lower bound on eps at {at} confidence, under "
            f"assumption T of docs/soundness.md section 8); misfit where the guesses are: {_misfit_upper(figures)} "
            "(upper confidence limit)")


def groups_sentence(figures: TrustFigures) -> str:
    """The row groups in one sentence: the rule, the rows left out, the label agreement against independent labels
    (or "no grouping")."""
    rule = figures.group_rule
    if rule is None:
        return "row groups: no grouping recorded (every row taken as independent of the others)"
    text = f"row groups: {rule}; {int(figures.rows_excluded_groups or 0):,} audited row(s) left out for " \
           "sharing a group"
    observed, expected = figures.group_label_agreement, figures.group_label_agreement_expected
    if observed is None or expected is None:
        return text + "; no two rows of the day share a group (no label agreement to measure)"
    return (text + f"; labels agree in {float(observed):.1%} of the {int(figures.group_pairs or 0):,} pairs of "
            f"rows sharing a group, against {float(expected):.1%} for independent labels at the reference's "
            "probabilities (a diagnostic, not a confidence figure)")


def detectability_sentence(figures: TrustFigures) -> str | None:
    """What a PASS's floors are worth (None when the record carries no detectability)."""
    state = figures.detectability
    if state is None:
        return None
    return f"detectability of the floors: {state}: {figures.detectability_reason or DETECTABILITY_MEANINGS[state]}"


def stored_trust(row: ResultRow | TrustFigures) -> str | None:
    """The trust state of a run's listed verdict (`auditing.sinks.warehouse.records.trust_state`: a row written
    before per-verdict trust is untrusted when it carries an ``untrusted_reason``, else not recorded)."""
    return trust_state(row.trust, row.untrusted_reason)


def trust_sentence(figures: TrustFigures) -> str:
    """'trust: <state>: <reason>' (a row written before per-verdict trust says so)."""
    state = stored_trust(figures)
    if figures.trust is None:
        return ("trust: not recorded (a row written before per-verdict trust)"
                + (f"; its night was untrusted: {figures.untrusted_reason}" if state == UNTRUSTED else ""))
    reason = figures.trust_reason or figures.untrusted_reason
    return f"trust: {state}" + (f": {reason}" if reason else "")


# ------------------------------------------------------------------------------------------ a verdict's slices
SLICE_TABLE_ROWS = 5  # the slices a run's table shows per verdict, the largest bounds first
SLICE_VIOLATION_MEANING = ("slice VIOLATION: this slice's valid bound exceeds the claim at the slices' confidence "
                           "(their own budget, split over the declared slices); the global verdict is judged "
                           "separately.")


def slices_budget_words(budget: float, declared: int, confidence: float) -> str:
    """'own budget 0.05 over 13 slices, each at confidence 99.62%' (`auditing.sinks.report.text.slices_design_text`
    of a `ListedSlices`; an alert's payload carries the figures)."""
    return (f"own budget {float(budget):.3g} over {int(declared)} slice{'s' if declared != 1 else ''}, "
            f"each at confidence {100 * float(confidence):.4g}%")


def claim_words(claimed: float) -> str:
    """The claim as a slice table names it: 'eps 0.5', or 'inf (no claim)'."""
    return "inf (no claim)" if math.isinf(claimed) else f"eps {claimed:g}"


# ------------------------------------------------------------------------------------------ a replaced partition
INPUTS_REPLACED = "inputs replaced since"


def inputs_replaced_sentence(fingerprint: str | None, since: str) -> str:
    """Why a verdict reads "inputs replaced since": the day's partition it judged was replaced, and what that means
    for the verdict."""
    judged = f" ({fingerprint[:19]}...)" if fingerprint else ""
    return (f"{INPUTS_REPLACED} {since}: the day's partition this verdict judged{judged} was replaced by other data "
            "(data ingest --replace); the verdict stays as the record of that partition, and a run on the new "
            "partition is a verdict of its own beside it")
