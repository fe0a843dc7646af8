"""The compiled recursion of the paper's Algorithm 3 for two trade-off functions f (docs/fdp-curve.md).

Algorithm 3 (after Mahloujifar et al. 2025b) decides whether c correct guesses out of c' in the observational
game on m examples are too many for a mechanism that is f-DP. With fbar(s) = 1 - f(s) and its generalized
inverse fbar^-1(r) = inf{s >= 0 : fbar(s) >= r}:

    r[c] = gamma c / m,  h[c] = gamma (c' - c) / m
    for i = c-1 .. 0:  h[i] = fbar^-1(r[i+1]);  r[i] = r[i+1] + i / (c' - i) * (h[i] - h[i+1])
    REJECT "M is f-DP" iff r[0] + h[0] >= c' / m.

REJECT is the branch the paper prints as "Return False" (line 8-9 of Alg. 3, "probability of c correct guesses
is less than gamma"); Theorem 10 and Definition 3 (Evaluate = 0 means "rejects") read it that way, Theorem 5's
"returns True" is the opposite wording. docs/fdp-curve.md, section 3, derives it from the proof of Theorem 10,
including why ">=" (not only ">") is sound: s(t) = r[0] + h[0] as a function of the level t (the recursion
started at r[c] = t c / m, h[c] = t (c' - c) / m; the test runs it at t = gamma) is strictly increasing.

The two trade-off functions (kinds):

CURVE, the (eps, delta)-DP curve f_{eps,delta}(x) = max(0, 1 - delta - e^eps x, e^-eps (1 - delta - x))
(Dong, Roth and Su 2022, Prop. 2.5: (eps, delta)-DP is exactly f_{eps,delta}-DP). fbar(s) = delta + e^eps s on
[0, x*], 1 - e^-eps (1 - delta - s) on [x*, 1 - delta] and 1 beyond, with x* = (1 - delta) / (1 + e^eps); fbar
is concave and increasing on [0, 1 - delta], so fbar^-1 is convex and piecewise linear on [0, 1]:

    fbar^-1(r) = max(0, (r - delta) e^-eps, 1 - delta - e^eps (1 - r))   for r < 1,   1 - delta for r >= 1.

(0 for r <= delta = fbar(0); the steep piece up to r = fbar(x*); the flat piece from there; fbar^-1(1) =
1 - delta.) For r > 1 the set {s : fbar(s) >= r} is empty; the value there never matters for soundness (under
the null hypothesis every argument is <= alpha_{i+1} <= 1, proof of Lemma 14) and 1 - delta keeps the map
monotone. The kernel takes e^eps and e^-eps as computed by math.exp (eps up to inf: e^eps = inf,
e^-eps = 0 give fbar^-1 = 0 on [0, 1), the curve of a claim that promises nothing beyond delta).

GAUSSIAN, f_mu(x) = Phi(Phi^-1(1 - x) - mu) (symmetric, f^-1 = f): fbar^-1(r) = Phi(Phi^-1(r) - mu), 0 for
r <= 0 and 1 for r >= 1 through Phi^-1 = -inf/+inf. Used only for the mu reading (fdp_mu_lower_bound).

Monotone structure (exact arithmetic), used by the shortcuts below. Write s[i] = r[i] + h[i]. Then
    s[i] - s[i+1] = (1 + i/(c' - i)) (h[i] - h[i+1]) = c' / (c' - i) * (h[i] - h[i+1]).
If h[i+1] >= h[i+2] then r[i+1] >= r[i+2] (the weight i+1 over c'-i-1 is >= 0), hence h[i] = fbar^-1(r[i+1])
>= fbar^-1(r[i+2]) = h[i+1] because fbar^-1 is non-decreasing; the same with <= throughout. So the direction
of the very first step (h[c-1] against h[c]) fixes the direction of every later step: either h, r and s are
all non-decreasing as i goes down ("rising" run), or all non-increasing ("falling" run).

Floating point. The kernel takes h[i] = max(fbar^-1(r[i+1]), h[i+1]) in a rising run and min(...) in a falling
run ("clamp"). In exact arithmetic this is a no-op (shown above), so the recursion is still exactly Algorithm 3.
For CURVE the clamp is a no-op in floating point too: the computed fbar^-1 is exactly non-decreasing in r,
because each piece is a chain of correctly rounded operations that are each monotone in r (fl(r - delta) and
fl(1 - r) are monotone, multiplying by a constant e^+-eps >= 0 and subtracting from the constant fl(1 - delta)
keep the direction, and rounding is monotone), the max of non-decreasing functions is non-decreasing, and
every value on [0, 1) is <= fl(1 - delta), the value at r >= 1 (fl(r - delta) <= fl(1 - delta) and
e^-eps <= 1; the flat piece subtracts a non-negative number from fl(1 - delta)). Also the value is exactly 0
for r <= delta (fl(r - delta) <= 0; fl(e^eps fl(1 - r)) >= fl(1 - r) >= fl(1 - delta)). For GAUSSIAN the
computed fbar^-1 (an erfc and a rational approximation of Phi^-1) is accurate to a few ulps but not provably
monotone at the ulp level; there the clamp moves h[i] by at most twice the evaluation error of fbar^-1 (if the
computed value fell below h[i+1] = fbar^-1(r[i+2]) although r[i+1] >= r[i+2], both evaluations are within
their error of values in the right order). With the clamp the computed r, h and s are monotone for both kinds,
which the proofs of the shortcuts rely on.

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

Shortcut (c), early accept. In a falling run the same argument with every inequality reversed gives computed
s[0] <= s[c] = fl(r[c] + h[c]); when that is < c'/m (always, unless gamma is within rounding of 1: in exact
arithmetic s[c] = gamma c'/m < c'/m) the run cannot reject and the kernel stops before the first step.

Shortcut (d), tail accept (CURVE only). A rising run that will not reject often creeps: in exact arithmetic
its increments die out geometrically, but in floating point r can keep gaining one ulp per step for tens of
thousands of steps before the bitwise fixed point (a) is reached. Shortcut (d) stops it with an upper bound on
the FINAL COMPUTED sum s[0] (rounding included), so it never changes the computed decision. Notation: u = 2^-53,
e and e_ (the kernel's doubles e^eps, e^-eps), G(r) = max(0, (r - delta) e_, 1 - delta - e (1 - r)) in real
arithmetic, F the computed fbar^-1, D[k] = r[k] - r[k+1] >= 0 and E[k] = h[k] - h[k+1] >= 0 (computed values,
exact differences), w[k] = k/(c' - k), which grows with k. After step i (i steps k = i-1 .. 0 remain):
  1. |F(r) - G(r)| <= 8u on [0, 1): each piece, whenever it can be the max, is a few correctly rounded operations
     on numbers <= 2 (if the flat piece is below -1, its computed value is negative too and only the steep piece
     and 0 matter), and max is 1-Lipschitz.
  2. If every r[j] (j <= i + 1) lies in [0, R] with R < 1 and the steep piece dominates G at R (steep - flat
     decreases in r, so then on all of [0, R]), G is e_-Lipschitz there; for CURVE h[k] = F(r[k+1]) exactly
     (clamp no-op), so E[k] <= e_ D[k+1] + 16u.
  3. The kernel's r[k] = fl(r[k+1] + fl(fl(w[k]) fl(E[k]))) gives D[k] <= w[k](1+u)^4 E[k] + u R, hence
     D[k] <= rho D[k+1] + a with rho = w[i-1] e_ (1+u)^4 and a = (16 w[i-1] + 1) u (1+u)^4 for all k <= i-1.
  4. If rho < 1: D[i-j] <= rho^j D[i] + a/(1 - rho), so the remaining r gain is at most
     T_r = (D[i] rho + i a)/(1 - rho), the remaining h gain at most T_h = e_ (D[i] + T_r) + 16u i, every later
     r[j] is <= r[i] + T_r (= R, closing the induction of 2), and s[0] = fl(r[0] + h[0]) <=
     (r[i] + h[i] + T_r + T_h)(1 + u).
The kernel evaluates this bound every 16 steps with a relative slack of 1e-12 on rho, T_r and the result (far
above the rounding of its own dozen operations) and, when it is below c'/m and R < 1 and the steep piece
dominates at R (with a margin), stops and accepts: the full computed run would not have rejected either.

Phi and Phi^-1 are written here because numba cannot call scipy.special: Phi through math.erfc, Phi^-1 with
Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988), about 1e-16 relative accuracy for
1e-300 < p < 1 - 1e-16.
"""

