"""Binomial epsilon lower bounds for the observational game (paper Appendix 10, Theorems 16 and 17, as
re-derived in docs/soundness.md).

Hypothesis: the model is (eps, delta)-label-DP in the replacement sense, and the reference's label law D' is
within a likelihood ratio e^kappa of the true one D on every audited row: |log D'(y|x) - log D(y|x)| <= kappa.
Then each row's two views in the game (b = 0: trained on the shown label; b = 1: the shown label is the
counterfactual) are (eps + kappa, e^kappa delta)-indistinguishable (docs/soundness.md, Lemma 1), and the
number C of correct guesses among the attacker's c' non-abstaining guesses satisfies (Steinke, Nasr and
Jagielski 2023, Thm. 3.1, applied to those views; Thm. 17 of the paper is the case delta = 0)

    Pr[C >= c] <= Pr[Binomial(c', beta) >= c] + 2 m e^kappa delta alpha,
    beta = e^eps / (e^eps + e^-kappa) = sigmoid(eps + kappa),
    alpha = max_{1 <= j <= c} (Pr[B >= c - j] - Pr[B >= c]) / j,  B ~ Binomial(c', beta).

The paper's Thm. 16 writes m delta alpha (no factor 2) and states it without proof; the factor 2 of the
one-run theorem is kept here (conservative). The paper's TV parameter tau is not used: a total-variation bound
allows any likelihood ratio on a rare label (docs/soundness.md, counterexample), so it cannot give beta.

The sum runs over the c' guesses: an abstention is never a correct guess, so only guessed examples can add
to C. The claim "M is (eps, delta)-DP" is rejected at confidence 1 - gamma when the right-hand side is
<= gamma; the lower bound is the supremum of the rejected eps, and 0 when even eps = 0 is not rejected. With
delta = 0 the bound at kappa is exactly max(0, bound at 0 - kappa).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from auditing.bounds.params import check_confidence, check_counts, check_delta, check_kappa

# Windows for alpha are searched within this many standard deviations of the binomial mean; outside it every
# pmf value is below e^-72 of the mode's, which cannot change the maximum (see `_alpha`).
_ALPHA_WINDOW_SD = 12.0
# Upper end of the epsilon search. Doubles before it can matter; in double precision logit(beta) <= ~37.
_EPS_SEARCH_MAX = 100.0


def beta_from_epsilon(epsilon: float, kappa: float) -> float:
    """beta = e^eps / (e^eps + e^-kappa) = sigmoid(eps + kappa), computed without overflow."""
    return float(special.expit(epsilon + kappa))


def pure_epsilon_lower_bounds(correct, guesses, *, confidence: float = 0.95, kappa: float = 0.0) -> np.ndarray:
    """Theorem 17 (delta = 0), vectorized over count pairs; arguments must already be validated.

    The rejected set is {eps : beta(eps) < beta*} where beta* solves Pr[Binomial(c', beta*) >= c] = gamma,
    i.e. the Clopper-Pearson lower limit beta* = I^-1_gamma(c, c' - c + 1). Inverting beta(eps) gives
    eps_lb = logit(beta*) - kappa. Both beta* and 1 - beta* come from their own incomplete-beta inverse, so
    the logit stays accurate when beta* is within 1e-16 of 1 (large c = c').
    """
    c = np.asarray(correct, dtype=np.float64)
    g = np.asarray(guesses, dtype=np.float64)
    gamma = 1.0 - confidence
    out = np.zeros(np.broadcast(c, g).shape, dtype=np.float64)
    c, g = np.broadcast_arrays(c, g)
    ok = c > 0
    if not ok.any():
        return out
    cc, gg = c[ok], g[ok]
    log_beta = np.log(special.betaincinv(cc, gg - cc + 1.0, gamma))
    log_one_minus = np.log(special.betaincinv(gg - cc + 1.0, cc, 1.0 - gamma))
    out[ok] = np.maximum(0.0, log_beta - log_one_minus - kappa)
    return out


def _alpha(correct: int, guesses: int, beta: float) -> float:
    """alpha of Thm. 16: the largest average pmf of B ~ Binomial(c', beta) over windows [c - j, c - 1].

    With S(k) = Pr[k <= B <= c - 1], alpha = max_{0 <= k < c} S(k) / (c - k). Only pmf values within 12 sd
    of the mean are summed. Exactness: extending a window to the left past mean - 12 sd adds values below the
    window's average, which lowers it; values above mean + 12 sd are below e^-72 of the mode and windows
    made only of them average far less than the window starting at the mean. A margin of 1e-12 (larger than
    the dropped mass and the round-off of the sums) is added, so alpha can only be overstated (conservative).
    """
    c, n = correct, guesses
    if c <= 0:
        return 0.0
    mean = n * beta
    sd = math.sqrt(max(n * beta * (1.0 - beta), 0.0))
    lo = min(c - 1, max(0, math.floor(mean - _ALPHA_WINDOW_SD * sd) - 1))
    top = min(c - 1, max(lo, math.ceil(mean + _ALPHA_WINDOW_SD * sd) + 1))
    k = np.arange(lo, top + 1, dtype=np.float64)
    log_pmf = (
        special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)
        + special.xlogy(k, beta) + special.xlog1py(n - k, -beta)
    )
    pmf = np.exp(log_pmf)
    window_mass = np.cumsum(pmf[::-1])[::-1]  # S(k) for k in [lo, top], ignoring (top, c-1]
    averages = window_mass / (c - k)
    return float(averages.max()) + 1e-12


def _theorem16_excess(correct: int, guesses: int, m: int, epsilon: float, delta: float, gamma: float,
                      kappa: float):
    """Right-hand side of the delta > 0 bound (module docstring) minus gamma: <= 0 means eps is rejected."""
    beta = beta_from_epsilon(epsilon, kappa)
    tail = special.bdtrc(correct - 1.0, guesses, beta)
    return tail + _alpha(correct, guesses, beta) * 2.0 * m * math.exp(kappa) * delta - gamma


def binomial_rejects(
    correct: int, guesses: int, m: int, epsilon: float, *, delta: float = 0.0, confidence: float = 0.95,
    kappa: float = 0.0,
) -> bool:
    """Does the binomial test reject "M is (epsilon, delta)-label-DP" at this confidence and kappa?

    Raises LabelDPInputError unless 0 <= correct <= guesses <= m, m >= 1, confidence in (0, 1), delta in
    [0, 1) and kappa finite >= 0 (`auditing.bounds.params`).
    """
    c, g, m = check_counts(correct, guesses, m)
    confidence, delta, kappa = check_confidence(confidence), check_delta(delta), check_kappa(kappa)
    if c == 0:
        return False
    return _theorem16_excess(c, g, m, float(epsilon), delta, 1.0 - confidence, kappa) <= 0.0


def binomial_epsilon_lower_bound(
    correct: int, guesses: int, m: int, *, delta: float = 0.0, confidence: float = 0.95, kappa: float = 0.0
) -> float:
    """The largest eps rejected at kappa: closed form for delta = 0 (Thm. 17), root-finding for delta > 0.

    For delta > 0 the pure bound is an upper end of the search (the extra alpha*m*delta term only makes
    rejection harder), the root is bracketed and solved to 1e-7, and the value returned is one confirmed to
    be rejected (stepping down if round-off put the root on the accepted side), so it is never optimistic.
    With no evidence (c = 0, or even eps = 0 not rejected) the bound is 0. Raises LabelDPInputError for bad
    arguments, as `binomial_rejects`.
    """
    c, g, m = check_counts(correct, guesses, m)
    confidence, delta, kappa = check_confidence(confidence), check_delta(delta), check_kappa(kappa)
    if c == 0:
        return 0.0
    pure = float(pure_epsilon_lower_bounds(c, g, confidence=confidence, kappa=kappa))
    if delta == 0.0 or pure == 0.0:
        return pure
    gamma = 1.0 - confidence

    def excess(eps: float) -> float:
        return _theorem16_excess(c, g, m, eps, delta, gamma, kappa)

    if excess(0.0) > 0.0:
        return 0.0
    hi = pure
    # The pure bound is the exact root without the delta term, so excess(hi) >= 0 up to round-off; nudge up.
    while excess(hi) <= 0.0 and hi < _EPS_SEARCH_MAX:
        hi = hi * 1.01 + 1e-6
    from scipy import optimize  # only delta > 0 needs it (about 0.2 s to import)

    root = optimize.brentq(excess, 0.0, hi, xtol=1e-7, rtol=1e-12)
    step = 1e-7
    while root > 0.0 and excess(root) > 0.0:
        root = max(0.0, root - step)
        step *= 2.0
    return float(root)
