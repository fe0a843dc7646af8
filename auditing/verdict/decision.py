"""One decision per target: what a verdict means for the people who act on it (docs/decisions.md).

Every verdict of a target maps to exactly one of four decisions, worded the same wherever it is shown (the
terminal, ``--json``, the warehouse, the report, the alert and ``audit-scores``):

- ``act``: a confirmed leak. The valid bound exceeds the claim and the capacity check vouches for it without
  kappa (a trusted VIOLATION; its reason leads with tonight's check, and names the family's confirmation beside it
  when there is one), or the family's nights together confirm a leak (`FamilyEvidence.confirmed`), or the
  plan accepted a reference no check row could check and the bound exceeds the claim at the plan's kappa;
- ``unconfirmed``: an unconfirmed leak. The valid bound exceeds the claim, but the reference's misfit can explain
  it (the check does not vouch for it, nothing checked the reference, or the positive control showed bounds above
  their truth tonight); the decision says what would confirm it: the check rows, or the nights like tonight, that
  would make the evidence decisive at its measured margin;
- ``no_evidence``: no evidence of a leak. A PASS (or WEAK_PASS): the audit could have disproved the claim and did
  not; not a proof of privacy;
- ``no_power``: no power. Even a perfect attacker could not have disproved the claim with these rows
  (INCONCLUSIVE), the positive control fell below its floor (the audit did not show the power it promises), or the
  night is void (the negative control failed: tonight's figures mean nothing).

The decisions' words and the `Decision` record are in `auditing.verdict.types` (data only); this module decides.
`auditing.verdict.judge.judge` decides once and the sinks render the `Decision`.
"""

from __future__ import annotations

import math

from auditing.result import CapacityCheck
from auditing.verdict.family_evidence import CheckCounts, FamilyEvidence
from auditing.verdict.split_test import SplitTest
from auditing.verdict.trust import NightTrust
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    ACT,
    INCONCLUSIVE,
    NO_EVIDENCE,
    NO_POWER,
    TRUSTED,
    UNCONFIRMED,
    VIOLATION,
    VOID,
    Decision,
    Trust,
)

# The smallest factor of tonight's check rows a confirmation estimate reports, and the largest it searches: beyond
# a thousand times tonight's holdout no holdout share is practical, and the estimate says no number would.
_MIN_CHECK_FACTOR = 1.1
_MAX_CHECK_FACTOR = 1000.0
# The ratio between neighbouring factors of the grid the search walks: the figure is a plan, not a bound.
_FACTOR_PRECISION = 1.02
# How far above the claim the exact test must reject for the check to vouch (epsilon_check > claim, computed by a
# bisection to 1e-5 and rounded down: auditing.bounds.misfit_test.exact_epsilon_lower).
_VOUCH_MARGIN = 2e-5


def check_rows_to_confirm(check: CapacityCheck | None, claimed_epsilon: float) -> int | None:
    """About how many check rows would let the capacity check vouch for the claim being exceeded at tonight's
    matched accuracies: the smallest factor of tonight's check rows at which the check's own exact test
    (`auditing.bounds.misfit_test.check_p_value`), run on tonight's matched check counts scaled by it, rejects the
    claim at the verdict's confidence. The test's normal approximation gives the search its start; alone it promised
    too few rows (a 1.3x-2x shortfall where the check has few matched guesses). None when no number would: the
    audited accuracy does not exceed what the check's misfit explains at the claim, the audited side alone is too
    noisy, or it would take over a thousand times tonight's check rows; None too when the check did not run
    stratified. A planning figure at tonight's margin, not a bound."""
    if check is None or not check.stratified or not check.matched_bound_guesses or not check.matched_check_guesses:
        return None
    from scipy import stats  # imported when needed: 0.3 s to import

    n_b, n_h = check.matched_bound_guesses, check.matched_check_guesses
    c_b, c_h = check.matched_bound_correct, check.matched_check_correct
    slack = check.composition_slack or 0.0
    p_b = (c_b + 0.5) / (n_b + 1)
    p_h = min((c_h + 0.5) / (n_h + 1) + slack, 1 - 1e-9)
    margin = math.log(p_b / (1 - p_b)) - math.log(p_h / (1 - p_h)) - claimed_epsilon
    if margin <= 0:
        return None
    z = float(stats.norm.isf(1.0 - check.confidence))
    var_b = 1.0 / ((n_b + 1) * p_b * (1 - p_b))
    room = (margin / z) ** 2 - var_b
    if room <= 0:
        return None
    start = (1.0 / ((n_h + 1) * p_h * (1 - p_h))) / room
    factor = _exact_factor(check, claimed_epsilon, min(max(start, _MIN_CHECK_FACTOR), _MAX_CHECK_FACTOR))
    return None if factor is None else math.ceil(factor * check.check_rows)


