"""Controls that check the audit itself every night: pure numpy/scipy.

- **Positive control**: a synthetic "model" whose leakage is known by construction. For each row it releases
  the row's label through k-ary randomized response at a known eps_c (keyed by (seed, row_id) through
  `auditing.game.keyed_random`, so it is deterministic) and outputs probability
  q = e^eps_c / (e^eps_c + k - 1) on the released label RR(y) and (1 - q) / (k - 1) on every other class.
  Its output is a post-processing of RR(y), and P[RR(y) = z | y] / P[RR(y) = z | y'] <= e^eps_c for all
  y, y', z, so it is eps_c-label-DP exactly (paper Sec. 2, Def. of label DP; Warner's RR, Sec. 6.1 of the
  paper uses RR to validate the audit the same way). Its valid bound must therefore never exceed eps_c (the
  audit's validity at the plan's kappa, docs/soundness.md), and must exceed a pre-registered floor
  (`positive_control_floor`): the bound the audit reaches with probability >= FLOOR_POWER (99.9%) given the game.
- **Negative control**: a target identical to the reference M' (it never saw day D's labels). Its scores are
  all 0, the attacker's guesses are fair coins, and its valid bound must be 0 (it is positive with
  probability at most 1 - confidence, by the same validity). It tests the plumbing; it cannot notice a
  reference that is wrong for day D (its scores are 0 whatever the reference).
A failing control voids what it guards (`auditing.verdict.trust.night_trust`): the negative control every verdict of
the night (the plumbing is broken), the positive control the VIOLATIONs (above its eps_c: the bounds overstate
tonight) or the PASSes' detectability (below its floor). The negative control is judged at NEGATIVE_CONFIDENCE
(99.9%), not at the audit's 95%, so that a correct night loses its verdicts to it at most once in a thousand.
The night's label-blind control is retired: the capacity check (`auditing.verdict.capacity_check`, each target on rows
of the day it never saw) replaced it (docs/soundness.md section 8.6); ``LABEL_BLIND`` names the kind on the rows
it left in the warehouse.
"""

from __future__ import annotations

import math

import numpy as np

from auditing.bounds.lower_bound import pointwise_bounds
from auditing.bounds.selection import selection_strategy
from auditing.game.keyed_random import STREAM_CONTROL, keyed_uniform
from auditing.result import AuditResult
from auditing.verdict.control_check import CONTROL_KINDS, LABEL_BLIND, NEGATIVE, POSITIVE, ControlCheck
from labeldp.errors import LabelDPInputError

# The confidence the negative control is judged at: a correct night voids its verdicts with probability at most
# 1 - NEGATIVE_CONFIDENCE (docs/concepts.md, Controls: what a correct night can lose).
NEGATIVE_CONFIDENCE = 0.999
# The power the positive control's floor is pre-registered at: a working audit reaches the floor with at least
# this probability, so it raises a false CONTROL_FAILED about once in 1 / (1 - FLOOR_POWER) nights.
FLOOR_POWER = 0.999


def check_control_epsilon(value, name: str = "controls.positive_epsilon") -> float:
    """eps_c of the positive control: a finite number > 0 (at 0 there is nothing to detect)."""
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{name} must be a number > 0; got {value!r}") from None
    if not (eps > 0) or math.isinf(eps):
        raise LabelDPInputError(f"{name} must be a finite number > 0 (the positive control's known epsilon); "
                                f"got {value!r}")
    return eps


def rr_keep_probability(epsilon: float, num_classes: int) -> float:
    """q = e^eps / (e^eps + k - 1): k-ary randomized response keeps the label with this probability."""
    return 1.0 / (1.0 + (num_classes - 1) * math.exp(-epsilon))


