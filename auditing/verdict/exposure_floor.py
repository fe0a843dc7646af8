"""How many fully exposed labels this audit would actually catch, in the observational game.

`auditing.verdict.robustness.detection_floor_rows` counts the exposed labels a PERFECT attacker (right on every guess)
would need. No attacker of the observational game (paper Alg. 2, Sec. 6.2) is perfect on an exposed label:
when the counterfactual y1 ~ M'(x) equals the training label y0 (probability M'(x)[y0]) the released label is
the same whether b = 0 or b = 1, and even knowing y0 the guess is right with probability 1 / (1 + M'(x)[y0]).
benchmarks/results/blind_spots.md measures the consequence: the perfect-attacker floor is a valid necessary
condition but 16-64x below the exposure the audit needs.

`game_detection_floor` is the game-aware figure: the smallest number N of audited rows whose label a target
reveals totally (probability 1 on y0, the reference's output elsewhere) such that this audit, with its own
score function, grid, confidence, method, delta and kappa, reports a VIOLATION of the claim with probability at
least `power`. Computed without any row data from what the result carries:

- the day's reference probabilities over the audited rows (``prior_histogram``, `auditing.risk.figures`), with
  labels y0 ~ M'(x) (the reference exact, kappa = 0): each exposed row's game outcomes (b, y1) have known
  probabilities and scores (`auditing.verdict.controls.expected_histogram` on a target = one-hot(y0));
- every other row scores 0 (target = reference) and is a fair coin for the attacker;
- the expected correct guesses E_c' at each grid point (the attacker takes the largest |score| first), and the
  binomial (1 - power)-quantile of the correct count there, bounded as the audit bounds it (the same argument
  as `auditing.verdict.controls.positive_control_floor`); the audit flags if any grid point's bound exceeds the claim.

The exposed rows are taken to be typical of the audited rows (their reference probabilities follow the day's
histogram); a subpopulation the reference finds easier or harder to predict needs fewer or more. Binary
labels only (the prior histogram of a k-class model keeps the top class alone). None when even exposing every
audited row would not flag the claim with that power.

``split`` strategy: not computed (None, with the reason). Its power hangs on the index the selection half
picks, which is noisy: a small c' whose guesses all look right on one half often holds one wrong guess on the
other, and the halves' bound is then low. Modelling the selection by its expected counts gives a floor that
is not monotone in the exposure (flagged at 2,000 of 40,000 totally exposed rows, not at 5,000), and the
measured power stays below 95% even at 8,000 (7 of 8 seeds flagged, claim eps = 1, 40,000 rows), so no
simple figure would be honest.

`exposed_rows_floor` is the verdict's figure (auditing.verdict.robustness, the warehouse column of the same name, the
report, the CLI): the floor, or None with the reason from `exposed_floor_note` (not computable for this
result: `exposed_floor_unavailable`; or no number of exposed rows flags the claim with that power).
"""

from __future__ import annotations

import math

import numpy as np

from auditing.bounds.lower_bound import any_point_exceeds
from auditing.bounds.selection import selection_strategy
from auditing.game.expected import expected_correct_at, expected_histogram
from auditing.game.prior_histogram import PriorHistogram
from auditing.game.scores import resolve_score
from auditing.game.sweep_reduce import BinSpec
from auditing.result import AuditResult
from labeldp.errors import LabelDPInputError

DEFAULT_POWER = 0.95


def _exposed_row_histogram(histogram: PriorHistogram | None, score, spec: BinSpec) -> tuple[np.ndarray, np.ndarray, int]:
    """(expected rows, expected correct) per |score| bin for ONE exposed row drawn from the audited rows, and m."""
    if histogram is None or not histogram.total or histogram.kind != "class1":
        raise LabelDPInputError("game_detection_floor needs the binary prior_histogram of the audited rows")
    used = np.flatnonzero(histogram.counts)
    p = histogram.midpoints()[used]
    counts = histogram.counts[used].astype(np.float64)
    reference = np.column_stack([np.concatenate([1 - p, 1 - p]), np.concatenate([p, p])])
    labels = np.concatenate([np.ones(p.size, np.int64), np.zeros(p.size, np.int64)])
    target = np.eye(2)[labels]  # total exposure: probability 1 on the training label
    weights = np.concatenate([counts * p, counts * (1 - p)]) / counts.sum()  # y0 ~ M'(x)
    rows, hits = expected_histogram(target, reference, labels, score, spec, weights=weights)
    return rows, hits, int(histogram.total)