def _exact_factor(check: CapacityCheck, claimed_epsilon: float, start: float) -> float | None:
    """The smallest factor of the grid _MIN_CHECK_FACTOR * _FACTOR_PRECISION^k up to _MAX_CHECK_FACTOR at which the
    exact test on tonight's matched counts, the check side scaled by it, rejects the claim at the check's level;
    None when even the largest does not. Searched from ``start`` (the normal approximation's factor): steps that
    double until it vouches, then a bisection of the grid's indices. One grid for every claim, so a larger claim
    never gets a smaller figure. The scaled check keeps tonight's accuracy rounded up, so rounding never makes it
    easier to pass."""
    from auditing.bounds.misfit_test import check_p_value  # imported when needed, as scipy above

    gamma = 1.0 - check.confidence
    eps = claimed_epsilon + _VOUCH_MARGIN
    slack = check.composition_slack or 0.0
    top = math.ceil(math.log(_MAX_CHECK_FACTOR / _MIN_CHECK_FACTOR) / math.log(_FACTOR_PRECISION))

    def factor(k: int) -> float:
        return _MIN_CHECK_FACTOR * _FACTOR_PRECISION ** k

    def vouches(k: int) -> bool:
        guesses = max(1, round(check.matched_check_guesses * factor(k)))
        correct = min(guesses, math.ceil(check.matched_check_correct * guesses / check.matched_check_guesses - 1e-9))
        return check_p_value(check.matched_bound_correct, check.matched_bound_guesses, correct, guesses, eps,
                             slack) <= gamma

    low = -1  # an index known not to vouch (-1: none tried)
    high = min(max(round(math.log(start / _MIN_CHECK_FACTOR) / math.log(_FACTOR_PRECISION)), 0), top)
    step = 1
    while not vouches(high):
        if high >= top:
            return None
        low, high, step = high, min(high + step, top), 2 * step
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if vouches(middle) else (middle, high)
    return factor(high)


