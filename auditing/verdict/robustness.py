"""How much to trust a verdict: kappa-robustness (`breaking_kappa`) and the detection floor.

Both are claim-dependent: they are computed from an audit result (`AuditResult`) and a
claimed epsilon, where the verdict is computed, never inside the scoring job, so one stored scoring result can
be judged against any claim. They use only what the result carries: repetition 0's sweep counts (``curve``;
both halves' counts in ``split_halves`` for the split strategy), m, the method, delta, the confidence and the
per-point confidence. No row-level data.

breaking_kappa (docs/soundness.md; kappa bounds |log D'(y|x) - log D(y|x)| on every audited row)
    The largest kappa >= 0 at which the VALID bound (same counts, same selection strategy, same confidence;
    for ``split`` the grid index is chosen again on the selection half at each kappa, as `select_split` does)
    still exceeds the claimed eps; 0 when it does not at kappa = 0. The verdict itself stays computed at the
    plan's kappa; this says by how much (a factor e^breaking_kappa in the click odds of some row) the reference
    could misjudge day D before the same counts stop disproving the claim.

    Monotone decision. For one (c, c') point both methods test the claim through (eps + kappa, e^kappa delta):
    - binomial: with delta = 0 the bound is max(0, bound(0) - kappa); with delta > 0 a larger kappa raises beta
      and the delta term, both making rejection harder, so the bound is non-increasing in kappa;
    - fdp: f_{eps+kappa, e^kappa delta} is pointwise non-increasing in kappa, a weaker constraint in every step
      of Algorithm 3, so an eps rejected at kappa is rejected at every smaller kappa.
    The valid bound of ``bonferroni`` / ``max`` is a max over points of such functions, hence non-increasing,
    and "bound(kappa) > claimed" holds on an interval [0, kappa*). Bisection on that decision (the lower end of
    the bracket is always a kappa where it holds) returns kappa* from below, to a relative width of
    `KAPPA_TOLERANCE`. For ``split`` the re-selection can change the chosen index with kappa; at a fixed index
    the decision is monotone (above), and the bisection returns a kappa where the decision holds, next to one
    where it fails. (tests/auditing/verdict/test_robustness.py checks both methods against brute force over a
    fine grid.)

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

exposed_rows_floor (`auditing.verdict.exposure_floor`)
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
from typing import Any

import numpy as np

from auditing.bounds.lower_bound import point_exceeds
from auditing.bounds.selection import Evidence, selection_strategy
from auditing.game.sweep import SweepCounts
from auditing.result import AuditResult
from auditing.verdict.types import WEAK_PASS_FRACTION
from labeldp.errors import LabelDPInputError
from labeldp.names import check_claim

KAPPA_TOLERANCE = 1e-3  # relative width of the final bisection bracket in kappa
_KAPPA_FLOOR = 1e-9  # absolute width below which the bracket is not split further
# kappa beyond which no bound is positive: logit(beta*) of a Clopper-Pearson limit stays below ~40 in doubles
_KAPPA_CEILING = 64.0
_COMPUTE = object()  # exposed_floor_figures: compute the floor (no stored value given)


def _claimed(claimed_epsilon: float) -> float:
    return check_claim(claimed_epsilon)


def _halves(result: AuditResult) -> tuple[SweepCounts, SweepCounts] | None:
    halves = result.split_halves
    if halves is None:
        return None
    return tuple(SweepCounts(m=half.m, guesses=np.asarray([half.guesses], dtype=np.int64),
                             correct=np.asarray([half.correct], dtype=np.int64))
                 for half in (halves.selection, halves.bound))


def evidence_of(result: AuditResult) -> Evidence:
    """The counts a result keeps for judging it again (`auditing.bounds.selection.Evidence`): repetition 0's
    curve, or the selection half's when only the halves were kept.

    Raises:
        LabelDPInputError: the result has no curve and no split halves to recompute from.
    """
    halves = _halves(result)
    if result.curve:
        guesses = np.array([p.guesses for p in result.curve], dtype=np.int64)
        correct = np.array([p.correct for p in result.curve], dtype=np.int64)
    elif halves is not None:
        guesses, correct = halves[0].guesses[0], halves[0].correct[0]
    else:
        raise LabelDPInputError("result: no curve (repetition 0's sweep counts) to recompute the bound from")
    return Evidence(guesses=guesses, correct=correct, m=result.m, confidence=result.bound.confidence,
                    point_confidence=result.point_confidence, halves=halves)


def valid_bound_exceeds(result: AuditResult, claimed_epsilon: float, kappa: float) -> bool:
    """Would the result's valid bound, recomputed at ``kappa`` (same counts, strategy and confidence), exceed
    the claimed epsilon? For ``split`` the index is selected again at ``kappa`` on the selection half."""
    claimed = _claimed(claimed_epsilon)
    if math.isinf(claimed):
        return False
    strategy = selection_strategy(result.bound.strategy)
    return strategy.exceeds(evidence_of(result), claimed, method=result.bound.method, delta=result.bound.delta,
                            kappa=kappa)


def breaking_kappa(result: AuditResult, claimed_epsilon: float, *, tolerance: float = KAPPA_TOLERANCE) -> float:
    """The largest kappa at which the valid bound still exceeds the claim (module docstring), from below: the
    returned kappa is one where it does (or 0 when it does not even at kappa = 0)."""
    if not valid_bound_exceeds(result, claimed_epsilon, 0.0):
        return 0.0
    lo, hi = 0.0, 1.0  # invariant: the decision holds at lo and fails at hi
    while valid_bound_exceeds(result, claimed_epsilon, hi):
        lo, hi = hi, 2.0 * hi
        if hi > _KAPPA_CEILING:  # pragma: no cover - no bound survives kappa = 64
            return lo
    while hi - lo > max(tolerance * hi, _KAPPA_FLOOR):
        mid = 0.5 * (lo + hi)
        if valid_bound_exceeds(result, claimed_epsilon, mid):
            lo = mid
        else:
            hi = mid
    return lo


def detection_floor_rows(result: AuditResult, claimed_epsilon: float) -> int | None:
    """The smallest number N of fully exposed labels that would make this audit report a VIOLATION of the
    claim (module docstring); None when even a perfect attacker could not (INCONCLUSIVE).

    An attacker that ranks its N exposed labels first and is wrong on every other guess has c = min(c', N)
    correct at grid point c'; the audit flags the claim iff some grid point's bound exceeds it. The bound of a
    point grows with c (more correct guesses, more evidence), so N = min over the grid of c_min(c'), the
    smallest c <= c' whose bound at c' exceeds the claim (binary search; a point is searched only when it can
    beat the best N so far).
    """
    claimed = _claimed(claimed_epsilon)
    if math.isinf(claimed):
        return None
    strategy = selection_strategy(result.bound.strategy)
    grid, m, confidence, rows_per_label = strategy.floor_setup(evidence_of(result))
    kw = dict(method=result.bound.method, delta=result.bound.delta, confidence=confidence, kappa=result.bound.kappa)
    best = None
    for g in np.unique(grid):
        g = int(g)
        top = g if best is None else min(g, best - 1)  # only an N below the best so far matters
        if top < 1 or not point_exceeds(top, g, m, claimed, **kw):
            continue
        lo, hi = 0, top  # bound(lo, g) does not exceed the claim (c = 0 never does), bound(hi, g) does
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if point_exceeds(mid, g, m, claimed, **kw):
                hi = mid
            else:
                lo = mid
        best = hi
    return None if best is None else best * rows_per_label


def is_weak_pass(status: str, floor_rows: int | None, audited_rows: int, exposed_rows: int | None = None,
                 exposed_computed: bool = False) -> bool:
    """A PASS whose detection floor exceeds `WEAK_PASS_FRACTION` of the audited rows: the
    game-aware `exposed_rows` when ``exposed_computed`` (None there: no exposure flags the claim with 95%
    power, the weakest PASS), else the perfect-attacker ``floor_rows`` (module docstring)."""
    if status != "PASS":
        return False
    if exposed_computed:
        return exposed_rows is None or exposed_rows > WEAK_PASS_FRACTION * audited_rows
    return floor_rows is not None and floor_rows > WEAK_PASS_FRACTION * audited_rows


def exposed_floor_figures(result: AuditResult, claimed_epsilon: float, exposed_rows: Any = _COMPUTE) -> dict:
    """{exposed_rows_floor, exposed_rows_floor_power, exposed_rows_floor_note, exposed_floor_computed}: the
    game-aware floor (computed unless ``exposed_rows`` is given, e.g. read back from the warehouse) and, when
    it is None, why (`auditing.verdict.exposure_floor`)."""
    from auditing.verdict.exposure_floor import (
        DEFAULT_POWER,
        exposed_floor_note,
        exposed_floor_unavailable,
        exposed_rows_floor,
    )

    claimed = _claimed(claimed_epsilon)
    if exposed_rows is _COMPUTE:
        exposed_rows = exposed_rows_floor(result, claimed)
    unavailable = exposed_floor_unavailable(result, claimed)
    return {"exposed_rows_floor": exposed_rows, "exposed_rows_floor_power": DEFAULT_POWER,
            "exposed_rows_floor_note": exposed_floor_note(result, claimed, exposed_rows),
            "exposed_floor_computed": unavailable is None}


def verdict_robustness(result: AuditResult, claimed_epsilon: float, status: str) -> dict:
    """The claim-dependent trust figures of one verdict, for the warehouse row, report, alert and CLI."""
    floor = detection_floor_rows(result, claimed_epsilon)
    exposed = exposed_floor_figures(result, claimed_epsilon)
    return {"breaking_kappa": breaking_kappa(result, claimed_epsilon), "detection_floor_rows": floor, **exposed,
            "weak_pass": is_weak_pass(status, floor, result.m, exposed["exposed_rows_floor"],
                                      exposed["exposed_floor_computed"])}


__all__ = [
    "KAPPA_TOLERANCE", "breaking_kappa", "detection_floor_rows", "exposed_floor_figures", "is_weak_pass",
    "valid_bound_exceeds", "verdict_robustness"
]
