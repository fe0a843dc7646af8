"""The column bound: how many of n independent targets an attacker can get right under a DP guarantee.

Pure numpy/scipy. The number of successful attempts is stochastically dominated by a Poisson-binomial with
success probabilities beta(eps, p_i) ([BWC] Theorem 3.2, + alpha n delta for delta > 0, Theorem 3.5; sources
in `auditing.risk.figures`). Its tail is computed exactly (FFT product of the rows' generating polynomials) up to
EXACT_MAX_ROWS rows and by the Lugannani-Rice saddlepoint approximation beyond. `eps_protect` inverts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtr

from auditing.bounds.gaussian_dp import brentq  # scipy's, imported on first use
from auditing.bounds.params import check_delta
from auditing.risk.attack_bounds import check_epsilon, check_priors, posterior_ceiling
from labeldp.errors import LabelDPInputError

__all__ = ["EXACT_MAX_ROWS", "ColumnBound", "column_bound", "eps_protect", "poisson_binomial_pmf"]

# Up to this many rows the column tail is the exact Poisson-binomial (FFT product of the rows' generating
# polynomials); beyond, the Lugannani-Rice saddlepoint approximation (relative error < 1e-3 there, tested).
EXACT_MAX_ROWS = 10_000


def poisson_binomial_pmf(probs) -> np.ndarray:
    """Exact pmf of a sum of independent Bernoulli(probs): the product of the generating polynomials
    (1 - p + p z), in blocks of 64 rows by direct recursion (all blocks at once) and then a balanced tree of
    FFT products (batched per level). Absolute error ~1e-15 (round-off of the FFT); negatives clipped to 0."""
    p = np.asarray(probs, dtype=np.float64).reshape(-1)
    n = p.size
    if n == 0:
        return np.ones(1)
    block = 64
    blocks = -(-n // block)
    padded = np.zeros(blocks * block)  # p = 0 rows are the identity polynomial 1
    padded[:n] = p
    padded = padded.reshape(blocks, block)
    poly = np.zeros((blocks, block + 1))
    poly[:, 0] = 1.0
    for j in range(block):
        q = padded[:, j:j + 1]
        poly[:, 1:j + 2] = poly[:, 1:j + 2] * (1.0 - q) + poly[:, 0:j + 1] * q
        poly[:, 0:1] *= 1.0 - q
    while poly.shape[0] > 1:
        if poly.shape[0] % 2:
            ident = np.zeros((1, poly.shape[1]))
            ident[0, 0] = 1.0
            poly = np.vstack([poly, ident])
        length = 2 * poly.shape[1] - 1
        size = 1 << (length - 1).bit_length()
        prod = np.fft.irfft(np.fft.rfft(poly[0::2], size) * np.fft.rfft(poly[1::2], size), size)[:, :length]
        poly = np.clip(prod, 0.0, None)
    pmf = poly[0, : n + 1]
    return pmf / pmf.sum()


@dataclass(frozen=True)
class ColumnBound:
    """P[S >= t] for S ~ Poisson-binomial(beta(eps, p_i)) and E[S], + the delta terms ([BWC] Thm 3.2/3.5)."""

    tail: float  # upper bound on P[at least t successes]
    expected: float  # upper bound on the expected number of successes
    n: int
    t: int
    method: str  # "exact" (FFT product) | "saddlepoint" (Lugannani-Rice, second continuity correction)


def _grouped(priors, counts) -> tuple[np.ndarray, np.ndarray]:
    p = check_priors(priors)
    if counts is None:
        return p, np.ones(p.size, dtype=np.int64)
    c = np.asarray(counts).reshape(-1)
    if c.shape != p.shape:
        raise LabelDPInputError(f"counts: {c.size} value(s) for {p.size} prior(s)")
    bad = ~(c >= 0) | (c != np.floor(c))
    if bad.any():
        raise LabelDPInputError(f"counts must be whole numbers >= 0: {int(bad.sum())} bad value(s)")
    c = c.astype(np.int64)
    keep = c > 0
    if not keep.any():
        raise LabelDPInputError("priors: empty (every count is 0)")
    return p[keep], c[keep]


def _check_t(t, n: int) -> int:
    if isinstance(t, bool) or not isinstance(t, (int, np.integer, float)) or t != int(t) or not (1 <= int(t) <= n):
        raise LabelDPInputError(f"at_least (t) must be a whole number in 1..n = 1..{n} (1 bad value); got {t!r}")
    return int(t)


def _lugannani_rice(beta: np.ndarray, counts: np.ndarray, t: int) -> float:
    """P[S >= t] for S = sum of Binomial(counts_b, beta_b), 0 < beta_b < 1, by the saddlepoint approximation
    with Daniels' second continuity correction (Butler, "Saddlepoint approximations", Sec. 1.2.4)."""
    x = t - 0.5
    mean = float(np.sum(counts * beta))
    var = float(np.sum(counts * beta * (1.0 - beta)))
    lb = np.log(beta) - np.log1p(-beta)  # logit beta_b

    def k1(s):  # K'(s) = sum c b e^s / (1 - b + b e^s) = sum c sigmoid(s + logit b)
        return float(np.sum(counts * expit(s + lb)))

    if abs(x - mean) < 1e-9 * max(1.0, math.sqrt(var)) or var <= 0.0:
        z = (x - mean) / math.sqrt(var) if var > 0 else 0.0
        return float(ndtr(-z))
    lo, hi = -1.0, 1.0
    while k1(lo) > x:
        lo *= 2.0
    while k1(hi) < x:
        hi *= 2.0
    s = brentq(lambda v: k1(v) - x, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=200)
    sig = expit(s + lb)
    k0 = float(np.sum(counts * (np.log1p(-beta) + np.logaddexp(0.0, s + lb))))  # K(s) = sum c log(1-b+b e^s)
    k2 = float(np.sum(counts * sig * (1.0 - sig)))
    w2 = 2.0 * (s * x - k0)
    w = math.copysign(math.sqrt(max(w2, 0.0)), s)
    u = 2.0 * math.sinh(s / 2.0) * math.sqrt(k2)
    if abs(w) < 1e-4 or abs(u) < 1e-4:  # the removable singularity at the mean: skewness-corrected normal
        k3 = float(np.sum(counts * beta * (1.0 - beta) * (1.0 - 2.0 * beta)))
        z = (x - mean) / math.sqrt(var)
        return float(min(1.0, max(0.0, ndtr(-z) + k3 / (6.0 * var ** 1.5) * (z * z - 1.0) * math.exp(-z * z / 2.0)
                                  / math.sqrt(2.0 * math.pi))))
    phi = math.exp(-0.5 * w * w) / math.sqrt(2.0 * math.pi)
    tail = float(ndtr(-w)) + phi * (1.0 / u - 1.0 / w)
    return float(min(1.0, max(0.0, tail)))


