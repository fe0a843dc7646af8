"""Judging an audit result against a claim: the one place a `Verdict` is computed.

`judge` takes an audit result (an `AuditResult`) and the claimed epsilon and computes,
once, everything that depends on the claim: the status (`auditing.verdict.guardrail`), the robustness figures
(`auditing.verdict.robustness`, `auditing.verdict.exposure_floor`), the risk translation (`auditing.risk.figures`) and the sentence the
CLI and the alert print about robustness. Sinks (warehouse, report, alerts, CLI) render the `Verdict` and call
none of those functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from auditing.result import AuditResult
from auditing.risk.attack_bounds import posterior_ceiling
from auditing.risk.figures import headline, risk_assessment, risk_block
from auditing.risk.records import PosteriorCurve, RiskAssessment, RiskBlock
from auditing.verdict.control_check import ControlCheck
from auditing.verdict.decision import decide
from auditing.verdict.exposure_floor import DEFAULT_POWER
from auditing.verdict.family_evidence import FamilyEvidence
from auditing.verdict.guardrail import guardrail_status
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.robustness import (
    breaking_kappa,
    detection_floor_rows,
    exposed_floor_figures,
    is_weak_pass,
)
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from auditing.verdict.split_test import SplitTest
from auditing.verdict.trust import NightTrust, verdict_trust
from auditing.verdict.types import (
    INCONCLUSIVE,
    NO_VERDICT,
    PASS,
    TRUSTED,
    UNCONFIRMED,
    UNTRUSTED,
    VIOLATION,
    WEAK_PASS,
    WEAK_PASS_FRACTION,
    Robustness,
    SliceVerdict,
    Trust,
    Verdict,
    void_night_reason,
)
from labeldp.errors import LabelDPInputError
from labeldp.names import check_claim

_COMPUTE = object()  # judge: compute the game-aware floor (no stored value given)
POSTERIOR_CURVE_POINTS = 80


def _claimed(claimed_epsilon: Any) -> float:
    return check_claim(claimed_epsilon)


def robustness_figures(result: AuditResult, claimed: float, status: str, exposed_rows: Any = _COMPUTE) -> Robustness:
    """The claim-dependent trust figures; a figure the result cannot support is None (a split result without its
    halves has no floors)."""
    try:
        breaking = breaking_kappa(result, claimed)
    except LabelDPInputError:
        breaking = None
    try:
        floor = detection_floor_rows(result, claimed)
    except LabelDPInputError:
        floor = None
    try:
        exposed = (exposed_floor_figures(result, claimed) if exposed_rows is _COMPUTE
                   else exposed_floor_figures(result, claimed, exposed_rows))
    except (LabelDPInputError, KeyError):
        exposed = {"exposed_rows_floor": None, "exposed_floor_computed": False,
                   "exposed_rows_floor_power": DEFAULT_POWER, "exposed_rows_floor_note": "not computable for this result"}
    weak = is_weak_pass(status, floor, result.m, exposed["exposed_rows_floor"], exposed["exposed_floor_computed"])
    figures = dict(audit_rows=result.game.audit_rows, breaking_kappa=breaking, detection_floor_rows=floor,
                   exposed_rows_floor=exposed["exposed_rows_floor"],
                   exposed_rows_floor_power=float(exposed["exposed_rows_floor_power"]),
                   exposed_rows_floor_note=exposed["exposed_rows_floor_note"],
                   exposed_floor_computed=bool(exposed["exposed_floor_computed"]), weak_pass=weak)
    return Robustness(**figures, note=robustness_note(figures, status, result.m, result.bound.kappa))


def robustness_note(figures: Mapping, status: str, m: int, kappa: float | None) -> str | None:
    """The one sentence about robustness the CLI table and the alert carry (None when there is nothing to say)."""
    breaking, floor = figures["breaking_kappa"], figures["detection_floor_rows"]
    n, power = figures["exposed_rows_floor"], figures["exposed_rows_floor_power"]
    if status == VIOLATION and breaking is not None:
        return (f"the violation holds unless the reference misjudges some row's click odds by more than a factor "
                f"{math.exp(breaking):.3g} (breaking kappa {breaking:.4g}; the verdict is computed at the plan's "
                f"kappa = {float(kappa or 0.0):g})")
    if status != PASS or (floor is None and n is None):
        return None
    necessary = (f"; fewer than {floor} correct guesses can never flag it (the perfect-attacker floor)"
                 if floor is not None else "")
    if n is not None:
        weak = (f" (more than {WEAK_PASS_FRACTION:.0%} of the {m} audited rows: a weak PASS)"
                if figures["weak_pass"] else "")
        return (f"this audit would have flagged the claim only if at least {n} labels were fully exposed (flagged "
                f"then with {power:.0%} probability){weak}{necessary}")
    weak = " (a weak PASS)" if figures["weak_pass"] else ""
    return f"game-aware floor: none ({figures['exposed_rows_floor_note']}){weak}{necessary}"


def posterior_curve(assessment: RiskAssessment) -> PosteriorCurve:
    """The report chart's series: the posterior ceiling against the prior for the claimed and the demonstrated
    eps, on a log grid of priors starting a third below the median prior."""
    claimed, shown = assessment.claimed, assessment.demonstrated
    prior_lo = claimed.prior_median / 3 if claimed.rows else 1e-3
    lo = min(max(prior_lo, 1e-6), 0.1)
    priors = np.geomspace(lo, 0.999, POSTERIOR_CURVE_POINTS)

    def ceilings(eps: float) -> tuple[float, ...]:
        return tuple(np.asarray(posterior_ceiling(eps, priors)).tolist())

    return PosteriorCurve(priors=tuple(priors.tolist()), claimed_epsilon=float(claimed.epsilon),
                          claimed=ceilings(claimed.epsilon),
                          demonstrated_epsilon=None if shown is None else float(shown.epsilon),
                          demonstrated=None if shown is None else ceilings(shown.epsilon))


def judge(result: AuditResult, claimed_epsilon: float, *, kind: str = "target", control: ControlCheck | None = None,
          night: NightTrust | None = None, shift_diagnostic: ShiftDiagnostic | None = None,
          reference_check: ReferenceCheck | None = None, exposed_rows_floor: Any = _COMPUTE,
          family: FamilyEvidence | None = None, split: SplitTest | None = None) -> Verdict:
    """The verdict of one audit result against a claim, computed once.

    Args:
        result: the `AuditResult` (a stored one is read by ``decode(AuditResult, ...)`` where it is read).
        claimed_epsilon: the claim (>= 0; inf for a non-private model).
        kind: "target" or "control"; control: the control's judged check (`ControlCheck`).
        night: what the night's controls say about its verdicts (`auditing.verdict.trust.NightTrust`; None: no controls,
            nothing accepted). The verdict's trust follows from it and the result's capacity check
            (`auditing.verdict.trust.verdict_trust`); a control's own row is untrusted when it failed or the night is void.
        shift_diagnostic: the day-over-day data diagnostic (`auditing.verdict.shift_diagnostic.ShiftDiagnostic`),
            carried as given.
        reference_check: the night's reference check (`auditing.verdict.reference_check.ReferenceCheck`).
        exposed_rows_floor: a stored game-aware floor (read back from the warehouse) instead of computing it.
        family: the target family's tests with this night in them (`auditing.verdict.family_evidence`; None: no
            family, e.g. a guardrail); the decision reads its confirmation and what would confirm a leak.
        split: the test of a split a team supplied (`auditing.verdict.split_test`; None or a keyed draw: none); a
            refused split trusts no VIOLATION.

    Returns:
        The `Verdict`; an optimistic result (strategy max) gets the status `NO_VERDICT`, and a PASS that the
        robustness figures call weak (`Robustness.weak_pass`) the status `WEAK_PASS`.

    Raises:
        LabelDPInputError: a result missing fields, a bad claim or kind.
    """
    for name, value, record in (("control", control, ControlCheck), ("shift_diagnostic", shift_diagnostic,
                                 ShiftDiagnostic), ("reference_check", reference_check, ReferenceCheck)):
        if value is not None and not isinstance(value, record):  # a dict is read once, at its JSON edge
            raise TypeError(f"{name} must be a {record.__name__} (its JSON is read by {record.__name__}.from_dict); "
                            f"got {type(value).__name__}")
    if not isinstance(result, AuditResult):  # a stored result is read once, at its JSON edge
        raise TypeError(f"result must be an AuditResult (its JSON is read by decode(AuditResult, ...)); got "
                        f"{type(result).__name__}")
    claimed = _claimed(claimed_epsilon)
    if kind not in ("target", "control"):
        raise LabelDPInputError(f"kind must be 'target' or 'control'; got {kind!r}")
    if result.optimistic:
        status = NO_VERDICT
    else:
        status = guardrail_status(result.epsilon_lower_bound, claimed, result.max_certifiable_epsilon)
    assessment = risk_assessment(result, claimed)
    robustness = robustness_figures(result, claimed, status, exposed_rows_floor)
    if kind == "control":  # a control is judged by its own rule (auditing.verdict.controls): failed, or on a void night
        void = (night or NightTrust()).void_reason
        failed = control is not None and not control.passed
        trust = (Trust(UNTRUSTED, f"the control failed: {control.message}") if failed
                 else Trust(UNTRUSTED, void_night_reason(void)) if void else Trust(TRUSTED, None))
    else:
        trust = verdict_trust(status, claimed, result.capacity_check,
                              kappa=result.bound.kappa, night=night, split=split)
    decision = None
    if kind == "target" and status != NO_VERDICT:
        decision = decide(status, trust, claimed, result.capacity_check, night=night, family=family,
                          inconclusive_reason=result.inconclusive_reason, kappa=result.bound.kappa, split=split)
        if decision.decision == UNCONFIRMED:  # the risk sentence must not claim what the decision does not
            assessment = replace(assessment, headline=headline(assessment.claimed, assessment.demonstrated,
                                                               confirmed=False))
    return Verdict(
        result=result, claimed_epsilon=claimed, status=WEAK_PASS if robustness.weak_pass else status,
        robustness=robustness,
        risk=assessment, posterior_curve=posterior_curve(assessment),
        kind=kind, control=control,
        untrusted_reason=None if trust.trusted else trust.reason,
        reference_check=reference_check,
        shift_diagnostic=shift_diagnostic, trust=trust,
        slices=slice_verdicts(result, claimed, night) if kind == "target" else (),
        decision=decision, split_test=split,
    )


def slice_verdicts(result: AuditResult, claimed: float, night: NightTrust | None = None) -> tuple[SliceVerdict, ...]:
    """Each declared slice of ``result`` against the claim, largest bound first (`SliceVerdict`)."""
    audit = result.slices
    if audit is None:
        return ()
    out = []
    for piece in audit.slices:
        status = guardrail_status(piece.epsilon_lower_bound, claimed, piece.max_certifiable_epsilon)
        note = piece.note
        if note is None and status == INCONCLUSIVE and not math.isinf(claimed):
            note = (f"too small: even every guess right on its {piece.rows} row(s) would show at most eps "
                    f"{piece.max_certifiable_epsilon:.3g} at confidence {audit.confidence:.4g}, not above the claim")
        trust = verdict_trust(status, claimed, piece.capacity_check, kappa=result.bound.kappa, night=night)
        out.append(SliceVerdict(slicing=piece.slicing, name=piece.name, rows=piece.rows, check_rows=piece.check_rows,
                                confidence=audit.confidence, epsilon_lower_bound=piece.epsilon_lower_bound,
                                max_certifiable_epsilon=piece.max_certifiable_epsilon, status=status,
                                trust=trust.state, trust_reason=trust.reason, note=note))
    return tuple(sorted(out, key=lambda v: (-v.epsilon_lower_bound, v.slicing, v.name)))


def demonstrated_risk(result: AuditResult) -> RiskBlock | None:
    """What the valid bound alone demonstrates, with the result's reference probabilities as priors
    (`auditing.risk.figures.risk_block` at eps_lb); None for an optimistic result, a bound of 0 or a result without
    its prior histogram. Claim-free: the CLI prints it for an audit without a claim."""
    histogram = result.prior_histogram
    if histogram is None or not histogram.total or result.optimistic or result.epsilon_lower_bound <= 0:
        return None
    return risk_block(result.epsilon_lower_bound, result.bound.delta, histogram)

