"""The f-DP recursion (auditing/bounds/fdp_recursion.py): the paper's Algorithm 3 kernel, the inverse fbar^-1, Phi
inside numba and the shortcuts, against hand computation and an independent plain-Python Algorithm 3
(docs/fdp-curve.md). The public bounds built on it: test_fdp.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from auditing.bounds.fdp import EPSILON_TOLERANCE, fdp_epsilon_lower_bound, fdp_mu_lower_bound, fdp_rejects
from auditing.bounds.fdp_recursion import (
    CURVE,
    EARLY_ACCEPT,
    EARLY_REJECT,
    FIXED_POINT,
    FULL_RUN,
    GAUSSIAN,
    TAIL_ACCEPT,
    algorithm3_sum,
    curve_fbar_inverse,
    curve_rejects,
    gaussian_rejects,
    norm_cdf,
    norm_ppf,
)
from tests.support.fdp_cases import random_cases

# ---- an independent plain-Python Algorithm 3 (no numba, no clamp, no shortcut) ------------------------------


def curve_inverse_plain(eps: float, delta: float):
    """fbar^-1 for f_{eps,delta}, by the kink: 0 up to fbar(0) = delta, steep part up to fbar(x*), flat part."""
    e = math.exp(eps)
    x_star = (1.0 - delta) / (1.0 + e)
    r_star = delta + e * x_star  # fbar(x*)

    def inverse(r: float) -> float:
        if r <= delta:
            return 0.0
        if r >= 1.0:
            return 1.0 - delta
        if r <= r_star:
            return (r - delta) / e
        return 1.0 - delta - e * (1.0 - r)

    return inverse


def gaussian_inverse_plain(mu: float):
    def inverse(r: float) -> float:
        if r <= 0.0:
            return 0.0
        if r >= 1.0:
            return 1.0
        return float(ndtr(ndtri(r) - mu))

    return inverse


def plain_algorithm3(c: int, cp: int, m: int, gamma: float, fbar_inverse) -> float:
    """Algorithm 3 exactly as printed (arrays r, h); returns r[0] + h[0]. Rejects iff that is >= c'/m."""
    r = [0.0] * (c + 1)
    h = [0.0] * (c + 1)
    r[c] = gamma * c / m
    h[c] = gamma * (cp - c) / m
    for i in range(c - 1, -1, -1):
        h[i] = fbar_inverse(r[i + 1])
        r[i] = r[i + 1] + i / (cp - i) * (h[i] - h[i + 1])
    return r[0] + h[0]


def curve_sum(c, cp, m, gamma, eps, delta, shortcuts):
    return algorithm3_sum(c, cp, m, gamma, CURVE, delta, math.exp(eps), math.exp(-eps), shortcuts)


# ---- the inverse fbar^-1 ------------------------------------------------------------------------------------


def test_curve_inverse_is_the_generalized_inverse():
    """Against inf{s in [0, 1] : 1 - f_{eps,delta}(s) >= r}, bisected from the definition of f."""

    def f(x, eps, delta):
        return max(0.0, 1.0 - delta - math.exp(eps) * x, math.exp(-eps) * (1.0 - delta - x))

    rng = np.random.default_rng(0)
    for eps, delta in itertools.product((0.0, 0.3, 2.0, 7.0), (0.0, 1e-6, 0.05, 0.4)):
        for r in [*rng.uniform(0, 1, 60), 0.0, delta, 1.0, delta + 1e-9]:
            lo, hi = 0.0, 1.0  # fbar(1) = 1 >= r, so hi is always in the set
            if 1.0 - f(0.0, eps, delta) >= r:
                hi = 0.0
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if 1.0 - f(mid, eps, delta) >= r else (mid, hi)
            expected = hi
            ours = curve_fbar_inverse(r, delta, math.exp(eps), math.exp(-eps))
            assert ours == pytest.approx(expected, abs=1e-12)
            assert ours == pytest.approx(curve_inverse_plain(eps, delta)(r), abs=1e-15)
    # delta = fbar(0) maps to 0, r >= 1 to 1 - delta, eps = inf to 0 below 1.
    assert curve_fbar_inverse(0.01, 0.01, math.exp(1.0), math.exp(-1.0)) == 0.0
    assert curve_fbar_inverse(1.5, 0.01, math.exp(1.0), math.exp(-1.0)) == 0.99
    assert curve_fbar_inverse(0.999, 0.0, math.inf, 0.0) == 0.0


def test_curve_inverse_is_exactly_monotone_in_floating_point():
    rng = np.random.default_rng(1)
    for eps, delta in ((0.0, 0.0), (1e-9, 1e-6), (1.3, 0.0), (1.3, 1e-5), (20.0, 1e-12), (40.0, 0.3)):
        e, en = math.exp(eps), math.exp(-eps)
        r = np.sort(np.concatenate([rng.uniform(-0.01, 1.01, 20000), np.nextafter(delta, 1.0) + np.arange(50) * 1e-18,
                                    1 - np.arange(50) * 1.1e-16]))
        values = [curve_fbar_inverse(float(x), delta, e, en) for x in r]
        assert all(a <= b for a, b in itertools.pairwise(values))
        assert all(0.0 <= v <= 1.0 - delta for v in values)