from __future__ import annotations

import math

from numba import njit

__all__ = [
    "CURVE",
    "EARLY_ACCEPT",
    "EARLY_REJECT",
    "FIXED_POINT",
    "FULL_RUN",
    "GAUSSIAN",
    "TAIL_ACCEPT",
    "TRIVIAL",
    "algorithm3_sum",
    "curve_fbar_inverse",
    "curve_rejects",
    "gaussian_fbar_inverse",
    "gaussian_rejects",
    "norm_cdf",
    "norm_ppf",
]

_SQRT1_2 = 0.7071067811865476  # 1/sqrt(2), correctly rounded

# Trade-off function kinds (the `kind` argument of algorithm3_sum).
CURVE = 0  # f_{eps,delta}; parameters (delta, e^eps, e^-eps)
GAUSSIAN = 1  # f_mu; parameters (mu, unused, unused)

# Outcome codes of algorithm3_sum (second return value).
FULL_RUN = 0  # ran every step down to i = 0
FIXED_POINT = 1  # stopped at a bitwise fixed point (shortcut a); the sum is the exact final sum
EARLY_REJECT = 2  # stopped when a rising run reached c'/m (shortcut b); the sum is a partial sum >= c'/m
TRIVIAL = 3  # c = 0 or c' = 0: nothing to run
EARLY_ACCEPT = 4  # a falling run that starts below c'/m (shortcut c); the sum is s[c], an upper bound < c'/m
TAIL_ACCEPT = 5  # a rising run whose remaining gain is bounded below c'/m (shortcut d); the sum is that bound
_TAIL_EVERY = 16  # steps between two evaluations of shortcut (d)


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
def curve_fbar_inverse(r: float, delta: float, e_eps: float, e_neg_eps: float) -> float:
    """fbar^-1(r) = inf{s >= 0 : 1 - f_{eps,delta}(s) >= r}, exactly non-decreasing in r (module docstring)."""
    if r >= 1.0:
        return 1.0 - delta
    steep = (r - delta) * e_neg_eps
    flat = (1.0 - delta) - e_eps * (1.0 - r)  # -inf when e^eps = inf (1 - r > 0 here)
    v = steep if steep > flat else flat
    return v if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def gaussian_fbar_inverse(r: float, mu: float) -> float:
    """fbar^-1(r) = f_mu^-1(1 - r) = Phi(Phi^-1(r) - mu) for the Gaussian f_mu (f^-1 = f); 0 for r <= 0, 1 for r >= 1.

    Phi(Phi^-1(r) - mu) rather than 1 - Phi(Phi^-1(1 - r) + mu): no 1 - r, so small r keep their digits.
    """
    return norm_cdf(norm_ppf(r) - mu)


