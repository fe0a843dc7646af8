"""What an epsilon means for the people in the data: attack-success ceilings implied by a DP guarantee.

Pure numpy/scipy. Every function takes the guarantee (eps, and delta where the paper gives a delta form) and
the adversary's prior, and returns the most an attacker can achieve against ANY mechanism with that guarantee.
The papers (in ../shared/papers/):

* [BWC] Swanberg et al., "Beyond the Worst Case: Extending Differential Privacy Guarantees to Realistic
  Adversaries": the posterior ceiling beta(eps, p) = e^eps / (e^eps - 1 + 1/p) = sigmoid(eps + logit p) of
  one attack attempt whose prior success is p (Theorem 3.2, n = 1), with delta (Theorem 3.5, n = 1); the
  column bound: the number of successful attempts among n independent targets is stochastically dominated by
  a Poisson-binomial with success probabilities beta(eps, p_i) (Theorem 3.2), + alpha n delta (Theorem 3.5);
  the generalised advantage (posterior - prior) / (1 - prior) and eps_protect (Section 5.3).
* [ARD] Guerra-Balboa et al., "Attack resilience of differential privacy" (WPES '24): the membership-inference
  advantage (e^eps - 1 + 2 delta) / (e^eps + 1) (Theorem 4.9), and the attribute-inference / U-ReRo bounds
  (Theorem 7.2, Theorem 7.3, Eq. 6, Section 8.2, Table 2).
* [BRD] Hayes et al., "Bounding training data reconstruction in DP-SGD": reconstruction success <= the
  blow-up B_kappa = 1 - f(kappa) of the mechanism's trade-off function f (Theorem 2 with Remark 3), which
  for mu-Gaussian-DP is Phi(Phi^-1(kappa) + mu) (their Table 2 uses one unsampled DP-SGD step, mu = 1/sigma);
  the advantage (success - kappa) / (1 - kappa) (Eq. 4).

Priors for a day of CTR data are the reference model's click probabilities over the audited rows. They travel
as a claim-free `PriorHistogram` (fixed buckets in logit space, integer counts, so that it merges exactly across
batches and runners); `risk_block` turns a histogram and a claimed or demonstrated (eps, delta) into the figures
shown beside the bound. Bad input raises `LabelDPInputError` naming the argument and the count of bad values.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit, ndtr, ndtri

from auditing.errors import LabelDPInputError
from auditing.gaussian_dp import mu_for_epsilon

__all__ = [
    "EXACT_MAX_ROWS",
    "ColumnBound",
    "PriorHistogram",
    "aia_advantage_bound",
    "check_epsilon",
    "column_bound",
    "eps_protect",
    "eps_protect_advantage",
    "generalized_advantage",
    "mia_advantage_bound",
    "poisson_binomial_pmf",
    "posterior_ceiling",
    "reconstruction_bound_dp",
    "reconstruction_bound_gdp",
    "risk_assessment",
    "risk_block",
]

# Up to this many rows the column tail is the exact Poisson-binomial (FFT product of the rows' generating
# polynomials); beyond, the Lugannani-Rice saddlepoint approximation (relative error < 1e-3 there, tested).
EXACT_MAX_ROWS = 10_000
# "At least 1% of the day's clicks inferred": the column figure's threshold beyond the reference's own guess.
COLUMN_FRACTION = 0.01
# The rows the reference puts at or above this click probability get their own conditional figures.
HIGH_PRIOR = 0.10
# The conditional rates per prior bucket shown in the report (edges on the reference's click probability).
PRIOR_BUCKET_EDGES = (0.0, 0.01, 0.05, 0.10, 0.50, 1.0)


# ------------------------------------------------------------------------------------------ validation


def check_epsilon(eps, name: str = "epsilon") -> float:
    """eps >= 0 (inf allowed: a non-private model); NaN and negatives are refused."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be a number >= 0; got {eps!r}") from None
    if not (value >= 0.0):
        raise LabelDPInputError(f"{name} must be >= 0 (1 bad value); got {eps!r}")
    return value