def decide(status: str, trust: Trust, claimed_epsilon: float, check: CapacityCheck | None, *,
           night: NightTrust | None = None, family: FamilyEvidence | None = None,
           inconclusive_reason: str | None = None, kappa: float = 0.0, split: SplitTest | None = None) -> Decision:
    """The decision of a target's verdict (module docstring), from its status and trust, the night's controls, its
    capacity check, its family's tests with tonight in them (None: no family, e.g. a guardrail) and the test of a
    split a team supplied."""
    night = night or NightTrust()
    counts = CheckCounts.of_check(check)
    e_value = None if counts is None or not math.isfinite(claimed_epsilon) else counts.e_value(claimed_epsilon)
    family_confirmed = family is not None and family.confirmed
    if status == VIOLATION and trust.state == TRUSTED and not night.void_reason:
        # tonight's own evidence leads; the family's confirmation, when there is one, is said beside it
        reason = trust.reason or "the capacity check vouches for the violation"
        if family_confirmed:
            reason += f"; {_family_reason(family)}"
        return Decision(ACT, reason, "hold the release and check the mechanism's privacy accounting",
                        check_e_value=e_value, family_confirmed=family_confirmed)
    if family_confirmed:
        return Decision(ACT, f"the family's nights together confirm a leak without kappa: {_family_reason(family)}",
                        "treat the model family as leaking more than its claims: hold its releases and check its "
                        "privacy accounting", check_e_value=e_value, family_confirmed=True)
    if night.void_reason:
        return Decision(NO_POWER, f"tonight is void: {night.void_reason}",
                        "fix what the failed control points at (infra/README.md, CONTROL_FAILED) and audit the night "
                        "again", check_e_value=e_value)
    if status == INCONCLUSIVE:
        why = inconclusive_reason or ("even an attacker right on every guess could not have shown a violation of the "
                                      "claim with these rows")
        return Decision(NO_POWER, why, "audit more rows (a bigger day, or the plan's power planner: labeldp-audit "
                                       "plan power) or accept that the claim cannot be tested at this size",
                        check_e_value=e_value)
    if status == VIOLATION:
        if trust.state == ACCEPTED_UNCHECKED:
            return Decision(ACT, f"the valid bound exceeds the claim at kappa {kappa:g}; the plan accepted a reference "
                                 "no check row could check, so misfit beyond kappa is not ruled out",
                            "hold the release; hold out rows from training so that the next audit can check the "
                            "reference", check_e_value=e_value)
        if split is not None and split.refused:
            return Decision(UNCONFIRMED, trust.reason or split.reason(),
                            "hold out a random share of the day's rows (a keys file drawn at random, or the built-in "
                            "split) so that the check rows stand for the audited rows", check_e_value=e_value)
        rows = check_rows_to_confirm(check, claimed_epsilon)
        nights = None if family is None else family.nights_to_confirm()
        return Decision(UNCONFIRMED, trust.reason or "the capacity check cannot vouch for it",
                        _what_would_confirm(check, rows, nights), confirm_check_rows=rows, confirm_nights=nights,
                        check_e_value=e_value)
    if trust.detectability == VOID:
        return Decision(NO_POWER, f"the audit did not show the power its floors promise: "
                                  f"{trust.detectability_reason}", "find why the positive control fell below its "
                                  "floor (infra/README.md, CONTROL_FAILED)", check_e_value=e_value)
    return Decision(NO_EVIDENCE, "the valid bound does not exceed the claim", None, check_e_value=e_value)


def _family_reason(family: FamilyEvidence) -> str:
    """How the family's nights confirmed a leak: the check's evidence over its nights, the night it reached 1/alpha,
    and the kappa-based evidence, which a confirmation also needs (`FamilyEvidence.confirmed`)."""
    nights = len(family.nights)
    return (f"the check's evidence over the family's {nights} night{'' if nights == 1 else 's'}, "
            f"{family.check_evidence:.3g}, reached {1 / family.alpha:g} on {family.confirmed_on.isoformat()} "
            f"(anytime-valid at alpha {family.alpha:g}), and the kappa-based evidence {family.evidence:.3g} did too")


def _what_would_confirm(check: CapacityCheck | None, rows: int | None, nights: int | None) -> str:
    """The next step of an unconfirmed leak: the check rows or the nights that would confirm it."""
    if check is None or check.check_rows == 0:
        return ("hold out some of the day's rows from every audited model (pass the models' training rows), so that "
                "the capacity check can measure the reference's misfit")
    parts = []
    if rows is not None:
        parts.append(f"about {rows:,} check rows ({rows / check.check_rows:.1f}x tonight's {check.check_rows:,}; a "
                     "larger holdout share) at tonight's margin")
    if nights:
        parts.append(f"about {nights} more night(s) like these in the family's evidence")
    if not parts:
        return ("at tonight's accuracies the reference's misfit explains the evidence: no number of check rows would "
                "confirm it; watch the family's evidence across nights")
    return "would be confirmed by " + " or ".join(parts)


__all__ = ["check_rows_to_confirm", "decide"]
