"""f-DP epsilon lower bound: the paper's Algorithm 3 on the (eps, delta) curve f_{eps,delta} (docs/fdp-curve.md).
The recursion itself (Algorithm 3's kernel, the inverse, the shortcuts): test_fdp_recursion.py."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.stats import binom, binomtest, norm

from auditing.bounds.fdp import EPSILON_TOLERANCE, fdp_epsilon_lower_bound, fdp_mu_lower_bound, fdp_rejects
from auditing.bounds.gaussian_dp import epsilon_for_mu
from labeldp.errors import LabelDPInputError
from tests.support.fdp_cases import random_cases

DELTA = 1e-5


# ---- monotonicity -------------------------------------------------------------------------------------------


def test_rejection_is_monotone_in_epsilon_and_in_correct():
    rng = np.random.default_rng(6)
    epsilons = np.linspace(0, 6, 300)
    for c, cp, m, gamma, delta, kappa in random_cases(rng, 40, 5000):
        decisions = [fdp_rejects(c, cp, m, float(e), delta=delta, confidence=1 - gamma, kappa=kappa)
                     for e in epsilons]
        assert decisions == sorted(decisions, reverse=True)  # True ... True False ... False
    for cp, m, delta in ((40, 40, 0.0), (300, 3000, 1e-5), (2000, 10**4, 0.0)):
        bounds = [fdp_epsilon_lower_bound(c, cp, m, delta=delta) for c in range(0, cp + 1, max(1, cp // 80))]
        assert all(a <= b for a, b in itertools.pairwise(bounds))
        assert bounds[0] == 0.0 and bounds[-1] > 1.0


def test_bound_shrinks_as_delta_grows():
    for c, cp, m in ((900, 1000, 1000), (16000, 20000, 10**5)):
        bounds = [fdp_epsilon_lower_bound(c, cp, m, delta=d) for d in (0.0, 1e-9, 1e-5, 1e-3, 0.01, 0.1)]
        assert all(a >= b for a, b in itertools.pairwise(bounds))
        assert bounds[0] > 0.0


# ---- the public bounds --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("correct", "guesses", "m"),
    [(0, 0, 10), (0, 1000, 1000), (0, 5, 10**8), (1, 1, 1), (4, 4, 4), (500, 1000, 1000), (5000, 10000, 20000),
     (10**6, 2 * 10**6, 10**8), (3, 10, 10)],
)
@pytest.mark.parametrize("delta", [0.0, DELTA])
def test_no_evidence_gives_exactly_zero(correct, guesses, m, delta):
    assert fdp_epsilon_lower_bound(correct, guesses, m, delta=delta) == 0.0
    assert fdp_rejects(correct, guesses, m, 0.0, delta=delta) is False
    assert fdp_mu_lower_bound(correct, guesses, m) == 0.0


def test_at_most_half_correct_gives_zero():
    for cp in (1, 2, 7, 100, 5001, 200000):
        for c in {0, 1, cp // 3, cp // 2}:
            if c <= cp / 2:
                for delta in (0.0, DELTA):
                    assert fdp_epsilon_lower_bound(c, cp, 2 * cp, delta=delta) == 0.0


def test_kappa_tests_the_shifted_curve():
    rng = np.random.default_rng(7)
    for c, cp, m, gamma, delta, _ in random_cases(rng, 40, 3000):
        for kappa in (0.01, 0.2, 1.5):
            eps = float(rng.uniform(0, 3))
            shifted = fdp_rejects(c, cp, m, eps + kappa, delta=min(delta * math.exp(kappa), 0.999999),
                                  confidence=1 - gamma)
            assert fdp_rejects(c, cp, m, eps, delta=delta, confidence=1 - gamma, kappa=kappa) == shifted


def test_kappa_with_pure_delta_subtracts_kappa():
    for c, cp, m in ((900, 1000, 1000), (16000, 20000, 10**5), (176159, 200000, 10**6), (30, 30, 30)):
        base = fdp_epsilon_lower_bound(c, cp, m, delta=0.0)
        assert base > 0.0
        for kappa in (0.0, 0.001, 0.1, 0.5, base / 2, base + 0.1, 10.0):
            bound = fdp_epsilon_lower_bound(c, cp, m, delta=0.0, kappa=kappa)
            assert bound == pytest.approx(max(0.0, base - kappa), abs=1.01 * EPSILON_TOLERANCE)


def test_kappa_shrinks_the_bound_and_large_kappa_gives_zero():
    bounds = [fdp_epsilon_lower_bound(16000, 20000, 10**5, delta=DELTA, kappa=k)
              for k in (0.0, 1e-4, 1e-3, 0.01, 0.1, 0.5, 1.0, 2.0)]
    assert bounds[0] > 1.0 and bounds[-1] == 0.0
    assert all(a >= b for a, b in itertools.pairwise(bounds))
    # e^kappa delta >= 1: the tested curve is 0, nothing can be rejected (and no overflow for huge kappa).
    assert fdp_epsilon_lower_bound(9000, 10000, 10000, delta=0.5, kappa=0.7) == 0.0
    assert fdp_epsilon_lower_bound(9000, 10000, 10000, delta=DELTA, kappa=1e6) == 0.0
    assert fdp_epsilon_lower_bound(9000, 10000, 10000, delta=0.0, kappa=1e6) == 0.0
    assert fdp_rejects(9000, 10000, 10000, 0.0, delta=0.0, kappa=1e300) is False


def test_pure_delta_is_allowed_and_finite():
    for n in (10, 1000, 10**6, 10**8):
        eps = fdp_epsilon_lower_bound(n, n, n, delta=0.0)
        assert 0.0 < eps < math.inf
    assert fdp_rejects(900, 1000, 1000, 1.0, delta=0.0) is True


def test_reported_end_is_the_rejected_one_and_within_tolerance():
    rng = np.random.default_rng(8)
    for c, cp, m, gamma, delta, kappa in random_cases(rng, 60, 50000):
        kwargs = dict(delta=delta, confidence=1 - gamma, kappa=kappa)
        eps = fdp_epsilon_lower_bound(c, cp, m, **kwargs)
        if eps == 0.0:
            assert not fdp_rejects(c, cp, m, EPSILON_TOLERANCE, **kwargs)
            continue
        assert fdp_rejects(c, cp, m, eps, **kwargs)  # conservative: the value itself is rejected
        assert not fdp_rejects(c, cp, m, eps + 1.01 * EPSILON_TOLERANCE, **kwargs)  # and tight to 1e-4


def decimal_algorithm3(c: int, cp: int, m: int, gamma: float, eps: float, delta: float) -> Decimal:
    """Algorithm 3 on f_{eps,delta} in 60-digit decimal arithmetic (the kernel's e^eps, e^-eps as constants)."""
    e, en, d, one = Decimal(math.exp(eps)), Decimal(math.exp(-eps)), Decimal(delta), Decimal(1)
    g = Decimal(gamma)
    r, h = g * c / m, g * (cp - c) / m
    for i in range(c - 1, -1, -1):
        h_new = one - d if r >= one else max(Decimal(0), (r - d) * en, (one - d) - e * (one - r))
        r_new = r + Decimal(i) / Decimal(cp - i) * (h_new - h)
        if r_new == r and h_new == h:
            break  # a fixed point of the exact recursion at this precision
        r, h = r_new, h_new
    return r + h


def test_reported_ends_agree_with_high_precision():
    """The reported bound is rejected and bound + tolerance is not, also in 60-digit arithmetic."""
    rng = np.random.default_rng(13)
    checked = 0
    with localcontext() as context:
        context.prec = 60
        for c, cp, m, gamma, delta, _ in random_cases(rng, 60, 1200):
            eps = fdp_epsilon_lower_bound(c, cp, m, delta=delta, confidence=1 - gamma)
            if eps == 0.0:
                continue
            threshold = Decimal(cp) / Decimal(m)
            assert decimal_algorithm3(c, cp, m, gamma, eps, delta) >= threshold
            assert decimal_algorithm3(c, cp, m, gamma, eps + 1.01 * EPSILON_TOLERANCE, delta) < threshold
            checked += 1
    assert checked > 30


def test_positive_delta_needs_more_than_delta_m_over_gamma_correct():
    # r[c] = gamma c/m <= delta makes h[c-1] = 0: nothing can be rejected (docs/fdp-curve.md section 5).
    m, delta = 10**6, 1e-5  # delta m / gamma = 200 at confidence 0.95
    assert fdp_epsilon_lower_bound(199, 199, m, delta=delta) == 0.0
    assert fdp_epsilon_lower_bound(201, 201, m, delta=delta) > 3.0
    assert fdp_epsilon_lower_bound(199, 199, m, delta=0.0) > 4.0


def test_large_m_and_large_eps_no_grid_cap():
    big = 10**8
    eps = fdp_epsilon_lower_bound(big, big, big, delta=0.0)
    assert eps == pytest.approx(17.32, abs=0.01)  # outside any fixed grid's reach
    assert fdp_epsilon_lower_bound(big, big, big, delta=1e-12) <= eps
    mid = fdp_epsilon_lower_bound(9 * big // 10, big, big, delta=DELTA)
    assert mid == pytest.approx(math.log(9), abs=0.01)
    assert fdp_epsilon_lower_bound(big // 2, big, big, delta=DELTA) == 0.0


def test_rejects_edge_cases():
    assert fdp_rejects(900, 1000, 1000, 0.0, delta=DELTA) is True
    assert fdp_rejects(900, 1000, 1000, math.inf, delta=DELTA) is False
    assert fdp_rejects(900, 1000, 1000, math.inf, delta=0.0) is False


def test_confidence_that_rounds_gamma_to_one_is_refused():
    with pytest.raises(LabelDPInputError, match="confidence"):
        fdp_epsilon_lower_bound(10, 10, 10, delta=0.0, confidence=1e-18)
    with pytest.raises(LabelDPInputError, match="confidence"):
        fdp_mu_lower_bound(10, 10, 10, confidence=1e-18)


# ---- the Gaussian mu reading --------------------------------------------------------------------------------


def test_mu_reading_is_sound_for_the_gaussian_mechanism():
    """The mu reading's promise on a mechanism whose Pr[C >= c] is known exactly.

    Releasing every label bit plus N(0, 1/mu^2) noise is mu-GDP for label changes; guessing by threshold 1/2
    gets each of the c' guesses right independently with probability Phi(mu/2). If Algorithm 3 rejects f_mu at
    level gamma, this mechanism's Pr[C >= c] = P[Bin(c', Phi(mu/2)) >= c] must be <= gamma.
    """
    rng = np.random.default_rng(10)
    checked = 0
    for c, cp, m, gamma, _, _ in random_cases(rng, 200, 400):
        mu = fdp_mu_lower_bound(c, cp, m, confidence=1 - gamma)
        if mu > 0:
            checked += 1
            assert binom.sf(c - 1, cp, norm.cdf(mu / 2)) <= gamma * (1 + 1e-9)
    assert checked > 60
    assert fdp_mu_lower_bound(5, 5, 5) > 0.0 and fdp_mu_lower_bound(4, 4, 4) == 0.0


# ---- validity against randomized response, and why the Gaussian conversion is not -------------------------

RR_EPSILON = 2.0
RR_ACCURACY = math.exp(RR_EPSILON) / (1 + math.exp(RR_EPSILON))


def simulate_rr_game(rng: np.random.Generator, guesses: int, trials: int) -> np.ndarray:
    """The per-row game for randomized response at RR_EPSILON, played directly (no auditing code involved).

    Each guessed row has a label y0 and the other label y1 = 1 - y0 as counterfactual; a fair coin b picks which
    one the mechanism trains on; RR keeps it with probability e^eps / (1 + e^eps) and flips it otherwise; the
    adversary guesses b' = the index of the label equal to the released one. Returns C per trial.
    """
    counts = np.empty(trials, dtype=np.int64)
    for start in range(0, trials, 500):
        size = (min(500, trials - start), guesses)
        y0 = rng.integers(0, 2, size)
        b = rng.integers(0, 2, size)
        trained = np.where(b == 0, y0, 1 - y0)
        released = trained ^ (rng.random(size) >= RR_ACCURACY)
        guess = np.where(released == y0, 0, 1)
        counts[start:start + size[0]] = (guess == b).sum(axis=1)
    return counts


@pytest.mark.parametrize(("guesses", "m", "trials"), [(1000, 1000, 4000), (5000, 20000, 1500)])
def test_rr_simulation_bound_is_valid_and_gaussian_conversion_is_not(guesses, m, trials):
    rng = np.random.default_rng(11)
    counts = simulate_rr_game(rng, guesses, trials)
    assert abs(counts.mean() / guesses - RR_ACCURACY) < 0.01  # the simulation is RR at eps = 2
    values = np.unique(counts)
    for confidence in (0.95, 0.8):
        curve = {int(c): fdp_epsilon_lower_bound(int(c), guesses, m, delta=0.0, confidence=confidence)
                 for c in values}
        above = int(sum(curve[int(c)] > RR_EPSILON for c in counts))
        test = binomtest(above, trials, 1 - confidence, alternative="greater")
        assert test.pvalue > 1e-3, (confidence, above / trials)
    # The old reading: largest rejected mu, converted with the Gaussian-DP curve at delta 1e-5.
    gaussian = {int(c): epsilon_for_mu(fdp_mu_lower_bound(int(c), guesses, m), DELTA) for c in values}
    curve = {int(c): fdp_epsilon_lower_bound(int(c), guesses, m, delta=DELTA) for c in values}
    gaussian_above = np.mean([gaussian[int(c)] > RR_EPSILON for c in counts])
    curve_above = np.mean([curve[int(c)] > RR_EPSILON for c in counts])
    assert gaussian_above > 0.9 and curve_above < 0.1


@pytest.mark.parametrize(("guesses", "m"), [(50, 50), (100, 1000), (1000, 1000), (1000, 10**6), (20000, 20000)])
@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_rr_exact_level(guesses, m, confidence):
    """For RR at eps, C ~ Bin(c', e^eps/(1+e^eps)) exactly: the smallest c that rejects (eps, 0) must have
    Pr[C >= c] <= gamma (Theorem 10 read with REJECT = 'r[0] + h[0] >= c'/m')."""
    rejected = [c for c in range(guesses + 1) if fdp_rejects(c, guesses, m, RR_EPSILON, delta=0.0,
                                                             confidence=confidence)]
    assert rejected == list(range(rejected[0], guesses + 1))  # monotone in c
    assert binom.sf(rejected[0] - 1, guesses, RR_ACCURACY) <= 1 - confidence


def test_counterexample_of_docs():
    """docs/fdp-curve.md section 7: RR at eps = 2, the expected count 881 of 1000 guesses."""
    c, cp, m = 881, 1000, 1000
    mu = fdp_mu_lower_bound(c, cp, m)
    assert mu == pytest.approx(0.8096, abs=1e-4)
    assert epsilon_for_mu(mu, DELTA) == pytest.approx(3.433, abs=1e-3)  # > 2: the Gaussian conversion overshoots
    assert fdp_epsilon_lower_bound(c, cp, m, delta=DELTA) == pytest.approx(1.8312, abs=2e-4)  # <= 2
    assert fdp_epsilon_lower_bound(c, cp, m, delta=0.0) == pytest.approx(1.8312, abs=2e-4)
    # RR at eps = 2 is exactly (2, 0)-DP, and it is mu-GDP only from mu = 2 Phi^-1(e^2/(1+e^2)) on:
    assert 2 * norm.ppf(RR_ACCURACY) == pytest.approx(2.358, abs=1e-3)


# ---- arguments ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(correct=5, guesses=4, m=10), "correct"),
        (dict(correct=-1, guesses=4, m=10), "correct"),
        (dict(correct=2.5, guesses=4, m=10), "correct"),
        (dict(correct=1, guesses=11, m=10), "guesses"),
        (dict(correct=0, guesses=0, m=0), "m"),
        (dict(correct=1, guesses=2, m=10, delta=-0.1), "delta"),
        (dict(correct=1, guesses=2, m=10, delta=1.0), "delta"),
        (dict(correct=1, guesses=2, m=10, delta=float("nan")), "delta"),
        (dict(correct=1, guesses=2, m=10, confidence=1.0), "confidence"),
        (dict(correct=1, guesses=2, m=10, confidence=0.0), "confidence"),
        (dict(correct=1, guesses=2, m=10, kappa=-0.1), "kappa"),
        (dict(correct=1, guesses=2, m=10, kappa=float("nan")), "kappa"),
        (dict(correct=1, guesses=2, m=10, kappa=math.inf), "kappa"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs, name):
    kwargs = {"delta": DELTA, **kwargs}
    with pytest.raises(LabelDPInputError, match=name):
        fdp_epsilon_lower_bound(**kwargs)
    with pytest.raises(LabelDPInputError, match=name):
        fdp_rejects(epsilon=1.0, **kwargs)
    if name not in ("delta", "kappa"):
        kwargs.pop("delta")
        with pytest.raises(LabelDPInputError, match=name):
            fdp_mu_lower_bound(**kwargs)


def test_rejects_bad_epsilon():
    for bad in (-0.1, float("nan"), "x"):
        with pytest.raises(LabelDPInputError, match="epsilon"):
            fdp_rejects(9, 10, 10, bad, delta=DELTA)


def test_tau_is_gone_and_the_mu_reading_takes_no_kappa():
    with pytest.raises(TypeError):
        fdp_mu_lower_bound(9, 10, 10, tau=0.1)
    with pytest.raises(TypeError):
        fdp_mu_lower_bound(9, 10, 10, kappa=0.1)
    with pytest.raises(TypeError):
        fdp_epsilon_lower_bound(9, 10, 10, delta=DELTA, tau=0.1)
    with pytest.raises(TypeError):
        fdp_rejects(9, 10, 10, 1.0, delta=DELTA, tau=0.1)