@njit(cache=True, nogil=True)
def _fbar_inverse(kind: int, r: float, a: float, b: float, d: float) -> float:
    if kind == CURVE:
        return curve_fbar_inverse(r, a, b, d)
    return gaussian_fbar_inverse(r, a)


@njit(cache=True, nogil=True)
def _tail_bound(i: int, cp: int, r: float, h: float, step: float, delta: float, e_eps: float,
                e_neg_eps: float) -> float:
    """Shortcut (d): an upper bound on the final computed r[0] + h[0] of a rising CURVE run after step i, or inf.

    r, h are the state after step i and step = r[i] - r[i+1] >= 0 (module docstring, items 1-4).
    """
    w = (i - 1) / (cp - i + 1)  # w[i-1], the largest weight among the remaining steps
    rho = w * e_neg_eps * (1.0 + 1e-12)
    if not rho < 0.999:
        return math.inf
    a = (16.0 * w + 1.0) * 1.2e-16  # >= (16 w + 1) u (1 + u)^4
    # The slack keeps gain_r above T_r despite the rounding of these few operations; then R = fl(r + gain_r)
    # bounds every later r[j] (a double <= r + T_r is <= the double nearest to anything >= r + T_r).
    gain_r = (step * rho + i * a) / (1.0 - rho) * (1.0 + 1e-12)
    top = r + gain_r  # R, the largest r the rest of the run can reach
    if not top < 1.0:
        return math.inf
    flat = (1.0 - delta) - e_eps * (1.0 - top)
    steep = (top - delta) * e_neg_eps
    # The steep piece must dominate G on [0, R]: the flat one is clearly negative at R (then it is below 0 on all
    # of [0, R]), or clearly below the steep one at R (the gap steep - flat decreases in r).
    if not (flat <= -1.0 or steep - flat > 1e-12 * (2.0 + e_eps * (1.0 - top))):
        return math.inf
    gain_h = e_neg_eps * (step + gain_r) + 1.8e-15 * i  # 1.8e-15 >= 16 u
    return (r + h + gain_r + gain_h) * (1.0 + 1e-12)


