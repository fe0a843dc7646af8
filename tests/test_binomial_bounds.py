"""Binomial bounds (paper Thm. 16/17): closed forms, agreement with direct root-finding, monotonicity,
edge cases, bad input and statistical soundness against the worst-case attacker."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from auditing.binomial_bounds import (
    _alpha,
    beta_from_epsilon,
    binomial_epsilon_lower_bound,
    binomial_rejects,
    pure_epsilon_lower_bounds,
)
from auditing.errors import LabelDPInputError


def direct_pure_bound(c, g, confidence=0.95, tau=0.0):
    """Independent implementation: root of Pr[Bin(g, beta(eps)) >= c] = 1 - confidence with scipy.stats."""
    def f(eps):
        return stats.binom.sf(c - 1, g, beta_from_epsilon(eps, tau)) - (1 - confidence)
    if f(0.0) >= 0:
        return 0.0
    return optimize.brentq(f, 0.0, 40.0, xtol=1e-12)


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
@given(g=st.integers(1, 3000), frac=st.floats(0.5, 1.0), conf=st.floats(0.5, 0.999), tau=st.floats(0, 0.5))
def test_matches_direct_root_finding(g, frac, conf, tau):
    c = max(1, min(g, math.ceil(frac * g)))
    ours = binomial_epsilon_lower_bound(c, g, 10**6, confidence=conf, tau=tau)
    assert ours == pytest.approx(direct_pure_bound(c, g, conf, tau), abs=1e-6)


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


def test_monotone_in_correct_and_tau_and_delta():
    g, m = 2000, 10**6
    values = [binomial_epsilon_lower_bound(c, g, m) for c in range(1000, 2001, 50)]
    assert all(b >= a for a, b in itertools.pairwise(values)) and values[-1] > values[0]
    taus = [binomial_epsilon_lower_bound(1800, g, m, tau=t) for t in (0, 0.05, 0.2, 0.5, 0.9)]
    assert all(b <= a for a, b in itertools.pairwise(taus)) and taus[-1] < taus[0]
    deltas = [binomial_epsilon_lower_bound(1800, g, m, delta=d) for d in (0, 1e-9, 1e-7, 1e-6)]
    assert all(b <= a for a, b in itertools.pairwise(deltas))


def test_delta_bound_is_the_largest_rejected_epsilon():
    for c, g, m, d in [(1500, 2000, 10**5, 1e-6), (120000, 200000, 10**6, 1e-7), (900, 1000, 10**4, 1e-5)]:
        eps = binomial_epsilon_lower_bound(c, g, m, delta=d)
        assert eps > 0
        assert binomial_rejects(c, g, m, eps, delta=d)
        assert not binomial_rejects(c, g, m, eps + 1e-4, delta=d)


def test_edge_cases_are_defined():
    assert binomial_epsilon_lower_bound(0, 0, 10) == 0.0
    assert binomial_epsilon_lower_bound(0, 5, 10) == 0.0
    assert binomial_epsilon_lower_bound(10, 10, 10, tau=1.0) == 0.0
    assert binomial_epsilon_lower_bound(10, 10, 10, tau=3.0) == 0.0


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
        (dict(correct=1, guesses=3, m=10, tau=-0.1), "tau"),
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
    c = rng.binomial(guesses, beta_from_epsilon(true_eps, 0.0), size=trials)
    bounds = pure_epsilon_lower_bounds(c, np.full(trials, guesses), confidence=0.95)
    rate = float(np.mean(bounds > true_eps))
    margin = 3 * math.sqrt(0.05 * 0.95 / trials)
    assert rate <= 0.05 + margin
    assert rate >= 0.02


def test_soundness_with_delta():
    rng = np.random.default_rng(7)
    trials, guesses, m, delta = 400, 500, 10**4, 1e-6
    c = rng.binomial(guesses, beta_from_epsilon(1.0, 0.0), size=trials)
    bounds = np.array([binomial_epsilon_lower_bound(int(x), guesses, m, delta=delta) for x in c])
    assert np.mean(bounds > 1.0) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    assert np.mean(bounds) > 0.5  # informative, not trivially 0
