"""Attack-success ceilings for ONE target implied by a DP guarantee: posterior, advantages, reconstruction.

Pure numpy/scipy. Each function takes the guarantee (eps, and delta where the source gives a delta form) and
the adversary's prior, and returns the most an attacker can achieve against ANY mechanism with that
guarantee. The sources ([BWC], [ARD], [BRD]) are listed in `auditing.risk.figures`. Bad input raises
`LabelDPInputError` naming the argument and the count of bad values.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, logit, ndtr, ndtri

from auditing.bounds.params import check_delta
from labeldp.errors import LabelDPInputError

__all__ = [
    "aia_advantage_bound",
    "check_classes",
    "check_epsilon",
    "check_priors",
    "eps_protect_advantage",
    "generalized_advantage",
    "mia_advantage_bound",
    "posterior_ceiling",
    "reconstruction_bound_dp",
    "reconstruction_bound_gdp",
]


# ------------------------------------------------------------------------------------------ validation


def check_epsilon(eps, name: str = "epsilon") -> float:
    """eps as a float >= 0 (inf allowed: a non-private model); a non-number, NaN or a negative raises
    LabelDPInputError naming ``name``."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be a number >= 0; got {eps!r}") from None
    if not (value >= 0.0):
        raise LabelDPInputError(f"{name} must be >= 0 (1 bad value); got {eps!r}")
    return value


def check_priors(priors, name: str = "priors") -> np.ndarray:
    """``priors`` as a non-empty 1-D float array with every value in the open interval (0, 1); anything else
    raises LabelDPInputError naming ``name`` and the count of bad values."""
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
    """``k`` as an int >= 2 (a whole float is accepted; bools are not); else LabelDPInputError naming ``name``."""
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

    Args:
        eps: the guarantee, >= 0 (scalar or array).
        prior: the attempt's prior success, each in (0, 1); None to use ``classes``.
        delta: in [0, 1).
        classes: k >= 2, used when ``prior`` is None (uniform prior 1/k).
    Returns:
        A float for scalar input, else an array shaped like ``prior`` (broadcast with ``eps``).
    Raises:
        LabelDPInputError: a negative or NaN eps, a prior outside (0, 1), delta outside [0, 1), or neither
        ``prior`` nor ``classes`` given.
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
    ([BWC] Section 5.3 from its ref. [11]; the same as [BRD] Eq. 4, whose prior success is ``prior`` here)."""
    posterior = np.asarray(posterior, dtype=np.float64)
    prior = np.asarray(prior, dtype=np.float64)
    out = (posterior - prior) / (1.0 - prior)
    return out if np.ndim(out) else float(out)


def eps_protect_advantage(prior, max_advantage: float, delta: float = 0.0) -> float:
    """The largest eps whose posterior ceiling keeps the generalised advantage <= ``max_advantage`` for one
    attempt with prior success ``prior`` ([BWC] Section 5.3, Figure 2(b), which uses 0.05).

    Closed form from beta + (1 - beta) delta = p + a (1 - p): beta* = (p + a(1 - p) - delta) / (1 - delta) and
    eps = logit(beta*) - logit(p).

    Returns:
        The eps (inf when any eps keeps the advantage below ``max_advantage``; 0.0 when even eps = 0 exceeds
        it, i.e. delta is too large).
    Raises:
        LabelDPInputError: ``prior`` outside (0, 1), ``max_advantage`` outside (0, 1), delta outside [0, 1).
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


