"""How much to trust a verdict: tau-robustness (`breaking_tau`) and the detection floor (issue 9).

Both are claim-dependent: they are computed from an audit result (`AuditResult` or its ``to_dict()``) and a
claimed epsilon, where the verdict is computed, never inside the scoring job, so one stored scoring result can
be judged against any claim. They use only what the result carries: repetition 0's sweep counts (``curve``;
both halves' counts in ``split_halves`` for the split strategy), m, the method, delta, the confidence and the
per-point confidence. No row-level data.

breaking_tau (paper Thm. 10, 16, 17; the tau assumption TV(D|x, D'|x) <= tau)
    The largest tau in [0, 1) at which the VALID bound (same counts, same selection strategy, same confidence;
    for ``split`` the grid index is chosen again on the selection half at each tau, as `select_split` does)
    still exceeds the claimed eps; 0 when it does not at tau = 0. The verdict itself stays computed at the
    plan's tau; this says for how large a distribution shift between day D and the reference's day the same
    counts would still disprove the claim.

    Monotone decision. For one (c, c') point:
    - binomial (Thm. 16/17): tau enters only through beta = e^eps / (e^eps + q), q = (1 - tau) / (1 + tau), so
      the rejection of eps at tau depends on eps - log q(tau) alone and the bound is
      bound(tau) = max(0, bound(0) + log q(tau)): strictly decreasing in tau while positive;
    - fdp (Thm. 10, Alg. 3 on g(s) = f(min(1, s + tau))): a larger tau makes g pointwise smaller (f is
      non-increasing), a weaker constraint in every step of the recursion, so a mu rejected at tau is
      rejected at every smaller tau and the bound is non-increasing in tau.
    The valid bound of ``bonferroni`` / ``max`` is a max over points of such functions, hence non-increasing,
    and "bound(tau) > claimed" holds on an interval [0, tau*). Bisection on that decision (the lower end of the
    bracket is always a tau where it holds) returns tau* from below, to a relative width of `TAU_TOLERANCE`
    (f-DP bounds can break at tau ~ 1e-5, so the width is relative, with a floor of 1e-9). For ``split``
    the re-selection can change the chosen index with tau; at a fixed index the decision is monotone (above),
    and the bisection returns a tau where the decision holds, next to one where it fails.
    (tests/test_robustness.py checks both methods against brute force over a fine tau grid.)

detection_floor_rows
    From the grid, m and the confidence alone: the smallest number N of fully exposed labels (an attacker
    right on every one of its guesses on them, ranking them first, and wrong elsewhere: c = min(c', N) at
    grid point c') for which the audit's valid bound (each point at the per-point confidence the strategy
    uses) would exceed the claimed eps. None when no N can (the audit is INCONCLUSIVE for this claim: the
    same condition as max_certifiable_epsilon <= claimed). It is a necessary condition ("the audit would have
    flagged the claim only if at least N labels were fully exposed"), not a sufficient one: in the observational
    game no attacker is right on every guess about an exposed label (when the counterfactual y1 equals y0 the
    bit b cannot be told), so real leaks need several times N rows (benchmarks/results/blind_spots.md). For ``split`` the bound is computed on the bound half, so the exposed labels must number c' in
    that half: about 2 c' in all (each row lands in either half with probability 1/2), which is reported.

exposed_rows_floor (`auditing.exposure_floor`)
    The game-aware floor, the one the report's PASS sentence states: the fewest totally exposed labels
    (typical of the audited rows) with which this audit flags the claim with 95% probability, from the
    result's reference-probability histogram, score, grid and confidence. Always >= what a perfect attacker
    needs in practice; None with a stated reason (`exposure_floor.exposed_floor_note`) for split, a custom
    score, k-class labels, INCONCLUSIVE, a result without prior_histogram, or when exposing every row would
    not flag the claim with that power.

A PASS is "weak" (`is_weak_pass`) when the game-aware floor exceeds 1% of the audited rows
(`WEAK_PASS_FRACTION`), or is None because no exposure flags the claim with 95% power; where the game-aware
floor cannot be computed, the perfect-attacker floor is used instead (a floor above 1% there is weak a fortiori).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from auditing.binomial_bounds import pure_epsilon_lower_bounds
from auditing.bounds import epsilon_lower_bound, rejects
from auditing.errors import LabelDPInputError
from auditing.selection import select_split
from auditing.sweep import SweepCounts

TAU_TOLERANCE = 1e-3  # relative width of the final bisection bracket in tau
_TAU_FLOOR = 1e-9  # absolute width below which the bracket is not split further
WEAK_PASS_FRACTION = 0.01  # a PASS whose detection floor exceeds this fraction of the audited rows is weak
_COMPUTE = object()  # exposed_floor_figures: compute the floor (no stored value given)


def _as_dict(result: Any) -> Mapping:
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, Mapping):
        raise LabelDPInputError(f"result must be an AuditResult or its to_dict(); got {type(result).__name__}")
    return data


def _claimed(claimed_epsilon: float) -> float:
    claimed = float(claimed_epsilon)
    if not claimed >= 0:
        raise LabelDPInputError(f"claimed epsilon must be >= 0 (inf for non-private); got {claimed_epsilon!r}")
    return claimed


def _curve_arrays(data: Mapping) -> tuple[np.ndarray, np.ndarray]:
    curve = data.get("curve") or []
    if not curve:
        raise LabelDPInputError("result: no curve (repetition 0's sweep counts) to recompute the bound from")
    guesses = np.array([int(p["guesses"]) for p in curve], dtype=np.int64)
    correct = np.array([int(p["correct"]) for p in curve], dtype=np.int64)
    return guesses, correct


def _halves(data: Mapping) -> tuple[SweepCounts, SweepCounts]:
    halves = data.get("split_halves") or {}
    if set(halves) != {"selection", "bound"}:
        raise LabelDPInputError("result: the split strategy's halves are missing (split_halves); the result was "
                                "written before they were recorded: re-run the audit")
    out = []
    for name in ("selection", "bound"):
        half = halves[name]
        out.append(SweepCounts(m=int(half["m"]), guesses=np.asarray([half["guesses"]], dtype=np.int64),
                               correct=np.asarray([half["correct"]], dtype=np.int64)))
    return out[0], out[1]


def _any_point_exceeds(correct: np.ndarray, guesses: np.ndarray, m: int, claimed: float, *, method: str,
                       delta: float, confidence: float, tau: float) -> bool:
    """max over the points of the point bound (at `confidence`) > claimed, without computing every bound.

    A point whose test does not reject eps = claimed cannot have a bound above it (rejection is monotone in
    eps), so only rejecting points are bounded; for binomial the pure bound (Thm. 17) is an upper bound on the
    delta > 0 bound (Thm. 16), which orders and prunes the scan.
    """
    if math.isinf(claimed):
        return False
    kw = dict(method=method, delta=delta, confidence=confidence, tau=tau)
    pure = pure_epsilon_lower_bounds(correct, guesses, confidence=confidence, tau=tau)
    if method == "binomial" and delta == 0.0:
        return bool(pure.max(initial=0.0) > claimed)
    for index in np.lexsort((np.arange(pure.size), -pure)):
        c, g = int(correct[index]), int(guesses[index])
        if method == "binomial" and pure[index] <= claimed:
            return False
        if c == 0 or not rejects(c, g, m, claimed, **kw):
            continue
        if epsilon_lower_bound(c, g, m, **kw) > claimed:
            return True
    return False


def valid_bound_exceeds(result: Any, claimed_epsilon: float, tau: float) -> bool:
    """Would the result's valid bound, recomputed at ``tau`` (same counts, strategy and confidence), exceed
    the claimed epsilon? For ``split`` the index is selected again at ``tau`` on the selection half."""
    data = _as_dict(result)
    claimed = _claimed(claimed_epsilon)
    if not 0.0 <= tau < 1.0:
        return False  # tau >= 1: every bound is 0, which exceeds no claim >= 0
    method, delta = data["method"], float(data["delta"])
    if data["strategy"] == "split":
        if math.isinf(claimed):
            return False
        selection_half, bound_half = _halves(data)
        chosen = select_split(selection_half, bound_half, method=method, confidence=float(data["confidence"]),
                              delta=delta, tau=tau)
        return chosen.epsilon_lower_bound > claimed
    guesses, correct = _curve_arrays(data)
    return _any_point_exceeds(correct, guesses, int(data["m"]), claimed, method=method, delta=delta,
                              confidence=float(data["point_confidence"]), tau=tau)


def breaking_tau(result: Any, claimed_epsilon: float, *, tolerance: float = TAU_TOLERANCE) -> float:
    """The largest tau in [0, 1) at which the valid bound still exceeds the claim (module docstring), from
    below: the returned tau is one where it does (or 0 when it does not even at tau = 0)."""
    if not valid_bound_exceeds(result, claimed_epsilon, 0.0):
        return 0.0
    lo, hi = 0.0, 1.0  # invariant: the decision holds at lo and fails at hi (tau = 1 gives bound 0)
    while hi - lo > max(tolerance * hi, _TAU_FLOOR):
        mid = 0.5 * (lo + hi)
        if valid_bound_exceeds(result, claimed_epsilon, mid):
            lo = mid
        else:
            hi = mid
    return lo


def _point_exceeds(c: int, g: int, m: int, claimed: float, kw: dict) -> bool:
    """bound(c, g) > claimed for one point; the cheap tests first (module docstring of `_any_point_exceeds`)."""
    if c < 1:
        return False
    if kw["method"] == "binomial":
        pure = float(pure_epsilon_lower_bounds(c, g, confidence=kw["confidence"], tau=kw["tau"]))
        if pure <= claimed:
            return False
        if kw["delta"] == 0.0:
            return True
    if not rejects(c, g, m, claimed, **kw):
        return False
    return epsilon_lower_bound(c, g, m, **kw) > claimed


def detection_floor_rows(result: Any, claimed_epsilon: float) -> int | None:
    """The smallest number N of fully exposed labels that would make this audit report a VIOLATION of the
    claim (module docstring); None when even a perfect attacker could not (INCONCLUSIVE).

    An attacker that ranks its N exposed labels first and is wrong on every other guess has c = min(c', N)
    correct at grid point c'; the audit flags the claim iff some grid point's bound exceeds it. The bound of a
    point grows with c (more correct guesses, more evidence), so N = min over the grid of c_min(c'), the
    smallest c <= c' whose bound at c' exceeds the claim (binary search; a point is searched only when it can
    beat the best N so far).
    """
    data = _as_dict(result)
    claimed = _claimed(claimed_epsilon)
    if math.isinf(claimed):
        return None
    method, delta, tau = data["method"], float(data["delta"]), float(data["tau"])
    if data["strategy"] == "split":
        _, bound_half = _halves(data)
        grid, m, confidence, rows_per_label = bound_half.guesses[0], bound_half.m, float(data["confidence"]), 2
    else:
        grid, _ = _curve_arrays(data)
        m, confidence, rows_per_label = int(data["m"]), float(data["point_confidence"]), 1
    kw = dict(method=method, delta=delta, confidence=confidence, tau=tau)
    best = None
    for g in np.unique(grid):
        g = int(g)
        top = g if best is None else min(g, best - 1)  # only an N below the best so far matters
        if top < 1 or not _point_exceeds(top, g, m, claimed, kw):
            continue
        lo, hi = 0, top  # bound(lo, g) does not exceed the claim (c = 0 never does), bound(hi, g) does
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _point_exceeds(mid, g, m, claimed, kw):
                hi = mid
            else:
                lo = mid
        best = hi
    return None if best is None else best * rows_per_label


def is_weak_pass(status: str, floor_rows: int | None, audited_rows: int, exposed_rows: int | None = None,
                 exposed_computed: bool = False) -> bool:
    """A PASS whose detection floor exceeds `WEAK_PASS_FRACTION` of the audited rows (issue 9, item 3): the
    game-aware `exposed_rows` when ``exposed_computed`` (None there: no exposure flags the claim with 95%
    power, the weakest PASS), else the perfect-attacker ``floor_rows`` (module docstring)."""
    if status != "PASS":
        return False
    if exposed_computed:
        return exposed_rows is None or exposed_rows > WEAK_PASS_FRACTION * audited_rows
    return floor_rows is not None and floor_rows > WEAK_PASS_FRACTION * audited_rows


def exposed_floor_figures(result: Any, claimed_epsilon: float, exposed_rows: Any = _COMPUTE) -> dict:
    """{exposed_rows_floor, exposed_rows_floor_power, exposed_rows_floor_note, exposed_floor_computed}: the
    game-aware floor (computed unless ``exposed_rows`` is given, e.g. read back from the warehouse) and, when
    it is None, why (`auditing.exposure_floor`)."""
    from auditing.exposure_floor import (
        DEFAULT_POWER,
        exposed_floor_note,
        exposed_floor_unavailable,
        exposed_rows_floor,
    )

    data = _as_dict(result)
    claimed = _claimed(claimed_epsilon)
    if exposed_rows is _COMPUTE:
        exposed_rows = exposed_rows_floor(data, claimed)
    unavailable = exposed_floor_unavailable(data, claimed)
    return {"exposed_rows_floor": exposed_rows, "exposed_rows_floor_power": DEFAULT_POWER,
            "exposed_rows_floor_note": exposed_floor_note(data, claimed, exposed_rows),
            "exposed_floor_computed": unavailable is None}


def verdict_robustness(result: Any, claimed_epsilon: float, status: str) -> dict:
    """The claim-dependent trust figures of one verdict, for the warehouse row, report, alert and CLI."""
    data = _as_dict(result)
    floor = detection_floor_rows(data, claimed_epsilon)
    exposed = exposed_floor_figures(data, claimed_epsilon)
    return {"breaking_tau": breaking_tau(data, claimed_epsilon), "detection_floor_rows": floor, **exposed,
            "weak_pass": is_weak_pass(status, floor, int(data["m"]), exposed["exposed_rows_floor"],
                                      exposed["exposed_floor_computed"])}


__all__ = [
    "TAU_TOLERANCE",
    "WEAK_PASS_FRACTION",
    "breaking_tau",
    "detection_floor_rows",
    "exposed_floor_figures",
    "is_weak_pass",
    "valid_bound_exceeds",
    "verdict_robustness",
]
