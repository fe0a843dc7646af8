"""Gaussian-DP trade-off function and the (eps, delta) conversion (Dong, Roth and Su 2022, Def. 2.7, Cor. 2.13)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr, ndtri

from auditing.bounds.gaussian_dp import (
    epsilon_for_mu,
    gaussian_delta,
    gaussian_tradeoff,
    log_gaussian_delta,
    mu_for_epsilon,
)
from labeldp.errors import LabelDPInputError

# Normal-table values, independent of the code under test.
PHI_MINUS_0_5 = 0.30853753872598688
PHI_MINUS_1_5 = 0.066807201268858057
PHI_PLUS_0_5 = 0.69146246127401312


def direct_delta(eps: float, mu: float) -> float:
    """Corollary 2.13 evaluated literally (fine where nothing over- or underflows)."""
    return ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2)


def log_loss_integral_delta(eps: float, mu: float) -> float:
    """log delta(eps) from delta = E[(1 - e^(eps - L))_+], L ~ N(mu^2/2, mu^2) the Gaussian mechanism's privacy loss.

    Independent of Corollary 2.13. With u = L - eps and a = (eps - mu^2/2)/mu the density factors as
    phi(a) e^(-u a/mu - u^2/(2 mu^2)) / mu, so the integral left to quad is of order one even in the far tail.
    """

    def integrand(u: float) -> float:
        return -math.expm1(-u) * math.exp(-u * a / mu - u * u / (2 * mu * mu))

    a = (eps - mu * mu / 2) / mu
    upper = 60 * mu * mu + 60 * mu
    value, _ = integrate.quad(integrand, 0.0, upper, epsabs=0.0, epsrel=1e-12, limit=400)
    return -a * a / 2 - 0.5 * math.log(2 * math.pi) - math.log(mu) + math.log(value)


# ---- the trade-off function -------------------------------------------------------------------------------


def test_tradeoff_matches_definition_and_endpoints():
    x = np.linspace(0.001, 0.999, 101)
    for mu in (0.0, 0.3, 1.0, 3.0):
        np.testing.assert_allclose(gaussian_tradeoff(x, mu), ndtr(ndtri(1 - x) - mu), rtol=1e-12, atol=1e-15)
        assert gaussian_tradeoff(0.0, mu) == 1.0
        assert gaussian_tradeoff(1.0, mu) == 0.0
    np.testing.assert_allclose(gaussian_tradeoff(x, 0.0), 1 - x, rtol=1e-13)  # mu = 0: perfect privacy


def test_tradeoff_is_symmetric_decreasing_and_convex():
    x = np.linspace(0.0, 1.0, 2001)
    f = gaussian_tradeoff(x, 1.3)
    np.testing.assert_allclose(gaussian_tradeoff(f, 1.3), x, atol=1e-12)  # f = f^-1 (Gaussian is symmetric)
    assert np.all(np.diff(f) <= 0)
    assert np.all(np.diff(f, 2) >= -1e-12)


def test_tradeoff_small_x_keeps_digits():
    # 1 - 1e-20 rounds to 1; the implementation uses -Phi^-1(x) and stays accurate.
    assert gaussian_tradeoff(1e-20, 1.0) == pytest.approx(ndtr(-ndtri(1e-20) - 1.0), rel=1e-13)
    assert gaussian_tradeoff(1e-20, 1.0) < 1.0


def test_tradeoff_rejects_bad_input():
    with pytest.raises(LabelDPInputError, match="mu"):
        gaussian_tradeoff(0.5, -1.0)
    with pytest.raises(LabelDPInputError, match="x must"):
        gaussian_tradeoff([0.5, 1.5], 1.0)


# ---- delta(eps; mu) ---------------------------------------------------------------------------------------


def test_delta_known_values():
    # delta(1; 1) = Phi(-1/2) - e Phi(-3/2); delta(0; 1) = 2 Phi(1/2) - 1.
    assert gaussian_delta(1.0, 1.0) == pytest.approx(PHI_MINUS_0_5 - math.e * PHI_MINUS_1_5, rel=1e-13)
    assert gaussian_delta(0.0, 1.0) == pytest.approx(2 * PHI_PLUS_0_5 - 1, rel=1e-13)
    assert gaussian_delta(3.0, 0.0) == 0.0
    assert log_gaussian_delta(3.0, math.inf) == 0.0


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0, 15.0])
def test_delta_matches_direct_formula_and_privacy_loss_integral(mu, eps):
    expected = log_loss_integral_delta(eps, mu)
    # Below delta ~ 1e-300 (log < -700, far outside any use) the two log-Phi terms cancel to ~1e-4 of each
    # other for tiny mu, so only the representable range is held to 1e-9 in log delta.
    tolerance = 1e-9 if expected > -700 else 1e-8 * abs(expected)
    assert log_gaussian_delta(eps, mu) == pytest.approx(expected, abs=tolerance)
    direct = direct_delta(eps, mu)
    if direct > 1e-8:  # the literal formula loses relative digits to cancellation below that
        assert gaussian_delta(eps, mu) == pytest.approx(direct, rel=1e-11)


def test_delta_is_the_conjugate_of_the_tradeoff_function():
    # delta(eps) = sup_x 1 - f(x) - e^eps x (Dong et al. Prop. 2.12; the paper's Proposition 8 read backwards).
    x = np.concatenate([np.logspace(-14, -1, 20001), np.linspace(0.1, 1.0, 20001)])
    for mu, eps in ((0.5, 0.2), (1.0, 1.0), (2.0, 3.0)):
        sup = float(np.max(1 - gaussian_tradeoff(x, mu) - math.exp(eps) * x))
        assert gaussian_delta(eps, mu) == pytest.approx(sup, rel=1e-5)


def test_delta_stable_for_large_eps():
    # At eps = 50 with mu = 1 both Phi terms underflow (Phi(-49.5) ~ 1e-535); the log form stays finite.
    assert direct_delta(50.0, 1.0) == 0.0
    log_delta = log_gaussian_delta(50.0, 1.0)
    assert -2000 < log_delta < -1000
    assert log_delta == pytest.approx(log_loss_integral_delta(50.0, 1.0), abs=1e-9)
    assert log_gaussian_delta(50.0, 0.2) == pytest.approx(log_loss_integral_delta(50.0, 0.2), abs=1e-7)
    # And the whole curve is decreasing in eps and increasing in mu.
    eps_grid = np.linspace(0, 50, 501)
    values = [log_gaussian_delta(e, 6.0) for e in eps_grid]
    assert np.all(np.diff(values) < 0)
    mus = np.linspace(0.1, 10, 200)
    assert np.all(np.diff([log_gaussian_delta(30.0, m) for m in mus]) > 0)


# ---- epsilon_for_mu / mu_for_epsilon ----------------------------------------------------------------------


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-6, 1e-10, 1e-30, 1e-300])
def test_round_trips(delta):
    for mu in (0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 6.2, 10.0):
        eps = epsilon_for_mu(mu, delta)
        if eps == 0.0:
            assert gaussian_delta(0.0, mu) <= delta
            continue
        assert mu_for_epsilon(eps, delta) == pytest.approx(mu, rel=1e-10)
        # The conservative side: delta(eps) >= delta, and only by rounding.
        assert log_gaussian_delta(eps, mu) >= math.log(delta)
        assert log_gaussian_delta(eps, mu) == pytest.approx(math.log(delta), abs=1e-9)
    for eps in (0.0, 0.01, 0.5, 1.0, 5.0, 20.0, 50.0):
        mu = mu_for_epsilon(eps, delta)
        assert gaussian_delta(eps, mu) == pytest.approx(delta, rel=1e-9)
        assert epsilon_for_mu(mu, delta) == pytest.approx(eps, abs=1e-9)


def test_epsilon_for_mu_is_monotone():
    mus = np.linspace(0.01, 8.0, 400)
    eps = [epsilon_for_mu(m, 1e-6) for m in mus]
    assert np.all(np.diff(eps) > 0)
    assert max(eps) > 50  # eps up to ~50 is in range
    deltas = np.logspace(-12, -1, 60)
    assert np.all(np.diff([epsilon_for_mu(1.0, d) for d in deltas]) < 0)
    epsilons = np.linspace(0, 50, 300)
    assert np.all(np.diff([mu_for_epsilon(e, 1e-6) for e in epsilons]) > 0)


def test_epsilon_for_mu_edge_cases():
    assert epsilon_for_mu(0.0, 1e-6) == 0.0  # perfect privacy
    assert epsilon_for_mu(1.0, 0.5) == 0.0  # delta >= delta(0; 1) = 0.383: every eps >= 0 works
    assert epsilon_for_mu(1.0, 0.0) == math.inf  # no Gaussian with mu > 0 is pure DP
    assert epsilon_for_mu(math.inf, 1e-6) == math.inf
    # mu = 0.1 (Gaussian noise multiplier 10 on a sensitivity-1 query, mu = 1/sigma) at delta 1e-6: the eps with
    # delta(eps; 0.1) = 1e-6 by Cor. 2.13 is 0.396857 (scipy brentq on direct_delta above, independent of the code).
    assert epsilon_for_mu(0.1, 1e-6) == pytest.approx(0.3969, abs=1e-4)


def test_mu_for_epsilon_edge_cases():
    assert mu_for_epsilon(0.0, 0.1) == pytest.approx(2 * ndtri(0.55), rel=1e-14)  # 2 Phi(mu/2) - 1 = delta
    assert mu_for_epsilon(3.0, 0.0) == 0.0
    assert mu_for_epsilon(math.inf, 1e-6) == math.inf


def test_bad_inputs_name_the_argument():
    with pytest.raises(LabelDPInputError, match="delta"):
        epsilon_for_mu(1.0, 1.0)
    with pytest.raises(LabelDPInputError, match="delta"):
        mu_for_epsilon(1.0, -0.1)
    with pytest.raises(LabelDPInputError, match="mu"):
        epsilon_for_mu(float("nan"), 1e-6)
    with pytest.raises(LabelDPInputError, match="epsilon"):
        mu_for_epsilon(-1.0, 1e-6)
