"""Gaussian differential privacy (mu-GDP): the Gaussian trade-off function and its exact (eps, delta) curve.

The family F of trade-off functions audited with the paper's Algorithm 3 (Definition 9) is the Gaussian one,
f_mu(x) = Phi(Phi^-1(1 - x) - mu) (Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022, Def. 2.7).
A mechanism is mu-GDP iff it is (eps, delta(eps; mu))-DP for every eps >= 0, with

    delta(eps; mu) = Phi(-eps/mu + mu/2) - e^eps * Phi(-eps/mu - mu/2)      (Dong et al., Corollary 2.13).

This module turns a Gaussian trade-off function into the epsilon of Definition 9 step 3 at a given delta
(`epsilon_for_mu`) and back (`mu_for_epsilon`). Everything is computed in log space so that it stays accurate
for eps up to ~50 and delta down to ~1e-300 (e^eps overflows nothing, and tiny deltas keep their digits).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from labeldp.errors import LabelDPInputError


def brentq(*args, **kwargs):
    """scipy.optimize.brentq, imported on first use (scipy.optimize takes 0.15 s to import; most audits never
    need a Gaussian reading's root)."""
    from scipy.optimize import brentq as solve

    return solve(*args, **kwargs)


__all__ = [
    "epsilon_for_mu",
    "gaussian_delta",
    "gaussian_tradeoff",
    "log_gaussian_delta",
    "mu_for_epsilon",
]

# Below e^-2000 a delta is 0 in double precision; clamping keeps the root finders on finite numbers.
_LOG_FLOOR = -2000.0
# Bracket expansion never needs more than this many doublings (eps or mu grow by 2^200); a safety stop.
_MAX_DOUBLINGS = 200


def gaussian_tradeoff(x, mu: float):
    """The Gaussian trade-off function f_mu(x) = Phi(Phi^-1(1 - x) - mu) (Dong et al. 2022, Def. 2.7).

    Written as Phi(-Phi^-1(x) - mu): Phi^-1(1 - x) = -Phi^-1(x), and the right side keeps its digits for tiny x
    where 1 - x would round to 1. Accepts a scalar or an array x in [0, 1]; returns the same shape.
    """
    mu = _check_mu(mu)
    x = np.asarray(x, dtype=float)
    if np.any((x < 0.0) | (x > 1.0) | np.isnan(x)):
        raise LabelDPInputError(f"x must lie in [0, 1]; got values outside it (min {np.nanmin(x)!r})")
    out = ndtr(-ndtri(x) - mu)
    return out if out.ndim else float(out)


def log_gaussian_delta(eps: float, mu: float) -> float:
    """log delta(eps; mu) for mu-GDP (Dong et al. 2022, Corollary 2.13), stable for eps up to ~700.

    delta = A - B with log A = log Phi(-eps/mu + mu/2) and log B = eps + log Phi(-eps/mu - mu/2); both logs are
    finite where A and B themselves would overflow (e^eps) or underflow (Phi of a large negative number).
    Returns -inf for mu = 0 (delta = 0) and 0 for mu = inf (delta = 1).
    """
    eps, mu = float(eps), float(mu)
    if mu == 0.0:
        return -math.inf
    if math.isinf(mu):
        return 0.0
    log_a = float(log_ndtr(-eps / mu + mu / 2.0))
    log_b = eps + float(log_ndtr(-eps / mu - mu / 2.0))
    # delta = A * (1 - B/A) and B < A for mu > 0, so log delta = log A + log(1 - e^(log B - log A)).
    return log_a + _log1mexp(log_b - log_a)


def gaussian_delta(eps: float, mu: float) -> float:
    """delta(eps; mu) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong et al. 2022, Corollary 2.13)."""
    return math.exp(log_gaussian_delta(eps, mu))


def epsilon_for_mu(mu: float, delta: float) -> float:
    """The smallest eps >= 0 with mu-GDP => (eps, delta)-DP, i.e. the eps of Definition 9 step 3 for f_mu.

    Solves delta(eps; mu) = delta (decreasing in eps) to ~1e-12; returns 0 when delta >= delta(0; mu) and inf
    when delta = 0 and mu > 0 (no Gaussian trade-off function with mu > 0 is pure eps-DP). The returned eps
    is on the side where delta(eps; mu) >= delta (never larger than the exact root beyond rounding of the
    formula), so that a lower bound built from it is not made optimistic by the root finder.
    """
    mu = _check_mu(mu)
    delta = _check_delta_closed(delta)
    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    if delta == 0.0:
        return math.inf
    log_target = math.log(delta)
    if log_gaussian_delta(0.0, mu) <= log_target:
        return 0.0

    def excess(eps: float) -> float:  # decreasing in eps; > 0 at eps = 0
        return max(log_gaussian_delta(eps, mu), _LOG_FLOOR) - log_target

    lo, hi = 0.0, max(1.0, mu * mu)
    for _ in range(_MAX_DOUBLINGS):
        if excess(hi) <= 0.0:
            break
        lo, hi = hi, 2.0 * hi
    else:  # pragma: no cover - delta(eps; mu) -> 0 as eps -> inf, so this is unreachable
        raise RuntimeError(f"no eps bracket for mu={mu!r}, delta={delta!r}")
    root = brentq(excess, lo, hi, xtol=1e-13, rtol=4 * np.finfo(float).eps, maxiter=200)
    # Step back onto the delta(eps) >= delta side (the conservative side for a lower bound on eps); lo is on
    # it already, so the doubling steps end there at the latest.
    step = max(1e-13, 4e-16 * root)
    for _ in range(64):
        if excess(root) >= 0.0:
            break
        root = max(lo, root - step)
        step *= 2.0
    return float(root)


# Memoized: a pure function of two floats, and `auditing.bounds.lower_bound.best_bound` asks for the same eps (its best so
# far) at many grid points of every repetition, each answer a root search (the cache returns the same double).
@functools.lru_cache(maxsize=4096)
def mu_for_epsilon(eps: float, delta: float) -> float:
    """The mu with delta(eps; mu) = delta: the weakest Gaussian trade-off function that is (eps, delta)-DP.

    delta(eps; mu) increases with mu, so this is the inverse of `epsilon_for_mu` in its first argument.
    delta = 0 gives mu = 0 (only the trivial f(x) = 1 - x is pure DP in the Gaussian family); eps = inf gives
    inf. Solved to ~1e-12 relative.
    """
    eps = float(eps)
    if not (eps >= 0.0):
        raise LabelDPInputError(f"epsilon must be >= 0; got {eps!r}")
    delta = _check_delta_closed(delta)
    if delta == 0.0:
        return 0.0
    if math.isinf(eps):
        return math.inf
    if eps == 0.0:
        # delta(0; mu) = 2 Phi(mu/2) - 1 has a closed-form inverse; Phi^-1((1 + delta)/2) written via -ndtri.
        return float(-2.0 * ndtri((1.0 - delta) / 2.0))
    log_target = math.log(delta)

    def excess(mu: float) -> float:  # increasing in mu
        return max(log_gaussian_delta(eps, mu), _LOG_FLOOR) - log_target

    # A starting point from the leading-order eps ~ mu^2/2 + mu*|z| of the formula, then expand both ways.
    z = float(-ndtri(min(delta, 0.5)))
    guess = -z + math.sqrt(z * z + 2.0 * eps)
    lo, hi = guess / 2.0, guess * 2.0
    for _ in range(_MAX_DOUBLINGS):
        if excess(hi) >= 0.0:
            break
        lo, hi = hi, 2.0 * hi
    for _ in range(_MAX_DOUBLINGS):
        if excess(lo) < 0.0:
            break
        lo, hi = lo / 2.0, lo
    return float(brentq(excess, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=300))


def _log1mexp(x: float) -> float:
    """log(1 - e^x) for x <= 0, accurate at both ends (Maechler 2012: expm1 near 0, log1p far from it)."""
    if x >= 0.0:
        return -math.inf
    if x > -math.log(2.0):
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def _check_mu(mu: float) -> float:
    mu = float(mu)
    if not (mu >= 0.0):
        raise LabelDPInputError(f"mu (the Gaussian-DP parameter) must be >= 0; got {mu!r}")
    return mu


def _check_delta_closed(delta: float) -> float:
    delta = float(delta)
    if not (0.0 <= delta < 1.0):
        raise LabelDPInputError(f"delta must be in [0, 1); got {delta!r}")
    return delta
