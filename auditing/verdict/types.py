"""The verdict: one frozen record of everything the auditing stage concludes about one model on one day.

`auditing.verdict.judge.judge` computes it once from an audit result and a claim (status, robustness, floors, risk,
trust); the warehouse row, the HTML report, the alert, the CLI table and ``--json`` only render it. This
module is data only: it imports no bound, risk or robustness code, so the sinks that read a verdict sit beside
the math, not above it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from auditing.game.config import AUDIT_ROWS
from auditing.result import AuditResult
from auditing.risk.records import PosteriorCurve, RiskAssessment
from auditing.verdict.control_check import TARGET, VERDICT_KINDS, ControlCheck
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from auditing.verdict.split_test import SplitTest
from labeldp.stored import AS_LARGEST, AS_NONE, COUNT, FLAG, NUMBER, SMALL_COUNT, TEXT, stored

# The statuses of a verdict (the warehouse CHECK constraint, `results --status` and the report's badges read this
# tuple). WEAK_PASS is a PASS whose audit could not have seen a leak of the size it would take to flag the claim
# (`Robustness.weak_pass`: the game-aware floor above WEAK_PASS_FRACTION of the audited rows, or none).
VIOLATION, INCONCLUSIVE, PASS, WEAK_PASS = "VIOLATION", "INCONCLUSIVE", "PASS", "WEAK_PASS"
STATUSES = (PASS, WEAK_PASS, VIOLATION, INCONCLUSIVE)
PASSING = (PASS, WEAK_PASS)  # no evidence of a violation, where the audit could have shown one (weakly or not)
NO_VERDICT = "NO VERDICT (optimistic figure)"  # the status shown for the paper's optimistic statistic
WEAK_PASS_FRACTION = 0.01  # a PASS whose detection floor exceeds this fraction of the audited rows is weak


@dataclass(frozen=True)
class Robustness:
    """How much to trust the verdict (auditing.verdict.robustness, auditing.verdict.exposure_floor).

    breaking_kappa: the largest kappa at which the valid bound still exceeds the claim (None when the result
    cannot support it). detection_floor_rows: the perfect-attacker floor (None: INCONCLUSIVE or not
    computable). exposed_rows_floor: the game-aware floor at ``exposed_rows_floor_power`` (None with
    ``exposed_rows_floor_note`` saying why); ``exposed_floor_computed``: whether it could be computed at all.
    weak_pass: a PASS whose floor exceeds 1% of the audited rows. note: the sentence the CLI and alert print.
    """

    audit_rows: str | None
    breaking_kappa: float | None
    detection_floor_rows: int | None
    exposed_rows_floor: int | None
    exposed_rows_floor_power: float
    exposed_rows_floor_note: str | None
    exposed_floor_computed: bool
    weak_pass: bool
    note: str | None = None


# How far a verdict can be relied on (auditing.verdict.trust decides it; docs/concepts.md: statuses, trust, exits).
TRUSTED = "trusted"
UNTRUSTED = "untrusted"
UNCHECKED = "reference unchecked"
ACCEPTED_UNCHECKED = "reference unchecked, accepted"
TRUST_STATES = (TRUSTED, UNTRUSTED, UNCHECKED, ACCEPTED_UNCHECKED)
EXITS_UNTRUSTED = (UNTRUSTED, UNCHECKED)  # the trust states that make a run exit 4
# What a PASS's detectability figures (the floors) are worth.
MEASURED = "measured"
MEASURED_UNDER_MISFIT = "measured under a reference that misfits"
VOID = "void"
DETECTABILITY = (MEASURED, MEASURED_UNDER_MISFIT, VOID)
# The untrusted reason of every verdict of a night a control voided: it opens with this, then says why.
VOID_NIGHT = "the night is void"


def void_night_reason(why: str) -> str:
    """The untrusted reason of a verdict on a night a control voided for ``why``."""
    return f"{VOID_NIGHT}: {why}"


def is_void_night(untrusted_reason: str | None) -> bool:
    """True when a stored ``untrusted_reason`` says the night was void (`void_night_reason`)."""
    return bool(untrusted_reason) and untrusted_reason.startswith(VOID_NIGHT)


@dataclass(frozen=True)
class Trust:
    """How far one verdict can be relied on (auditing.verdict.trust). ``reason``: why, in one sentence.
    epsilon_check / misfit_kappa_upper / check_misfit_kappa / check_rows: the capacity check's figures
    (auditing.verdict.capacity_check), None (0 rows) when it did not run."""

    state: str
    reason: str | None
    detectability: str = MEASURED
    detectability_reason: str | None = None
    epsilon_check: float | None = None
    misfit_kappa_upper: float | None = None
    check_misfit_kappa: float | None = None
    check_rows: int = 0
    accepted_unchecked: bool = False

    @property
    def trusted(self) -> bool:
        return self.state == TRUSTED

    @property
    def exits_untrusted(self) -> bool:
        """True when this verdict makes the run exit 4."""
        return self.state in EXITS_UNTRUSTED


# The decision of a target's verdict (auditing.verdict.decision decides it; docs/decisions.md).
ACT, UNCONFIRMED, NO_EVIDENCE, NO_POWER = "act", "unconfirmed", "no_evidence", "no_power"
DECISIONS = (ACT, UNCONFIRMED, NO_EVIDENCE, NO_POWER)
# The words every sink shows for a decision: a headline, and what it means in one sentence.
HEADLINES = {ACT: "confirmed leak: act", UNCONFIRMED: "unconfirmed leak", NO_EVIDENCE: "no evidence of a leak",
             NO_POWER: "no power"}
MEANINGS = {
    ACT: "the model leaks its labels more than its claimed epsilon allows, and the reference's misfit cannot explain "
         "it: act on it (stop the release, investigate the mechanism's accounting)",
    UNCONFIRMED: "the audit's bound exceeds the claim, but the reference's misfit could explain it: do not act on "
                 "tonight alone; the decision says what would confirm it",
    NO_EVIDENCE: "the audit could have disproved the claim and did not: no evidence of a leak (not a proof of "
                 "privacy)",
    NO_POWER: "tonight's audit could not have disproved the claim: it says nothing either way",
}


@dataclass(frozen=True)
class Decision:
    """The decision of one target's verdict (`auditing.verdict.decision`): one of `DECISIONS`, why in one sentence, the one
    next step, and for an unconfirmed leak what would confirm it: about how many check rows (``confirm_check_rows``,
    None when no number would at tonight's margin) and how many more nights like tonight's family average
    (``confirm_nights``); ``check_e_value``: tonight's e-value of the check's null (1 when it did not count);
    ``family_confirmed``: the family's nights together confirmed a leak."""

    # stored in the warehouse (schema version 10; NULL on controls and on rows written before them)
    decision: str = stored(
        TEXT, "act | unconfirmed | no_evidence | no_power (auditing.verdict.decision): what the verdict means for the "
        "people who act on it; NULL on a control", choices=lambda: DECISIONS)
    reason: str = stored(TEXT, "why the verdict has its decision, in one sentence", column="decision_reason")
    next_step: str | None = stored(
        TEXT, "the one next step; for an unconfirmed leak what would confirm it (check rows or nights)",
        column="decision_next_step", default=None)
    confirm_check_rows: int | None = stored(
        COUNT, "an unconfirmed leak: about how many check rows would let the capacity check vouch for it at "
        "tonight's margin (a planning figure); NULL: no number would, or not an unconfirmed leak", default=None)
    confirm_nights: int | None = stored(
        SMALL_COUNT, "an unconfirmed leak: about how many more nights like the family's average would confirm it (a "
        "planning figure); NULL: the family's evidence is not growing, or no family", default=None)
    check_e_value: float | None = stored(
        NUMBER, "tonight's e-value of the capacity check's null at the claim (its exact test's p-value calibrated, "
        "1 / (2 sqrt p)); NULL: no stratified check ran", infinite=AS_LARGEST, default=None)
    family_confirmed: bool = False

    @property
    def headline(self) -> str:
        return HEADLINES[self.decision]

    @property
    def meaning(self) -> str:
        return MEANINGS[self.decision]

    # written after the fields, for the JSON's reader
    _computed = ("headline", "meaning")


@dataclass(frozen=True)
class TrustFigures:
    """The flat trust figures of one verdict, as the CLI's ``--json``, the alert and the warehouse carry them:
    the robustness figures (``robustness_note`` is `Robustness.note`), the shift diagnostic's two scalars, the
    trust (``trust`` is `Trust.state`, ``trust_reason`` its reason) with the capacity check's figures, the row
    groups, why an INCONCLUSIVE had nothing to bound, and the untrusted reason. A figure a record does not carry
    (a row written before it, an alert of another kind) is None."""

    # stored in the warehouse since version 1, apart from the trust block: each group (robustness, shift, exposure,
    # breaking) stands in its own place of audit_results (auditing.sinks.warehouse.schema.STORED_BLOCKS)
    audit_rows: str | None = stored(
        TEXT, "rows the game was played on: training (labels entered training) | all", choices=lambda: AUDIT_ROWS,
        group="robustness", default=None)
    breaking_kappa: float | None = stored(
        NUMBER, "largest kappa at which the valid bound (same counts, strategy, confidence) still exceeds the claim: a "
        "VIOLATION holds unless the reference misjudges some row's click odds by more than a factor "
        "e^breaking_kappa; 0 when it does not at kappa = 0; NULL: not computed or a row written before kappa",
        group="breaking", default=None)
    detection_floor_rows: int | None = stored(
        COUNT, "fewest fully exposed labels with which this audit could flag the claim (an attacker right on every "
        "guess; fewer cannot: necessary, not sufficient); NULL: none could", group="robustness", default=None)
    exposed_rows_floor: int | None = stored(
        COUNT, "fewest totally exposed labels (typical of the audited rows) with which this audit flags the claim with "
        "95% probability in the observational game (the PASS sentence's N); NULL: not computed (split, custom "
        "score, k-class, INCONCLUSIVE, result without prior_histogram) or no exposure reaches 95%", group="exposure",
        default=None)
    exposed_rows_floor_power: float | None = None
    exposed_rows_floor_note: str | None = None
    weak_pass: bool | None = None
    robustness_note: str | None = None
    reference_log_loss_shift: float | None = stored(
        NUMBER, "diagnostic: reference M' test log-loss on day D minus on day D-1", low=-math.inf, group="shift",
        default=None)
    feature_shift_max_psi: float | None = stored(
        NUMBER, "diagnostic: largest per-feature population stability index between day D-1 and day D", group="shift",
        default=None)
    # stored in the warehouse (schema version 5); NULL on rows written before them
    trust: str | None = stored(
        TEXT, "trusted | untrusted | reference unchecked | reference unchecked, accepted (auditing.verdict.trust): a "
        "VIOLATION is trusted only when the capacity check vouches for it; NULL: a row written before per-verdict "
        "trust (untrusted_reason then says whether its night was)", choices=lambda: TRUST_STATES, default=None)
    trust_reason: str | None = stored(TEXT, "why the verdict has its trust, in one sentence", default=None)
    detectability: str | None = stored(
        TEXT, "what a PASS's floors are worth: measured | measured under a reference that misfits | void (the "
        "positive control fell below its floor)", choices=lambda: DETECTABILITY, default=None)
    detectability_reason: str | None = None
    epsilon_check: float | None = stored(
        NUMBER, "the capacity check's kappa-free lower bound on eps (at the verdict's confidence, under the assumption "
        "of docs/soundness.md section 8): the model on its check rows, rows of the day it never saw; a VIOLATION is "
        "trusted only when this also exceeds the claim; NULL: the check did not run", default=None)
    misfit_kappa_upper: float | None = stored(
        NUMBER, "the misfit the model shows on unseen rows where the verdict's guesses are, in kappa units (upper "
        "confidence limit); NULL: the check did not run", low=-math.inf, infinite=AS_NONE, default=None)
    check_misfit_kappa: float | None = stored(
        NUMBER, "the misfit the model shows on its check rows at all (their own game at kappa 0, lower confidence); "
        "above the verdict's kappa the check sees misfit", default=None)
    check_rows: int | None = stored(COUNT, "rows of the capacity check (0: nothing checked the reference)",
                                    default=None)
    accepted_unchecked: bool | None = stored(
        FLAG, "1 when the run accepted a reference no check row could check (the verdict exits by its status, never "
        "trusted), else 0", default=None)
    group_rule: str | None = stored(TEXT, "how rows were grouped; NULL: no grouping applied (a row written before)",
                                    default=None)
    rows_excluded_groups: int | None = stored(
        COUNT, "audited rows left out for sharing a group with another row whose label an input used", default=None)
    group_pairs: int | None = stored(COUNT, "pairs of rows inside the day's groups (the agreement's sample)",
                                     default=None)
    group_label_agreement: float | None = stored(NUMBER, "share of those pairs whose labels agree", high=1.0,
                                                 default=None)
    group_label_agreement_expected: float | None = stored(
        NUMBER, "share independent labels at the reference's probabilities would give (sum over y of D'(y|x_i) "
        "D'(y|x_j))", high=1.0, default=None)
    inconclusive_reason: str | None = stored(TEXT, "why there was nothing to bound (m = 0), else NULL", default=None)
    untrusted_reason: str | None = None

    @classmethod
    def read(cls, record: Mapping[str, Any] | object) -> TrustFigures:
        """The figures a record carries: an alert payload or ``--json`` record (a mapping, read at its JSON edge)
        or a warehouse row (its attributes); what it lacks is None."""
        names = [f.name for f in fields(cls)]
        if isinstance(record, Mapping):
            return cls(**{name: record.get(name) for name in names})
        return cls(**{name: getattr(record, name, None) for name in names})


@dataclass(frozen=True)
class SliceVerdict:
    """One declared slice against the claim (auditing.verdict.judge.slice_verdicts): its valid bound at the slices'
    own confidence, its status (a slice VIOLATION spends the slices' budget, not the global one: `SliceAudit`) and
    its trust, decided by the same rules as a verdict's on the slice's own capacity check (a reference's misfit
    concentrates in slices). ``note``: why a slice could not show any violation of the claim (too small, no row)."""

    slicing: str
    name: str
    rows: int
    check_rows: int
    confidence: float
    epsilon_lower_bound: float
    max_certifiable_epsilon: float
    status: str
    trust: str
    trust_reason: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Verdict:
    """One model, one day, one claim.

    result: the audit result (`auditing.result.AuditResult`), as computed. status: one of `STATUSES` (WEAK_PASS: a
    PASS with ``robustness.weak_pass``; `NO_VERDICT` for an optimistic result, which no sink stores). risk: the
    `auditing.risk.records.RiskAssessment` of the claim and the valid bound (its warehouse scalars:
    ``risk_columns``); posterior_curve: the report chart's series. kind: target | control;
    control: the control's judged check (`ControlCheck`), None for a target;
    trust: how far it can be relied on (`Trust`); untrusted_reason: its reason whenever it is not trusted;
    reference_check: the night's reference check; shift_diagnostic: the day-over-day data diagnostic;
    decision: what it means for the people who act on it (`auditing.verdict.decision.Decision`).
    """

    result: AuditResult
    claimed_epsilon: float
    status: str = stored(
        TEXT, "the verdict: PASS | WEAK_PASS (a PASS whose audit could not have seen a leak of the size needed to "
        "flag the claim) | VIOLATION | INCONCLUSIVE; rows written before schema version 4 say PASS for both",
        choices=lambda: STATUSES, required=True, group="status")
    robustness: Robustness
    risk: RiskAssessment
    posterior_curve: PosteriorCurve
    kind: str = stored(TEXT, "target | control (a nightly positive or negative control); NULL: target",
                       choices=lambda: VERDICT_KINDS, default=TARGET)
    control: ControlCheck | None = None
    untrusted_reason: str | None = stored(
        TEXT, "NULL when trusted; else why this verdict is not trusted (see trust)", blank=False, group="untrusted",
        default=None)
    reference_check: ReferenceCheck | None = None
    shift_diagnostic: ShiftDiagnostic | None = None
    trust: Trust = field(default_factory=lambda: Trust(TRUSTED, None))
    slices: tuple[SliceVerdict, ...] = ()  # sorted by bound, largest first; empty when no slice was declared
    # The one decision of a target's verdict (auditing.verdict.decision; None for a control or an optimistic result).
    decision: Decision | None = None
    # The test of a split a team supplied (auditing.verdict.split_test); None: the built-in keyed split, or unknown.
    split_test: SplitTest | None = None

    @property
    def slice_violations(self) -> tuple[SliceVerdict, ...]:
        return tuple(s for s in self.slices if s.status == VIOLATION)

    @property
    def epsilon_lower_bound(self) -> float:
        return self.result.epsilon_lower_bound

    @property
    def risk_headline(self) -> str:
        return self.risk.headline

    @property
    def risk_columns(self) -> dict:
        """The risk figures as warehouse columns (`RiskAssessment.columns`)."""
        return self.risk.columns()

    def trust_figures(self) -> TrustFigures:
        """The flat trust figures the CLI's ``--json``, the alert and the warehouse carry (`TrustFigures`)."""
        robustness, trust, diagnostic, groups = self.robustness, self.trust, self.shift_diagnostic, self.result.row_groups
        return TrustFigures(
            audit_rows=robustness.audit_rows, breaking_kappa=robustness.breaking_kappa,
            detection_floor_rows=robustness.detection_floor_rows, exposed_rows_floor=robustness.exposed_rows_floor,
            exposed_rows_floor_power=robustness.exposed_rows_floor_power,
            exposed_rows_floor_note=robustness.exposed_rows_floor_note, weak_pass=robustness.weak_pass,
            robustness_note=robustness.note,
            reference_log_loss_shift=None if diagnostic is None else diagnostic.reference_log_loss_shift,
            feature_shift_max_psi=None if diagnostic is None else diagnostic.feature_shift_max_psi,
            trust=trust.state, trust_reason=trust.reason, detectability=trust.detectability,
            detectability_reason=trust.detectability_reason, epsilon_check=trust.epsilon_check,
            misfit_kappa_upper=trust.misfit_kappa_upper, check_misfit_kappa=trust.check_misfit_kappa,
            check_rows=trust.check_rows, accepted_unchecked=trust.accepted_unchecked,
            group_rule=None if groups is None else groups.rule,
            rows_excluded_groups=None if groups is None else groups.rows_excluded,
            group_pairs=None if groups is None else groups.agreement_pairs,
            group_label_agreement=None if groups is None else groups.agreement_observed,
            group_label_agreement_expected=None if groups is None else groups.agreement_expected,
            inconclusive_reason=self.result.inconclusive_reason, untrusted_reason=self.untrusted_reason)
