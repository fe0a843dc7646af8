"""ALIBI (pipelines/training/mechanisms/alibi.py): Laplace noise, the Bayes posterior and its calibration, pure numpy,
seeded (tolerances: tests/support/mechanism_draws.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from pipelines.training.mechanisms.alibi import (
    alibi_soft_labels,
    laplace_scale,
    noisy_one_hot,
    posterior_soft_labels,
)
from tests.support.mechanism_draws import SIGMAS, assert_frequency, random_prior


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_alibi_noise_is_laplace_with_scale_two_over_epsilon(epsilon):
    rng = np.random.default_rng(8)
    n, k = 100_000, 3
    labels = rng.integers(0, k, size=n)
    noise = (noisy_one_hot(labels, epsilon, k, rng) - np.eye(k)[labels]).ravel()
    scale = 2.0 / epsilon
    assert laplace_scale(epsilon) == scale
    # mean |noise| estimates b; its standard error is b / sqrt(N) (Var|Lap(b)| = b^2).
    assert abs(np.mean(np.abs(noise)) - scale) <= SIGMAS * scale / math.sqrt(noise.size)
    assert abs(np.mean(noise)) <= SIGMAS * math.sqrt(2) * scale / math.sqrt(noise.size)
    assert stats.kstest(noise[:20_000], stats.laplace(scale=scale).cdf).pvalue > 1e-4


def test_alibi_posterior_is_bayes_rule_with_laplace_likelihood():
    rng = np.random.default_rng(9)
    epsilon, k = 1.5, 3
    noisy = rng.normal(0.3, 1.0, size=(50, k))
    prior = random_prior(rng, 50, k)
    scale = 2.0 / epsilon
    likelihood = np.stack(
        [stats.laplace(loc=np.eye(k)[c], scale=scale).pdf(noisy).prod(axis=1) for c in range(k)], axis=1)
    expected = prior * likelihood
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(posterior_soft_labels(noisy, prior, epsilon), expected, atol=1e-12)


def test_alibi_posterior_is_calibrated_when_the_prior_is_the_true_law():
    rng = np.random.default_rng(10)
    n, epsilon = 200_000, 1.0
    p_true = rng.beta(1.0, 4.0, size=n)
    prior = np.column_stack([1 - p_true, p_true])
    labels = (rng.random(n) < p_true).astype(np.int64)
    _noisy, soft = alibi_soft_labels(labels, prior, epsilon, rng)
    # Bayes: among rows with posterior in a bin, the positive rate equals the mean posterior.
    bins = np.digitize(soft[:, 1], np.linspace(0, 1, 11)[1:-1])
    for b in np.unique(bins):
        rows = bins == b
        if rows.sum() >= 2000:
            assert_frequency(int(labels[rows].sum()), int(rows.sum()), float(soft[rows, 1].mean()), f"bin {b}")


def test_alibi_infinite_epsilon_gives_exact_one_hot_labels():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, size=500)
    noisy, soft = alibi_soft_labels(labels, np.full((500, 2), 0.5), math.inf, rng)
    assert np.array_equal(soft, np.eye(2)[labels]) and np.array_equal(noisy, np.eye(2)[labels])
