"""Click-through priors the risk tests share: expit of a seeded normal around logit -3.4."""

from __future__ import annotations

import numpy as np
from scipy.special import expit


def ctr_priors(n: int, seed: int = 5) -> np.ndarray:
    return expit(np.random.default_rng(seed).normal(-3.4, 1.1, n))
