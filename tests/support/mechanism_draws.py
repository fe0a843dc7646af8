"""Helpers the mechanism tests share: a frequency check, random priors and a tiny learner.

Statistical tolerances: a frequency estimated from n independent draws is compared with its exact value
within 5 binomial standard deviations (a false alarm has probability < 1e-6 per comparison); the seeds are
fixed, so the tests are deterministic anyway.
"""

from __future__ import annotations

import math

import numpy as np

SIGMAS = 5.0


def assert_frequency(count: int, n: int, p: float, what: str) -> None:
    """count/n equals p within 5 binomial standard deviations (plus 1/n for p at 0 or 1)."""
    tolerance = SIGMAS * math.sqrt(p * (1.0 - p) / n) + 1.0 / n
    assert abs(count / n - p) <= tolerance, f"{what}: {count}/{n} = {count / n:.5f}, expected {p:.5f} +- {tolerance:.5f}"


def random_prior(rng: np.random.Generator, n: int, k: int, concentration: float = 0.5) -> np.ndarray:
    return rng.dirichlet(np.full(k, concentration), size=n)


def histogram_learner(feature: np.ndarray, k: int):
    """A tiny numpy learner for one discrete feature: smoothed class frequencies per feature value."""

    def fit_predict(train_rows, targets, predict_rows):
        targets = np.asarray(targets)
        soft = targets if targets.ndim == 2 else np.eye(k)[targets]
        counts = np.ones((feature.max() + 1, k))  # add-one smoothing
        np.add.at(counts, feature[train_rows], soft)
        probabilities = counts / counts.sum(axis=1, keepdims=True)
        return probabilities[feature[predict_rows]]

    return fit_predict
