"""f-DP epsilon lower bound: the paper's Algorithm 3 for the Gaussian family with shift tau (Thm. 10, Lemma 14)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri
from scipy.stats import binom, norm

from auditing.errors import LabelDPInputError
from auditing.fdp_bounds import (
    EPSILON_TOLERANCE,
    fdp_epsilon_lower_bound,
    fdp_mu_lower_bound,
    fdp_rejects,
)
from auditing.fdp_recursion import (
    EARLY_REJECT,
    FIXED_POINT,
    FULL_RUN,
    algorithm3_sum,
    norm_cdf,
    norm_ppf,
    rejects,
)
from auditing.gaussian_dp import epsilon_for_mu, mu_for_epsilon

DELTA = 1e-6


def plain_algorithm3(c: int, cp: int, m: int, gamma: float, mu: float, tau: float) -> float:
    """Algorithm 3 exactly as printed (arrays r, h; no clamp, no shortcut), with scipy's Phi and Phi^-1.

    fbar^-1(r) = f^-1(1 - r) - tau = Phi(Phi^-1(r) - mu) - tau (Lemma 14, Gaussian f = f^-1), as a generalized
    inverse: 0 below fbar(0), 1 - tau from r >= 1 on. Returns r[0] + h[0].
    """

    def fbar_inverse(x: float) -> float:
        if x <= 0.0:
            return 0.0
        if x >= 1.0:
            return max(0.0, 1.0 - tau)
        return max(0.0, float(ndtr(ndtri(x) - mu)) - tau)

    r = [0.0] * (c + 1)
    h = [0.0] * (c + 1)
    r[c] = gamma * c / m
    h[c] = gamma * (cp - c) / m
    for i in range(c - 1, -1, -1):
        h[i] = fbar_inverse(r[i + 1])
        r[i] = r[i + 1] + i / (cp - i) * (h[i] - h[i + 1])
    return r[0] + h[0]


def random_cases(rng: np.random.Generator, count: int, max_guesses: int):
    """Random (c, c', m, gamma, tau) with c >= c'/2 (below that nothing is ever rejected)."""
    for _ in range(count):
        cp = int(rng.integers(1, max_guesses + 1))
        m = int(cp * rng.choice([1.0, 1.5, 10.0]))
        c = int(rng.integers(cp // 2, cp + 1))
        gamma = float(rng.choice([0.05, 0.01, 0.2]))
        tau = float(rng.choice([0.0, 0.0, 1e-3, 0.05]))
        yield c, cp, m, gamma, tau


# ---- Phi and Phi^-1 inside numba ---------------------------------------------------------------------------


def test_norm_ppf_matches_scipy_over_the_whole_range():
    rng = np.random.default_rng(0)
    p = np.concatenate(
        [
            10.0 ** rng.uniform(-300, 0, 20000),  # lower tail down to 1e-300
            rng.uniform(0, 1, 20000),
            1 - 10.0 ** rng.uniform(-16, 0, 10000),  # upper tail
            [0.5, 0.075, 0.925, 0.074999999, 0.925000001, math.exp(-25), 1e-300, 5e-324],
        ]
    )
    p = p[(p > 0) & (p < 1)]
    ours = np.array([norm_ppf(x) for x in p])
    expected = ndtri(p)
    np.testing.assert_allclose(ours, expected, rtol=3e-15, atol=0)
    assert norm_ppf(0.0) == -math.inf and norm_ppf(-0.1) == -math.inf
    assert norm_ppf(1.0) == math.inf and norm_ppf(1.5) == math.inf
    assert norm_ppf(0.5) == 0.0


def test_norm_cdf_matches_scipy():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-37, 9, 20000), rng.uniform(-3, 3, 5000), [0.0, -37.5, 8.5]])
    # Relative condition number of Phi at x is ~x^2 (~1400 at -37): 1e-13 is the accuracy one can ask for.
    np.testing.assert_allclose([norm_cdf(v) for v in x], ndtr(x), rtol=1e-13, atol=0)
    assert norm_cdf(-math.inf) == 0.0 and norm_cdf(math.inf) == 1.0


# ---- the recursion against hand computation and an independent implementation -----------------------------


def test_single_step_by_hand():
    # c = c' = m = 1: r[1] = gamma, h[1] = 0; h[0] = fbar^-1(gamma); r[0] = r[1] (weight 0/1).
    gamma, mu, tau = 0.05, 0.7, 0.002
    expected = gamma + (ndtr(ndtri(gamma) - mu) - tau)
    s, outcome, steps = algorithm3_sum(1, 1, 1, gamma, mu, tau, False)
    assert s == pytest.approx(expected, rel=1e-14)
    assert (outcome, steps) == (FULL_RUN, 1)


def test_two_steps_by_hand():
    # c = 2, c' = 3, m = 5: two loop iterations written out.
    for mu, tau in ((0.5, 0.001), (0.5, 0.01), (0.1, 0.0)):
        gamma = 0.05
        r2, h2 = gamma * 2 / 5, gamma * 1 / 5
        h1 = max(0.0, ndtr(ndtri(r2) - mu) - tau)
        r1 = r2 + (1 / (3 - 1)) * (h1 - h2)
        h0 = max(0.0, ndtr(ndtri(r1) - mu) - tau)
        r0 = r1 + 0.0 * (h0 - h1)
        s, _, _ = algorithm3_sum(2, 3, 5, gamma, mu, tau, False)
        assert s == pytest.approx(r0 + h0, rel=1e-14)
        assert not rejects(2, 3, 5, gamma, mu, tau)  # r0 + h0 < 3/5


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_perfect_privacy_all_correct_is_the_exact_binomial(n):
    # mu = 0, tau = 0: fbar^-1(r) = r, the recursion is linear and r[0] + h[0] = gamma 2^n c'/m exactly
    # while r stays below 1, i.e. it rejects iff gamma >= 2^-n = Pr[n fair coins all right].
    for m in (n, 3 * n):
        s, _, _ = algorithm3_sum(n, n, m, 0.05, 0.0, 0.0, False)
        assert s == pytest.approx(0.05 * 2**n * n / m, rel=1e-12)
    assert fdp_mu_lower_bound(4, 4, 4) == 0.0  # 0.05 * 16 < 1
    assert fdp_mu_lower_bound(5, 5, 5) > 0.0  # 0.05 * 32 >= 1
    assert fdp_mu_lower_bound(3, 3, 3, confidence=0.85) > 0.0  # 0.15 * 8 >= 1


def test_kernel_matches_independent_plain_implementation():
    rng = np.random.default_rng(2)
    compared = disagreements = 0
    for c, cp, m, gamma, tau in random_cases(rng, 300, 120):
        mu_edge = fdp_mu_lower_bound(c, cp, m, confidence=1 - gamma, tau=tau)
        for mu in (float(rng.uniform(0, 3)), mu_edge * (1 + float(rng.normal(0, 1e-3))) + 1e-9):
            mu = abs(mu)
            threshold = cp / m
            plain = plain_algorithm3(c, cp, m, gamma, mu, tau) >= threshold
            ours_full, _, _ = algorithm3_sum(c, cp, m, gamma, mu, tau, False)
            compared += 1
            if plain != rejects(c, cp, m, gamma, mu, tau):
                # Only allowed at the knife edge, where rounding decides: the decision flips within 1e-9.
                disagreements += 1
                assert rejects(c, cp, m, gamma, mu * (1 - 1e-9), tau)
                assert not rejects(c, cp, m, gamma, mu * (1 + 1e-9), tau)
            if ours_full < gamma * cp / m:  # a falling run is smooth in its inputs: values agree closely
                assert ours_full == pytest.approx(plain_algorithm3(c, cp, m, gamma, mu, tau), rel=1e-9, abs=1e-15)
    assert compared == 600 and disagreements <= 3


def test_shortcuts_never_change_the_decision():
    """Fixed-point stop (a) and early reject (b) against the full recursion on thousands of random inputs."""
    rng = np.random.default_rng(3)
    seen = {FULL_RUN: 0, FIXED_POINT: 0, EARLY_REJECT: 0}
    decisions = {True: 0, False: 0}
    for c, cp, m, gamma, tau in random_cases(rng, 600, 3000):
        if c == 0:
            continue
        edge = fdp_mu_lower_bound(c, cp, m, confidence=1 - gamma, tau=tau)
        hi = edge * (1 + 2e-10) + 1e-15
        mus = [edge, hi, float(rng.uniform(0, 4)), edge * (1 + float(rng.normal(0, 1e-4))),
               edge * (1 + float(rng.normal(0, 1e-12)))]
        for mu in mus:
            mu = abs(mu)
            threshold = cp / m
            s_short, outcome, _ = algorithm3_sum(c, cp, m, gamma, mu, tau, True)
            s_full, outcome_full, steps_full = algorithm3_sum(c, cp, m, gamma, mu, tau, False)
            assert (outcome_full, steps_full) == (FULL_RUN, c)
            decision = rejects(c, cp, m, gamma, mu, tau)
            assert decision == (s_full >= threshold)
            if outcome == FIXED_POINT:
                assert s_short == s_full  # bitwise: the rest of the run repeats the fixed point
            elif outcome == EARLY_REJECT:
                assert s_short >= threshold and s_full >= s_short
            else:
                assert s_short == s_full
            seen[outcome] += 1
            decisions[decision] += 1
    assert sum(seen.values()) == 3000
    assert min(seen[FIXED_POINT], seen[EARLY_REJECT], decisions[True], decisions[False]) > 100


def test_rejection_is_monotone_in_mu():
    rng = np.random.default_rng(4)
    mus = np.linspace(0, 5, 400)
    for c, cp, m, gamma, tau in random_cases(rng, 60, 5000):
        decisions = [rejects(c, cp, m, gamma, float(mu), tau) for mu in mus]
        # Rejected set is an interval [0, mu*): True ... True False ... False.
        assert decisions == sorted(decisions, reverse=True)


def test_sound_against_the_exact_gaussian_product_mechanism():
    """Theorem 10's promise, checked on a mechanism where Pr[C >= c] is known exactly.

    Releasing every label bit plus N(0, 1/mu^2) noise is mu-GDP for label changes; guessing by threshold 1/2
    gets each of the c' guesses right independently with probability Phi(mu/2). If Algorithm 3 rejects f_mu at
    level gamma, this mechanism's Pr[C >= c] = P[Bin(c', Phi(mu/2)) >= c] must be <= gamma.
    """
    rng = np.random.default_rng(5)
    checked = 0
    for c, cp, m, gamma, _ in random_cases(rng, 400, 400):
        mu = fdp_mu_lower_bound(c, cp, m, confidence=1 - gamma)
        if mu > 0:
            checked += 1
            assert binom.sf(c - 1, cp, norm.cdf(mu / 2)) <= gamma * (1 + 1e-9)
    assert checked > 150


# ---- the public bounds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("correct", "guesses", "m"),
    [(0, 0, 10), (0, 1000, 1000), (0, 5, 10**8), (1, 1, 1), (4, 4, 4), (500, 1000, 1000), (5000, 10000, 20000),
     (10**6, 2 * 10**6, 10**8), (3, 10, 10)],
)
def test_no_evidence_gives_exactly_zero(correct, guesses, m):
    assert fdp_epsilon_lower_bound(correct, guesses, m, delta=DELTA) == 0.0
    assert fdp_mu_lower_bound(correct, guesses, m) == 0.0
    assert fdp_rejects(correct, guesses, m, 0.0, delta=DELTA) is False


def test_at_most_half_correct_gives_zero():
    for cp in (1, 2, 7, 100, 5001, 200000):
        for c in {0, 1, cp // 3, cp // 2}:
            if c <= cp / 2:
                assert fdp_epsilon_lower_bound(c, cp, 2 * cp, delta=DELTA) == 0.0


def test_tau_at_least_one_gives_zero_and_tau_shrinks_the_bound():
    assert fdp_epsilon_lower_bound(9000, 10000, 10000, delta=DELTA, tau=1.0) == 0.0
    assert fdp_epsilon_lower_bound(9000, 10000, 10000, delta=DELTA, tau=3.0) == 0.0
    bounds = [fdp_epsilon_lower_bound(16000, 20000, 10**5, delta=DELTA, tau=t)
              for t in (0.0, 1e-4, 1e-3, 0.01, 0.02, 0.05, 0.1, 0.2)]
    assert bounds[0] > 2.0
    assert all(a >= b for a, b in itertools.pairwise(bounds))
    assert bounds[-1] == 0.0


def test_bound_grows_with_correct_guesses():
    cp, m = 2000, 10**4
    bounds = [fdp_epsilon_lower_bound(c, cp, m, delta=DELTA) for c in range(1000, 2001, 25)]
    assert all(a <= b for a, b in itertools.pairwise(bounds))
    assert bounds[0] == 0.0 and bounds[-1] > 10.0


def test_all_correct_gives_a_finite_positive_bound():
    for n in (10, 1000, 10**6):
        eps = fdp_epsilon_lower_bound(n, n, n, delta=DELTA)
        assert 0.0 < eps < math.inf


def test_reported_end_is_the_rejected_one_and_within_tolerance():
    rng = np.random.default_rng(6)
    for c, cp, m, _, tau in random_cases(rng, 40, 50000):
        eps = fdp_epsilon_lower_bound(c, cp, m, delta=DELTA, tau=tau)
        if eps == 0.0:
            continue
        # The exact edge of Algorithm 3's rejected set, bisected down to adjacent doubles.
        lo, hi = 0.0, 2 * mu_for_epsilon(eps + 1.0, DELTA)
        while True:
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if rejects(c, cp, m, 0.05, mid, tau) else (lo, mid)
        eps_edge = epsilon_for_mu(hi, DELTA)
        assert eps <= eps_edge  # conservative: never above the edge
        assert eps >= eps_edge - EPSILON_TOLERANCE
        # The value itself was rejected, and 1e-4 above it is not (what a sweep's pruning relies on).
        assert rejects(c, cp, m, 0.05, mu_for_epsilon(eps, DELTA) * (1 - 1e-12), tau)
        assert fdp_rejects(c, cp, m, eps - 1e-6, delta=DELTA, tau=tau)
        assert not fdp_rejects(c, cp, m, eps + 1.01 * EPSILON_TOLERANCE, delta=DELTA, tau=tau)


def test_epsilon_and_mu_bounds_agree():
    for c, cp, m in ((150000, 200000, 10**6), (5000, 8000, 20000), (999, 1000, 1000)):
        mu = fdp_mu_lower_bound(c, cp, m)
        eps = fdp_epsilon_lower_bound(c, cp, m, delta=DELTA)
        assert epsilon_for_mu(mu, DELTA) - EPSILON_TOLERANCE <= eps <= epsilon_for_mu(mu, DELTA) + 1e-9


def test_large_m_and_large_eps_no_grid_cap():
    big = 10**8
    eps = fdp_epsilon_lower_bound(big, big, big, delta=1e-12)
    assert 40.0 < eps < 60.0  # far outside any fixed grid's reach, still exactly Algorithm 3's edge
    assert fdp_epsilon_lower_bound(big, big, big, delta=DELTA) == pytest.approx(32.15, abs=0.01)
    mid = fdp_epsilon_lower_bound(9 * big // 10, big, big, delta=DELTA)
    assert 0.0 < mid < eps
    assert fdp_epsilon_lower_bound(big // 2, big, big, delta=DELTA) == 0.0


def test_benchmark_point_value():
    # The DESIGN.md comparison point (m = 20000, c = 5000, c' = 8000); the public reference reports its grid value.
    eps = fdp_epsilon_lower_bound(5000, 8000, 20000, delta=DELTA)
    assert eps == pytest.approx(0.7936, abs=2e-4)  # regression pin (benchmarks/results/fdp_bound.md)


def test_rejects_edge_cases():
    assert fdp_rejects(900, 1000, 1000, 0.0, delta=DELTA) is True
    assert fdp_rejects(900, 1000, 1000, math.inf, delta=DELTA) is False
    assert fdp_rejects(900, 1000, 1000, 0.5, delta=DELTA, tau=1.0) is False


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(correct=5, guesses=4, m=10), "correct"),
        (dict(correct=-1, guesses=4, m=10), "correct"),
        (dict(correct=2.5, guesses=4, m=10), "correct"),
        (dict(correct=1, guesses=11, m=10), "guesses"),
        (dict(correct=0, guesses=0, m=0), "m"),
        (dict(correct=1, guesses=2, m=10, delta=0.0), "delta"),
        (dict(correct=1, guesses=2, m=10, delta=1.0), "delta"),
        (dict(correct=1, guesses=2, m=10, delta=float("nan")), "delta"),
        (dict(correct=1, guesses=2, m=10, confidence=1.0), "confidence"),
        (dict(correct=1, guesses=2, m=10, confidence=0.0), "confidence"),
        (dict(correct=1, guesses=2, m=10, tau=-0.1), "tau"),
        (dict(correct=1, guesses=2, m=10, tau=float("nan")), "tau"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs, name):
    kwargs = {"delta": DELTA, **kwargs}
    with pytest.raises(LabelDPInputError, match=name):
        fdp_epsilon_lower_bound(**kwargs)
    with pytest.raises(LabelDPInputError, match=name):
        fdp_rejects(epsilon=1.0, **kwargs)
    if name != "delta":
        kwargs.pop("delta")
        with pytest.raises(LabelDPInputError, match=name):
            fdp_mu_lower_bound(**kwargs)


def test_rejects_bad_epsilon():
    for bad in (-0.1, float("nan")):
        with pytest.raises(LabelDPInputError, match="epsilon"):
            fdp_rejects(9, 10, 10, bad, delta=DELTA)