def rr_oracle_probabilities(row_ids, labels, epsilon: float, seed: int, num_classes: int = 2) -> np.ndarray:
    """The positive control's (n, k) class probabilities: q on RR_eps(y), (1 - q)/(k - 1) elsewhere.

    RR_eps(y) keeps y when u < q (u keyed by (seed, row_id) on `STREAM_CONTROL`) and otherwise picks one of
    the other k - 1 classes uniformly from the same u, so a row's output depends on its own label and id only.
    """
    epsilon = check_control_epsilon(epsilon, "epsilon")
    ids = np.asarray(row_ids, dtype=np.int64)
    y = np.asarray(labels, dtype=np.int64)
    if ids.shape != y.shape or ids.ndim != 1:
        raise LabelDPInputError(f"row_ids {ids.shape} and labels {y.shape} must be equal 1-D shapes")
    bad = int(((y < 0) | (y >= num_classes)).sum())
    if bad:
        raise LabelDPInputError(f"labels: {bad} row(s) are outside the classes 0..{num_classes - 1}")
    q = rr_keep_probability(epsilon, num_classes)
    u = keyed_uniform(seed, 0, STREAM_CONTROL, ids)
    keep = u < q
    # For a flip, (u - q) / (1 - q) is uniform in [0, 1): pick one of the k - 1 other classes from it.
    other = np.minimum(((u - q) / (1.0 - q) * (num_classes - 1)).astype(np.int64), num_classes - 2)
    released = np.where(keep, y, (y + 1 + np.maximum(other, 0)) % num_classes)
    out = np.full((ids.size, num_classes), (1.0 - q) / (num_classes - 1))
    out[np.arange(ids.size), released] = q
    return out


# ------------------------------------------------------------------------------------------ the floor


def positive_control_floor(result: AuditResult, power: float = FLOOR_POWER) -> dict:
    """The positive control's pre-registered floor from the result's expected curve (`expected_correct`).

    Derivation (binomial test's power at this m; Thm. 16/17 of the paper give the test): at a grid point c'
    the expected number of correct guesses over the game's coins is E_c' (`expected_histogram`), a rate
    pi = E_c' / c'. Modelling the correct guesses as C ~ Binomial(c', pi), the count reached with probability
    >= `power` is c_low = F^-1(1 - power), the (1 - power)-quantile (P[C >= c_low] >= power by the
    quantile's definition). The audit's bound at that point, bound(c_low, c', m) at the strategy's per-point
    confidence, is then reached with probability >= power at that point, and the selected (max over the
    grid) bound is at least the bound at any fixed point. The point c'* is fixed before any repetition is
    played: the one maximising bound(c_low(c'), c'), a function of the expected curve only. So the floor is
    max over the grid of bound(c_low(c'), c'); a working audit's valid bound is below it with probability
    at most 1 - power (up to the binomial model of C, checked over many seeds in
    tests/auditing/verdict/test_controls.py).

    `split` strategy: c' is chosen on the selection half, independently of the bound half's outcomes, so the
    floor is the same computation at the selected c' on the bound half (m/2 rows), with the full-data rate
    at 2 c' standing in for the half's rate (the halves are a keyed random split).

    ``result.expected_correct`` holds the grid of repetition 0 over all m rows and E_c' at each.
    Returns {floor, guesses, expected_rate, correct_quantile, power}; floor 0 when the curve is absent.
    """
    record = result.expected_correct
    if record is None or not record.guesses:
        return {"floor": 0.0, "guesses": None, "expected_rate": None, "correct_quantile": None, "power": power}
    kw = dict(method=result.bound.method, delta=result.bound.delta, kappa=result.bound.kappa)
    grid = np.asarray(record.guesses, dtype=np.float64)
    expected = np.asarray(record.correct, dtype=np.float64)
    if selection_strategy(result.bound.strategy).uses_halves:
        guesses = np.array([result.selected_guesses])
        rate = np.interp(2.0 * guesses, grid, expected) / (2.0 * guesses)
        m, confidence = result.selected_m, result.bound.confidence
    else:
        guesses = grid.astype(np.int64)
        rate = expected / grid
        m, confidence = result.m, result.point_confidence
    rate = np.clip(rate, 0.0, 1.0)
    from scipy import stats  # imported when a control is checked: 0.3 s to import

    c_low = stats.binom.ppf(1.0 - power, guesses, rate).astype(np.int64)
    bounds = pointwise_bounds(c_low, guesses, m, confidence=confidence, **kw)
    best = int(np.argmax(bounds))
    return {"floor": float(bounds[best]), "guesses": int(guesses[best]), "expected_rate": float(rate[best]),
            "correct_quantile": int(c_low[best]), "power": power}


