"""The whole audit: play R repetitions of the game, reduce to sweep counts, bound, select, summarise.

`run_audit` works in-process on arrays; `audit_from_counts` turns sweep counts produced anywhere (e.g. the
Beam job's combiners) into the same `AuditResult`. Repetition 0 is pre-registered: its bound, selected by
the configured strategy, is THE valid `epsilon_lower_bound` used for decisions. The mean, std and median
over repetitions of the per-repetition max over the sweep are the paper's statistic (Sec. 6.2), reported
for comparison and labelled optimistic.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from auditing.bounds.lower_bound import best_bound, best_bounds
from auditing.bounds.selection import Selection
from auditing.config import BoundConfig, config_hash
from auditing.game.attack_curve import (
    OCTAVES,
    attack_curve_from_outcomes,
    attack_curve_from_rows,
    octave_of_fine,
)
from auditing.game.check_histograms import CheckHistograms, LegacyCheck
from auditing.game.config import GameConfig
from auditing.game.counts import GameCounts
from auditing.game.expected import expected_correct_record
from auditing.game.kernel import SignedCounts, boundary_rows, compiled_score, game_tables, slot_histograms
from auditing.game.play import (
    as_class_probabilities,
    as_labels,
    as_reference_probabilities,
    as_row_ids,
    play_repetition,
)
from auditing.game.prior_histogram import PriorHistogram
from auditing.game.row_groups import RowGroups
from auditing.game.score_histogram import coarsen, score_histogram
from auditing.game.scores import SCORES, resolve_score
from auditing.game.slots import SlotPlan, selection_half_mask
from auditing.game.sweep import SweepCounts, correct_at, rank_order
from auditing.game.sweep_reduce import BinSpec, boundary_bins, cut_bin_mask, exact_counts
from auditing.records.game import (
    AttackCurve,
    CurvePoint,
    ExpectedCorrect,
    HalfCounts,
    ScoreHistogram,
    SplitHalves,
)
from auditing.result import AuditResult
from auditing.verdict.capacity_check import (
    capacity_check,
    histograms_from_views,
    histograms_of,
    unchecked,
    views_of_scores,
)
from labeldp.errors import LabelDPInputError

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]

PAPER_STATISTIC_LABEL = (
    "paper's statistic: per repetition, max over the sweep of uncorrected bounds (optimistic, not a valid "
    "lower bound at the stated confidence)"
)


# Why an in-process audit has no capacity check when it is given no check rows.
NO_CHECK_ROWS_GIVEN = "no check rows were given (rows whose labels trained neither the model nor the reference)"


@dataclass(frozen=True)
class CheckRows:
    """The check rows of a capacity check (auditing.verdict.capacity_check): rows of the audited day whose labels trained
    neither the model nor the reference (nor its correction), with both models' probabilities and the labels.
    Same shapes as `run_audit`'s arguments; row ids must differ from the audited rows'."""

    p_target: object
    p_reference: object
    labels: object
    row_ids: object


_SPLIT_TOO_SMALL = (
    "the {strategy} strategy needs audited rows in both halves, and the keyed split of these {n} row(s) left one "
    "half empty; split halves the evidence and is meant for thousands of rows: use the bonferroni strategy "
    "(--strategy bonferroni, or the plan's audit.strategy) for a small table")


def _counts(scores, correct, row_ids, grid) -> np.ndarray:
    return correct_at(correct, rank_order(scores, row_ids), grid)


def run_audit(
    p_target, p_reference, labels, row_ids=None, game: GameConfig | None = None, bound: BoundConfig | None = None,
    progress: ProgressCallback | None = None, score_function=None, expected_curve: bool = False,
    check: CheckRows | None = None, row_groups: RowGroups | None = None,
) -> AuditResult:
    """Plays the game (paper Alg. 2) on arrays and audits the counts: `audit_counts` of `play_game`.

    p_target, p_reference: class-1 probabilities (binary, 1-D) or n x k class probabilities.
    labels: training labels y0. row_ids: unique integers keying the randomness (default 0..n-1).
    score_function: optional callable (p_target_of_label, p_reference_of_label) -> score, overriding
    game.score (recorded as "custom"). expected_curve: also record the game's expected correct guesses over
    the grid (`auditing.verdict.controls`; the positive control's pre-registered floor needs it).
    check: the day's check rows; with them the result carries the capacity check (auditing.verdict.capacity_check),
    without them a check that did not run. row_groups: the grouping the rows were selected under
    (auditing.game.row_groups; the caller left the grouped rows out), recorded on the result. The game's night
    keys the coins with its seed (`auditing.game.config.GameConfig.night`; None: the seed alone).
    """
    counts = play_game(p_target, p_reference, labels, row_ids, game, progress=progress, score_function=score_function,
                       expected_curve=expected_curve, check=check, row_groups=row_groups)
    return audit_counts(counts, bound or BoundConfig())


def play_game(
    p_target, p_reference, labels, row_ids=None, game: GameConfig | None = None,
    progress: ProgressCallback | None = None, score_function=None, expected_curve: bool = False,
    check: CheckRows | None = None, row_groups: RowGroups | None = None,
) -> GameCounts:
    """The game's claim-free output on arrays (arguments as `run_audit`): every slot of `auditing.game.slots.SlotPlan`
    counted, with the records a verdict needs. No bound setting is read."""
    game = game or GameConfig()
    target = as_class_probabilities(p_target, "p_target")
    n = target.shape[0]
    if n == 0:
        raise LabelDPInputError("p_target: no rows to audit")
    reference = as_reference_probabilities(p_reference, "p_reference", n=n, n_from="p_target")
    if reference.shape[1] != target.shape[1]:
        raise LabelDPInputError(
            f"p_reference has {reference.shape[1]} classes but p_target has {target.shape[1]}"
        )
    y0 = as_labels(labels, target.shape[1])
    if y0.shape[0] != n:
        raise LabelDPInputError(f"labels: has {y0.shape[0]} rows but p_target has {n}")
    ids = np.arange(n, dtype=np.int64) if row_ids is None else as_row_ids(row_ids, n)
    score = resolve_score(score_function or game.score, game.score_power)

    if score_function is None and compiled_score(game.score):
        counts, halves, histogram, attack = compiled_sweep(target, reference, y0, ids, game, progress)
    else:
        logger.info("custom score function: the game runs on the numpy path (auditing.game.play.play_repetition), "
                    "not the compiled kernel (auditing.game.kernel serves the built-in scores %s)", list(SCORES.names()))
        counts, halves, histogram, attack = numpy_sweep(target, reference, y0, ids, game, score, progress)
    expected = expected_correct_record(target, reference, y0, score, game.grid_for(n)) if expected_curve else None
    histograms = None if check is None else _check_histograms(target, reference, y0, ids, check, game,
                                                             score_function)
    return GameCounts(game=game, counts=counts, halves=halves, score_histogram=histogram,
                      prior_histogram=PriorHistogram.from_reference(reference), expected_correct=expected,
                      check=histograms, row_groups=row_groups, custom_score=score_function is not None,
                      attack_curve=attack)


def _check_histograms(target, reference, y0, ids, check: CheckRows, game: GameConfig,
                      score_function) -> CheckHistograms:
    """Repetition 0's capacity-check histograms of the audited rows' halves and of the check rows (validated here
    like the audited arrays); the compiled kernel for a built-in score, the numpy game for a custom one."""
    k = target.shape[1]
    c_target = as_class_probabilities(check.p_target, "check p_target")
    if c_target.shape[1] != k:
        raise LabelDPInputError(f"check p_target has {c_target.shape[1]} classes; the audited rows have {k}")
    m = c_target.shape[0]
    c_reference = as_reference_probabilities(check.p_reference, "check p_reference", n=m, n_from="check p_target")
    if c_reference.shape[1] != k:
        raise LabelDPInputError(f"check p_reference has {c_reference.shape[1]} classes; the audited rows have {k}")
    c_labels = as_labels(check.labels, k, "check labels")
    if c_labels.shape[0] != m:
        raise LabelDPInputError(f"check labels: has {c_labels.shape[0]} rows but check p_target has {m}")
    c_ids = as_row_ids(check.row_ids, m, "check row_ids")
    shared = int(np.intersect1d(ids, c_ids, assume_unique=True).size)
    if shared:
        raise LabelDPInputError(f"check row_ids: {shared} value(s) are also audited rows; a check row must be a row "
                                "whose label the model never saw")
    halves = selection_half_mask(ids, game.draw_seed)
    if score_function is None and compiled_score(game.score):
        audited = game_tables(target, reference, y0, ids, score=game.score, power=game.score_power,
                              bins=_KERNEL_BINS, selection=halves)
        checked = game_tables(c_target, c_reference, c_labels, c_ids, score=game.score, power=game.score_power,
                              bins=_KERNEL_BINS) if m else None
        return histograms_of(audited, checked, game.draw_seed, _KERNEL_BINS, k)
    score = resolve_score(score_function or game.score, game.score_power)
    views = []
    for p_t, p_r, y, row_ids in ((target, reference, y0, ids), (c_target, c_reference, c_labels, c_ids)):
        rows = play_repetition(p_t, p_r, y, row_ids, seed=game.draw_seed, repetition=0, score=score)
        views.append(views_of_scores(rows.scores, rows.released, rows.correct, p_r))
    return histograms_from_views(k, game.draw_seed, views[0], halves, views[1] if m else None)


def numpy_sweep(target, reference, y0, ids, game: GameConfig, score, progress):
    """The reference path, one repetition at a time with `play_repetition` and a full ranking (any score):
    (SweepCounts, the halves' SweepCounts or None, repetition 0's |score| histogram, repetition 0's attack curve
    (`auditing.game.attack_curve`))."""
    grid = game.grid_for(ids.size)
    correct = np.empty((game.repetitions, grid.size), dtype=np.int64)
    halves = histogram = attack = None
    for r in range(game.repetitions):
        rows = play_repetition(target, reference, y0, ids, seed=game.draw_seed, repetition=r, score=score)
        correct[r] = _counts(rows.scores, rows.correct, ids, grid)
        if r == 0:
            halves = _half_counts(rows.scores, rows.correct, ids, game)
            histogram = score_histogram(rows.scores, rows.correct)
            attack = attack_curve_from_rows(rows.scores, rows.correct, seed=game.draw_seed)
        if progress:
            progress(r + 1, game.repetitions)
    counts = SweepCounts(m=int(ids.size), guesses=np.broadcast_to(grid, correct.shape).copy(), correct=correct)
    return counts, halves, histogram, attack


# Repetitions per compiled call (progress is reported between groups); each call passes over every row.
_KERNEL_SLOT_GROUP = 10
# Finer bins than the Beam job's default (10 mantissa bits: 47,106 bins, 0.75 MB of histograms per repetition):
# in-process the histograms are never shuffled, and 4x fewer rows per cut bin make pass 2 4x cheaper.
_KERNEL_BINS = BinSpec(mantissa_bits=10)


def compiled_sweep(target, reference, y0, ids, game: GameConfig, progress):
    """The same counts as `numpy_sweep` for a built-in score, by the two exact passes of the Beam job over the
    slots of `auditing.game.slots.SlotPlan` (the R repetitions and both halves of repetition 0).

    Pass 1 (`auditing.game.kernel.slot_histograms`): per slot rows and correct guesses per order-preserving
    |score| bin (`auditing.game.sweep_reduce`). Then each grid point's bin (`boundary_bins`), and pass 2 replays only
    rows of the bins cut strictly inside (`game_kernel.boundary_rows`), ranked by `exact_counts` with
    `rank_order` itself: equal to ranking all rows. Repetition 0's attack curve from the pass that counts it and
    its halves (`auditing.game.kernel.SignedCounts`), the counts the numpy path takes from its rows.
    """
    spec = _KERNEL_BINS
    plan = SlotPlan(game)
    selection = selection_half_mask(ids, game.draw_seed)
    tables = game_tables(target, reference, y0, ids, score=game.score, power=game.score_power, bins=spec,
                         selection=selection)
    keys = plan.keys()
    n = tables.rows
    in_selection = int(np.count_nonzero(selection))
    slot_rows = np.array([n] * game.repetitions + [in_selection, n - in_selection], dtype=np.int64)
    grids = plan.grids(slot_rows)
    # One group's histograms at a time: each slot keeps only its grid points' bins and its cut bins' row count.
    group_size = min(_KERNEL_SLOT_GROUP, keys.size)
    rows = np.zeros((group_size, spec.num_bins), dtype=np.int64)
    hits = np.zeros_like(rows)
    histogram = None
    cut = np.zeros((keys.size, spec.num_bins), dtype=bool)
    cut_rows = np.zeros(keys.size, dtype=np.int64)
    bounds: list = [None] * keys.size
    # Repetition 0 and its two halves in the first group: one pass of its draws counts the three slots and the
    # attack curve's signed outcomes (`slot_histograms`).
    order = [0, *plan.half_slots, *(s for s in range(1, keys.size) if s not in plan.half_slots)]
    outcomes = np.zeros((OCTAVES, 2, 2), np.int64)
    done = 0
    for first in range(0, keys.size, _KERNEL_SLOT_GROUP):
        group = order[first:first + _KERNEL_SLOT_GROUP]
        rows[:] = 0
        hits[:] = 0
        slot_histograms(tables, keys.subset(group), rows[:len(group)], hits[:len(group)],
                        signed=SignedCounts(0, octave_of_fine(spec), outcomes) if first == 0 else None)
        for i, s in enumerate(group):
            if int(rows[i].sum()) != slot_rows[s]:
                raise RuntimeError(f"slot {s}: its histogram holds {int(rows[i].sum())} rows; expected {slot_rows[s]}")
            bounds[s] = boundary_bins(rows[i], hits[i], grids[s])
            cut_bin_mask(bounds[s], spec.num_bins, out=cut[s])
            cut_rows[s] = bounds[s].boundary_rows()
        if first == 0:
            histogram = coarsen(rows[0], hits[0], spec)
        done += sum(1 for s in group if s < game.repetitions)
        if progress:
            progress(done, game.repetitions)
    del rows, hits
    found = boundary_rows(tables, keys, cut, slot_counts=cut_rows)
    counts = [exact_counts(bounds[s], *found.of(s)) for s in range(keys.size)]
    sweep, halves = plan.counts(n, slot_rows, grids, counts)
    return sweep, halves, histogram, attack_curve_from_outcomes(outcomes, seed=game.draw_seed)


def _half_counts(scores, correct, ids, game: GameConfig) -> tuple[SweepCounts, SweepCounts] | None:
    """Both keyed halves' counts of one repetition's outcomes (None when a half is empty)."""
    in_selection = selection_half_mask(ids, game.draw_seed)
    halves = []
    for mask in (in_selection, ~in_selection):
        m_half = int(mask.sum())
        if m_half == 0:
            return None
        grid = game.half_grid(m_half)
        c = _counts(scores[mask], correct[mask], ids[mask], grid)
        halves.append(SweepCounts(m=m_half, guesses=grid[None, :], correct=c[None, :]))
    return halves[0], halves[1]


def audit_from_counts(
    counts: SweepCounts, game: GameConfig, bound: BoundConfig,
    split_counts: tuple[SweepCounts, SweepCounts] | None = None,
    score_histogram: ScoreHistogram | None = None, expected_correct: ExpectedCorrect | None = None,
    prior_histogram: PriorHistogram | None = None,
    check_histograms: CheckHistograms | LegacyCheck | None = None, row_groups: RowGroups | None = None,
    attack_curve: AttackCurve | None = None,
) -> AuditResult:
    """`audit_counts` of counts given piece by piece (e.g. a benchmark's own sweep): the repetitions' counts,
    the halves' (needed by a halves strategy), and the claim-free records (see the AuditResult fields)."""
    if bound.selection.uses_halves and split_counts is None:
        raise LabelDPInputError(f"strategy {bound.strategy} needs the two halves' counts of repetition 0")
    played = GameCounts(game=game, counts=counts, halves=split_counts,
                      score_histogram=score_histogram, prior_histogram=prior_histogram,
                      expected_correct=expected_correct, check=check_histograms, row_groups=row_groups,
                      attack_curve=attack_curve)
    return audit_counts(played, bound)


def audit_counts(game: GameCounts, bound: BoundConfig) -> AuditResult:
    """The verdict's numbers from the game's stored output at ``bound``: bounds, selection, the repetition summary
    and the capacity check (no row-level data needed; milliseconds)."""
    if game.inconclusive_reason is not None:
        return no_rows_result(game.game.with_night(None), bound, game.inconclusive_reason, game.row_groups)
    counts, split_counts = game.counts, game.halves
    kw = dict(method=bound.bound_method, delta=bound.delta, kappa=bound.kappa)
    strategy = bound.selection
    if strategy.uses_halves and split_counts is None:
        raise LabelDPInputError(_SPLIT_TOO_SMALL.format(strategy=strategy.name, n=counts.m))
    selection: Selection = strategy.select(counts, split_counts, confidence=bound.confidence, **kw)
    grid, grid_m, grid_confidence = strategy.certifiable(counts, split_counts, bound.confidence)
    max_certifiable, _ = best_bound(grid, grid, grid_m, confidence=grid_confidence, **kw)

    # The paper's statistic: per repetition, the max over the sweep at the uncorrected confidence.
    per_rep = best_bounds(counts.correct, counts.guesses, counts.m, confidence=bound.confidence,
                          threads=numba.get_num_threads(), **kw)
    curve = tuple(
        CurvePoint(guesses=int(g), correct=int(c), epsilon_lower_bound=float(e))
        for g, c, e in zip(selection.curve_guesses, selection.curve_correct, selection.curve_epsilon, strict=True)
    )
    played = game.game
    if played.repetitions != counts.repetitions:  # counts given piece by piece (audit_from_counts) say how many
        played = dataclasses.replace(played, repetitions=counts.repetitions)
    return AuditResult(
        game=played, bound=bound, epsilon_lower_bound=selection.epsilon_lower_bound, optimistic=not selection.valid,
        point_confidence=selection.point_confidence, m=counts.m, grid_size=int(counts.guesses.shape[1]),
        custom_score=game.custom_score,
        selected_guesses=selection.selected_guesses, selected_correct=selection.selected_correct,
        selected_m=selection.m, max_certifiable_epsilon=float(max_certifiable), epsilon_mean=float(per_rep.mean()),
        epsilon_std=float(per_rep.std(ddof=1)) if per_rep.size > 1 else 0.0,
        epsilon_median=float(np.median(per_rep)), paper_statistic_label=PAPER_STATISTIC_LABEL,
        per_repetition=tuple(float(v) for v in per_rep), curve=curve, config_hash=config_hash(game.game, bound),
        split_halves=_halves_record(split_counts) if strategy.uses_halves else None,
        score_histogram=game.score_histogram, expected_correct=game.expected_correct,
        prior_histogram=game.prior_histogram, gdp_mu_lower_bound=_gaussian_reading(bound, selection),
        capacity_check=_capacity_check(game.check, counts.m, game.game, bound), row_groups=game.row_groups,
        attack_curve=game.attack_curve,
    )


def no_rows_result(game: GameConfig, bound: BoundConfig, reason: str,
                   row_groups: RowGroups | None = None) -> AuditResult:
    """The result of an audit left with no row to play on (e.g. every audited row shares a group): a bound of 0
    that no attacker could have raised (max certifiable 0), so any claim is INCONCLUSIVE, with the reason. No coin
    was drawn: pass ``game`` without its night."""
    return AuditResult(
        game=game, bound=bound, epsilon_lower_bound=0.0, optimistic=not bound.selection.valid,
        point_confidence=bound.confidence, m=0, grid_size=0, selected_guesses=0,
        selected_correct=0, selected_m=0, max_certifiable_epsilon=0.0, epsilon_mean=0.0, epsilon_std=0.0,
        epsilon_median=0.0, paper_statistic_label=PAPER_STATISTIC_LABEL, config_hash=config_hash(game, bound),
        capacity_check=unchecked(reason, confidence=bound.confidence), row_groups=row_groups,
        inconclusive_reason=reason)


def _capacity_check(histograms: CheckHistograms | LegacyCheck | None, m: int, game: GameConfig, bound: BoundConfig):
    if histograms is None:
        return unchecked(NO_CHECK_ROWS_GIVEN, confidence=bound.confidence, audited_rows=m)
    return capacity_check(histograms, confidence=bound.confidence, delta=bound.delta, grid_kind=game.grid,
                          grid_points=game.grid_points, grid_min_fraction=game.grid_min_fraction)


def _gaussian_reading(bound: BoundConfig, selection: Selection) -> float | None:
    """The method's Gaussian reading at the selected point, if it has one (AuditResult.gdp_mu_lower_bound)."""
    return bound.bound_method.gaussian_reading(selection.selected_correct, selection.selected_guesses, selection.m,
                                               confidence=selection.point_confidence, kappa=bound.kappa)


def _halves_record(split_counts: tuple[SweepCounts, SweepCounts]) -> SplitHalves:
    selection, bound = (HalfCounts(m=int(half.m), guesses=tuple(int(v) for v in half.guesses[0]),
                                   correct=tuple(int(v) for v in half.correct[0])) for half in split_counts)
    return SplitHalves(selection=selection, bound=bound)


