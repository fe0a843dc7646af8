"""Tests of "the model is eps-label-DP" that need no kappa: audited guesses against check guesses whose accuracy is
what the reference's misfit alone buys (docs/soundness.md section 8).

Under the null, with the strata and composition matching of `auditing.verdict.capacity_check`, the audited
correct count C_B of n_B guesses is dominated by Binomial(n_B, f_eps(a + slack)) and the check's C_H of n_H
guesses is a sum of independent Bernoullis with mean accuracy a, for an unknown a:

    f_eps(a) = e^eps a / (e^eps a + 1 - a) = sigmoid(eps + logit a),

``slack`` being the composition mismatch the rounding of the matched counts leaves (at most a few thousandths).
The test of that null is an unconditional exact test (Barnard's manner: the supremum over a of the probability of
a rejection region monotone in both counts):

- `check_p_value`: its p-value at one eps;
- `exact_epsilon_lower`: the largest eps it rejects at level gamma, ``epsilon_check``;
- `calibrated_e_value`: an e-value from its p-value (section 10: multiplied over a family's nights it gives an
  anytime-valid confirmation that needs no kappa).

Pure numpy/scipy.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from labeldp.errors import LabelDPInputError

# Numerical settings of the supremum / infimum over the nuisance accuracy a.
_NUISANCE_GRID = np.linspace(-15.0, 15.0, 121)  # logit(a), then refined around the extreme value
_EPS_HIGH = 20.0  # bisection's upper end for epsilon_check
_EPS_TOLERANCE = 1e-5  # epsilon_check is reported to this precision, rounded down
_SUPPORT_SD = 12.0  # C_H values beyond this many standard deviations carry under e^-72 of the mass: skipped
_A_MAX = 1.0 - 1e-12  # a + slack is capped below 1 (where f_eps is 1 whatever eps)


def null_accuracy(a, eps: float, slack: float = 0.0):
    """f_eps(min(a + slack, 1)): the most often an audited guess can be right when the check's accuracy is a."""
    shifted = np.minimum(np.asarray(a, dtype=np.float64) + slack, _A_MAX)
    return special.expit(eps + special.logit(shifted))


def _checked(correct: int, guesses: int, name: str) -> tuple[int, int]:
    if isinstance(guesses, bool) or int(guesses) != guesses or guesses < 0:
        raise LabelDPInputError(f"{name} guesses must be a whole number >= 0; got {guesses!r}")
    if isinstance(correct, bool) or int(correct) != correct or not 0 <= correct <= guesses:
        raise LabelDPInputError(f"{name} correct must be a whole number in [0, {guesses}]; got {correct!r}")
    return int(correct), int(guesses)


def _wald(cb, nb: int, ch, nh: int, eps: float):
    """The test's statistic: the smoothed log-odds difference minus eps, over its estimated standard error."""
    pb = (np.asarray(cb, dtype=np.float64) + 0.5) / (nb + 1)
    ph = (np.asarray(ch, dtype=np.float64) + 0.5) / (nh + 1)
    se = np.sqrt(1.0 / ((nb + 1) * pb * (1 - pb)) + 1.0 / ((nh + 1) * ph * (1 - ph)))
    return (special.logit(pb) - eps - special.logit(ph)) / se


def _region(cb: int, nb: int, ch: int, nh: int, eps: float) -> np.ndarray:
    """The rejection region as k[ch'] for ch' = 0..nh: reject when the audited count is >= k[ch'] (nb + 1: never).
    It is the smallest region that holds every count pair whose statistic reaches the observed one and grows with
    the audited count and shrinks with the check count (what lets stochastic dominance bound its probability): k is
    the first audited count whose statistic reaches the observed one (the statistic rises and then falls in the
    audited count, so the first crossing lies before its peak), then its running minimum from the largest ch' down.
    The regions of larger statistics nest inside those of smaller ones, so the supremum of the region's probability
    is a valid p-value at every level."""
    z_obs = float(_wald(cb, nb, ch, nh, eps))
    chs = np.arange(nh + 1)
    lo, hi = np.zeros(nh + 1, dtype=np.int64), np.full(nh + 1, nb, dtype=np.int64)
    while np.any(hi - lo > 2):  # the peak of a unimodal sequence, per ch' (ternary search)
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        up = _wald(m1, nb, chs, nh, eps) < _wald(m2, nb, chs, nh, eps)
        lo, hi = np.where(up, m1 + 1, lo), np.where(up, hi, m2 - 1)
        hi = np.maximum(hi, lo)
    candidates = np.stack([lo, np.minimum(lo + 1, nb), np.minimum(lo + 2, nb)])
    values = _wald(candidates, nb, chs[None, :], nh, eps)
    peak = candidates[np.argmax(values, axis=0), chs]
    reaches = _wald(peak, nb, chs, nh, eps) >= z_obs - 1e-12
    lo, hi = np.zeros(nh + 1, dtype=np.int64), peak.copy()
    while np.any(lo < hi):  # the first count reaching z_obs on the rising part
        mid = (lo + hi) // 2
        ok = _wald(mid, nb, chs, nh, eps) >= z_obs - 1e-12
        lo, hi = np.where(ok, lo, mid + 1), np.where(ok, mid, hi)
    k = np.where(reaches, lo, nb + 1)
    return np.minimum.accumulate(k[::-1])[::-1]


