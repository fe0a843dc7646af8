"""RR with a prior, LP-1ST (pipelines/training/mechanisms/rr_with_prior.py): the top-k choice, the output law and exact
label-DP, pure numpy, seeded (tolerances: tests/support/mechanism_draws.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms.randomized_response import (
    transition_matrix,
)
from pipelines.training.mechanisms.rr_with_prior import optimal_top_k, output_distribution, rr_with_prior
from tests.support.mechanism_draws import assert_frequency, random_prior


def test_optimal_top_k_matches_brute_force():
    rng = np.random.default_rng(11)
    prior = random_prior(rng, 500, 6)
    for epsilon in [0.1, 1.0, 3.0]:
        order, set_size = optimal_top_k(prior, epsilon)
        for i in range(prior.shape[0]):
            ranked = np.sort(prior[i])[::-1]
            gains = [ranked[:j].sum() * math.exp(epsilon) / (math.exp(epsilon) + j - 1) for j in range(1, 7)]
            assert set_size[i] == int(np.argmax(gains)) + 1
            assert np.all(np.diff(prior[i, order[i]]) <= 0)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_lp1st_output_distribution_matches_sampling(epsilon):
    rng = np.random.default_rng(21)
    k = 4
    prior = random_prior(rng, 8, k)                 # 8 distinct priors ...
    n_each = 25_000
    priors = np.repeat(prior, n_each, axis=0)       # ... each used for 25K rows
    labels = rng.integers(0, k, size=priors.shape[0])
    out = rr_with_prior(labels, priors, epsilon, rng)
    exact = output_distribution(labels, priors, epsilon)
    for group in range(prior.shape[0]):
        for y in range(k):
            rows = np.flatnonzero((np.arange(priors.shape[0]) // n_each == group) & (labels == y))
            for o in range(k):
                assert_frequency(int(np.sum(out[rows] == o)), rows.size, float(exact[rows[0], o]),
                                 f"prior {group}, P(out={o} | y={y})")


def test_lp1st_satisfies_label_dp_exactly_for_every_prior():
    rng = np.random.default_rng(5)
    k = 5
    prior = random_prior(rng, 2000, k, concentration=0.3)
    for epsilon in [0.1, 1.0, 4.0]:
        laws = np.stack([output_distribution(np.full(prior.shape[0], y), prior, epsilon) for y in range(k)])
        high, low = laws.max(axis=0), laws.min(axis=0)       # over the true label y, per row and output
        support = high > 0
        assert np.all(low[support] > 0), "an output possible for one label must be possible for all"
        assert np.max(high[support] / low[support]) <= math.exp(epsilon) * (1 + 1e-12)


def test_lp1st_with_uniform_prior_is_randomized_response():
    k = 3
    uniform = np.full((k, k), 1.0 / k)
    for epsilon in [0.1, 1.0, 5.0]:
        assert np.allclose(output_distribution(np.arange(k), uniform, epsilon), transition_matrix(epsilon, k))


def test_lp1st_confident_prior_at_small_epsilon_outputs_the_prior_top_class():
    # Binary, prior 0.97 on class 0: j* = 1 whenever 0.97 > e^eps / (e^eps + 1), i.e. eps < log(0.97/0.03).
    prior = np.tile([0.97, 0.03], (1000, 1))
    labels = np.arange(1000) % 2
    out = rr_with_prior(labels, prior, 1.0, np.random.default_rng(0))
    assert np.all(out == 0)
    assert np.all(optimal_top_k(prior, 4.0)[1] == 2)   # log(0.97/0.03) = 3.48 < 4: both classes kept


def test_lp1st_infinite_epsilon_is_identity_and_checks_the_prior():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=100)
    prior = random_prior(rng, 100, 3)
    assert np.array_equal(rr_with_prior(labels, prior, math.inf, rng), labels)
    with pytest.raises(LabelDPInputError, match="prior: 1 row"):
        bad = prior.copy()
        bad[3] = [0.5, 0.5, 0.5]
        rr_with_prior(labels, bad, 1.0, rng)
    with pytest.raises(LabelDPInputError, match=r"prior must have shape \(rows=100"):
        rr_with_prior(labels, prior[:50], 1.0, rng)