@njit(cache=True, nogil=True)
def algorithm3_sum(c: int, cp: int, m: int, gamma: float, kind: int, a: float, b: float, d: float,
                   shortcuts: bool):
    """Run Algorithm 3 for one trade-off function; return (s, outcome, steps).

    kind CURVE: (a, b, d) = (delta, e^eps, e^-eps); kind GAUSSIAN: a = mu (b, d unused). s is r[0] + h[0]
    (outcome FULL_RUN or FIXED_POINT); with shortcuts, EARLY_REJECT returns the partial sum r[i] + h[i] >= c'/m
    that proves the final one is >= c'/m too, and EARLY_ACCEPT / TAIL_ACCEPT return an upper bound < c'/m on
    the final computed sum (s[c], resp. the tail bound of shortcut d; module docstring). steps is the number of
    loop iterations run. With shortcuts=False every one of the c steps is run (the plain recursion, used by the
    tests to check the shortcuts). Inputs are assumed
    valid: 0 <= c <= c' <= m, m >= 1, 0 < gamma < 1, 0 <= delta < 1, e^eps >= 1, 0 <= e^-eps <= 1, mu >= 0.
    """
    if c == 0 or cp == 0:
        # No loop: r[0] = 0, h[0] = gamma c'/m.
        return gamma * cp / m, TRIVIAL, 0
    threshold = cp / m
    r = gamma * c / m
    h = gamma * (cp - c) / m
    rising = _fbar_inverse(kind, r, a, b, d) >= h  # direction of the whole run (module docstring)
    if shortcuts and not rising and r + h < threshold:
        return r + h, EARLY_ACCEPT, 0
    for i in range(c - 1, -1, -1):
        g = _fbar_inverse(kind, r, a, b, d)
        # Clamp to the proven direction: a no-op in exact arithmetic (and for CURVE in floating point too).
        if rising:
            h_new = g if g > h else h
        else:
            h_new = g if g < h else h
        r_new = r + (i / (cp - i)) * (h_new - h)
        if shortcuts:
            if r_new == r and h_new == h:
                return r_new + h_new, FIXED_POINT, c - i
            if rising:
                if r_new + h_new >= threshold:
                    return r_new + h_new, EARLY_REJECT, c - i
                if kind == CURVE and i > 0 and (c - i) % _TAIL_EVERY == 0:
                    bound = _tail_bound(i, cp, r_new, h_new, r_new - r, a, b, d)
                    if bound < threshold:
                        return bound, TAIL_ACCEPT, c - i
        r = r_new
        h = h_new
    return r + h, FULL_RUN, c


@njit(cache=True, nogil=True)
def curve_rejects(c: int, cp: int, m: int, gamma: float, epsilon: float, delta: float) -> bool:
    """Algorithm 3 on f_{epsilon,delta} with the exact shortcuts: True iff r[0] + h[0] >= c'/m ("not
    (epsilon, delta)-DP"). epsilon may be +inf; 0 <= delta < 1."""
    if c == 0 or cp == 0:
        # With no correct guesses there is no evidence: Pr[C >= 0] = 1 > gamma, never reject.
        return False
    s, _, _ = algorithm3_sum(c, cp, m, gamma, CURVE, delta, math.exp(epsilon), math.exp(-epsilon), True)
    return s >= cp / m


@njit(cache=True, nogil=True)
def gaussian_rejects(c: int, cp: int, m: int, gamma: float, mu: float) -> bool:
    """Algorithm 3 on the Gaussian f_mu with the exact shortcuts: True iff r[0] + h[0] >= c'/m ("not mu-GDP")."""
    if c == 0 or cp == 0:
        return False
    s, _, _ = algorithm3_sum(c, cp, m, gamma, GAUSSIAN, mu, 0.0, 0.0, True)
    return s >= cp / m
