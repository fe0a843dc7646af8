"""Binomial bounds (paper Thm. 16/17 at kappa, docs/soundness.md): closed forms, agreement with direct
root-finding (beta = sigmoid(eps + kappa), delta term 2 m e^kappa delta alpha), the kappa shift, monotonicity,
edge cases, bad input and statistical soundness against the worst-case attacker."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from auditing.bounds.binomial import (
    _alpha,
    beta_from_epsilon,
    binomial_epsilon_lower_bound,
    binomial_rejects,
    pure_epsilon_lower_bounds,
)
from labeldp.errors import LabelDPInputError


def independent_beta(eps, kappa):
    """beta = e^eps / (e^eps + e^-kappa), written out here rather than taken from the code under test."""
    return 1.0 / (1.0 + math.exp(-eps - kappa))


def direct_pure_bound(c, g, confidence=0.95, kappa=0.0):
    """Independent implementation: root of Pr[Bin(g, beta(eps)) >= c] = 1 - confidence with scipy.stats."""
    def f(eps):
        return stats.binom.sf(c - 1, g, independent_beta(eps, kappa)) - (1 - confidence)
    if f(0.0) >= 0:
        return 0.0
    return optimize.brentq(f, 0.0, 40.0, xtol=1e-12)


def brute_alpha(c, g, beta):
    """alpha = max_{1 <= j <= c} (Pr[B >= c - j] - Pr[B >= c]) / j, B ~ Binomial(g, beta), by scipy.stats."""
    dist = stats.binom(g, beta)
    return max((dist.sf(c - j - 1) - dist.sf(c - 1)) / j for j in range(1, c + 1))


def direct_delta_bound(c, g, m, delta, confidence=0.95, kappa=0.0):
    """Independent implementation of the delta > 0 bound: the root in eps of
    Pr[Bin(g, beta) >= c] + 2 m e^kappa delta alpha = 1 - confidence (Steinke et al. 2023 Thm. 3.1 at
    (eps + kappa, e^kappa delta), docs/soundness.md section 3)."""
    def f(eps):
        beta = independent_beta(eps, kappa)
        return (stats.binom.sf(c - 1, g, beta) + 2.0 * m * math.exp(kappa) * delta * brute_alpha(c, g, beta)
                - (1 - confidence))
    if f(0.0) >= 0:
        return 0.0
    return optimize.brentq(f, 0.0, 40.0, xtol=1e-10)


def test_all_correct_closed_form():
    # c = c': Pr[Bin(c', beta) >= c'] = beta^c' = gamma  =>  beta* = gamma^(1/c'), eps = logit(beta*).
    for g in (10, 100, 1000):
        beta = 0.05 ** (1 / g)
        assert binomial_epsilon_lower_bound(g, g, 10**6) == pytest.approx(math.log(beta / (1 - beta)), abs=1e-9)
    # By hand: c = c' = 10 -> beta* = 0.05^0.1 = 0.74113, eps = ln(0.74113 / 0.25887) = 1.05186
    assert binomial_epsilon_lower_bound(10, 10, 100) == pytest.approx(1.05186, abs=1e-4)


def test_single_correct_guess_is_no_evidence():
    # beta* = 0.05 < 1/2 -> eps would be negative -> 0.
    assert binomial_epsilon_lower_bound(1, 1, 10) == 0.0


@settings(max_examples=60, deadline=None)
@given(g=st.integers(1, 3000), frac=st.floats(0.5, 1.0), conf=st.floats(0.5, 0.999), kappa=st.floats(0, 2.0))
def test_matches_direct_root_finding(g, frac, conf, kappa):
    c = max(1, min(g, math.ceil(frac * g)))
    ours = binomial_epsilon_lower_bound(c, g, 10**6, confidence=conf, kappa=kappa)
    assert ours == pytest.approx(direct_pure_bound(c, g, conf, kappa), abs=1e-6)


def test_beta_is_sigmoid_of_eps_plus_kappa():
    for eps, kappa in [(0.0, 0.0), (1.0, 0.0), (1.0, 0.7), (0.0, 0.7), (5.0, 2.0), (40.0, 3.0)]:
        assert beta_from_epsilon(eps, kappa) == pytest.approx(independent_beta(eps, kappa), rel=1e-12)
    # the label-blind counterexample of docs/soundness.md: 2/3 right at eps = 0 is covered by kappa = 0.7
    assert beta_from_epsilon(0.0, 0.7) >= 2 / 3 > beta_from_epsilon(0.0, math.log(2) - 1e-3)


@settings(max_examples=60, deadline=None)
@given(g=st.integers(1, 5000), frac=st.floats(0.5, 1.0), conf=st.floats(0.5, 0.9999), kappa=st.floats(0, 5.0))
def test_pure_bound_at_kappa_is_the_bound_at_zero_minus_kappa(g, frac, conf, kappa):
    """delta = 0: bound(kappa) = max(0, bound(0) - kappa), exactly (module docstring of binomial_bounds)."""
    c = max(1, min(g, math.ceil(frac * g)))
    at_zero = binomial_epsilon_lower_bound(c, g, 10**6, confidence=conf)
    at_kappa = binomial_epsilon_lower_bound(c, g, 10**6, confidence=conf, kappa=kappa)
    assert at_kappa == pytest.approx(max(0.0, at_zero - kappa), abs=1e-12)
    vector = pure_epsilon_lower_bounds([c], [g], confidence=conf, kappa=kappa)
    assert vector[0] == pytest.approx(at_kappa, abs=1e-12)


@pytest.mark.parametrize("c, g, m, delta, kappa", [
    (150, 200, 10**4, 1e-6, 0.0), (150, 200, 10**4, 1e-6, 0.5), (90, 100, 10**3, 1e-5, 0.0),
    (90, 100, 10**3, 1e-5, 1.0), (700, 1000, 10**5, 1e-7, 0.2), (40, 40, 50, 1e-4, 0.3),
])
def test_delta_bound_matches_direct_root_finding_with_the_factor_2_m_e_kappa(c, g, m, delta, kappa):
    """delta > 0: Pr[Bin(c', beta) >= c] + 2 m e^kappa delta alpha <= gamma, alpha by brute force."""
    ours = binomial_epsilon_lower_bound(c, g, m, delta=delta, kappa=kappa)
    expected = direct_delta_bound(c, g, m, delta, kappa=kappa)
    assert expected > 0
    assert ours <= expected + 1e-9  # never optimistic
    assert ours == pytest.approx(expected, abs=2e-6)
    # The paper's Thm. 16 (m delta alpha, no factor 2, no e^kappa) would give more: the factor is not a no-op.
    assert direct_delta_bound(c, g, m, delta / (2.0 * math.exp(kappa)), kappa=kappa) > ours + 1e-4


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 300), data=st.data(), beta=st.floats(0.02, 0.995))
def test_alpha_matches_brute_force_from_above(n, data, beta):
    c = data.draw(st.integers(1, n))
    dist = stats.binom(n, beta)
    brute = max((dist.sf(c - j - 1) - dist.sf(c - 1)) / j for j in range(1, c + 1))
    a = _alpha(c, n, beta)
    assert brute <= a <= brute + 1e-10  # never understated (that would be optimistic)