def check_delta(delta, name: str = "delta") -> float:
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be a number in [0, 1); got {delta!r}") from None
    if not (0.0 <= value < 1.0):
        raise LabelDPInputError(f"{name} must be in [0, 1) (1 bad value); got {delta!r}")
    return value


def check_priors(priors, name: str = "priors") -> np.ndarray:
    """A non-empty 1-D float array with every value in the open interval (0, 1)."""
    try:
        arr = np.asarray(priors, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be numbers in (0, 1); got {priors!r}") from None
    if arr.size == 0:
        raise LabelDPInputError(f"{name}: empty (need at least one prior probability in (0, 1))")
    bad = ~((arr > 0.0) & (arr < 1.0))
    if bad.any():
        first = float(arr[np.flatnonzero(bad)[0]])
        raise LabelDPInputError(
            f"{name} must lie in the open interval (0, 1): {int(bad.sum())} of {arr.size} value(s) are outside "
            f"it or NaN (first: {first!r})")
    return arr


def check_classes(k, name: str = "classes") -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer, float)) or k != int(k) or int(k) < 2:
        raise LabelDPInputError(f"{name} must be a whole number >= 2 (1 bad value); got {k!r}")
    return int(k)


# ------------------------------------------------------------------------------------------ one target


def posterior_ceiling(eps, prior=None, delta: float = 0.0, classes: int | None = None):
    """The most an attacker's posterior success can be for one attempt whose prior success is ``prior``.

    beta(eps, p) = e^eps / (e^eps - 1 + 1/p) = sigmoid(eps + logit p) ([BWC] Theorem 3.2 with n = 1); with
    delta > 0 the approximate-DP form beta + (1 - beta) delta ([BWC] Theorem 3.5 with n = 1, where
    alpha = P[S >= 0] - P[S >= 1] = 1 - beta). The k-class form is the uniform prior p = 1/k over k values:
    e^eps / (e^eps + k - 1) (the "bit leakage" example of [BWC] Section 3.2, k = 2^d). Vectorised over
    ``prior`` (and eps); eps = 0 gives the prior back, eps = inf gives 1.
    """
    eps_arr = np.asarray(eps, dtype=np.float64)
    if np.any(~(eps_arr >= 0.0)):
        raise LabelDPInputError(f"epsilon must be >= 0 ({int(np.sum(~(eps_arr >= 0.0)))} bad value(s)); got {eps!r}")
    delta = check_delta(delta)
    if prior is None:
        if classes is None:
            raise LabelDPInputError("posterior_ceiling needs a prior or a number of classes")
        p = np.asarray(1.0 / check_classes(classes))
    else:
        p = check_priors(prior, "prior").reshape(np.shape(prior))
    with np.errstate(over="ignore", invalid="ignore"):
        beta = np.where(np.isinf(eps_arr), 1.0, expit(np.where(np.isinf(eps_arr), 0.0, eps_arr) + logit(p)))
    beta = np.maximum(beta, p)  # beta >= p for eps >= 0; keeps eps = 0 exactly the prior despite round-off
    out = beta + (1.0 - beta) * delta
    return out if np.ndim(out) else float(out)


