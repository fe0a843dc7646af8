"""Epsilon lower bounds from the paper's Algorithm 3 on the (eps, delta) trade-off curve (docs/fdp-curve.md).

Given the counts of the observational game (paper Alg. 2) -- c correct guesses out of c' guesses on m examples --
Algorithm 3 decides for one trade-off function f whether "M is f-DP" is rejected at level gamma = 1 - confidence
(Theorem 10 with tau = 0, i.e. Theorem 5: if it rejects, Pr[C >= c] <= gamma under f-DP). The rejecting branch
is r[0] + h[0] >= c'/m, the one the paper prints as "Return False"; docs/fdp-curve.md section 3 shows from the
proof of Theorem 10 why that branch (and ">=") is the sound one.

The decision-grade method audits the (eps, delta) curve itself,

    f_{eps,delta}(x) = max(0, 1 - delta - e^eps x, e^-eps (1 - delta - x)),

because (eps, delta)-DP is exactly f_{eps,delta}-DP (Dong, Roth and Su 2022, Prop. 2.5; the paper's
Proposition 8). "Algorithm 3 rejects f_{eps,delta}" therefore rejects "M is (eps, delta)-DP" for EVERY mechanism,
Gaussian or not. (The previous Gaussian reading, "not mu*-GDP, hence not (eps(mu*), delta)-DP", is invalid for
randomized-response-like mechanisms: docs/fdp-curve.md section 7 gives the counterexample.)

Monotone in eps. f_{eps,delta} is pointwise non-increasing in eps, so fbar = 1 - f is pointwise non-decreasing
and its generalized inverse fbar^-1 pointwise non-increasing. Unrolling the recursion,
r[i] = r[c] - (c-1)/(c'-c+1) h[c] + i/(c'-i) h[i] + sum_{z=i+1}^{c-1} (z/(c'-z) - (z-1)/(c'-z+1)) h[z], a fixed
term plus a non-negative combination of h[i..c-1] (Lemma 14, Eq. (6)); by induction from i = c-1 down every h[i]
= fbar^-1(r[i+1]) and r[i] is non-increasing in eps, and so is r[0] + h[0]. The rejected set of eps is an
interval starting at 0, and the bound is its edge, found by bisection on Algorithm 3's own decision.

Robustness kappa (docs/soundness.md): when |log D'(y|x) - log D(y|x)| <= kappa on every audited row, each row's
two views in the game are (eps + kappa, e^kappa delta)-indistinguishable under (eps, delta)-DP, so the claim
(eps, delta) is tested by Algorithm 3 on f_{eps + kappa, e^kappa delta}. When e^kappa delta >= 1 that curve is
0 (it promises nothing) and nothing is rejected. With delta = 0 the bound at kappa is max(0, bound at 0 - kappa)
(up to the bisection tolerance).

Conservative by construction: the bracket's lower end is always an eps that Algorithm 3 rejected (or 0 when only
eps = 0 is), the upper end one it did not; the reported value is the lower end, after the bracket is narrowed to
EPSILON_TOLERANCE. There is no grid: the upper end is doubled until Algorithm 3 stops rejecting (it always does
by eps ~ 745, where e^-eps underflows and fbar^-1 = 0 on [0, 1), unless gamma rounds to 1, which is refused).

No evidence gives exactly 0: c = 0 or c' = 0 (nothing to test), and whenever eps = 0 is not rejected; in
particular for every c <= c'/2 at kappa = 0: at eps = 0, fbar^-1(r) = max(0, r - delta) and
h[c-1] = max(0, gamma c/m - delta) <= gamma (c' - c)/m = h[c], so the run falls (or stays put) and
r[0] + h[0] <= gamma c'/m < c'/m.

The Gaussian mu reading is kept as `fdp_mu_lower_bound`, a lower bound on mu only ("the model is not mu-GDP for
any mu below this"). It is never converted to an epsilon here.
"""