def test_zero_when_at_most_half_correct():
    for g in (2, 11, 1000, 10**6):
        for c in (0, g // 4, g // 2):
            assert binomial_epsilon_lower_bound(c, g, 10**7) == 0.0
            assert binomial_epsilon_lower_bound(c, g, 10**7, delta=1e-6) == 0.0


def test_monotone_in_correct_and_kappa_and_delta():
    g, m = 2000, 10**6
    values = [binomial_epsilon_lower_bound(c, g, m) for c in range(1000, 2001, 50)]
    assert all(b >= a for a, b in itertools.pairwise(values)) and values[-1] > values[0]
    kappas = [binomial_epsilon_lower_bound(1800, g, m, kappa=k) for k in (0, 0.05, 0.2, 0.5, 0.9, 1.5)]
    assert all(b <= a for a, b in itertools.pairwise(kappas)) and kappas[-1] < kappas[0]
    deltas = [binomial_epsilon_lower_bound(1800, g, m, delta=d) for d in (0, 1e-9, 1e-7, 1e-6)]
    assert all(b <= a for a, b in itertools.pairwise(deltas))
    # delta > 0: a larger kappa raises beta and the delta term, both making rejection harder
    mixed = [binomial_epsilon_lower_bound(1800, g, 10**4, delta=1e-6, kappa=k) for k in (0, 0.05, 0.2, 0.5, 0.9)]
    assert all(b <= a for a, b in itertools.pairwise(mixed)) and mixed[-1] < mixed[0]


def test_delta_bound_is_the_largest_rejected_epsilon():
    for c, g, m, d in [(1500, 2000, 10**5, 1e-6), (120000, 200000, 10**6, 1e-7), (900, 1000, 10**4, 1e-5)]:
        eps = binomial_epsilon_lower_bound(c, g, m, delta=d)
        assert eps > 0
        assert binomial_rejects(c, g, m, eps, delta=d)
        assert not binomial_rejects(c, g, m, eps + 1e-4, delta=d)


def test_edge_cases_are_defined():
    assert binomial_epsilon_lower_bound(0, 0, 10) == 0.0
    assert binomial_epsilon_lower_bound(0, 5, 10) == 0.0
    # c = c' = 10 gives 1.05186 at kappa 0 (test_all_correct_closed_form): any kappa beyond it leaves nothing
    assert binomial_epsilon_lower_bound(10, 10, 10, kappa=1.0) == pytest.approx(0.05186, abs=1e-4)
    assert binomial_epsilon_lower_bound(10, 10, 10, kappa=1.06) == 0.0
    assert binomial_epsilon_lower_bound(10, 10, 10, kappa=3.0) == 0.0
    assert binomial_epsilon_lower_bound(10, 10, 10, kappa=3.0, delta=1e-3) == 0.0
    assert binomial_rejects(10, 10, 10, 0.0, kappa=1.0) and not binomial_rejects(10, 10, 10, 0.0, kappa=1.06)


def test_stable_at_large_m():
    m = 10**8
    big = binomial_epsilon_lower_bound(m, m, m)
    assert math.isfinite(big) and 17 < big < 18  # logit(0.05^(1e-8)) = ln(1/(3.0e-8)) ~ 17.3
    mid = binomial_epsilon_lower_bound(60_000_000, m, m)
    assert mid == pytest.approx(math.log(0.6 / 0.4), abs=2e-3)
    assert binomial_epsilon_lower_bound(60_000_000, m, m, delta=1e-9) <= mid


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(correct=5, guesses=3, m=10), "correct"),
        (dict(correct=1, guesses=30, m=10), "guesses"),
        (dict(correct=1, guesses=3, m=0), "m"),
        (dict(correct=1, guesses=3, m=10, confidence=1.0), "confidence"),
        (dict(correct=1, guesses=3, m=10, confidence=0.0), "confidence"),
        (dict(correct=1, guesses=3, m=10, delta=-1e-6), "delta"),
        (dict(correct=1, guesses=3, m=10, kappa=-0.1), "kappa"),
        (dict(correct=1, guesses=3, m=10, kappa=math.inf), "kappa"),
        (dict(correct=1, guesses=3, m=10, kappa=math.nan), "kappa"),
        (dict(correct=1, guesses=3, m=10, kappa="x"), "kappa"),
        (dict(correct=1.5, guesses=3, m=10), "correct"),
    ],
)
def test_bad_input_names_the_argument(kwargs, needle):
    with pytest.raises(LabelDPInputError, match=needle):
        binomial_epsilon_lower_bound(**kwargs)


