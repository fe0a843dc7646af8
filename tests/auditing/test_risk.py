"""auditing.risk as a whole: the figures at eps = 0 and at infinite eps, bad input, and the informed attribute and
Gaussian reconstruction bounds across its modules (each module's own checks: tests/auditing/risk/).

Papers: [BWC] Swanberg et al., "Beyond the Worst Case"; [ARD] Guerra-Balboa et al., "Attack resilience of
differential privacy"; [BRD] Hayes et al., "Bounding training data reconstruction in DP-SGD".
"""

from __future__ import annotations

import math

import pytest

from auditing.game.prior_histogram import PriorHistogram
from auditing.risk.attack_bounds import (
    aia_advantage_bound,
    mia_advantage_bound,
    posterior_ceiling,
    reconstruction_bound_dp,
    reconstruction_bound_gdp,
)
from auditing.risk.column_bound import column_bound, eps_protect
from auditing.risk.figures import risk_block
from labeldp.errors import LabelDPInputError
from tests.support.ctr_priors import ctr_priors


@pytest.mark.parametrize("p", [0.001, 0.1, 0.5, 0.97])
def test_eps_zero_gives_the_prior_back(p):
    assert posterior_ceiling(0, p) == pytest.approx(p, rel=1e-12)
    assert reconstruction_bound_dp(0, 0, p) == pytest.approx(p, rel=1e-12)
    assert reconstruction_bound_gdp(0, p) == pytest.approx(p, rel=1e-12)
    assert mia_advantage_bound(0) == 0 and aia_advantage_bound(0, 2) == 0
    priors = [p, 0.3, 0.8]
    assert column_bound(0, priors, 1).expected == pytest.approx(sum(priors), rel=1e-12)


def test_infinite_and_huge_epsilon_are_certain_success():
    assert posterior_ceiling(math.inf, 0.01) == 1.0 and mia_advantage_bound(math.inf) == 1.0
    assert column_bound(math.inf, [0.1, 0.2], 2).tail == 1.0
    for eps in (1000.0, 1e6):  # a non-private model may claim a huge finite eps (the guardrail test uses 1000)
        assert mia_advantage_bound(eps) == 1.0 and aia_advantage_bound(eps, 2) == pytest.approx(0.5)
        assert posterior_ceiling(eps, 1e-6) == pytest.approx(1.0)
        assert reconstruction_bound_dp(eps, 1e-5, 0.1) == 1.0
        block = risk_block(eps, 1e-5, PriorHistogram.from_probabilities([0.01, 0.2, 0.6]))
        assert block.column_tail_bound == 1.0 and block.posterior_ceiling_p90 == pytest.approx(1.0)


@pytest.mark.parametrize("call, message", [
    (lambda: posterior_ceiling(-1, 0.5), "epsilon must be >= 0"),
    (lambda: posterior_ceiling(float("nan"), 0.5), "epsilon must be >= 0"),
    (lambda: posterior_ceiling(1, 0.5, delta=1.0), "delta must be a finite number in \\[0, 1\\)"),
    (lambda: posterior_ceiling(1, [0.5, 0.0, 1.0, float("nan")]), "3 of 4 value\\(s\\)"),
    (lambda: column_bound(1, [], 1), "empty"),
    (lambda: column_bound(1, [0.2, 0.3], 3), "1..n = 1..2"),
    (lambda: column_bound(1, [0.2, 0.3], 0), "1..n = 1..2"),
    (lambda: aia_advantage_bound(1, classes=1), "classes must be a whole number >= 2"),
    (lambda: eps_protect([0.2], 1, 1.5), "max_risk must be in \\(0, 1\\)"),
])
def test_bad_input_names_the_argument_and_the_count(call, message):
    with pytest.raises(LabelDPInputError, match=message):
        call()


def test_informed_attribute_bound_and_the_tightest_gaussian_mu():
    """[ARD] Theorem 7.3 (informed prior) with Theorem 7.2's tanh cap; and for a stated (eps, delta) the mu of
    the reconstruction bound is the largest mu with delta(eps; mu) <= delta (Dong et al. Cor. 2.13), so the
    Gaussian form never exceeds the general (eps, delta) blow-up of [BRD] Theorem 2 at that prior."""
    eps = 0.1
    assert aia_advantage_bound(eps, 3, prior_max=0.4, prior_min=0.25) == pytest.approx(0.4 * math.expm1(eps))
    big = 3.0
    assert aia_advantage_bound(big, 3, prior_max=0.4, prior_min=0.25) == pytest.approx(
        min(0.4 * 2 * math.tanh(big / 2) + 0.15, math.tanh(big / 2)))
    with pytest.raises(LabelDPInputError, match="prior_min <= 1/classes <= prior_max"):
        aia_advantage_bound(1, 3, prior_max=0.2, prior_min=0.1)
    from auditing.bounds.gaussian_dp import gaussian_delta, mu_for_epsilon

    h = PriorHistogram.from_probabilities(ctr_priors(2000))
    for eps, delta in ((0.5, 1e-5), (2.0, 1e-6), (8.0, 1e-5)):
        mu = mu_for_epsilon(eps, delta)
        assert gaussian_delta(eps, mu) == pytest.approx(delta, rel=1e-6)
        assert gaussian_delta(eps, mu * 1.01) > delta  # any larger mu breaks the claim
        block = risk_block(eps, delta, h, mu=mu)
        assert block.reconstruction_bound_gdp <= block.reconstruction_bound + 1e-12
