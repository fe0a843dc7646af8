"""Epsilon lower bounds over one point or a whole sweep, whatever the bound method (`auditing.bounds.methods`).

kappa >= 0 is the reference's robustness parameter (|log D'(y|x) - log D(y|x)| <= kappa on audited rows): every
method tests the claim (eps, delta) through views that are (eps + kappa, e^kappa delta)-indistinguishable
(docs/soundness.md, Lemma 1).

Default delta: 0 for every built-in method. Label-DP claims are pure eps, and the (eps, delta) curve audits
delta = 0 directly. (The paper's Tables 1-2 use delta = 1e-5 with its Gaussian family; with the curve, any
delta > 0 makes nothing rejectable until c > delta m / gamma correct guesses, which blinds bonferroni on 1e5
rows.)

``method`` is a registered `BoundMethod` or its name.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from auditing.bounds.binomial import pure_epsilon_lower_bounds
from auditing.bounds.methods import BoundMethod, bound_method, method_names
from labeldp.errors import LabelDPInputError

MethodChoice = str | BoundMethod


def check_method(method: MethodChoice) -> str:
    """The name of a registered method.

    Raises:
        LabelDPInputError: an unknown method, naming the known ones.
    """
    return bound_method(method).name


def resolve_delta(method: MethodChoice, delta: float | None) -> float:
    """The delta a method uses when the user gives none (see module docstring)."""
    return bound_method(method).default_delta if delta is None else float(delta)


def epsilon_lower_bound(
    correct: int, guesses: int, m: int, *, method: MethodChoice = "binomial", delta: float | None = None,
    confidence: float = 0.95, kappa: float = 0.0,
) -> float:
    """A lower bound on epsilon valid with the given confidence for ONE pre-chosen (c, c') pair.

    Raises:
        LabelDPInputError: an unknown method, or counts / confidence / delta out of range.
    """
    chosen = bound_method(method)
    return chosen.epsilon_lower_bound(correct, guesses, m, delta=resolve_delta(chosen, delta), confidence=confidence,
                                      kappa=kappa)


def rejects(
    correct: int, guesses: int, m: int, epsilon: float, *, method: MethodChoice, delta: float | None = None,
    confidence: float = 0.95, kappa: float = 0.0,
) -> bool:
    """Does the method's test reject "M is (epsilon, delta)-DP"? (Rejection is monotone in epsilon.)"""
    chosen = bound_method(method)
    return chosen.rejects(correct, guesses, m, epsilon, delta=resolve_delta(chosen, delta), confidence=confidence,
                          kappa=kappa)


def pointwise_bounds(
    correct, guesses, m: int, *, method: MethodChoice, delta: float | None = None, confidence: float = 0.95,
    kappa: float = 0.0,
) -> np.ndarray:
    """The bound at every point of a sweep, each at the same per-point confidence (for curves and plots)."""
    chosen = bound_method(method)
    correct = np.asarray(correct, dtype=np.int64)
    guesses = np.asarray(guesses, dtype=np.int64)
    delta = resolve_delta(chosen, delta)
    if chosen.closed_form(delta):
        return pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, kappa=kappa)
    return np.array([
        chosen.epsilon_lower_bound(int(c), int(g), m, delta=delta, confidence=confidence, kappa=kappa)
        for c, g in zip(correct, guesses, strict=True)
    ])


def best_bound(
    correct, guesses, m: int, *, method: MethodChoice, delta: float | None = None, confidence: float = 0.95,
    kappa: float = 0.0,
) -> tuple[float, int]:
    """max over the sweep of the pointwise bound, and the index attaining it (the smallest such index).

    This is NOT by itself a valid bound for a data-chosen point: callers either pass a Bonferroni-corrected
    confidence (`auditing.bounds.selection`) or label the value as the paper's optimistic statistic.

    Exact, with pruning: points are visited in decreasing order of their pure (delta = 0) bound; when that is
    an upper bound on the method's bound (`pure_bound_is_upper`) the scan stops once no remaining point can
    win; when rejection is cheap (`cheap_rejection`), a point whose test does not reject the best eps so far
    cannot beat it (rejection is monotone in eps) and is skipped.

    Raises:
        LabelDPInputError: an empty sweep or an unknown method.
    """
    chosen = bound_method(method)
    correct = np.asarray(correct, dtype=np.int64)
    guesses = np.asarray(guesses, dtype=np.int64)
    if correct.size == 0:
        raise LabelDPInputError("the sweep is empty: no guess counts to bound")
    delta = resolve_delta(chosen, delta)
    kwargs = dict(delta=delta, confidence=confidence, kappa=kappa)
    upper = pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, kappa=kappa)
    if chosen.closed_form(delta):
        index = int(np.argmax(upper))
        return float(upper[index]), index
    # Visit the most promising points first; ties by index keep the result deterministic.
    order = np.lexsort((np.arange(upper.size), -upper))
    best, best_index = 0.0, -1
    for index in order:
        c, g = int(correct[index]), int(guesses[index])
        if chosen.pure_bound_is_upper and best_index >= 0 and upper[index] <= best:
            break
        if chosen.cheap_rejection and not chosen.rejects(c, g, m, best, **kwargs):
            continue
        value = chosen.epsilon_lower_bound(c, g, m, **kwargs)
        if best_index < 0 or value > best or (value == best and index < best_index):
            best, best_index = value, int(index)
    if best_index < 0:
        best_index = int(order[0])
    return float(best), best_index


