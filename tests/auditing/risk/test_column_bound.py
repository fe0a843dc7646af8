"""auditing.risk.column_bound: the column tail and expectation, exact and saddlepoint, the delta terms and eps_protect.

Papers: [BWC] Swanberg et al., "Beyond the Worst Case"; [ARD] Guerra-Balboa et al., "Attack resilience of
differential privacy"; [BRD] Hayes et al., "Bounding training data reconstruction in DP-SGD".
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

from auditing.risk.attack_bounds import (
    posterior_ceiling,
)
from auditing.risk.column_bound import column_bound, eps_protect, poisson_binomial_pmf


def test_column_tail_exact_values():
    """[BWC] Theorem 3.2: S ~ Poisson-binomial(beta(1, .5), beta(1, .1), beta(1, .9))."""
    assert column_bound(1, [0.5, 0.1, 0.9], 2).tail == pytest.approx(0.768946, abs=5e-7)
    assert column_bound(1, [0.5, 0.1, 0.9], 3).tail == pytest.approx(0.162924, abs=5e-7)
    b = [posterior_ceiling(1, p) for p in (0.5, 0.1, 0.9)]
    assert column_bound(1, [0.5, 0.1, 0.9], 1).expected == pytest.approx(sum(b), rel=1e-12)


def test_bwc_section_6_2_sex_column_95_percent_bound():
    """[BWC] Section 6.2: for the ACS 'SEX' column (100 records, eps = 1, delta = 1e-5) the prior attack gets
    56% right and the 95%-confidence upper bound (Theorem 3.5) is 84%. With every record's prior at the
    column's 56% the Poisson-binomial bound gives exactly that: P[S >= 85] <= 0.05 < P[S >= 84]."""
    priors = [0.56] * 100
    assert column_bound(1, priors, 85, delta=1e-5).tail <= 0.05 < column_bound(1, priors, 84, delta=1e-5).tail


@settings(max_examples=60, deadline=None)
@given(priors=st.lists(st.floats(min_value=0.01, max_value=0.99), min_size=2, max_size=30),
       eps=st.floats(min_value=0.0, max_value=4.0), more=st.floats(min_value=0.01, max_value=2.0),
       raise_by=st.floats(min_value=0.0, max_value=0.5), data=st.data())
def test_column_tail_monotone_in_eps_and_priors(priors, eps, more, raise_by, data):
    t = data.draw(st.integers(min_value=1, max_value=len(priors)))
    higher = [min(0.999, p + raise_by * (1 - p)) for p in priors]
    base = column_bound(eps, priors, t).tail
    assert column_bound(eps + more, priors, t).tail >= base - 1e-12
    assert column_bound(eps, higher, t).tail >= base - 1e-12


def test_poisson_binomial_pmf_matches_enumeration():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.01, 0.99, 12)
    brute = np.zeros(13)
    for bits in itertools.product((0, 1), repeat=12):
        b = np.array(bits)
        brute[b.sum()] += np.prod(np.where(b == 1, p, 1 - p))
    assert np.max(np.abs(poisson_binomial_pmf(p) - brute)) < 1e-14
    many = rng.uniform(0.01, 0.99, 1000)  # against the textbook recursion
    ref = np.array([1.0])
    for q in many:
        ref = np.concatenate([ref * (1 - q), [0.0]]) + np.concatenate([[0.0], ref * q])
    assert np.max(np.abs(poisson_binomial_pmf(many) - ref)) < 1e-13


def test_saddlepoint_matches_exact_beyond_the_exact_range():
    """The stated approximation above 10,000 rows: relative error < 1e-3 wherever the tail is >= 1e-10."""
    rng = np.random.default_rng(2)
    priors = np.maximum(expit(rng.normal(-3.5, 1.2, 20_000)), 1e-4)
    q = np.maximum(priors, 1 - priors)
    for values in (priors, q):
        mean = column_bound(0.5, values, 1, method="exact").expected
        sd = math.sqrt(float(np.sum(posterior_ceiling(0.5, values) * (1 - posterior_ceiling(0.5, values)))))
        for z in (-3, -1, 0, 0.5, 1, 2, 4, 6):
            t = round(mean + z * sd)
            exact = column_bound(0.5, values, t, method="exact").tail
            approx = column_bound(0.5, values, t, method="saddlepoint").tail
            if exact >= 1e-10:
                assert approx == pytest.approx(exact, rel=1e-3), (z, exact, approx)
    assert column_bound(0.5, priors, 5, method="auto").method == "saddlepoint"


