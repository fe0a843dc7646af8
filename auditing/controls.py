"""Controls that check the audit itself every night: pure numpy/scipy.

- **Positive control**: a synthetic "model" whose leakage is known by construction. For each row it releases
  the row's label through k-ary randomized response at a known eps_c (keyed by (seed, row_id) through
  `auditing.keyed_random`, so it is deterministic) and outputs probability
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
- **Label-blind control**: a model trained like the targets but only on day D's held-out rows that did not
  recalibrate the reference (pipelines/controls.py). It never saw an audited label, so its true eps on the
  audited rows is 0, yet it knows day D's rates. If the reference fits day D within the plan's kappa, its valid
  bound is positive with probability at most 1 - confidence (about 5% of correct nights flag by chance); a
  positive bound says the reference does not fit day D, and the night's verdicts are untrusted. The smallest
  kappa that brings its bound to 0 (`auditing.robustness.breaking_kappa` against a claim of 0) is the night's
  measured reference misfit.

A failing control means the audit cannot be trusted tonight (a bug, or a reference that does not fit day D
within the plan's kappa); the flow alerts CONTROL_FAILED and marks the night's other verdicts untrusted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from auditing.bounds import pointwise_bounds
from auditing.errors import LabelDPInputError
from auditing.expected_game import (
    expected_correct_at,
    expected_correct_record,
    expected_histogram,
    expected_record,
)
from auditing.keyed_random import STREAM_CONTROL, keyed_uniform
from auditing.selection import selection_strategy

POSITIVE, NEGATIVE, LABEL_BLIND = "positive", "negative", "label-blind"
CONTROL_KINDS = (POSITIVE, NEGATIVE, LABEL_BLIND)
# The reason a flagged label-blind control gives the night's verdicts (the untrusted machinery carries it).
REFERENCE_MISFIT_REASON = "the reference does not fit day {date}"
TARGET, CONTROL = "target", "control"  # the warehouse column `kind`
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


def positive_control_floor(result: Mapping, power: float = FLOOR_POWER) -> dict:
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
    at most 1 - power (up to the binomial model of C, checked over many seeds in tests/test_controls.py).

    `split` strategy: c' is chosen on the selection half, independently of the bound half's outcomes, so the
    floor is the same computation at the selected c' on the bound half (m/2 rows), with the full-data rate
    at 2 c' standing in for the half's rate (the halves are a keyed random split).

    `result["expected_correct"]` is {"guesses": grid of repetition 0 over all m rows, "correct": E_c' at each}.
    Returns {floor, guesses, expected_rate, correct_quantile, power}; floor 0 when the curve is absent.
    """
    record = result.get("expected_correct") or {}
    if not record or not record.get("guesses"):
        return {"floor": 0.0, "guesses": None, "expected_rate": None, "correct_quantile": None, "power": power}
    kw = dict(method=result["method"], delta=result["delta"], kappa=float(result.get("kappa") or 0.0))
    grid = np.asarray(record["guesses"], dtype=np.float64)
    expected = np.asarray(record["correct"], dtype=np.float64)
    if selection_strategy(result["strategy"]).uses_halves:
        guesses = np.array([int(result["selected_guesses"])])
        rate = np.interp(2.0 * guesses, grid, expected) / (2.0 * guesses)
        m, confidence = int(result["selected_m"]), float(result["confidence"])
    else:
        guesses = grid.astype(np.int64)
        rate = expected / grid
        m, confidence = int(result["m"]), float(result["point_confidence"])
    rate = np.clip(rate, 0.0, 1.0)
    c_low = stats.binom.ppf(1.0 - power, guesses, rate).astype(np.int64)
    bounds = pointwise_bounds(c_low, guesses, m, confidence=confidence, **kw)
    best = int(np.argmax(bounds))
    return {"floor": float(bounds[best]), "guesses": int(guesses[best]), "expected_rate": float(rate[best]),
            "correct_quantile": int(c_low[best]), "power": power}


# ------------------------------------------------------------------------------------------ the verdict


@dataclass(frozen=True)
class ControlCheck:
    """A control's outcome: passed, and in words why (for the warehouse, the report and the alert)."""

    control: str  # positive | negative | label-blind
    passed: bool
    epsilon_lower_bound: float
    floor: float | None  # positive: the pre-registered floor
    ceiling: float  # positive: eps_c; negative and label-blind: 0
    message: str
    floor_detail: dict | None = None
    misfit_kappa: float | None = None  # label-blind: the smallest kappa that brings its bound to 0

    def to_dict(self) -> dict:
        return asdict(self)


def check_control(control: str, result: Mapping, epsilon_c: float | None = None) -> ControlCheck:
    """Judges a control's `AuditResult.to_dict()`.

    positive: passes iff floor < eps_lb <= eps_c. A floor of 0 means the audit has no power at this m: the
    control cannot show that the audit detects anything, which fails it too; except under the ``split``
    strategy, where the floor is conditional on the c' the selection half chose (a small c' can leave no
    power at that point by chance), so there a floor of 0 asks only for a positive bound.
    negative: passes iff eps_lb == 0. label-blind: passes iff eps_lb == 0 at the result's kappa (about 5% of
    correct nights fail by chance at 95% confidence); its misfit_kappa is reported either way.
    """
    if control not in CONTROL_KINDS:
        raise LabelDPInputError(f"control must be one of {list(CONTROL_KINDS)}; got {control!r}")
    eps_lb = float(result["epsilon_lower_bound"])
    kappa = float(result.get("kappa") or 0.0)
    label = (f"{result['confidence']:.0%} confidence, {result['strategy']}, {result['method']}, "
             f"delta={result['delta']:g}, kappa={kappa:g}")
    if control == LABEL_BLIND:
        from auditing.robustness import breaking_kappa

        misfit = breaking_kappa(result, 0.0)
        passed = eps_lb == 0.0
        message = (f"label-blind control (trained only on held-out rows, true eps 0 on the audited rows): valid "
                   f"eps_lb {eps_lb:.4f} "
                   + ("= 0: the reference fits the day within kappa" if passed else
                      "> 0: the reference does not fit the day within kappa (a correct night shows this about "
                      f"{1 - float(result['confidence']):.0%} of the time by chance)")
                   + f"; measured reference misfit: kappa {misfit:.3g} brings it to 0 ({label})")
        return ControlCheck(LABEL_BLIND, passed, eps_lb, None, 0.0, message, None, misfit)
    if control == NEGATIVE:
        passed = eps_lb == 0.0
        message = (f"negative control (a copy of the reference): valid eps_lb {eps_lb:.4f} "
                   + ("= 0 as it must be" if passed else "> 0: the audit reports leakage from a model that never "
                      "saw the day's labels") + f" ({label})")
        return ControlCheck(NEGATIVE, passed, eps_lb, None, 0.0, message)
    eps_c = check_control_epsilon(epsilon_c, "epsilon_c")
    detail = positive_control_floor(result)
    floor = detail["floor"]
    if eps_lb > eps_c:
        passed, why = False, f"exceeds the control's true eps_c = {eps_c:g}: the bound is not valid here"
    elif floor <= 0.0 and selection_strategy(result["strategy"]).uses_halves:
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
    "CONTROL_KINDS", "FLOOR_POWER", "LABEL_BLIND", "NEGATIVE", "POSITIVE", "REFERENCE_MISFIT_REASON", "ControlCheck",
    "check_control", "check_control_epsilon", "expected_correct_at", "expected_correct_record",
    "expected_histogram", "expected_record", "positive_control_floor", "rr_keep_probability",
    "rr_oracle_probabilities",
]