def _refined_extreme(values_at, grid: np.ndarray, largest: bool, vectorized: bool = False) -> float:
    """The largest (or smallest) value of a function of logit(a) on the grid, refined around its grid extreme
    (``vectorized``: the function takes the whole grid at once)."""
    from scipy import optimize  # imported when a check runs

    values = np.asarray(values_at(grid), dtype=np.float64) if vectorized else np.array([values_at(x) for x in grid])
    i = int(np.argmax(values) if largest else np.argmin(values))
    sign = -1.0 if largest else 1.0
    refined = optimize.minimize_scalar(lambda x: sign * values_at(x), method="bounded", options={"xatol": 1e-7},
                                       bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]))
    return max(float(values[i]), -float(refined.fun)) if largest else min(float(values[i]), float(refined.fun))


def _pvalue(cb: int, nb: int, ch: int, nh: int, eps: float, slack: float) -> float:
    """sup over a of P[(C_B, C_H) in the region] with C_B ~ Binomial(nb, f_eps(a + slack)), C_H ~ Binomial(nh, a)."""
    k = _region(cb, nb, ch, nh, eps)
    chs = np.arange(nh + 1)
    log_choose = special.gammaln(nh + 1) - special.gammaln(chs + 1) - special.gammaln(nh - chs + 1)

    def at(x):
        a = special.expit(np.atleast_1d(np.asarray(x, dtype=np.float64)))[:, None]
        q = null_accuracy(a, eps, slack)
        # check counts more than _SUPPORT_SD standard deviations from the mean carry under e^-72 of the mass
        spread = _SUPPORT_SD * np.sqrt(nh * a * (1 - a)) + 10
        inside = np.abs(chs[None, :] - nh * a) <= spread
        # Each term is computed only where it counts (inside the window; the binomial tail only where k is neither
        # certain nor impossible) and is 0 elsewhere: the same products, summed in the same order, at a fraction of
        # the special-function calls when the check has many guesses.
        rows, cols = np.nonzero(inside)
        mass = np.zeros(inside.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            mass[rows, cols] = np.exp(log_choose[cols] + special.xlogy(chs[cols], a[rows, 0])
                                      + special.xlog1py(nh - chs[cols], -a[rows, 0]))
        # P[C_B >= k] = P[C_B > k - 1]; k = 0 is certain and k = nb + 1 impossible
        tail = np.zeros(inside.shape)
        tail[inside & (k <= 0)[None, :]] = 1.0
        rows, cols = np.nonzero(inside & ((k > 0) & (k <= nb))[None, :])
        tail[rows, cols] = special.bdtrc(k[cols] - 1, nb, q[rows, 0])
        values = np.sum(mass * tail, axis=1)
        return values if np.ndim(x) else float(values[0])

    return _refined_extreme(at, _NUISANCE_GRID, largest=True, vectorized=True)


@functools.lru_cache(maxsize=8192)  # a family's nights repeat counts; the test is a pure function of them
def check_p_value(correct: int, guesses: int, check_correct: int, check_guesses: int, eps: float,
                  slack: float = 0.0) -> float:
    """The exact test's p-value for "eps-DP" (module docstring): the supremum over a of the probability of counts as
    extreme as those observed, audited at f_eps(a + slack) and check at a. 1 when either side has no guess."""
    correct, guesses = _checked(correct, guesses, "audited")
    check_correct, check_guesses = _checked(check_correct, check_guesses, "check")
    if guesses == 0 or check_guesses == 0 or not math.isfinite(eps):
        return 1.0
    return min(1.0, _pvalue(correct, guesses, check_correct, check_guesses, float(eps), float(slack)))


def calibrated_e_value(p_value: float) -> float:
    """An e-value from a valid p-value: 1 / (2 sqrt(p)), the calibrator kappa p^(kappa - 1) at kappa = 1/2
    (Vovk and Wang 2021, arXiv:1912.06116, Sec. 2): its integral over a uniform p is 1, and it is decreasing, so
    E <= 1 for any p-value that is valid (P[p <= u] <= u). It is never below 1/2: a night that shows nothing costs
    a product of such e-values at most a factor 2."""
    if not 0.0 <= p_value <= 1.0:
        raise LabelDPInputError(f"p_value must be in [0, 1]; got {p_value!r}")
    return math.inf if p_value == 0.0 else 0.5 / math.sqrt(p_value)


def exact_epsilon_lower(correct: int, guesses: int, check_correct: int, check_guesses: int, gamma: float,
                        slack: float = 0.0) -> float:
    """The largest eps the exact test rejects at level ``gamma`` (0 when it rejects none): eps such that, for every
    misfit-only accuracy a, the audited and check counts are as extreme as observed with probability <= gamma
    when the audited accuracy is f_eps(a + slack) and the check accuracy a."""
    correct, guesses = _checked(correct, guesses, "audited")
    check_correct, check_guesses = _checked(check_correct, check_guesses, "check")
    if not 0.0 < gamma < 1.0:
        raise LabelDPInputError(f"gamma must be in (0, 1); got {gamma!r}")
    if not 0.0 <= slack < 1.0:
        raise LabelDPInputError(f"slack must be in [0, 1); got {slack!r}")
    if guesses <= 0 or check_guesses <= 0:
        return 0.0
    if _pvalue(correct, guesses, check_correct, check_guesses, 0.0, slack) > gamma:
        return 0.0
    lo, hi = 0.0, _EPS_HIGH
    while hi - lo > _EPS_TOLERANCE:
        mid = (lo + hi) / 2
        if _pvalue(correct, guesses, check_correct, check_guesses, mid, slack) <= gamma:
            lo = mid
        else:
            hi = mid
    return lo


__all__ = ["calibrated_e_value", "check_p_value", "exact_epsilon_lower", "null_accuracy"]