def negative_control_evidence(result: AuditResult) -> float:
    """The largest binomial bound (kappa 0) over the result's repetition-0 sweep (``curve``), each point at the
    Bonferroni confidence 1 - (1 - NEGATIVE_CONFIDENCE) / G: the negative control's own test."""
    if not result.curve:
        return 0.0
    correct = np.array([p.correct for p in result.curve], dtype=np.int64)
    guesses = np.array([p.guesses for p in result.curve], dtype=np.int64)
    point = 1.0 - (1.0 - NEGATIVE_CONFIDENCE) / guesses.size
    return float(pointwise_bounds(correct, guesses, result.m, method="binomial", delta=0.0,
                                  confidence=point).max())


# ------------------------------------------------------------------------------------------ the verdict


def check_control(control: str, result: AuditResult, epsilon_c: float | None = None) -> ControlCheck:
    """Judges a control's `AuditResult`: its
    `auditing.verdict.control_check.ControlCheck`.

    positive: passes iff floor < eps_lb <= eps_c. A floor of 0 means the audit has no power at this m: the
    control cannot show that the audit detects anything, which fails it too; except under the ``split``
    strategy, where the floor is conditional on the c' the selection half chose (a small c' can leave no
    power at that point by chance), so there a floor of 0 asks only for a positive bound.
    negative: passes iff its repetition-0 sweep shows no evidence at NEGATIVE_CONFIDENCE: the binomial bound at
    kappa 0, Bonferroni over the sweep's points at 1 - (1 - NEGATIVE_CONFIDENCE) / G, is 0 at every point. (A copy
    of the reference scores 0 on every row: each guess is right with probability exactly 1/2 whatever the
    reference, so kappa plays no part.)
    """
    if control not in CONTROL_KINDS:
        raise LabelDPInputError(f"control must be one of {list(CONTROL_KINDS)}; got {control!r}")
    eps_lb, kappa = result.epsilon_lower_bound, result.bound.kappa
    label = (f"{result.bound.confidence:.0%} confidence, {result.bound.strategy}, {result.bound.method}, "
             f"delta={result.bound.delta:g}, kappa={kappa:g}")
    if control == NEGATIVE:
        evidence = negative_control_evidence(result)
        passed = evidence == 0.0
        message = (f"negative control (a copy of the reference): valid eps_lb {eps_lb:.4f} ({label}); its sweep at "
                   f"{NEGATIVE_CONFIDENCE:.1%} confidence shows "
                   + ("no evidence, as it must" if passed else f"eps {evidence:.4f} > 0: the audit reports leakage "
                      "from a model that never saw the day's labels (the plumbing is broken)"))
        return ControlCheck(NEGATIVE, passed, eps_lb, None, 0.0, message)
    eps_c = check_control_epsilon(epsilon_c, "epsilon_c")
    detail = positive_control_floor(result)
    floor = detail["floor"]
    if eps_lb > eps_c:
        passed, why = False, f"exceeds the control's true eps_c = {eps_c:g}: the bound is not valid here"
    elif floor <= 0.0 and selection_strategy(result.bound.strategy).uses_halves:
        passed = eps_lb > 0.0
        why = ("is positive" if passed else "is 0") + (" (the floor at the c' the split selection chose is 0, so a "
                                                        "positive bound is all the control can ask)")
    elif floor <= 0.0:
        passed, why = False, "the pre-registered floor is 0: the audit has no power at this m to detect eps_c"
    elif eps_lb <= floor:
        passed, why = False, (f"is not above the pre-registered floor {floor:.4f} (reached with probability "
                              f">= {detail['power']:.0%} by a working audit)")
    else:
        passed, why = True, f"is above the floor {floor:.4f} and at most eps_c = {eps_c:g}"
    message = f"positive control (randomized response at eps_c = {eps_c:g}): valid eps_lb {eps_lb:.4f} {why} ({label})"
    return ControlCheck(POSITIVE, passed, eps_lb, floor, eps_c, message, detail)


__all__ = [
    "CONTROL_KINDS", "FLOOR_POWER", "LABEL_BLIND", "NEGATIVE", "NEGATIVE_CONFIDENCE", "POSITIVE", "ControlCheck",
    "check_control", "check_control_epsilon", "negative_control_evidence", "positive_control_floor",
    "rr_keep_probability", "rr_oracle_probabilities"
]
