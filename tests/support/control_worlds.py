"""The controls' worlds: reference probabilities, labels drawn from them (kappa = 0 holds exactly) and unique
sparse row ids, seeded."""

from __future__ import annotations

import numpy as np

ROWS = 20_000


def world(seed: int, n: int = ROWS):
    """Reference probabilities and labels drawn from them (kappa = 0 holds exactly), unique sparse row ids."""
    rng = np.random.default_rng(1000 + seed)
    p = rng.beta(1.0, 3.0, size=n)
    labels = (rng.random(n) < p).astype(np.int64)
    ids = rng.choice(10 * n, size=n, replace=False).astype(np.int64)
    return p, labels, ids