def _pb_tail(beta: np.ndarray, counts: np.ndarray, t: int, exact: bool) -> float:
    """P[S >= t] for S = sum of Binomial(counts_b, beta_b), any beta_b in [0, 1]."""
    sure = int(counts[beta >= 1.0].sum())
    random = (beta > 0.0) & (beta < 1.0)
    b, c = beta[random], counts[random]
    need = t - sure
    if need <= 0:
        return 1.0
    if need > int(c.sum()):
        return 0.0
    if exact:
        pmf = poisson_binomial_pmf(np.repeat(b, c))
        return float(min(1.0, pmf[need:].sum()))
    return _lugannani_rice(b, c, need)


def column_bound(eps, priors, t, delta: float = 0.0, counts=None, method: str = "auto") -> ColumnBound:
    """How many of n independent targets an attacker can get right: P[S >= t] and E[S] for the dominating
    S ~ Poisson-binomial(beta(eps, p_i)) ([BWC] Theorem 3.2; priors p_i = each attempt's prior success).

    delta > 0 adds alpha * n * delta to the tail ([BWC] Theorem 3.5, alpha = max_j (P[S >= t - j] - P[S >= t])
    / j, computed from the same pmf or approximation; Theorem 3.5 takes the priors of the a-priori
    Bayes-optimal attempt z*, e.g. max(p, 1 - p) per binary label, as `auditing.risk.figures.risk_block` does) and
    n * delta to the expectation (each target's success probability is at most beta_i + delta, [BWC]
    Corollary 3.4 with n = 1, summed).

    Args:
        eps: the guarantee, >= 0.
        priors: each attempt's prior success, in (0, 1).
        t: the success count of the tail, a whole number in 1..n.
        delta: in [0, 1).
        counts: optional multiplicity of each prior (a histogram: n = sum of counts).
        method: "auto" (exact up to EXACT_MAX_ROWS rows, saddlepoint beyond), "exact" or "saddlepoint".
    Returns:
        A `ColumnBound` (upper bounds on the tail P[S >= t] and on E[S]).
    Raises:
        LabelDPInputError: bad eps, delta, priors, counts, t or method.
    """
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    p, c = _grouped(priors, counts)
    n = int(c.sum())
    t = _check_t(t, n)
    if method not in ("auto", "exact", "saddlepoint"):
        raise LabelDPInputError(f"method must be auto, exact or saddlepoint; got {method!r}")
    exact = method == "exact" or (method == "auto" and n <= EXACT_MAX_ROWS)
    beta = np.asarray(posterior_ceiling(eps, p), dtype=np.float64).reshape(-1)
    tail = _pb_tail(beta, c, t, exact)
    expected = float(np.sum(c * beta))
    if delta > 0.0:
        tail = min(1.0, tail + _alpha(beta, c, t, exact) * n * delta)
        expected = min(float(n), expected + n * delta)
    return ColumnBound(tail=float(tail), expected=expected, n=n, t=t,
                       method="exact" if exact else "saddlepoint")