@pytest.mark.parametrize("true_eps, guesses", [(1.0, 1000), (3.0, 400)])
def test_soundness_against_worst_case_attacker(true_eps, guesses):
    """The attacker that is right with probability exactly beta(eps) on every guess is the worst case the
    theorem allows. Over 4000 seeded games the bound must exceed the true eps in at most 5% of them (plus
    3 standard errors), and, because this attacker is tight, in at least 2% (a bound that is always far too
    small would fail this)."""
    rng = np.random.default_rng(12345)
    trials = 4000
    c = rng.binomial(guesses, independent_beta(true_eps, 0.0), size=trials)
    bounds = pure_epsilon_lower_bounds(c, np.full(trials, guesses), confidence=0.95)
    rate = float(np.mean(bounds > true_eps))
    margin = 3 * math.sqrt(0.05 * 0.95 / trials)
    assert rate <= 0.05 + margin
    assert rate >= 0.02


@pytest.mark.parametrize("true_eps, kappa, guesses", [(1.0, 0.5, 1000), (0.0, 0.7, 1500)])
def test_soundness_against_worst_case_attacker_at_kappa(true_eps, kappa, guesses):
    """With a reference off by kappa the theorem allows an attacker right with probability sigmoid(eps + kappa)
    on every guess (the label-blind counterexample at kappa = ln 2 is this at eps = 0, with 2/3). The bound at
    kappa must exceed the true eps in at most 5% of 4000 games (one-sided binomial test at level 0.001); the
    bound at kappa 0 on the same counts is above the true eps in most games (what kappa protects against)."""
    rng = np.random.default_rng(99)
    trials = 4000
    c = rng.binomial(guesses, independent_beta(true_eps, kappa), size=trials)
    at_kappa = pure_epsilon_lower_bounds(c, np.full(trials, guesses), confidence=0.95, kappa=kappa)
    exceed = int(np.sum(at_kappa > true_eps))
    assert stats.binomtest(exceed, trials, 0.05, alternative="greater").pvalue > 1e-3, (exceed, trials)
    assert exceed / trials >= 0.02  # tight: the shift by kappa is exactly what this attacker needs
    at_zero = pure_epsilon_lower_bounds(c, np.full(trials, guesses), confidence=0.95)
    assert np.mean(at_zero > true_eps) > 0.9


def test_soundness_with_delta():
    rng = np.random.default_rng(7)
    trials, guesses, m, delta = 400, 500, 10**4, 1e-6
    c = rng.binomial(guesses, independent_beta(1.0, 0.0), size=trials)
    bounds = np.array([binomial_epsilon_lower_bound(int(x), guesses, m, delta=delta) for x in c])
    assert np.mean(bounds > 1.0) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    assert np.mean(bounds) > 0.5  # informative, not trivially 0