def exposed_floor_unavailable(result: AuditResult, claimed_epsilon: float) -> str | None:
    """Why `exposed_rows_floor` cannot be computed for this result and claim (cheap checks only), or None."""
    claimed = float(claimed_epsilon)
    if math.isinf(claimed) or result.max_certifiable_epsilon <= claimed:
        return ("INCONCLUSIVE: no number of exposed labels can flag this claim (max certifiable eps <= claimed "
                "eps)")
    if result.score not in ("paper", "log-ratio"):
        return (f"the score is {result.score!r}: the exposed rows' scores are known only for the named "
                "scores (paper, log-ratio)")
    unsupported = selection_strategy(result.bound.strategy).exposure_floor_reason()
    if unsupported is not None:
        return unsupported
    prior = result.prior_histogram
    if prior is None or not prior.total:
        return ("the result was written before the reference's probability histogram (prior_histogram) was "
                "recorded: re-run the scoring")
    if prior.kind != "class1":
        return "k-class labels: the game-aware floor is computed for binary labels only"
    if prior.total != result.m:
        return f"prior_histogram holds {prior.total} rows but the audit has m = {result.m}"
    return None


def undetectable_note(power: float = DEFAULT_POWER) -> str:
    return (f"even with every audited row's label fully exposed, this audit would flag the claim with "
            f"probability below {power:.0%}")


def exposed_floor_note(result: AuditResult, claimed_epsilon: float, floor: int | None,
                       power: float = DEFAULT_POWER) -> str | None:
    """Why the `exposed_rows_floor` figure is None (None when it is a number)."""
    if floor is not None:
        return None
    return exposed_floor_unavailable(result, claimed_epsilon) or undetectable_note(power)


def exposed_rows_floor(result: AuditResult, claimed_epsilon: float, power: float = DEFAULT_POWER) -> int | None:
    """The verdict's game-aware floor (module docstring): the fewest totally exposed labels with which this
    audit flags the claim with probability >= power; None when not computable (`exposed_floor_unavailable`)
    or when no number of exposed rows does (`exposed_floor_note` says which)."""
    if exposed_floor_unavailable(result, claimed_epsilon) is not None:
        return None
    return game_detection_floor(result, claimed_epsilon, power)


def game_detection_floor(result: AuditResult, claimed_epsilon: float, power: float = DEFAULT_POWER) -> int | None:
    """The fewest totally exposed labels with which this audit flags the claim with probability >= power
    (module docstring). ``result``: an `AuditResult` with its ``prior_histogram``; bonferroni
    only.
    Raises LabelDPInputError when the result cannot support it (`exposed_rows_floor` returns None instead)."""
    claimed = float(claimed_epsilon)
    if math.isinf(claimed):
        return None
    if selection_strategy(result.bound.strategy).exposure_floor_reason() is not None:
        raise LabelDPInputError(f"game_detection_floor: strategy {result.bound.strategy!r} is not supported "
                                "(bonferroni only)")
    if result.score not in ("paper", "log-ratio"):
        raise LabelDPInputError(f"game_detection_floor: needs a named score; got {result.score!r}")
    spec = BinSpec()
    score = resolve_score(result.score, result.game.score_power)
    exposed_rows, exposed_hits, m = _exposed_row_histogram(result.prior_histogram, score, spec)
    if m != result.m:
        raise LabelDPInputError(f"prior_histogram holds {m} rows but the audit has m = {result.m}")
    kw = dict(method=result.bound.method, delta=result.bound.delta, kappa=result.bound.kappa)

    grid = np.asarray([p.guesses for p in result.curve], dtype=np.int64)
    confidence = result.point_confidence

    from scipy import stats  # imported when a floor is computed: 0.3 s to import

    def flags(n: int) -> bool:
        rows = n * exposed_rows
        hits = n * exposed_hits
        rows[0] += m - n  # the other rows score 0 (bin 0) and are fair coins
        hits[0] += 0.5 * (m - n)
        rate = np.clip(expected_correct_at(rows, hits, grid) / grid, 0.0, 1.0)
        quantile = stats.binom.ppf(1.0 - power, grid, rate).astype(np.int64)
        return any_point_exceeds(quantile, grid, m, claimed, confidence=confidence, **kw)  # max bound > claim

    if not flags(m):
        return None
    lo, hi = 0, m  # flags(lo) is False (no exposure), flags(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if flags(mid):
            hi = mid
        else:
            lo = mid
    return hi


__all__ = [
    "DEFAULT_POWER",
    "exposed_floor_note",
    "exposed_floor_unavailable",
    "exposed_rows_floor",
    "game_detection_floor",
    "undetectable_note",
]
