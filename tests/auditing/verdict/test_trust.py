"""Trust per verdict (auditing/verdict/trust.py): each rule, and that a control can fail for what it guards against."""

from __future__ import annotations

import pytest

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.result import CapacityCheck
from auditing.verdict.capacity_check import unchecked
from auditing.verdict.control_check import ControlCheck
from auditing.verdict.controls import NEGATIVE, POSITIVE
from auditing.verdict.trust import NightTrust, night_trust, verdict_trust
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    INCONCLUSIVE,
    MEASURED,
    MEASURED_UNDER_MISFIT,
    PASS,
    TRUSTED,
    UNCHECKED,
    UNTRUSTED,
    VIOLATION,
    VOID,
    WEAK_PASS,
)


def check(epsilon_check=1.2, misfit_upper=0.4, misfit_lower=0.1, rows=5000, reason=None,
          rule="stratified") -> CapacityCheck:
    return CapacityCheck(checked=True, reason=reason, confidence=0.95, audited_rows=40000,
                         check_rows=rows, epsilon_check=epsilon_check, misfit_kappa_upper=misfit_upper,
                         check_misfit_kappa=misfit_lower, rule=rule)


def control(kind, passed, bound, ceiling):
    return ControlCheck(control=kind, passed=passed, epsilon_lower_bound=bound, floor=None, ceiling=ceiling,
                        message=f"{kind} {'ok' if passed else 'failed'}")


KINDS = {"pos": POSITIVE, "neg": NEGATIVE}


def test_a_violation_is_trusted_only_when_the_check_vouches():
    assert verdict_trust(VIOLATION, 0.5, check(1.2), kappa=0).state == TRUSTED
    pooled = verdict_trust(VIOLATION, 0.5, check(1.2, rule="pooled"), kappa=0)  # a result stored before strata
    assert pooled.state == UNTRUSTED and "pooled" in pooled.reason
    untrusted = verdict_trust(VIOLATION, 0.5, check(0.3), kappa=0)
    assert untrusted.state == UNTRUSTED and untrusted.exits_untrusted and "misfit can explain" in untrusted.reason
    no_reach = verdict_trust(VIOLATION, 0.5, check(0.0, reason="no check row reaches"), kappa=0)
    assert no_reach.state == UNTRUSTED and "no check row reaches" in no_reach.reason


@pytest.mark.parametrize("status", [PASS, WEAK_PASS, INCONCLUSIVE])
def test_a_pass_stays_trusted_and_its_detectability_says_what_misfit_does(status):
    assert verdict_trust(status, 1.0, check(misfit_lower=0.1), kappa=0.2).detectability == MEASURED
    marked = verdict_trust(status, 1.0, check(misfit_lower=0.5), kappa=0.2)
    assert marked.state == TRUSTED and marked.detectability == MEASURED_UNDER_MISFIT


def test_controls_void_what_they_guard():
    checks = {"pos": control(POSITIVE, False, 2.3, 2.0), "neg": control(NEGATIVE, True, 0.0, 0.0)}
    night = night_trust(checks, KINDS, date="2026-11-24")
    assert verdict_trust(VIOLATION, 0.5, check(1.2), kappa=0, night=night).state == UNTRUSTED
    assert verdict_trust(PASS, 0.5, check(), kappa=0, night=night).state == TRUSTED  # above truth: PASSes stand
    below = night_trust({"pos": control(POSITIVE, False, 0.4, 2.0)}, KINDS, date="d")
    passed = verdict_trust(PASS, 0.5, check(), kappa=0, night=below)
    assert passed.state == TRUSTED and passed.detectability == VOID
    assert verdict_trust(VIOLATION, 0.5, check(1.2), kappa=0, night=below).state == TRUSTED
    void = night_trust({"neg": control(NEGATIVE, False, 0.2, 0.0)}, KINDS, date="d")
    assert verdict_trust(PASS, 0.5, check(), kappa=0, night=void).state == UNTRUSTED
    crashed = night_trust({"neg": "RuntimeError: boom", "pos": "OSError: disk"}, KINDS, date="d")
    assert crashed.void_reason and crashed.violations_void_reason and crashed.detectability_void_reason


