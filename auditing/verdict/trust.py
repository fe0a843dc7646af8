"""Trust, decided per verdict: what the night's controls and the capacity check say about each verdict.
Pure; the rules and why are docs/soundness.md section 8.5 and docs/concepts.md, "Statuses, trust and exit codes".

- A **VIOLATION** is trusted only when the capacity check vouches for it (its kappa-free `epsilon_check` also
  exceeds the claim: the evidence exceeds what the reference's misfit explains), the check rows stand for the
  audited rows (a split a team supplied passed `auditing.verdict.split_test`), and the night's positive control
  did not exceed its true epsilon (which would say the bounds overstate tonight).
- A **PASS**, **WEAK_PASS** or **INCONCLUSIVE** stays what it is. Its detectability figures (the floors) are
  *measured*, *measured under a reference that misfits* (the check sees misfit beyond the verdict's kappa), or
  *void* (the positive control fell below its floor: the audit did not show the power the floors promise).
- **Nothing but these voids a whole night**: the copy-of-reference (negative) control above 0 or unable to run,
  and no check of the reference at all (no check rows). An unchecked reference gives every verdict the trust
  "reference unchecked" unless the plan or the command accepts it, which is then recorded ("reference unchecked,
  accepted") and never shown as trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from auditing.result import CapacityCheck
from auditing.verdict.control_check import NEGATIVE, POSITIVE, ControlCheck
from auditing.verdict.split_test import SplitTest
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    MEASURED,
    MEASURED_UNDER_MISFIT,
    TRUSTED,
    UNCHECKED,
    UNTRUSTED,
    VIOLATION,
    VOID,
    Trust,
    void_night_reason,
)


@dataclass(frozen=True)
class NightTrust:
    """What the night's controls and reference check say about all its verdicts.

    void_reason: every verdict is void (the negative control failed or could not run); violations_void_reason:
    VIOLATIONs are untrusted (the positive control exceeded its eps_c, or could not run);
    detectability_void_reason: PASSes' floors are void (the positive control fell below its floor, or could not
    run). accept_unchecked: the plan or command accepts a reference no check row can check.
    """

    void_reason: str | None = None
    violations_void_reason: str | None = None
    detectability_void_reason: str | None = None
    accept_unchecked: bool = False


def night_trust(checks: Mapping[str, ControlCheck | str], kinds: Mapping[str, str], *, date: str,
                accept_unchecked: bool = False) -> NightTrust:
    """The night's `NightTrust` from its controls' judged checks (name -> `ControlCheck`, or the error text of a
    control that could not run; ``kinds``: name -> positive | negative)."""
    void = violations = detectability = None
    for name, check in checks.items():
        if isinstance(check, str):
            reason = f"control {name} could not run on {date}: {check}"
            # A control that could not run proves nothing: its kind decides what it leaves unproven.
            if kinds.get(name) == NEGATIVE:
                void = void or reason
            else:
                violations, detectability = violations or reason, detectability or reason
            continue
        if check.passed:
            continue
        reason = f"{name} on {date}: {check.message}"
        if check.control == NEGATIVE:
            void = void or reason
        elif check.control == POSITIVE and check.epsilon_lower_bound > check.ceiling:
            violations = violations or reason
        elif check.control == POSITIVE:
            detectability = detectability or reason
    return NightTrust(void, violations, detectability, accept_unchecked)


def reference_unchecked(check: CapacityCheck | None) -> bool:
    """No check row at all: nothing checked the reference tonight."""
    return check is None or check.check_rows == 0


def verdict_trust(status: str, claimed_epsilon: float, check: CapacityCheck | None, *, kappa: float,
                  night: NightTrust | None = None, split: SplitTest | None = None) -> Trust:
    """The trust of one verdict (module docstring); ``split``: the test of a split a team supplied
    (`auditing.verdict.split_test`; None or a keyed draw: nothing to test)."""
    night = night or NightTrust()
    figures = dict(epsilon_check=None, misfit_kappa_upper=None, check_misfit_kappa=None, check_rows=0)
    if check is not None and check.checked:
        figures = dict(epsilon_check=check.epsilon_check, misfit_kappa_upper=check.misfit_kappa_upper,
                       check_misfit_kappa=check.check_misfit_kappa, check_rows=check.check_rows)
    detectability, detectability_reason = MEASURED, None
    if night.detectability_void_reason:
        detectability, detectability_reason = VOID, night.detectability_void_reason
    elif check is not None and check.sees_misfit(kappa):
        detectability = MEASURED_UNDER_MISFIT
        detectability_reason = (f"the model shows misfit up to kappa {check.check_misfit_kappa:.3g} on its check rows "
                                f"(lower confidence), beyond the verdict's kappa {kappa:g}")

    def trust(state: str, reason: str | None) -> Trust:
        return Trust(state, reason, detectability, detectability_reason, **figures,
                     accepted_unchecked=state == ACCEPTED_UNCHECKED)

    if night.void_reason:
        return trust(UNTRUSTED, void_night_reason(night.void_reason))
    if reference_unchecked(check):
        why = "no check rows: nothing checked the reference tonight" + (f" ({check.reason})" if check else "")
        if night.accept_unchecked:
            return trust(ACCEPTED_UNCHECKED, f"{why}; accepted by the plan or the command")
        return trust(UNCHECKED, why)
    if status != VIOLATION:
        return trust(TRUSTED, None)
    if night.violations_void_reason:
        return trust(UNTRUSTED, f"the night's VIOLATIONs are void: {night.violations_void_reason}")
    if split is not None and split.refused:
        return trust(UNTRUSTED, split.reason())
    if check.checked and not check.stratified:
        return trust(UNTRUSTED, "the capacity check of this result compared pooled accuracies (computed before it "
                                "compared like with like), which a model memorising its training rows can fool: it "
                                "cannot vouch; score the night again")
    if check.vouches_for(claimed_epsilon):
        return trust(TRUSTED, f"the capacity check vouches for it: epsilon_check {check.epsilon_check:.4g} > claim "
                              f"{claimed_epsilon:g} without kappa (the model's misfit on unseen rows where the "
                              f"guesses are: kappa <= {check.misfit_kappa_upper:.3g})")
    if check.reason:
        return trust(UNTRUSTED, f"the capacity check cannot vouch for it: {check.reason}")
    return trust(UNTRUSTED, f"the reference's misfit can explain it: epsilon_check {check.epsilon_check:.4g} <= claim "
                            f"{claimed_epsilon:g} (the model shows misfit up to kappa {check.misfit_kappa_upper:.3g} "
                            f"on unseen rows where the guesses are, upper confidence)")


__all__ = ["NightTrust", "night_trust", "reference_unchecked", "verdict_trust"]