from __future__ import annotations

import math

from auditing.bounds.fdp_recursion import curve_rejects as _curve_rejects
from auditing.bounds.fdp_recursion import gaussian_rejects as _gaussian_rejects
from auditing.bounds.params import check_confidence, check_counts, check_delta, check_kappa
from labeldp.errors import LabelDPInputError

__all__ = ["EPSILON_TOLERANCE", "MU_RELATIVE_TOLERANCE", "fdp_epsilon_lower_bound", "fdp_mu_lower_bound",
           "fdp_rejects"]

EPSILON_TOLERANCE = 1e-4  # width of the final bracket in eps (the reported end is the rejected, lower one)
MU_RELATIVE_TOLERANCE = 1e-10  # relative width of the final bracket in mu for fdp_mu_lower_bound
# A safety stop for the doubling of the upper end, not a cap. For eps >= 746 math.exp(eps) = inf and
# math.exp(-eps) = 0, so the run is the one at eps = inf, which is checked not to reject before the search
# starts; the doubling therefore ends by 1024.
_EPSILON_SAFETY_LIMIT = 4096.0
# Same for mu: Algorithm 3 stops rejecting by mu ~ 40 for any counts (Phi(Phi^-1(gamma) - mu) underflows to 0
# there, which makes the run a fixed point below c'/m).
_MU_SAFETY_LIMIT = 1e6


def fdp_rejects(
    correct: int,
    guesses: int,
    m: int,
    epsilon: float,
    *,
    delta: float,
    confidence: float = 0.95,
    kappa: float = 0.0,
) -> bool:
    """Does Algorithm 3 on f_{epsilon + kappa, e^kappa delta} reject "M is (epsilon, delta)-DP"?

    True means c correct guesses out of c' would have probability <= 1 - confidence under the claim, so the
    epsilon lower bound at these counts is at least (about) epsilon; False means the bound at these counts is
    below epsilon (rejection is monotone in epsilon), which lets a caller prune a sweep. epsilon may be +inf
    (never rejected); delta = 0 is allowed.

    Raises LabelDPInputError unless 0 <= correct <= guesses <= m, m >= 1, epsilon >= 0, delta in [0, 1),
    confidence in (0, 1) and kappa finite >= 0.
    """
    c, cp, n = check_counts(correct, guesses, m)
    delta = check_delta(delta)
    gamma = _gamma(confidence)
    kappa = check_kappa(kappa)
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"epsilon must be a number >= 0; got {epsilon!r}") from None
    if not (epsilon >= 0.0):
        raise LabelDPInputError(f"epsilon must be >= 0; got {epsilon!r}")
    tested_delta = _shifted_delta(delta, kappa)
    if c == 0 or cp == 0 or tested_delta >= 1.0:
        return False
    return bool(_curve_rejects(c, cp, n, gamma, epsilon + kappa, tested_delta))


