"""A plain scalar re-implementation of what the public reference f-DP audit does, for timing comparisons only.

Behaviour reproduced (see docs in /work/shared/DESIGN.md, "What the public reference implementation gets wrong"):
- a fixed grid of 1000 noise values sigma = 0.001 + 0.01 i (mu = 1/sigma), scanned from the weakest guarantee
  (sigma = 0.001, mu = 1000) towards the strongest;
- for each, the scalar Algorithm 3 recursion in Python lists with scipy.stats.norm's scalar ppf/cdf, the
  inverse blow-up Phi(Phi^-1(r) - mu) clamped from below by the previous h;
- the first grid value that Algorithm 3 rejects is reported, converted to eps by bisection on the Gaussian-DP
  delta formula to 1e-3, returning the upper end of that bisection;
- when nothing is rejected it falls back to the last grid value (sigma = 9.991, eps ~0.40 at delta 1e-6),
  which is the "positive eps with zero correct guesses" flaw; and sigma = 0.001 caps the largest eps.

Not used by the product. Not a source of truth: `auditing.fdp_bounds` is.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm


def reference_noise_grid(first: float = 0.001, step: float = 0.01, size: int = 1000) -> list[float]:
    return [first + i * step for i in range(size)]


def reference_rejects(correct: int, guesses: int, m: int, noise: float, gamma: float = 0.05) -> bool:
    """Scalar Algorithm 3 for Gaussian f with mu = 1/noise, as the reference runs it (True = rejected)."""
    mu = 1.0 / noise
    r = [0.0] * (correct + 1)
    h = [0.0] * (correct + 1)
    r[correct] = gamma * correct / m
    h[correct] = gamma * (guesses - correct) / m
    for i in range(correct - 1, -1, -1):
        h[i] = max(h[i + 1], float(norm.cdf(norm.ppf(r[i + 1]) - mu)))
        r[i] = r[i + 1] + (i / (guesses - i)) * (h[i] - h[i + 1])
    return not (r[0] + h[0] <= guesses / m)


def reference_delta(noise: float, eps: float) -> float:
    """The Gaussian-DP delta(eps) at mu = 1/noise, evaluated literally (no log space), as the reference does."""
    return float(norm.cdf(-eps * noise + 1 / (2 * noise)) - np.exp(eps) * norm.cdf(-eps * noise - 1 / (2 * noise)))


def reference_epsilon_for_noise(noise: float, delta: float) -> float:
    lower, upper = 0.0, 100.0
    while upper - lower > 0.001:
        middle = (upper + lower) / 2
        if reference_delta(noise, middle) > delta:
            lower = middle
        else:
            upper = middle
    return upper


def reference_grid_epsilon(correct: int, guesses: int, m: int, delta: float = 1e-6, gamma: float = 0.05):
    """Returns (eps, index of the reported grid value, whether any grid value was rejected)."""
    grid = reference_noise_grid()
    index = 0
    while index < len(grid) and not reference_rejects(correct, guesses, m, grid[index], gamma):
        index += 1
    rejected_any = index < len(grid)
    noise = grid[min(index, len(grid) - 1)]
    return reference_epsilon_for_noise(noise, delta), index, rejected_any


if __name__ == "__main__":  # pragma: no cover - manual use
    eps, index, found = reference_grid_epsilon(5000, 8000, 20000)
    print(f"reference eps = {eps:.4f} (grid index {index}, rejected anything: {found}, mu = {1 / (0.001 + 0.01 * index):.4f})")
    print(f"its fallback with zero correct guesses: eps = {reference_epsilon_for_noise(reference_noise_grid()[-1], 1e-6):.4f}")
