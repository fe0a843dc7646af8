"""One entry point for epsilon lower bounds, whatever the method, plus the best bound over a sweep.

Methods:
  - `binomial`: Theorems 17 (delta = 0) and 16 (delta > 0) of the paper as re-derived in docs/soundness.md,
    `auditing.binomial_bounds`.
  - `fdp`: Algorithm 3 of the paper on the (eps, delta) trade-off curve f_{eps,delta} itself
    (docs/fdp-curve.md), `auditing.fdp_bounds`; valid for every mechanism, delta = 0 allowed.

kappa >= 0 is the reference's robustness parameter (|log D'(y|x) - log D(y|x)| <= kappa on audited rows): both
methods test the claim (eps, delta) through views that are (eps + kappa, e^kappa delta)-indistinguishable
(docs/soundness.md, Lemma 1).

Default delta: 0 for both methods. Label-DP claims are pure eps, and the (eps, delta) curve audits delta = 0
directly. (The paper's Tables 1-2 use delta = 1e-5 with its Gaussian family; with the curve, any delta > 0
makes nothing rejectable until c > delta m / gamma correct guesses, which blinds bonferroni on 1e5 rows.)
"""

from __future__ import annotations

import numpy as np

from auditing.binomial_bounds import binomial_epsilon_lower_bound, binomial_rejects, pure_epsilon_lower_bounds
from auditing.errors import LabelDPInputError

METHODS = ("binomial", "fdp")
DEFAULT_DELTA = {"binomial": 0.0, "fdp": 0.0}


def check_method(method: str) -> str:
    if method not in METHODS:
        raise LabelDPInputError(f"method must be one of {list(METHODS)}; got {method!r}")
    return method


def resolve_delta(method: str, delta: float | None) -> float:
    """The delta a method uses when the user gives none (see module docstring)."""
    check_method(method)
    return DEFAULT_DELTA[method] if delta is None else float(delta)


def epsilon_lower_bound(
    correct: int, guesses: int, m: int, *, method: str = "binomial", delta: float | None = None,
    confidence: float = 0.95, kappa: float = 0.0,
) -> float:
    """A lower bound on epsilon valid with the given confidence for ONE pre-chosen (c, c') pair."""
    delta = resolve_delta(method, delta)
    if method == "binomial":
        return binomial_epsilon_lower_bound(correct, guesses, m, delta=delta, confidence=confidence, kappa=kappa)
    from auditing.fdp_bounds import fdp_epsilon_lower_bound

    return fdp_epsilon_lower_bound(correct, guesses, m, delta=delta, confidence=confidence, kappa=kappa)


def rejects(
    correct: int, guesses: int, m: int, epsilon: float, *, method: str, delta: float | None = None,
    confidence: float = 0.95, kappa: float = 0.0,
) -> bool:
    """Does the method's test reject "M is (epsilon, delta)-DP"? (Rejection is monotone in epsilon.)"""
    delta = resolve_delta(method, delta)
    if method == "binomial":
        return binomial_rejects(correct, guesses, m, epsilon, delta=delta, confidence=confidence, kappa=kappa)
    from auditing.fdp_bounds import fdp_rejects

    return fdp_rejects(correct, guesses, m, epsilon, delta=delta, confidence=confidence, kappa=kappa)


def pointwise_bounds(
    correct, guesses, m: int, *, method: str, delta: float | None = None, confidence: float = 0.95, kappa: float = 0.0
) -> np.ndarray:
    """The bound at every point of a sweep, each at the same per-point confidence (for curves and plots)."""
    correct = np.asarray(correct, dtype=np.int64)
    guesses = np.asarray(guesses, dtype=np.int64)
    delta = resolve_delta(method, delta)
    if method == "binomial" and delta == 0.0:
        return pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, kappa=kappa)
    return np.array([
        epsilon_lower_bound(int(c), int(g), m, method=method, delta=delta, confidence=confidence, kappa=kappa)
        for c, g in zip(correct, guesses, strict=True)
    ])


def best_bound(
    correct, guesses, m: int, *, method: str, delta: float | None = None, confidence: float = 0.95, kappa: float = 0.0
) -> tuple[float, int]:
    """max over the sweep of the pointwise bound, and the index attaining it (the smallest such index).

    This is NOT by itself a valid bound for a data-chosen point: callers either pass a Bonferroni-corrected
    confidence (`auditing.selection`) or label the value as the paper's optimistic statistic.

    Exact, with pruning: for delta > 0 the pure (delta = 0) bound of a point is an upper bound on its
    bound, so points are visited in decreasing order of it and the scan stops once no remaining point can
    win; for `fdp`, a point whose test does not reject the best eps so far cannot beat it (rejection is
    monotone in eps), which costs one Algorithm 3 evaluation instead of a root search.
    """
    correct = np.asarray(correct, dtype=np.int64)
    guesses = np.asarray(guesses, dtype=np.int64)
    if correct.size == 0:
        raise LabelDPInputError("the sweep is empty: no guess counts to bound")
    delta = resolve_delta(method, delta)
    kwargs = dict(method=method, delta=delta, confidence=confidence, kappa=kappa)
    upper = pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, kappa=kappa)
    if method == "binomial" and delta == 0.0:
        index = int(np.argmax(upper))
        return float(upper[index]), index
    # Visit the most promising points first; ties by index keep the result deterministic.
    order = np.lexsort((np.arange(upper.size), -upper))
    best, best_index = 0.0, -1
    for index in order:
        c, g = int(correct[index]), int(guesses[index])
        if method == "binomial" and best_index >= 0 and upper[index] <= best:
            break
        if method == "fdp" and not rejects(c, g, m, best, **kwargs):
            continue
        value = epsilon_lower_bound(c, g, m, **kwargs)
        if best_index < 0 or value > best or (value == best and index < best_index):
            best, best_index = value, int(index)
    if best_index < 0:
        best_index = int(order[0])
    return float(best), best_index