def _alpha(beta, counts, t: int, exact: bool) -> float:
    """[BWC] Theorem 3.5's alpha = max over j in 1..n of (P[S >= t - j] - P[S >= t]) / j: the largest mean of
    the pmf over a window [t - j, t - 1]. Exact from the pmf; beyond EXACT_MAX_ROWS its upper bound
    max_{k < t} pmf(k) = pmf(min(t - 1, mode)) (a Poisson-binomial is unimodal, its mode within 1 of the mean),
    with the pmf from the saddlepoint density."""
    if exact:
        pmf = poisson_binomial_pmf(np.repeat(beta, counts))
        window = np.cumsum(pmf[:t][::-1])  # window[j-1] = P[t - j <= S <= t - 1]
        j = np.arange(1, window.size + 1)
        return float(np.max(window / j)) if window.size else 0.0
    sure = int(counts[beta >= 1.0].sum())
    random = (beta > 0.0) & (beta < 1.0)
    b, c = beta[random], counts[random]
    if c.sum() == 0:
        return 1.0 if t - 1 == sure else 0.0
    mean = float(np.sum(c * b))
    last = t - 1 - sure  # the window's right end, counted among the random rows
    if last < 0:
        return 0.0
    if last >= math.ceil(mean):  # the window can reach the mode (floor or ceil of the mean, Darroch 1964)
        return min(1.0, max(_pmf_saddlepoint(b, c, math.floor(mean)), _pmf_saddlepoint(b, c, math.ceil(mean))))
    return min(1.0, _pmf_saddlepoint(b, c, last))  # the pmf rises up to `last`: j = 1 is the largest mean


def _pmf_saddlepoint(beta: np.ndarray, counts: np.ndarray, k: int) -> float:
    """P[S = k] by the saddlepoint density exp(K(s) - s k) / sqrt(2 pi K''(s)) with K'(s) = k (Daniels 1954)."""
    n = float(counts.sum())
    if k <= 0 or k >= n:
        edge = np.log1p(-beta) if k <= 0 else np.log(beta)
        return float(math.exp(float(np.sum(counts * edge))))
    lb = np.log(beta) - np.log1p(-beta)
    lo, hi = -1.0, 1.0
    while float(np.sum(counts * expit(lo + lb))) > k:
        lo *= 2.0
    while float(np.sum(counts * expit(hi + lb))) < k:
        hi *= 2.0
    s = brentq(lambda v: float(np.sum(counts * expit(v + lb))) - k, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=200)
    sig = expit(s + lb)
    k0 = float(np.sum(counts * (np.log1p(-beta) + np.logaddexp(0.0, s + lb))))
    k2 = float(np.sum(counts * sig * (1.0 - sig)))
    return float(math.exp(k0 - s * k) / math.sqrt(2.0 * math.pi * k2))


def eps_protect(priors, t, max_risk: float, delta: float = 0.0, counts=None) -> float | None:
    """The largest eps with column tail P[S >= t] <= max_risk ([BWC] Section 5.3's eps_protect, for the column
    bound of Theorem 3.2/3.5), by root finding (the tail increases with eps).

    Args: as `column_bound`; ``max_risk`` in (0, 1).
    Returns:
        The eps (to 1e-6; inf when even eps = 1000 keeps the tail below ``max_risk``), or None when even eps = 0
        exceeds it (the prior alone is already that risky).
    Raises:
        LabelDPInputError: ``max_risk`` outside (0, 1), or bad delta, priors, counts or t.
    """
    risk = float(max_risk)
    if not (0.0 < risk < 1.0):
        raise LabelDPInputError(f"max_risk must be in (0, 1) (1 bad value); got {max_risk!r}")
    delta = check_delta(delta)
    p, c = _grouped(priors, counts)
    t = _check_t(t, int(c.sum()))

    def excess(e: float) -> float:
        return column_bound(e, p, t, delta=delta, counts=c).tail - risk

    if excess(0.0) > 0.0:
        return None
    hi = 1.0
    while excess(hi) <= 0.0:
        hi *= 2.0
        if hi > 1e3:
            return math.inf
    return float(brentq(excess, 0.0, hi, xtol=1e-6))