def best_bounds(correct, guesses, m: int, *, method: MethodChoice, delta: float | None = None,
                confidence: float = 0.95, kappa: float = 0.0, threads: int = 1) -> np.ndarray:
    """`best_bound`'s value for each row of the 2-D ``correct`` and ``guesses`` (a sweep per row). A closed-form
    method's pointwise bounds are elementwise, so they are computed for all rows at once, split by rows over
    ``threads`` threads (scipy's incomplete-beta inverse releases the GIL on arrays of this size); the same
    doubles as `best_bound` row by row. Other methods: `best_bound` per row."""
    correct = np.asarray(correct, dtype=np.int64)
    guesses = np.asarray(guesses, dtype=np.int64)
    if correct.ndim != 2 or correct.shape != guesses.shape:
        raise LabelDPInputError(f"correct {correct.shape} and guesses {guesses.shape} must be equal 2-D shapes")
    chosen = bound_method(method)
    if correct.shape[1] == 0:
        raise LabelDPInputError("the sweep is empty: no guess counts to bound")
    if not chosen.closed_form(resolve_delta(chosen, delta)):
        return np.array([best_bound(c, g, m, method=chosen, delta=delta, confidence=confidence, kappa=kappa)[0]
                         for c, g in zip(correct, guesses, strict=True)], dtype=np.float64)

    def bounds(part: np.ndarray) -> np.ndarray:
        return pure_epsilon_lower_bounds(correct[part], guesses[part], confidence=confidence, kappa=kappa)

    # numpy keeps the GIL on short loops: a thread gets _ELEMENTS_PER_THREAD bounds at the least.
    threads = max(1, min(int(threads), correct.size // _ELEMENTS_PER_THREAD))
    parts = np.array_split(np.arange(correct.shape[0]), threads)
    if threads == 1:
        values = bounds(parts[0])
    else:
        with ThreadPoolExecutor(threads, thread_name_prefix="labeldp-bounds") as pool:
            values = np.concatenate(list(pool.map(bounds, parts)))
    return values.max(axis=1)


# Pointwise bounds per thread of `best_bounds`, at the least.
_ELEMENTS_PER_THREAD = 2048


def any_point_exceeds(correct, guesses, m: int, claimed: float, *, method: MethodChoice, delta: float,
                      confidence: float, kappa: float) -> bool:
    """Whether the max over the points of the point bound (at ``confidence``) exceeds ``claimed``, without
    computing every bound.

    A point whose test does not reject eps = claimed cannot have a bound above it (rejection is monotone in
    eps), so only rejecting points are bounded; when the pure bound is an upper bound on the method's
    (`pure_bound_is_upper`) it orders and stops the scan.
    """
    if math.isinf(claimed):
        return False
    chosen = bound_method(method)
    correct = np.asarray(correct, dtype=np.int64)
    guesses = np.asarray(guesses, dtype=np.int64)
    kw = dict(delta=delta, confidence=confidence, kappa=kappa)
    pure = pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, kappa=kappa)
    if chosen.closed_form(delta):
        return bool(pure.max(initial=0.0) > claimed)
    for index in np.lexsort((np.arange(pure.size), -pure)):
        c, g = int(correct[index]), int(guesses[index])
        if chosen.pure_bound_is_upper and pure[index] <= claimed:
            return False  # the pure bound is an upper bound on this method's; the rest are smaller
        if c == 0 or not chosen.rejects(c, g, m, claimed, **kw):
            continue
        if chosen.epsilon_lower_bound(c, g, m, **kw) > claimed:
            return True
    return False


def point_exceeds(correct: int, guesses: int, m: int, claimed: float, *, method: MethodChoice, delta: float,
                  confidence: float, kappa: float) -> bool:
    """bound(c, c') > claimed for one point; the cheap tests first (see `any_point_exceeds`)."""
    if correct < 1:
        return False
    chosen = bound_method(method)
    kw = dict(delta=delta, confidence=confidence, kappa=kappa)
    if chosen.pure_bound_is_upper:
        pure = float(pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, kappa=kappa))
        if pure <= claimed:
            return False
        if chosen.closed_form(delta):
            return True
    if not chosen.rejects(correct, guesses, m, claimed, **kw):
        return False
    return chosen.epsilon_lower_bound(correct, guesses, m, **kw) > claimed


def __getattr__(name: str):
    # METHODS is the registry's current list of names (a toy method registered in a test shows up here).
    if name == "METHODS":
        return method_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
