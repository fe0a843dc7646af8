"""Epsilon lower bounds from f-DP auditing with the Gaussian family (paper Sec. 9, Definition 9, Algorithm 3).

Given the counts of the observational game (paper Alg. 2) -- c correct guesses out of c' guesses on m examples --
Algorithm 3 decides for one trade-off function f whether "M is f-DP" is rejected at level gamma = 1 - confidence
(Theorem 10: if it is rejected, Pr[C >= c] <= gamma under f-DP). With counterfactual labels drawn from a proxy
distribution at total-variation distance <= tau, Theorem 10 runs it on g(s) = f(min(1, s + tau)) (Lemma 14).

Definition 9 audits a family F of trade-off functions; here F = {f_mu} is the Gaussian family (Dong, Roth and Su
2022), ordered by mu (a larger mu is a weaker guarantee). Rejection is monotone in mu: every r[i], h[i] of the
recursion is non-increasing in mu (fbar^-1 is, and Lemma 14's unrolled form (6) writes r[i] as a non-negative
combination of h's), so the rejected set is an interval [0, mu*). The reported figure is epsilon(delta) of
Definition 9 step 3 for f_{mu*}: the eps at which the accepted Gaussian closest to the rejected ones stops being
(eps, delta)-DP, converted with Dong et al. Corollary 2.13 (`auditing.gaussian_dp`).

Conservative by construction: mu* is bracketed by bisection on Algorithm 3's own decision, with the lower end
always a mu that Algorithm 3 rejected and the upper end one it did not; the reported value is the lower end.
There is no grid: the upper end is doubled until Algorithm 3 stops rejecting.

No evidence gives exactly 0: c = 0 or c' = 0 (nothing to test; Algorithm 3's final test r[0] + h[0] >= c'/m is
then vacuous and is not applied), tau >= 1 (g = 0 carries no information), and whenever mu -> 0 (f(x) = 1 - x,
perfect privacy) is not rejected; in particular for every c <= c'/2: at mu = 0, h[c-1] = max(0, gamma c/m - tau)
<= gamma (c' - c)/m = h[c], so the run falls (or stays put when equal) and r[0] + h[0] <= gamma c'/m < c'/m; in
floating point an ulp of difference at c = c'/2 moves r[0] + h[0] by ulps, nowhere near c'/m (tested).

delta = 0 is refused for the epsilon functions: no Gaussian trade-off function with mu > 0 is (eps, 0)-DP for a
finite eps, so a rejected mu > 0 says nothing about pure DP; use the binomial bound for pure eps.
"""

from __future__ import annotations

import math

from auditing.errors import LabelDPInputError
from auditing.fdp_recursion import rejects as _rejects
from auditing.gaussian_dp import epsilon_for_mu, mu_for_epsilon
from auditing.params import check_confidence, check_counts, check_delta, check_tau

__all__ = ["fdp_epsilon_lower_bound", "fdp_mu_lower_bound", "fdp_rejects"]

EPSILON_TOLERANCE = 1e-4  # absolute width of the final bracket in eps (the reported end is the lower one)
MU_RELATIVE_TOLERANCE = 1e-10  # relative width of the final bracket in mu for fdp_mu_lower_bound
# A safety stop, not a cap: Algorithm 3 stops rejecting by mu ~ 40 for any counts (Phi(Phi^-1(gamma) - mu)
# underflows to 0 there, which makes the run a fixed point below c'/m), so this is never reached.
_MU_SAFETY_LIMIT = 1e6


def fdp_rejects(
    correct: int,
    guesses: int,
    m: int,
    epsilon: float,
    *,
    delta: float,
    confidence: float = 0.95,
    tau: float = 0.0,
) -> bool:
    """Does Algorithm 3 (Theorem 10) reject "M is f_mu-DP" for mu = mu_for_epsilon(epsilon, delta)?

    f_mu is the weakest Gaussian trade-off function that is (epsilon, delta)-DP. True means c correct guesses
    out of c' would have probability <= 1 - confidence under it, so the epsilon lower bound at these counts is
    at least (about) epsilon; False means the bound at these counts is <= epsilon (up to the ~1e-12 accuracy of
    the eps <-> mu conversion), which lets a caller prune a sweep. delta must be > 0 (see module docstring).
    """
    c, cp, n = check_counts(correct, guesses, m)
    delta = _check_positive_delta(delta)
    gamma = 1.0 - check_confidence(confidence)
    tau = check_tau(tau)
    epsilon = float(epsilon)
    if not (epsilon >= 0.0):
        raise LabelDPInputError(f"epsilon must be >= 0; got {epsilon!r}")
    if c == 0 or cp == 0 or tau >= 1.0:
        return False
    mu = mu_for_epsilon(epsilon, delta)
    if math.isinf(mu):
        return False
    return bool(_rejects(c, cp, n, gamma, mu, tau))