def test_column_bound_holds_for_randomized_response_and_is_tight():
    """Statistically: 8 rows with click priors p_i, each label released by eps-randomized response, and an
    attacker who repeats each release as its guess. Given the releases, row i's guess is right with posterior
    probability exactly beta(eps, prior success of that guess) ([BWC] Theorem 3.2 is tight for randomized
    response), so P[S >= t] averaged over the releases must equal the average of the per-release bounds; and a
    Bayes-optimal attacker stays under the bound for q_i = max(p_i, 1 - p_i) (Theorem 3.5's z*).
    20,000 seeded trials; tolerance 4 standard errors."""
    rng = np.random.default_rng(8)
    eps, priors, trials = 1.0, np.array([0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.7, 0.9]), 20_000
    keep = math.exp(eps) / (1 + math.exp(eps))
    labels = rng.random((trials, priors.size)) < priors
    released = np.where(rng.random((trials, priors.size)) < keep, labels, ~labels)
    right = (released == labels).sum(axis=1)
    patterns, inverse = np.unique(released, axis=0, return_inverse=True)
    for t in (3, 5, 7):
        per_pattern = np.array([column_bound(eps, np.where(z, priors, 1 - priors), t).tail for z in patterns])
        bound = float(per_pattern[inverse.reshape(-1)].mean())
        empirical = float(np.mean(right >= t))
        se = math.sqrt(empirical * (1 - empirical) / trials)
        assert abs(empirical - bound) <= 4 * se, (t, empirical, bound)
    q = np.maximum(priors, 1 - priors)
    post1 = np.where(released, posterior_ceiling(eps, priors), 1 - posterior_ceiling(eps, 1 - priors))
    right_bayes = ((post1 >= 0.5) == labels).sum(axis=1)
    for t in (6, 7, 8):
        empirical = float(np.mean(right_bayes >= t))
        se = math.sqrt(empirical * (1 - empirical) / trials + 1e-8)
        assert empirical <= column_bound(eps, q, t).tail + 4 * se


def test_delta_terms():
    """[BWC] Theorem 3.5: + alpha n delta, alpha = max_j (P[S >= t - j] - P[S >= t]) / j; n = 1 gives
    beta + (1 - beta) delta; the expectation gains n delta (Corollary 3.4 per row)."""
    beta = posterior_ceiling(1, 0.2)
    assert posterior_ceiling(1, 0.2, 1e-3) == pytest.approx(beta + (1 - beta) * 1e-3)
    assert column_bound(1, [0.2], 1, delta=1e-3).tail == pytest.approx(beta + (1 - beta) * 1e-3)
    priors = [0.3, 0.4, 0.6]
    pmf = poisson_binomial_pmf(posterior_ceiling(1, np.array(priors)))
    tails = np.cumsum(pmf[::-1])[::-1]
    alpha = max((tails[2 - j] - tails[2]) / j for j in (1, 2))
    assert column_bound(1, priors, 2, delta=1e-4).tail == pytest.approx(tails[2] + alpha * 3 * 1e-4, rel=1e-10)
    assert column_bound(1, priors, 2, delta=1e-4).expected == pytest.approx(pmf @ np.arange(4) + 3e-4)


def test_eps_protect_is_the_largest_eps_under_the_risk():
    priors = [0.5, 0.1, 0.9]
    e = eps_protect(priors, 3, 0.1)
    assert column_bound(e, priors, 3).tail == pytest.approx(0.1, abs=1e-6)
    assert column_bound(e + 1e-3, priors, 3).tail > 0.1
    assert eps_protect(priors, 1, 0.5) is None  # the prior alone already exceeds it


def test_theorem_3_5_alpha_beyond_the_exact_range_is_an_upper_bound():
    """Above 10,000 rows alpha is max_{k < t} pmf(k) from the saddlepoint density: equal to the exact alpha
    left of the mode (relative 1e-3), never below it (beyond 1e-3) right of it."""
    from auditing.risk.column_bound import _alpha

    rng = np.random.default_rng(1)
    beta = np.asarray(posterior_ceiling(0.1, rng.uniform(0.6, 0.99, 12_000)))
    ones = np.ones(beta.size, dtype=np.int64)
    mean = int(beta.sum())
    for t in (mean - 300, mean - 20, mean, mean + 30, mean + 200):
        exact, approx = _alpha(beta, ones, t, True), _alpha(beta, ones, t, False)
        assert approx >= exact * (1 - 1e-3)
        if t <= mean:
            assert approx == pytest.approx(exact, rel=1e-3)