def aia_advantage_bound(eps, classes: int = 2, prior_max: float | None = None, prior_min: float | None = None,
                        delta: float = 0.0) -> float | None:
    """The attribute-inference advantage (= (0, gamma)-U-ReRo, [ARD] Proposition 8.2) of any attack.

    Uniform prior over k = ``classes`` values ([ARD] Eq. 6, Section 8.2, Table 2):
        min{(e^eps - 1)/k, (k - 1)/k * tanh(eps/2)}.
    Informed prior ([ARD] Theorem 7.3 with Theorem 7.2): with prior_max = the largest prior probability of a
    value and prior_min = the smallest,
        min{prior_max (e^eps - 1), prior_max (k - 1) tanh(eps/2) + prior_max - prior_min, tanh(eps/2)}.
    delta > 0: [ARD] states these for pure eps. For k = 2 uniform the binary attribute is the strong membership
    experiment (Section 8.1: (0, gamma/2)-U-ReRo <=> Adv^s_MIA <= gamma), so the (eps, delta) bound is half of
    Theorem 4.9: (e^eps - 1 + 2 delta) / (2 (e^eps + 1)).

    Returns:
        The advantage bound, or None when delta > 0 and (k > 2 or an informed prior): no bound is stated then.
    Raises:
        LabelDPInputError: bad eps, classes or delta, or prior_max / prior_min not satisfying
        prior_min <= 1/classes <= prior_max.
    """
    eps = check_epsilon(eps)
    k = check_classes(classes)
    delta = check_delta(delta)
    informed = prior_max is not None or prior_min is not None
    if informed:
        prior_max = float(check_priors([1.0 / k if prior_max is None else prior_max], "prior_max")[0])
        prior_min = float(check_priors([prior_max if prior_min is None else prior_min], "prior_min")[0])
        if prior_min > prior_max or prior_max < 1.0 / k - 1e-12 or prior_min > 1.0 / k + 1e-12:
            raise LabelDPInputError(
                f"prior_min <= 1/classes <= prior_max must hold for a prior over {k} values; got "
                f"prior_max={prior_max!r}, prior_min={prior_min!r}")
    if delta > 0.0:
        if k == 2 and not informed:
            return 0.5 * mia_advantage_bound(eps, delta)
        return None
    if math.isinf(eps):
        return float(1.0 - (prior_min if informed else 1.0 / k)) if informed else (k - 1) / k
    growth = math.expm1(min(eps, 700.0))  # e^700 ~ 1e304: the min{} below is decided long before
    half = math.tanh(eps / 2.0)
    if not informed:
        return float(min(growth / k, (k - 1) / k * half))
    return float(min(prior_max * growth, prior_max * (k - 1) * half + prior_max - prior_min, half))


# ------------------------------------------------------------------------------------------ reconstruction


def reconstruction_bound_gdp(mu, prior):
    """Phi(Phi^-1(prior) + mu): the most a reconstruction attack with prior success ``prior`` achieves against a
    mu-Gaussian-DP mechanism ([BRD] Theorem 2 with Remark 3: blow-up = 1 - trade-off, and the Gaussian
    trade-off f_mu(x) = Phi(Phi^-1(1 - x) - mu)). Vectorised over prior."""
    mu = float(mu)
    if not (mu >= 0.0):
        raise LabelDPInputError(f"mu (the Gaussian-DP parameter) must be >= 0 (1 bad value); got {mu!r}")
    p = check_priors(prior, "prior").reshape(np.shape(prior))
    out = np.ones_like(p) if math.isinf(mu) else ndtr(ndtri(p) + mu)
    return out if np.ndim(out) else float(out)


def reconstruction_bound_dp(eps, delta, prior):
    """1 - f_{eps,delta}(prior) = min{1, e^eps prior + delta, 1 - e^-eps (1 - delta - prior)}: the blow-up of
    the (eps, delta)-DP trade-off function f_{eps,delta}(a) = max{0, 1 - delta - e^eps a, e^-eps (1 - delta - a)}
    ([BRD] Theorem 2 + Remark 3; f_{eps,delta} as in [BWC] Section 4.4, footnote 4). Valid for every
    (eps, delta)-DP mechanism; vectorised over prior."""
    eps = check_epsilon(eps)
    delta = check_delta(delta)
    p = check_priors(prior, "prior").reshape(np.shape(prior))
    if math.isinf(eps):
        out = np.ones_like(p)
    else:
        out = np.minimum(1.0, np.minimum(math.exp(min(eps, 700.0)) * p + delta,
                                         1.0 - math.exp(-eps) * (1.0 - delta - p)))
    return out if np.ndim(out) else float(out)
