"""Random (correct, guesses, m, confidence) cases the f-DP bound and recursion tests share."""

from __future__ import annotations

import numpy as np


def random_cases(rng: np.random.Generator, count: int, max_guesses: int):
    """Random (c, c', m, gamma, delta, kappa) with c >= c'/2 (below that nothing is rejected at kappa = 0)."""
    for _ in range(count):
        cp = int(rng.integers(1, max_guesses + 1))
        m = int(cp * rng.choice([1.0, 1.5, 10.0]))
        c = int(rng.integers(cp // 2, cp + 1))
        # gamma = 1 - confidence as the module computes it (exact for confidence >= 1/2, so 1 - gamma round-trips).
        gamma = 1.0 - float(rng.choice([0.95, 0.99, 0.8]))
        delta = float(rng.choice([0.0, 0.0, 1e-6, 1e-3, 0.02]))
        kappa = float(rng.choice([0.0, 0.0, 0.05, 0.3]))
        yield c, cp, m, gamma, delta, kappa