# ---- Phi and Phi^-1 inside numba (Gaussian reading) ---------------------------------------------------------


def test_norm_ppf_and_cdf_match_scipy():
    rng = np.random.default_rng(2)
    p = np.concatenate([10.0 ** rng.uniform(-300, 0, 5000), rng.uniform(0, 1, 5000), 1 - 10.0 ** rng.uniform(-16, 0, 2000),
                        [0.5, 0.075, 0.925, 1e-300, 5e-324]])
    p = p[(p > 0) & (p < 1)]
    np.testing.assert_allclose([norm_ppf(x) for x in p], ndtri(p), rtol=3e-15, atol=0)
    assert norm_ppf(0.0) == -math.inf and norm_ppf(1.0) == math.inf and norm_ppf(0.5) == 0.0
    x = np.concatenate([rng.uniform(-37, 9, 5000), [0.0, -37.5, 8.5]])
    np.testing.assert_allclose([norm_cdf(v) for v in x], ndtr(x), rtol=1e-13, atol=0)


# ---- the recursion against hand computation and the plain implementation -----------------------------------


def test_single_and_two_steps_by_hand():
    gamma, eps, delta = 0.05, 0.7, 0.002
    # c = c' = m = 1: r[1] = gamma, h[1] = 0; h[0] = fbar^-1(gamma) on the steep part; r[0] = r[1].
    s, outcome, steps = curve_sum(1, 1, 1, gamma, eps, delta, False)
    assert s == pytest.approx(gamma + (gamma - delta) * math.exp(-eps), rel=1e-14)
    assert (outcome, steps) == (FULL_RUN, 1)
    # c = 2, c' = 3, m = 5.
    r2, h2 = gamma * 2 / 5, gamma * 1 / 5
    h1 = max(0.0, (r2 - delta) * math.exp(-eps))
    r1 = r2 + (1 / 2) * (h1 - h2)
    h0 = max(0.0, (r1 - delta) * math.exp(-eps))
    s, _, _ = curve_sum(2, 3, 5, gamma, eps, delta, False)
    assert s == pytest.approx(r1 + h0, rel=1e-14)
    assert not fdp_rejects(2, 3, 5, eps, delta=delta)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_perfect_privacy_all_correct_is_the_exact_binomial(n):
    # eps = 0, delta = 0: fbar^-1(r) = r, the recursion is linear and r[0] + h[0] = gamma 2^n c'/m exactly while
    # r stays below 1, i.e. it rejects iff gamma >= 2^-n = Pr[n fair coins all right].
    for m in (n, 3 * n):
        s, _, _ = curve_sum(n, n, m, 0.05, 0.0, 0.0, False)
        assert s == pytest.approx(0.05 * 2**n * n / m, rel=1e-12)
    assert fdp_epsilon_lower_bound(4, 4, 4, delta=0.0) == 0.0  # 0.05 * 16 < 1
    assert fdp_epsilon_lower_bound(5, 5, 5, delta=0.0) > 0.0  # 0.05 * 32 >= 1
    assert fdp_epsilon_lower_bound(3, 3, 3, delta=0.0, confidence=0.85) > 0.0  # 0.15 * 8 >= 1


def test_kernel_matches_independent_plain_implementation():
    """fdp_rejects (kappa mapped to the curve (eps + kappa, e^kappa delta)) against plain Algorithm 3."""
    rng = np.random.default_rng(3)
    compared = disagreements = 0
    for c, cp, m, gamma, delta, kappa in random_cases(rng, 250, 1500):
        edge = fdp_epsilon_lower_bound(c, cp, m, delta=delta, confidence=1 - gamma, kappa=kappa)
        for eps in (float(rng.uniform(0, 4)), edge, edge + 1.01 * EPSILON_TOLERANCE, edge * 0.5):
            tested_delta = delta * math.exp(kappa)
            plain_sum = plain_algorithm3(c, cp, m, gamma, curve_inverse_plain(eps + kappa, tested_delta))
            plain = plain_sum >= cp / m
            ours = fdp_rejects(c, cp, m, eps, delta=delta, confidence=1 - gamma, kappa=kappa)
            compared += 1
            if plain != ours:
                # Only at the knife edge, where rounding decides: the plain sum is within rounding of c'/m.
                disagreements += 1
                assert plain_sum == pytest.approx(cp / m, rel=1e-9)
            full, _, _ = curve_sum(c, cp, m, gamma, eps + kappa, tested_delta, False)
            assert full == pytest.approx(plain_sum, rel=1e-9, abs=1e-15)
    assert compared == 1000 and disagreements <= 3