def fdp_epsilon_lower_bound(
    correct: int,
    guesses: int,
    m: int,
    *,
    delta: float,
    confidence: float = 0.95,
    kappa: float = 0.0,
) -> float:
    """The largest eps whose claim (eps, delta) Algorithm 3 rejects at robustness kappa, from below.

    Bisection on fdp_rejects' decision until the bracket is <= EPSILON_TOLERANCE wide; the lower (rejected) end
    is returned. The bracket starts at [0, 1] and its upper end doubles while it is still rejected, so no grid
    caps the result. Exactly 0 with no evidence (c = 0, c' = 0, e^kappa delta >= 1, or eps = 0 not rejected,
    which includes every c <= c'/2). delta = 0 is allowed. Raises LabelDPInputError for bad arguments, as
    `fdp_rejects`.
    """
    c, cp, n = check_counts(correct, guesses, m)
    delta = check_delta(delta)
    gamma = _gamma(confidence)
    kappa = check_kappa(kappa)
    tested_delta = _shifted_delta(delta, kappa)
    if c == 0 or cp == 0 or tested_delta >= 1.0:
        return 0.0

    def rejected(eps: float) -> bool:
        return bool(_curve_rejects(c, cp, n, gamma, eps + kappa, tested_delta))

    if not rejected(0.0):
        return 0.0
    if rejected(math.inf):
        # Only when gamma is within rounding of 1: the very first state of the run already reaches c'/m.
        raise LabelDPInputError(
            f"confidence is so close to 0 that 1 - confidence = {gamma!r} makes Algorithm 3 reject every eps at "
            f"c={c}, c'={cp}, m={n}; got confidence {confidence!r}")
    lo, hi = 0.0, 1.0
    while rejected(hi):
        lo, hi = hi, 2.0 * hi
        if hi > _EPSILON_SAFETY_LIMIT:  # pragma: no cover - unreachable, see _EPSILON_SAFETY_LIMIT
            raise RuntimeError(f"Algorithm 3 rejects every eps up to {hi:g} at c={c}, c'={cp}, m={n}")
    # Invariant: lo is rejected, hi is not.
    while hi - lo > EPSILON_TOLERANCE:
        mid = 0.5 * (lo + hi)
        if rejected(mid):
            lo = mid
        else:
            hi = mid
    return lo


def fdp_mu_lower_bound(
    correct: int,
    guesses: int,
    m: int,
    *,
    confidence: float = 0.95,
) -> float:
    """A lower bound on mu: the model is not mu-GDP for any mu below this (Algorithm 3 on the Gaussian f_mu).

    Only a statement about the Gaussian family; it is NOT a bound on (eps, delta): converting it with the
    Gaussian-DP curve eps(mu, delta) is invalid for non-Gaussian mechanisms (docs/fdp-curve.md section 7).
    Bisection on Algorithm 3's decision (rejection is monotone in mu: fbar^-1 = Phi(Phi^-1(r) - mu) is
    non-increasing in mu) to a bracket of relative width 1e-10; the lower (rejected) end is returned. 0 when
    mu = 0 (f(x) = 1 - x, perfect privacy) is not rejected, i.e. when the counts carry no evidence.
    """
    c, cp, n = check_counts(correct, guesses, m)
    gamma = _gamma(confidence)
    if c == 0 or cp == 0:
        return 0.0
    if not _gaussian_rejects(c, cp, n, gamma, 0.0):
        return 0.0  # not even perfect privacy (f(x) = 1 - x) is rejected: no evidence
    lo, hi = 0.0, 1.0
    while _gaussian_rejects(c, cp, n, gamma, hi):
        lo, hi = hi, 2.0 * hi
        if hi > _MU_SAFETY_LIMIT:
            raise LabelDPInputError(
                f"Algorithm 3 rejects every mu up to {hi:g} at c={c}, c'={cp}, m={n}: confidence {confidence!r} "
                "is too close to 0")
    # Invariant: lo is rejected (or lo = 0 with mu = 0 rejected), hi is not. The floor on the width lets a
    # bracket [0, hi] (only mu = 0 rejected) end too.
    while hi - lo > MU_RELATIVE_TOLERANCE * max(hi, 1e-6):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:  # pragma: no cover - adjacent doubles, the bracket cannot shrink
            break
        if _gaussian_rejects(c, cp, n, gamma, mid):
            lo = mid
        else:
            hi = mid
    return lo


def _gamma(confidence: float) -> float:
    return 1.0 - check_confidence(confidence)


def _shifted_delta(delta: float, kappa: float) -> float:
    """e^kappa delta, the delta of the curve tested at robustness kappa (>= 1 means the curve is 0)."""
    if delta == 0.0:
        return 0.0  # not 0 * e^kappa: e^kappa may overflow to inf
    try:
        return delta * math.exp(kappa)
    except OverflowError:
        return math.inf