def fdp_mu_lower_bound(
    correct: int,
    guesses: int,
    m: int,
    *,
    confidence: float = 0.95,
    tau: float = 0.0,
) -> float:
    """The largest mu found rejected by Algorithm 3 (Theorem 10) -- the sup of rejected mu, from below.

    Bisection on Algorithm 3's decision to a bracket of relative width 1e-10; the lower (rejected) end is
    returned. 0 when mu -> 0 (f(x) = 1 - x) is not rejected, i.e. when the counts carry no evidence.
    """
    c, cp, n = check_counts(correct, guesses, m)
    gamma = 1.0 - check_confidence(confidence)
    tau = check_tau(tau)

    def narrow_enough(lo: float, hi: float) -> bool:
        # Relative width, with a floor so that a bracket [0, hi] (only mu = 0 rejected) also ends.
        return hi - lo <= MU_RELATIVE_TOLERANCE * max(hi, 1e-6)

    return _rejected_mu(c, cp, n, gamma, tau, narrow_enough)


def fdp_epsilon_lower_bound(
    correct: int,
    guesses: int,
    m: int,
    *,
    delta: float,
    confidence: float = 0.95,
    tau: float = 0.0,
) -> float:
    """Definition 9's epsilon(delta) for the Gaussian family, from Algorithm 3 with shift tau (Theorem 10).

    epsilon_for_mu(mu_lo, delta) (Dong et al. 2022, Corollary 2.13) where mu_lo is the largest mu confirmed
    rejected, found by bisection until eps(mu_hi) - eps(mu_lo) <= 1e-4 with mu_hi not rejected; the bracket
    starts at mu = 1 and doubles until Algorithm 3 stops rejecting, so no grid caps the result. Exactly 0 with
    no evidence (c = 0, c' = 0, tau >= 1, c <= c'/2, or mu -> 0 not rejected). delta must be in (0, 1).
    """
    c, cp, n = check_counts(correct, guesses, m)
    delta = _check_positive_delta(delta)
    gamma = 1.0 - check_confidence(confidence)
    tau = check_tau(tau)
    # Cache eps at bracket ends: each conversion is a small root solve, the recursion is often cheaper.
    eps_cache: dict[float, float] = {}

    def eps_of(mu: float) -> float:
        if mu not in eps_cache:
            eps_cache[mu] = epsilon_for_mu(mu, delta)
        return eps_cache[mu]

    def narrow_enough(lo: float, hi: float) -> bool:
        # Cheap test first: a relative mu width of 1e-8 is far below 1e-4 in eps unless eps is huge.
        if hi - lo > 1e-8 * hi and hi - lo > 1e-3:
            return False
        return eps_of(hi) - eps_of(lo) <= EPSILON_TOLERANCE

    mu_lo = _rejected_mu(c, cp, n, gamma, tau, narrow_enough)
    if mu_lo == 0.0:
        return 0.0
    return eps_of(mu_lo)


def _rejected_mu(c: int, cp: int, m: int, gamma: float, tau: float, narrow_enough) -> float:
    """Bisection for the edge of the rejected set [0, mu*) of Algorithm 3; returns the rejected end."""
    if c == 0 or cp == 0 or tau >= 1.0:
        return 0.0
    if not _rejects(c, cp, m, gamma, 0.0, tau):
        return 0.0  # not even perfect privacy (f(x) = 1 - x) is rejected: no evidence
    lo, hi = 0.0, 1.0
    while _rejects(c, cp, m, gamma, hi, tau):
        lo, hi = hi, 2.0 * hi
        if hi > _MU_SAFETY_LIMIT:  # pragma: no cover - unreachable, see _MU_SAFETY_LIMIT
            raise RuntimeError(f"Algorithm 3 rejects every mu up to {hi:g} at c={c}, c'={cp}, m={m}")
    # Invariant: lo is rejected (or lo = 0 with mu = 0 rejected), hi is not.
    while not narrow_enough(lo, hi):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:  # adjacent doubles: the bracket cannot shrink any further
            break
        if _rejects(c, cp, m, gamma, mid, tau):
            lo = mid
        else:
            hi = mid
    return lo


def _check_positive_delta(delta: float) -> float:
    delta = check_delta(delta)
    if delta == 0.0:
        raise LabelDPInputError(
            "delta must be in (0, 1) for the f-DP (Gaussian) bound: no Gaussian trade-off function with mu > 0 "
            "is (eps, 0)-DP for a finite eps, so delta = 0 certifies nothing; use the binomial bound for "
            f"pure eps; got {delta!r}"
        )
    return delta