def generalized_advantage(posterior, prior):
    """(posterior - prior) / (1 - prior): the attack's gain over guessing from the prior, rescaled to [0, 1]
    ([BWC] Section 5.3 from its ref. [11]; the same as [BRD] Eq. 4 with prior = kappa)."""
    posterior = np.asarray(posterior, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    out = (posterior - prior) / (1.0 - prior)
    return out if np.ndim(out) else float(out)


def eps_protect_advantage(prior, max_advantage: float, delta: float = 0.0) -> float:
    """The largest eps whose posterior ceiling keeps the generalised advantage <= ``max_advantage`` for one
    attempt with prior success ``prior`` ([BWC] Section 5.3, Figure 2(b), which uses 0.05).

    Closed form from beta + (1 - beta) delta = p + a (1 - p): beta* = (p + a(1 - p) - delta) / (1 - delta) and
    eps = logit(beta*) - logit(p). Returns 0.0 when even eps = 0 exceeds it (delta too large).
    """
    p = float(check_priors([prior], "prior")[0])
    a = float(max_advantage)
    if not (0.0 < a < 1.0):
        raise LabelDPInputError(f"max_advantage must be in (0, 1) (1 bad value); got {max_advantage!r}")
    delta = check_delta(delta)
    target = (p + a * (1.0 - p) - delta) / (1.0 - delta)
    if target <= p:
        return 0.0
    if target >= 1.0:
        return math.inf
    return float(logit(target) - logit(p))


# ------------------------------------------------------------------------------------------ membership, attribute


def mia_advantage_bound(eps, delta: float = 0.0) -> float:
    """(e^eps - 1 + 2 delta) / (e^eps + 1): the strong membership-inference advantage of any attack against an
    (eps, delta)-DP mechanism ([ARD] Theorem 4.9, Humphries et al.); = tanh(eps/2) at delta = 0."""
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    if math.isinf(eps):
        return 1.0
    # (e^eps - 1 + 2 delta) / (e^eps + 1) = tanh(eps/2) + 2 delta / (e^eps + 1), stable for small eps.
    return float(min(1.0, math.tanh(eps / 2.0) + 2.0 * delta / (math.exp(min(eps, 700.0)) + 1.0)))


def aia_advantage_bound(eps, classes: int = 2, kappa: float | None = None, kappa_min: float | None = None,
                        delta: float = 0.0) -> float | None:
    """The attribute-inference advantage (= (0, gamma)-U-ReRo, [ARD] Proposition 8.2) of any attack.

    Uniform prior over k = ``classes`` values ([ARD] Eq. 6, Section 8.2, Table 2):
        min{(e^eps - 1)/k, (k - 1)/k * tanh(eps/2)}.
    Informed prior ([ARD] Theorem 7.3 with Theorem 7.2): with kappa = the largest prior probability of a value
    and kappa_min = the smallest,
        min{kappa (e^eps - 1), kappa (k - 1) tanh(eps/2) + kappa - kappa_min, tanh(eps/2)}.
    delta > 0: [ARD] states these for pure eps. For k = 2 uniform the binary attribute is the strong membership
    experiment (Section 8.1: (0, gamma/2)-U-ReRo <=> Adv^s_MIA <= gamma), so the (eps, delta) bound is half of
    Theorem 4.9: (e^eps - 1 + 2 delta) / (2 (e^eps + 1)). Otherwise (delta > 0 and k > 2 or an informed
    prior) no bound is stated and None is returned.
    """
    eps = check_epsilon(eps)
    k = check_classes(classes)
    delta = check_delta(delta)
    informed = kappa is not None or kappa_min is not None
    if informed:
        kappa = float(check_priors([1.0 / k if kappa is None else kappa], "kappa")[0])
        kappa_min = float(check_priors([kappa if kappa_min is None else kappa_min], "kappa_min")[0])
        if kappa_min > kappa or kappa < 1.0 / k - 1e-12 or kappa_min > 1.0 / k + 1e-12:
            raise LabelDPInputError(
                f"kappa_min <= 1/classes <= kappa must hold for a prior over {k} values; got kappa={kappa!r}, "
                f"kappa_min={kappa_min!r}")
    if delta > 0.0:
        if k == 2 and not informed:
            return 0.5 * mia_advantage_bound(eps, delta)
        return None
    if math.isinf(eps):
        return float(1.0 - (kappa_min if informed else 1.0 / k)) if informed else (k - 1) / k
    growth = math.expm1(min(eps, 700.0))  # e^700 ~ 1e304: the min{} below is decided long before
    half = math.tanh(eps / 2.0)
    if not informed:
        return float(min(growth / k, (k - 1) / k * half))
    return float(min(kappa * growth, kappa * (k - 1) * half + kappa - kappa_min, half))


# ------------------------------------------------------------------------------------------ reconstruction


def reconstruction_bound_gdp(mu, kappa):
    """Phi(Phi^-1(kappa) + mu): the most a reconstruction attack with prior success kappa achieves against a
    mu-Gaussian-DP mechanism ([BRD] Theorem 2 with Remark 3: blow-up = 1 - trade-off, and the Gaussian
    trade-off f_mu(x) = Phi(Phi^-1(1 - x) - mu)). Vectorised over kappa."""
    mu = float(mu)
    if not (mu >= 0.0):
        raise LabelDPInputError(f"mu (the Gaussian-DP parameter) must be >= 0 (1 bad value); got {mu!r}")
    k = check_priors(kappa, "kappa").reshape(np.shape(kappa))
    out = np.ones_like(k) if math.isinf(mu) else ndtr(ndtri(k) + mu)
    return out if np.ndim(out) else float(out)


def reconstruction_bound_dp(eps, delta, kappa):
    """1 - f_{eps,delta}(kappa) = min{1, e^eps kappa + delta, 1 - e^-eps (1 - delta - kappa)}: the blow-up of
    the (eps, delta)-DP trade-off function f_{eps,delta}(a) = max{0, 1 - delta - e^eps a, e^-eps (1 - delta - a)}
    ([BRD] Theorem 2 + Remark 3; f_{eps,delta} as in [BWC] Section 4.4, footnote 4). Valid for every
    (eps, delta)-DP mechanism; vectorised over kappa."""
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    k = check_priors(kappa, "kappa").reshape(np.shape(kappa))
    if math.isinf(eps):
        out = np.ones_like(k)
    else:
        out = np.minimum(1.0, np.minimum(math.exp(min(eps, 700.0)) * k + delta,
                                         1.0 - math.exp(-eps) * (1.0 - delta - k)))
    return out if np.ndim(out) else float(out)


# ------------------------------------------------------------------------------------------ column bounds


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

    ``counts``: optional multiplicity of each prior (a histogram: n = sum of counts). delta > 0 adds
    alpha * n * delta to the tail ([BWC] Theorem 3.5, alpha = max_j (P[S >= t - j] - P[S >= t]) / j, computed
    from the same pmf or approximation; Theorem 3.5 takes the priors of the a-priori Bayes-optimal attempt
    z*, e.g. max(p, 1 - p) per binary label, as `risk_block` does) and n * delta to the expectation (each
    target's success probability is at most beta_i + delta, [BWC] Corollary 3.4 with n = 1, summed). method "auto": exact up to
    EXACT_MAX_ROWS rows, saddlepoint beyond; "exact" / "saddlepoint" force one.
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
    bound of Theorem 3.2/3.5), by root finding (the tail increases with eps). None when even eps = 0 exceeds
    it (the prior alone is already that risky)."""
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


# ------------------------------------------------------------------------------------------ the prior histogram


@dataclass(frozen=True, eq=False)
class PriorHistogram:
    """Counts of the reference's probabilities in fixed logit buckets: claim-free, exact under merging.

    Buckets: width 1/32 in logit from -16 to 16 (1024 buckets, 0 = logit 0 is an edge), plus one bucket below
    (p < 1.1e-7) and one above. A bucket stands for its logit midpoint (under/overflow: their finite edge); the
    error against exact per-row priors is below 0.1% relative for every figure (tests/test_risk.py).
    ``kind``: "class1" (binary: the click probability) or "top-class" (k > 2: the largest class probability).
    """

    counts: np.ndarray  # int64, (BUCKETS,)
    kind: str = "class1"

    LOW = -16.0
    WIDTH = 1.0 / 32.0
    INTERIOR = 1024
    BUCKETS = INTERIOR + 2

    @classmethod
    def empty(cls, kind: str = "class1") -> PriorHistogram:
        return cls(np.zeros(cls.BUCKETS, dtype=np.int64), kind)

    @classmethod
    def bucket_of(cls, p) -> np.ndarray:
        """Bucket index of each probability from its logit (0 underflow, 1..1024 interior, 1025 overflow; NaN ->
        overflow). Elementwise, so the counts are the same however the rows are batched. Computed in float32
        (3x faster; a probability within ~1e-6 relative of a bucket edge may land on the other side of it than
        in exact arithmetic, the same way in every batch and runner)."""
        x = np.asarray(p, dtype=np.float32).reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            position = np.float32(1.0) - x
            np.divide(x, position, out=position)
            np.log(position, out=position)
            position -= np.float32(cls.LOW)
            position *= np.float32(1.0 / cls.WIDTH)
            np.floor(position, out=position)
        np.nan_to_num(position, copy=False, nan=cls.INTERIOR, posinf=cls.INTERIOR, neginf=-1.0)
        np.clip(position, -1, cls.INTERIOR, out=position)
        return position.astype(np.int64) + 1

    @classmethod
    def from_probabilities(cls, p, kind: str = "class1") -> PriorHistogram:
        return cls(np.bincount(cls.bucket_of(p), minlength=cls.BUCKETS).astype(np.int64), kind)

    @classmethod
    def from_reference(cls, reference: np.ndarray) -> PriorHistogram:
        """From an n x k matrix of reference class probabilities (binary: class 1; k > 2: the top class)."""
        reference = np.asarray(reference, dtype=np.float64)
        if reference.ndim == 1:
            return cls.from_probabilities(reference)
        if reference.shape[1] == 2:
            return cls.from_probabilities(reference[:, 1])
        return cls.from_probabilities(reference.max(axis=1), kind="top-class")

    def merge(self, other: PriorHistogram) -> PriorHistogram:
        if other.kind != self.kind and other.total and self.total:
            raise ValueError(f"cannot merge prior histograms of kinds {self.kind!r} and {other.kind!r}")
        kind = self.kind if self.total else other.kind
        return PriorHistogram(self.counts + other.counts, kind)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @classmethod
    def midpoints(cls) -> np.ndarray:
        logits = cls.LOW + cls.WIDTH * (np.arange(cls.INTERIOR) + 0.5)
        return np.concatenate([[expit(cls.LOW)], expit(logits), [expit(-cls.LOW)]])

    def to_dict(self) -> dict:
        nz = np.flatnonzero(self.counts)
        return {"scheme": "logit[-16,16]/32", "kind": self.kind, "buckets": [int(i) for i in nz],
                "counts": [int(v) for v in self.counts[nz]]}

    @classmethod
    def from_dict(cls, data: dict | None) -> PriorHistogram | None:
        if not data or not data.get("buckets"):
            return None
        if data.get("scheme") != "logit[-16,16]/32":
            raise LabelDPInputError(f"prior histogram: unknown scheme {data.get('scheme')!r}")
        counts = np.zeros(cls.BUCKETS, dtype=np.int64)
        counts[np.asarray(data["buckets"], dtype=np.int64)] = np.asarray(data["counts"], dtype=np.int64)
        return cls(counts, str(data.get("kind", "class1")))

    def nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        """(representative probability, count) of the non-empty buckets."""
        nz = np.flatnonzero(self.counts)
        return self.midpoints()[nz], self.counts[nz]

    def quantile(self, q: float) -> float:
        """The q-quantile of the rows, interpolated linearly in logit inside the bucket that holds it (the
        under/overflow buckets give their finite edge)."""
        cum = np.cumsum(self.counts)
        target = q * cum[-1]
        index = min(int(np.searchsorted(cum, target, side="left")), self.BUCKETS - 1)
        if index == 0 or index == self.BUCKETS - 1:
            return float(self.midpoints()[index])
        before = cum[index - 1]
        fraction = (target - before) / self.counts[index]
        return float(expit(self.LOW + self.WIDTH * (index - 1 + fraction)))


# ------------------------------------------------------------------------------------------ the risk block


def risk_block(eps: float, delta: float, histogram: PriorHistogram | None, mu: float | None = None) -> dict:
    """The figures shown beside a claimed or demonstrated (eps, delta), from the day's priors.

    * posterior_ceiling_median / _p90: beta(eps, p) + (1 - beta) delta at the median / 90th-percentile
      reference click probability ([BWC] Thm 3.2/3.5, n = 1): how often a "this person clicked" guess can be
      right for such a row (the prior is the reference's probability).
    * high_prior_rows / high_prior_mean / high_prior_ceiling: the rows the reference puts at >= 10% (buckets
      whose midpoint is >= 10%, so to 1/32 in logit), their mean prior and their mean posterior ceiling (the
      conditional rate; the day's average hides it).
    * column_*: over the n audited rows, an attacker guessing every label (prior success q_i = max(p_i,
      1 - p_i), the a-priori Bayes-optimal attempt of [BWC] Theorem 3.5; any other attempt has a smaller
      prior success, hence is dominated too) gets S labels right. column_baseline = sum q_i (the reference's own
      expected score), column_t = ceil(baseline + 1% of the expected clicks), column_tail_bound = bound on
      P[S >= column_t], column_tail_prior = the same at eps = 0 (chance alone), column_expected = bound on E[S].
    * prior_buckets: the same conditional rate for every band of PRIOR_BUCKET_EDGES (rows, mean prior, mean
      posterior ceiling).
    * mia_advantage_bound ([ARD] Thm 4.9), aia_advantage_bound (binary label, uniform prior, [ARD] Eq. 6 /
      Sec. 8.1-8.2), reconstruction_bound: reconstructing "clicked" for a 90th-percentile row (kappa = p90):
      1 - f(kappa) with f the (eps, delta) trade-off ([BRD] Thm 2), and with ``mu`` (a Gaussian-DP audit) the
      Gaussian form Phi(Phi^-1(kappa) + mu) as reconstruction_bound_gdp.
    """
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    block: dict = {"epsilon": eps, "delta": delta,
                   "mia_advantage_bound": mia_advantage_bound(eps, delta),
                   "aia_advantage_bound": aia_advantage_bound(eps, 2, delta=delta)}
    if histogram is None or histogram.total == 0:
        block.update(rows=0, reconstruction_kappa=0.5,
                     reconstruction_bound=float(reconstruction_bound_dp(eps, delta, 0.5)))
        if mu is not None:
            block.update(mu=float(mu), reconstruction_bound_gdp=float(reconstruction_bound_gdp(mu, 0.5)))
        return block
    p, c = histogram.nonzero()
    n = int(c.sum())
    median, p90 = histogram.quantile(0.5), histogram.quantile(0.9)
    q = np.maximum(p, 1.0 - p)
    baseline = float(np.sum(c * q))
    positives = float(np.sum(c * p)) if histogram.kind == "class1" else float(np.sum(c * (1.0 - q)))
    t = min(n, max(1, math.ceil(baseline + COLUMN_FRACTION * positives - 1e-9)))
    col = column_bound(eps, q, t, delta=delta, counts=c)
    prior_tail = column_bound(0.0, q, t, counts=c).tail
    high = p >= HIGH_PRIOR
    high_rows = int(c[high].sum())
    block.update(
        rows=n, prior_kind=histogram.kind, prior_median=median, prior_p90=p90,
        posterior_ceiling_median=float(posterior_ceiling(eps, median, delta)),
        posterior_ceiling_p90=float(posterior_ceiling(eps, p90, delta)),
        high_prior_threshold=HIGH_PRIOR, high_prior_rows=high_rows,
        high_prior_mean=float(np.sum(c[high] * p[high]) / high_rows) if high_rows else None,
        high_prior_ceiling=(float(np.sum(c[high] * posterior_ceiling(eps, p[high], delta)) / high_rows)
                            if high_rows else None),
        expected_positives=positives, column_baseline=baseline, column_t=int(t),
        column_tail_bound=col.tail, column_tail_prior=float(prior_tail), column_expected=col.expected,
        column_method=col.method, reconstruction_kappa=p90,
        reconstruction_bound=float(reconstruction_bound_dp(eps, delta, p90)),
        prior_buckets=_prior_buckets(eps, delta, p, c),
    )
    if mu is not None:
        block.update(mu=float(mu), reconstruction_bound_gdp=float(reconstruction_bound_gdp(mu, p90)))
    return block


def _prior_buckets(eps: float, delta: float, p: np.ndarray, c: np.ndarray) -> list[dict]:
    """Conditional rates: per band of reference click probability (PRIOR_BUCKET_EDGES, by the histogram's bucket
    midpoints), the rows, their mean prior and their mean posterior ceiling ([BWC] Thm 3.2/3.5, n = 1)."""
    ceilings = np.asarray(posterior_ceiling(eps, p, delta), dtype=np.float64).reshape(-1)
    out = []
    for lo, hi in itertools.pairwise(PRIOR_BUCKET_EDGES):
        inside = (p >= lo) & ((p < hi) if hi < 1.0 else (p <= hi))
        rows = int(c[inside].sum())
        out.append({"low": lo, "high": hi, "rows": rows,
                    "mean_prior": float(np.sum(c[inside] * p[inside]) / rows) if rows else None,
                    "mean_ceiling": float(np.sum(c[inside] * ceilings[inside]) / rows) if rows else None})
    return out


def risk_assessment(result: dict, claimed_epsilon: float) -> dict:
    """{"claimed": block, "demonstrated": block, "headline": sentence} for an audit result (AuditResult.to_dict()
    or the object) judged against ``claimed_epsilon``; both at the audited delta. The demonstrated block uses
    the valid epsilon_lower_bound (None when the result is optimistic); for method fdp its mu is the Gaussian-DP
    parameter the audit certified (mu_for_epsilon of the bound, auditing.gaussian_dp), for the claim the tightest
    mu consistent with (eps, delta) (the same inverse; none at delta = 0)."""
    data = result if isinstance(result, dict) else result.to_dict()
    claimed = check_epsilon(claimed_epsilon, "claimed epsilon")
    delta = float(data.get("delta", 0.0))
    histogram = PriorHistogram.from_dict(data.get("prior_histogram"))
    mu_claim = mu_for_epsilon(claimed, delta) if delta > 0.0 and not math.isinf(claimed) else None
    out = {"claimed": risk_block(claimed, delta, histogram, mu=mu_claim), "demonstrated": None}
    eps_lb = data.get("epsilon_lower_bound")
    if eps_lb is not None and not data.get("optimistic", False) and math.isfinite(float(eps_lb)):
        eps_lb = max(0.0, float(eps_lb))
        mu_lb = mu_for_epsilon(eps_lb, delta) if data.get("method") == "fdp" and delta > 0.0 else None
        out["demonstrated"] = risk_block(eps_lb, delta, histogram, mu=mu_lb)
    out["headline"] = headline(out)
    return out


def _pct(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{100.0 * value:.3g}%" if value < 0.9995 else "100%"


def headline(assessment: dict) -> str:
    """One sentence: what the claim allows and what the bound demonstrates, in attack-success terms."""
    claimed, shown = assessment["claimed"], assessment.get("demonstrated")

    def ceiling(block: dict) -> str:
        if block.get("rows"):
            return (f"a 'clicked' guess on a row the reference puts at {_pct(block['prior_p90'])} can be right "
                    f"up to {_pct(block['posterior_ceiling_p90'])} of the time")
        return f"membership inference advantage up to {_pct(block['mia_advantage_bound'])}"

    text = f"The claimed eps={claimed['epsilon']:.4g} allows: {ceiling(claimed)}"
    if shown is None:
        return text + "; the audit demonstrates nothing (no valid lower bound)."
    if shown["epsilon"] == 0.0:
        return text + "; the audit demonstrates no leakage beyond the prior (eps_lb = 0)."
    return text + f"; the measured eps_lb={shown['epsilon']:.4g} demonstrates: {ceiling(shown)}."


def risk_columns(assessment: dict | None) -> dict:
    """The scalar figures as flat warehouse / JSON columns: risk_<figure> for the claim and
    risk_lb_<figure> for the demonstrated bound (None where not computed)."""
    out = {}
    for prefix, key in (("risk_", "claimed"), ("risk_lb_", "demonstrated")):
        block = (assessment or {}).get(key) or {}
        for name in RISK_SCALARS:
            value = block.get(name)
            out[prefix + name] = None if value is None else float(value)
    out["risk_headline"] = (assessment or {}).get("headline")
    return out


RISK_SCALARS = ("posterior_ceiling_median", "posterior_ceiling_p90", "high_prior_ceiling", "column_tail_bound",
                "column_expected", "mia_advantage_bound", "aia_advantage_bound", "reconstruction_bound")