def check_shortcuts(c, cp, m, gamma, kind, a, b, d, seen, decisions):
    """One run with shortcuts against the full recursion: same decision, and the returned sum bounds it."""
    threshold = cp / m
    s_short, outcome, _ = algorithm3_sum(c, cp, m, gamma, kind, a, b, d, True)
    s_full, outcome_full, steps_full = algorithm3_sum(c, cp, m, gamma, kind, a, b, d, False)
    assert (outcome_full, steps_full) == (FULL_RUN, c)
    decision = s_full >= threshold
    if outcome == FIXED_POINT:
        assert s_short == s_full  # bitwise: the rest of the run repeats the fixed point
    elif outcome == EARLY_REJECT:
        assert s_short >= threshold and s_full >= s_short
    elif outcome in (EARLY_ACCEPT, TAIL_ACCEPT):
        assert s_short < threshold and s_full <= s_short
    else:
        assert s_short == s_full
    seen[outcome] += 1
    decisions[decision] += 1
    return decision


def test_shortcuts_never_change_the_decision():
    """Fixed point (a), early reject (b), early accept (c), tail accept (d) against the full recursion."""
    rng = np.random.default_rng(4)
    seen = dict.fromkeys((FULL_RUN, FIXED_POINT, EARLY_REJECT, EARLY_ACCEPT, TAIL_ACCEPT), 0)
    decisions = {True: 0, False: 0}
    for c, cp, m, gamma, delta, _ in random_cases(rng, 300, 3000):
        edge = fdp_epsilon_lower_bound(c, cp, m, delta=delta, confidence=1 - gamma)
        for eps in (edge, edge + EPSILON_TOLERANCE, float(rng.uniform(0, 5)), edge * (1 + 1e-9), edge + 0.05):
            decision = check_shortcuts(c, cp, m, gamma, CURVE, delta, math.exp(eps), math.exp(-eps), seen, decisions)
            assert curve_rejects(c, cp, m, gamma, eps, delta) == decision
        mu_edge = fdp_mu_lower_bound(c, cp, m, confidence=1 - gamma)
        for mu in (mu_edge, mu_edge * (1 + 2e-10) + 1e-15, float(rng.uniform(0, 3))):
            decision = check_shortcuts(c, cp, m, gamma, GAUSSIAN, mu, 0.0, 0.0, seen, decisions)
            assert gaussian_rejects(c, cp, m, gamma, mu) == decision
    assert min(seen[FIXED_POINT], seen[EARLY_REJECT], seen[EARLY_ACCEPT], seen[TAIL_ACCEPT], *decisions.values()) > 100
    assert seen[FULL_RUN] > 0


def test_tail_accept_on_long_runs():
    """Shortcut (d) where it matters: c' = 1e5 and more, eps just above the edge (rounding creep territory)."""
    rng = np.random.default_rng(12)
    seen = dict.fromkeys((FULL_RUN, FIXED_POINT, EARLY_REJECT, EARLY_ACCEPT, TAIL_ACCEPT), 0)
    decisions = {True: 0, False: 0}
    for cp, m, fraction, delta in ((10**5, 10**5, 0.88, 0.0), (2 * 10**5, 10**6, 0.6, 1e-5),
                                   (4 * 10**5, 4 * 10**5, 0.75, 1e-6), (10**5, 10**6, 0.97, 0.0)):
        c = int(rng.binomial(cp, fraction))
        edge = fdp_epsilon_lower_bound(c, cp, m, delta=delta)
        for eps in (edge, edge + 1e-9, edge + EPSILON_TOLERANCE, edge + 3e-4, edge + 1e-3, edge + 3e-3, edge + 0.1):
            check_shortcuts(c, cp, m, 0.05, CURVE, delta, math.exp(eps), math.exp(-eps), seen, decisions)
    assert seen[TAIL_ACCEPT] >= 16 and decisions[True] >= 4


def test_level_enters_strictly_increasingly():
    """docs/fdp-curve.md section 3: s(gamma) = r[0] + h[0] rises by at least c'/(m (c'-c+1)) per unit gamma,
    which is what makes '>=' (not only '>') the sound rejection test."""
    rng = np.random.default_rng(5)
    for c, cp, m, _, delta, _ in random_cases(rng, 150, 400):
        eps = float(rng.uniform(0, 3))
        g1, g2 = sorted(rng.uniform(0.001, 0.5, 2))
        s1, _, _ = curve_sum(c, cp, m, g1, eps, delta, False)
        s2, _, _ = curve_sum(c, cp, m, g2, eps, delta, False)
        assert s2 - s1 >= (g2 - g1) * cp / (m * (cp - c + 1)) * (1 - 1e-9) - 1e-15


# ---- the Gaussian mu reading --------------------------------------------------------------------------------


def test_gaussian_kernel_matches_plain_and_is_monotone_in_mu():
    rng = np.random.default_rng(9)
    for c, cp, m, gamma, _, _ in random_cases(rng, 40, 800):
        decisions = []
        for mu in np.linspace(0, 4, 60):
            plain_sum = plain_algorithm3(c, cp, m, gamma, gaussian_inverse_plain(float(mu)))
            ours = gaussian_rejects(c, cp, m, gamma, float(mu))
            assert ours == (plain_sum >= cp / m) or plain_sum == pytest.approx(cp / m, rel=1e-9)
            decisions.append(ours)
        assert decisions == sorted(decisions, reverse=True)
