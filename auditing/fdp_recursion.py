"""The compiled recursion of the paper's Algorithm 3 for the Gaussian family with distribution shift tau.

Algorithm 3 (after Mahloujifar et al. 2025b) decides whether c correct guesses out of c' in the observational
game on m examples are too many for a mechanism that is f-DP. Theorem 10 runs it on g(s) = f(min(1, s + tau))
when counterfactual labels come from a proxy distribution at total-variation distance <= tau; Lemma 14 writes
the step with fbar(s) = 1 - f(s + tau) and fbar^-1(r) = f^-1(1 - r) - tau. For the Gaussian trade-off function
f_mu(x) = Phi(Phi^-1(1 - x) - mu), which is symmetric (f^-1 = f), the step is

    h[i] = fbar^-1(r[i+1]) = max(0, Phi(Phi^-1(r[i+1]) - mu) - tau),

where max(0, .) is the generalized inverse inf{s >= 0 : fbar(s) >= r} (0 for r <= fbar(0) = 1 - f(tau), in
particular for r <= 0), and for r >= 1 we take Phi^-1(r) = +inf, i.e. h = 1 - tau (the largest value fbar^-1
takes on [0, 1 - tau]).

    r[c] = gamma c / m,  h[c] = gamma (c' - c) / m
    for i = c-1 .. 0:  h[i] = fbar^-1(r[i+1]);  r[i] = r[i+1] + i / (c' - i) * (h[i] - h[i+1])
    REJECT "M is f_mu-DP" iff r[0] + h[0] >= c' / m     (then Pr[C >= c] <= gamma, Theorem 10).

Monotone structure (exact arithmetic), used by the shortcuts below. Write s[i] = r[i] + h[i]. Then
    s[i] - s[i+1] = (1 + i/(c' - i)) (h[i] - h[i+1]) = c' / (c' - i) * (h[i] - h[i+1]).
If h[i+1] >= h[i+2] then r[i+1] >= r[i+2] (the weight i+1 over c'-i-1 is >= 0), hence h[i] = fbar^-1(r[i+1])
>= fbar^-1(r[i+2]) = h[i+1] because fbar^-1 is non-decreasing; the same with <= throughout. So the direction
of the very first step (h[c-1] against h[c]) fixes the direction of every later step: either h, r and s are
all non-decreasing as i goes down ("rising" run), or all non-increasing ("falling" run).

Floating point. The computed fbar^-1 (an erfc and a rational approximation of Phi^-1) is accurate to a few
ulps but not provably monotone at the ulp level, which would break that structure by an ulp here and there.
The kernel therefore takes h[i] = max(fbar^-1(r[i+1]), h[i+1]) in a rising run and min(...) in a falling
run. In exact arithmetic this is a no-op (shown above), so the recursion is still exactly Algorithm 3; in
floating point it moves h[i] by at most twice the evaluation error of fbar^-1 (if the computed value fell
below h[i+1] = fbar^-1(r[i+2]) although r[i+1] >= r[i+2], both evaluations are within their error of values
in the right order). With it the computed r, h and s are monotone, which the proofs below rely on.

Shortcut (a), bitwise fixed point. If after step i the state satisfies r[i] == r[i+1] and h[i] == h[i+1]
(bitwise), every later step repeats it: h[i-1] = clamp(fbar^-1(r[i]), h[i]) = clamp(fbar^-1(r[i+1]), h[i])
= h[i], since h[i] = clamp(fbar^-1(r[i+1]), h[i+1]) already lies on the clamped side of fbar^-1(r[i+1])
(the same deterministic function at the same input gives the same double); then r[i-1] = r[i] + w * 0.0
= r[i] for the finite weight w = (i-1)/(c' - i + 1). By induction r[0] = r[i], h[0] = h[i], so the final
r[0] + h[0] is the same double; the kernel stops and returns it.

Shortcut (b), early reject. In a rising run the computed h is non-decreasing (clamp), fl(h[i] - h[i+1]) >= 0,
the weight is >= 0, so fl(w * d) >= 0 and fl(r[i+1] + fl(w * d)) >= r[i+1] (rounding is monotone): the
computed r is non-decreasing too. fl(r + h) is non-decreasing in each argument, so the computed s[0] >= s[i].
Hence once s[i] >= c'/m the final comparison r[0] + h[0] >= c'/m is certain and the kernel rejects at once.
(A falling run never rejects: s[0] <= s[c] = gamma c'/m < c'/m; the kernel still runs it through, only the
fixed point stops it early.)

Phi and Phi^-1 are written here because numba cannot call scipy.special: Phi through math.erfc, Phi^-1 with
Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988), about 1e-16 relative accuracy for
1e-300 < p < 1 - 1e-16.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = [
    "EARLY_REJECT",
    "FIXED_POINT",
    "FULL_RUN",
    "TRIVIAL",
    "algorithm3_sum",
    "fbar_inverse",
    "norm_cdf",
    "norm_ppf",
    "rejects",
]

_SQRT1_2 = 0.7071067811865476  # 1/sqrt(2), correctly rounded

# Outcome codes of algorithm3_sum (second return value).
FULL_RUN = 0  # ran every step down to i = 0
FIXED_POINT = 1  # stopped at a bitwise fixed point (shortcut a); the sum is the exact final sum
EARLY_REJECT = 2  # stopped when a rising run reached c'/m (shortcut b); the sum is a partial sum >= c'/m
TRIVIAL = 3  # c = 0 or c' = 0: nothing to run


@njit(cache=True, nogil=True)
def norm_cdf(x: float) -> float:
    """Standard normal CDF Phi(x) = erfc(-x / sqrt 2) / 2; erfc keeps full relative accuracy in the lower tail."""
    return 0.5 * math.erfc(-x * _SQRT1_2)


@njit(cache=True, nogil=True)
def norm_ppf(p: float) -> float:
    """Standard normal quantile Phi^-1(p) by Wichura's AS 241 (PPND16); -inf for p <= 0, +inf for p >= 1."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    q = p - 0.5
    if abs(q) <= 0.425:
        # Central region: a rational function of r = 0.180625 - q^2 (0.180625 = 0.425^2).
        r = 0.180625 - q * q
        num = (
            ((((((2509.0809287301226727 * r + 33430.575583588128105) * r + 67265.770927008700853) * r
                + 45921.953931549871457) * r + 13731.693765509461125) * r + 1971.5909503065514427) * r
             + 133.14166789178437745) * r
            + 3.387132872796366608
        )
        den = (
            ((((((5226.495278852854561 * r + 28729.085735721942674) * r + 39307.89580009271061) * r
                + 21213.794301586595867) * r + 5394.1960214247511077) * r + 687.1870074920579083) * r
             + 42.313330701600911252) * r
            + 1.0
        )
        return q * num / den
    # Tails: a rational function of sqrt(-log(min(p, 1 - p))); min(p, 1 - p) is exact for p < 0.5, and
    # for p > 0.5 the subtraction 1 - p is exact (Sterbenz), so no digits are lost there either.
    r = p if q < 0.0 else 1.0 - p
    r = math.sqrt(-math.log(r))
    if r <= 5.0:
        r -= 1.6
        num = (
            ((((((7.7454501427834140764e-4 * r + 0.0227238449892691845833) * r + 0.24178072517745061177) * r
                + 1.27045825245236838258) * r + 3.64784832476320460504) * r + 5.7694972214606914055) * r
             + 4.6303378461565452959) * r
            + 1.42343711074968357734
        )
        den = (
            ((((((1.05075007164441684324e-9 * r + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r
                + 0.14810397642748007459) * r + 0.68976733498510000455) * r + 1.6763848301838038494) * r
             + 2.05319162663775882187) * r
            + 1.0
        )
    else:
        r -= 5.0
        num = (
            ((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r
                + 0.026532189526576123093) * r + 0.29656057182850489123) * r + 1.7848265399172913358) * r
             + 5.4637849111641143699) * r
            + 6.6579046435011037772
        )
        den = (
            ((((((2.04426310338993978564e-15 * r + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r
                + 7.868691311456132591e-4) * r + 0.0148753612908506148525) * r + 0.13692988092273580531) * r
             + 0.59983220655588793769) * r
            + 1.0
        )
    x = num / den
    return -x if q < 0.0 else x


@njit(cache=True, nogil=True)
def fbar_inverse(r: float, mu: float, tau: float) -> float:
    """Lemma 14's fbar^-1(r) = f^-1(1 - r) - tau for Gaussian f_mu (f^-1 = f), as a generalized inverse.

    f_mu^-1(1 - r) = Phi(Phi^-1(r) - mu); r <= 0 maps to 0 and r >= 1 to 1 - tau through Phi^-1 = -inf/+inf.
    """
    # Phi(Phi^-1(r) - mu) rather than 1 - Phi(Phi^-1(1 - r) + mu): no 1 - r, so small r keep their digits.
    v = norm_cdf(norm_ppf(r) - mu) - tau
    return v if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def algorithm3_sum(c: int, cp: int, m: int, gamma: float, mu: float, tau: float, shortcuts: bool):
    """Run Algorithm 3 for Gaussian f_mu with shift tau; return (s, outcome, steps).

    s is r[0] + h[0] (outcome FULL_RUN or FIXED_POINT), or, with shortcuts and outcome EARLY_REJECT, the
    partial sum r[i] + h[i] >= c'/m that proves the final one is >= c'/m too (module docstring). steps is the
    number of loop iterations run. With shortcuts=False every one of the c steps is run (the plain recursion,
    used by the tests to check the shortcuts). Inputs are assumed valid: 0 <= c <= c' <= m, m >= 1,
    0 < gamma < 1, mu >= 0, tau >= 0.
    """
    if c == 0 or cp == 0:
        # No loop: r[0] = 0, h[0] = gamma c'/m.
        return gamma * cp / m, TRIVIAL, 0
    threshold = cp / m
    r = gamma * c / m
    h = gamma * (cp - c) / m
    rising = fbar_inverse(r, mu, tau) >= h  # direction of the whole run (module docstring)
    for i in range(c - 1, -1, -1):
        g = fbar_inverse(r, mu, tau)
        # Clamp to the proven direction: a no-op in exact arithmetic, removes ulp-level non-monotonicity.
        if rising:
            h_new = g if g > h else h
        else:
            h_new = g if g < h else h
        r_new = r + (i / (cp - i)) * (h_new - h)
        if shortcuts:
            if r_new == r and h_new == h:
                return r_new + h_new, FIXED_POINT, c - i
            if rising and r_new + h_new >= threshold:
                return r_new + h_new, EARLY_REJECT, c - i
        r = r_new
        h = h_new
    return r + h, FULL_RUN, c


@njit(cache=True, nogil=True)
def rejects(c: int, cp: int, m: int, gamma: float, mu: float, tau: float) -> bool:
    """Algorithm 3's decision with both exact shortcuts: True iff r[0] + h[0] >= c'/m ("not f_mu-DP")."""
    if c == 0 or cp == 0:
        # With no correct guesses there is no evidence: Pr[C >= 0] = 1 > gamma, never reject.
        return False
    s, _, _ = algorithm3_sum(c, cp, m, gamma, mu, tau, True)
    return s >= cp / m
