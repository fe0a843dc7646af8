"""The capacity check's exact test (auditing/bounds/misfit_test.py, docs/soundness.md sections 8 and 10.2): its
p-value and calibrated e-value are valid at the null boundary, and the joint test is tighter than two separate
limits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tests.support.capacity_nights import not_above_rate


def test_the_calibrated_e_value_has_expectation_at_most_one_on_the_null_boundary():
    """E[e] <= 1, summed exactly over both binomials, at several misfit-only accuracies and slacks (the audited
    side at f_eps(a + slack), the check at a): the exact test's p-value is valid at every level, and its
    calibration 1 / (2 sqrt(p)) integrates to 1 over a uniform p."""
    from auditing.bounds.misfit_test import calibrated_e_value, check_p_value, null_accuracy

    nb, nh, eps = 30, 20, 1.0
    cb, ch = np.arange(nb + 1), np.arange(nh + 1)
    for a, slack in ((0.5, 0.0), (0.8, 0.0), (0.3, 0.01), (0.95, 0.0)):
        pb = stats.binom.pmf(cb, nb, null_accuracy(a, eps, slack))
        ph = stats.binom.pmf(ch, nh, a)
        p = np.array([[check_p_value(int(i), nb, int(j), nh, eps, slack) for j in ch] for i in cb])
        e = np.vectorize(calibrated_e_value)(p)
        assert float(pb @ e @ ph) <= 1 + 1e-9, (a, slack)
        for level in (0.01, 0.05, 0.2):  # the p-value is valid: P[p <= u] <= u
            assert float(pb @ (p <= level) @ ph) <= level + 1e-9, (a, slack, level)
    assert calibrated_e_value(1.0) == 0.5 and calibrated_e_value(0.0025) == pytest.approx(10.0)


@pytest.mark.slow
@pytest.mark.parametrize(("guesses", "check_guesses", "accuracy", "eps"), [
    (400, 60, 0.55, 0.5), (1500, 200, 0.6, 1.0), (80, 15, 0.7, 0.2)])
def test_the_exact_test_holds_its_level_at_the_null_boundary(guesses, check_guesses, accuracy, eps):
    """Counts drawn at the hardest null (audited accuracy exactly sigmoid(eps + logit a), check accuracy a): the
    test rejects eps at most at 5% (it is exact, so usually less)."""
    from scipy.special import expit, logit

    from auditing.bounds.misfit_test import exact_epsilon_lower

    rng = np.random.default_rng(guesses)
    trials, rejected = 150, 0
    for _ in range(trials):
        cb = int(rng.binomial(guesses, expit(eps + logit(accuracy))))
        ch = int(rng.binomial(check_guesses, accuracy))
        rejected += exact_epsilon_lower(cb, guesses, ch, check_guesses, 0.05) > eps
    assert not_above_rate(rejected, trials), rejected


def test_the_exact_test_is_tighter_than_two_separate_limits():
    """On counts like a real night's (a non-private model on the AdKDD'21 sample), the joint test keeps more of
    the evidence than a lower limit on one side and an upper limit on the other would."""
    from auditing.bounds.misfit_test import exact_epsilon_lower
    from auditing.verdict.capacity_check import _logit, _lower, _upper

    joint = exact_epsilon_lower(790, 1047, 118, 205, 0.05)
    separate = _logit(_lower(790, 1047, 0.0125)) - _logit(_upper(118, 205, 0.0375))
    assert joint > separate + 0.1 and joint > 0.5 > separate