def test_an_unchecked_reference_is_never_trusted_unless_accepted_and_then_says_so():
    none = unchecked("no check rows", confidence=0.95)
    for status in (PASS, VIOLATION):
        trust = verdict_trust(status, 0.5, none, kappa=0)
        assert trust.state == UNCHECKED and trust.exits_untrusted
        accepted = verdict_trust(status, 0.5, none, kappa=0, night=NightTrust(accept_unchecked=True))
        assert accepted.state == ACCEPTED_UNCHECKED and not accepted.trusted and not accepted.exits_untrusted
        assert accepted.accepted_unchecked and "accepted" in accepted.reason
    assert verdict_trust(PASS, 0.5, None, kappa=0).state == UNCHECKED


# ------------------------------------------------------------------------------------------ references off the truth
@pytest.mark.slow
@pytest.mark.parametrize("shift", [1.0, -1.0])
def test_a_reference_off_the_truth_is_seen_by_the_check_and_marks_the_floors(shift):
    """A private target (eps-1 randomized response, claimed 1) audited against a reference that predicts clicks
    too readily (+1 in logit) or too rarely (-1): the check rows show the misfit (check_misfit_kappa > kappa 0) on
    most nights and the PASSes' floors say they were measured under a reference that misfits; with the right
    reference they do so rarely."""
    from scipy.special import expit, logit

    from auditing.audit import CheckRows, run_audit
    from auditing.verdict.judge import judge
    from tests.support.segment_worlds import night

    def marked(offset: float) -> int:
        count = 0
        for seed in range(10):
            world = night(200 + seed, drift=0.0, rows=60_000, epsilon=1.0)
            p_t, p_r, y, ids = world.audited
            c = world.check
            result = run_audit(p_t, expit(logit(p_r) + offset), y, ids, GameConfig(repetitions=1, seed=seed), BoundConfig(),
                               check=CheckRows(c.p_target, expit(logit(c.p_reference) + offset), c.labels,
                                               c.row_ids))
            verdict = judge(result, 1.0)
            count += verdict.status != VIOLATION and verdict.trust.detectability == MEASURED_UNDER_MISFIT
        return count

    assert marked(shift) >= 7
    assert marked(0.0) <= 2


@pytest.mark.slow
def test_the_positive_control_fails_for_a_reference_too_sure_of_the_common_label():
    """The positive control (randomized response at eps_c = 2) against a reference whose logits are 1.6 times the
    truth's (too sure that a row did not click): its bound exceeds eps_c on most seeds, so the night's VIOLATIONs
    are void; with the true probabilities it never does and always clears its floor."""
    import numpy as np
    from scipy.special import expit, logit

    from auditing.audit import run_audit
    from auditing.verdict.controls import check_control, rr_oracle_probabilities

    def judged(seed: int, scale: float):
        rng = np.random.default_rng(seed)
        p = expit(rng.normal(-2.5, 1.0, 20_000))
        y = (rng.random(p.size) < p).astype(np.int64)
        ids = np.arange(p.size, dtype=np.int64) * 3 + seed
        result = run_audit(rr_oracle_probabilities(ids, y, 2.0, seed=seed), expit(scale * logit(p)), y, ids,
                           GameConfig(repetitions=1, seed=seed), BoundConfig(), expected_curve=True)
        return check_control(POSITIVE, result, 2.0)

    off = [judged(seed, 1.6) for seed in range(12)]
    right = [judged(seed, 1.0) for seed in range(12)]
    assert sum(c.epsilon_lower_bound > 2.0 for c in off) >= 9
    night = night_trust({f"pos-{i}": c for i, c in enumerate(off)}, {f"pos-{i}": POSITIVE for i in range(12)},
                        date="d")
    assert night.violations_void_reason and "exceeds the control's true eps_c" in night.violations_void_reason
    assert all(c.passed for c in right)
