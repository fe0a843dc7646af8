"""Noise correction (pipelines/training/mechanisms/noise_correction.py): inverted flip rates, the unbiased log loss and
the floor, pure numpy, seeded (tolerances: tests/support/mechanism_draws.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pipelines.training.mechanisms.noise_correction import (
    correct_probabilities,
    select_floor,
    unbiased_log_loss,
)
from pipelines.training.mechanisms.randomized_response import (
    flip_probability,
    keep_probability,
    randomized_response,
    transition_matrix,
)
from tests.support.mechanism_draws import SIGMAS, random_prior


def test_noise_correction_inverts_the_flip_rates_exactly():
    rng = np.random.default_rng(2)
    for k, epsilon in [(2, 0.1), (2, 1.0), (4, 2.0)]:
        p_true = random_prior(rng, 200, k, concentration=5.0)
        p_true = np.maximum(p_true, 1e-3)
        p_true /= p_true.sum(axis=1, keepdims=True)
        p_noisy = p_true @ transition_matrix(epsilon, k)      # the law of the RR label given x
        assert np.allclose(correct_probabilities(p_noisy, epsilon, floor=1e-6), p_true, atol=1e-9)
    q = flip_probability(1.0, 2)
    binary = correct_probabilities(np.array([[0.6, 0.4]]), 1.0, floor=1e-6)
    assert binary[0, 1] == pytest.approx((0.4 - q) / (1 - 2 * q))
    clipped = correct_probabilities(np.array([[1 - q / 2, q / 2]]), 1.0, floor=1e-3)  # below q: clipped
    assert clipped[0, 1] == pytest.approx(1e-3, rel=1e-2)


def test_unbiased_log_loss_has_the_true_expectation():
    # Exact: for every true label y, sum_j T[y, j] * estimate(j) equals -log p(y).
    rng = np.random.default_rng(4)
    for k, epsilon in [(2, 0.5), (3, 2.0)]:
        probabilities = random_prior(rng, 1, k, concentration=2.0)
        matrix = transition_matrix(epsilon, k)
        estimates = np.array([unbiased_log_loss(probabilities, [j], epsilon) for j in range(k)])
        assert np.allclose(matrix @ estimates, -np.log(probabilities[0]))
    # Statistical: over RR draws, the mean estimate matches the true log-loss (5 standard errors).
    n = 200_000
    probabilities = random_prior(rng, n, 2, concentration=2.0)
    labels = (rng.random(n) < probabilities[:, 1]).astype(np.int64)
    noisy = randomized_response(labels, 1.0, 2, rng)
    true = float(np.mean(-np.log(probabilities[np.arange(n), labels])))
    keep, flip = keep_probability(1.0, 2), flip_probability(1.0, 2)
    losses = -np.log(probabilities)
    rows = (losses[np.arange(n), noisy] - flip * losses.sum(axis=1)) / (keep - flip)
    assert abs(unbiased_log_loss(probabilities, noisy, 1.0) - true) <= SIGMAS * rows.std() / math.sqrt(n)


def test_select_floor_prefers_a_small_floor_when_predictions_are_good():
    rng = np.random.default_rng(6)
    n, epsilon = 100_000, 2.0
    p_true = np.clip(rng.beta(0.5, 10.0, size=n), 1e-4, 1 - 1e-4)    # ~5% positives, many near 0
    labels = (rng.random(n) < p_true).astype(np.int64)
    noisy = randomized_response(labels, epsilon, 2, rng)
    q = flip_probability(epsilon, 2)
    p_noisy = q + (1 - 2 * q) * p_true
    floor, estimates = select_floor(np.column_stack([1 - p_noisy, p_noisy]), noisy, epsilon)
    assert floor <= 1e-3, estimates
    assert set(estimates) >= {1e-5, 3e-2}
