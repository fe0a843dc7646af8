"""The capacity check: does a VIOLATION's evidence exceed what the reference's misfit can explain, as judged by
the audited model itself on rows whose labels it never saw? Pure numpy/scipy; the derivation, its assumption and
where it fails are in docs/soundness.md, section 8.

Why a check at all: the bound is valid when the reference M' is within kappa of the day's true label law on every
audited row (docs/soundness.md, section 1). A reference fitted on finite data always misjudges some rows a
little, and the attacker guesses exactly where the model knows better than M'. The check measures that misfit
with the audited model's own capacity, on the day's check rows: rows that trained neither the model nor the
reference's correction (pipelines decide which). There the model never saw the label, so the game's accuracy on
them is the accuracy misfit alone buys.

It compares like with like. A model that memorises its training rows guesses other kinds of views there than on
rows it never saw (on its training rows, "trained" on the labels it memorised; elsewhere, either way), and the
misfit-only accuracy of a guess depends on its kind. So every guess of repetition 0 is counted in a stratum of its
view: the released label z, the guess's direction ("trained": score > 0, or "counterfactual") and the
reference's log-odds of z (`FINE_REFERENCE_BINS` fixed bins, merged into at most `COARSE_REFERENCE_BINS` per label
and direction on the selection half). The rule (section 8.3-8.4):

1. Planned on the selection half of the audited rows (`auditing.game.slots.selection_half_mask`) and on the
   views' guess counts (never an outcome of the bound half or of the check rows): the guess threshold, the merge
   of reference bins into strata, and a composition pi over the strata that have both audited and check guesses.
   The plan maximises the epsilon_check it would give if the bound half did as the selection half and the check
   rows were right half the time.
2. Both sides are subsampled to the composition pi (a uniform draw of guesses in each stratum, keyed by the game's
   seed; drawn from the counts: the correct guesses of a uniform subsample are hypergeometric). The rounding of
   the matched counts leaves a composition mismatch ``slack`` (at most a few thousandths), which the test adds.
3. The exact test (`auditing.bounds.misfit_test.exact_epsilon_lower`): within a stratum an audited guess is
   right with probability at most f_eps(a_s) (Lemma 2, with the residual assumption T_u of section 8.3), f_eps is
   concave, so the matched audited guesses are right at most f_eps(a) of the time with a the matched check
   guesses' own mean accuracy. ``epsilon_check`` is the largest eps rejected at the verdict's confidence (0 when
   none): a lower bound on eps that needs no kappa. A VIOLATION is trusted only if it too exceeds the claim.
4. Each side's one-sided limit is reported (descriptive): the matched audited accuracy's lower limit and the
   matched check accuracy's upper limit, whose logit ``misfit_kappa_upper`` is the misfit the model shows on
   unseen rows where the verdict's guesses are.

The check also reports the misfit the model shows on the check rows as a lower confidence figure
(``check_misfit_kappa``: the check rows' own game bounded at kappa 0, Bonferroni over the grid's thresholds);
when it exceeds the verdict's kappa, the check "sees misfit" and a PASS's detectability figures are marked as
measured under a reference that misfits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from auditing.bounds.binomial import pure_epsilon_lower_bounds
from auditing.bounds.misfit_test import exact_epsilon_lower
from auditing.game.check_histograms import (
    CHECK_BINS,
    FINE_REFERENCE_BINS,
    REFERENCE_EDGES,
    CheckHistograms,
    LegacyCheck,
    strata_count,
)
from auditing.game.kernel import GameTables, released_labels
from auditing.game.sweep import guess_grid
from auditing.game.sweep_reduce import BinSpec, bin_index, boundary_bins
from auditing.result import CapacityCheck, StratumCounts
from labeldp.errors import LabelDPInputError

# The plan merges the fine reference bins (`auditing.game.check_histograms`) into at most this many strata per
# released label and direction.
COARSE_REFERENCE_BINS = 3
# The histograms' layout, part of the scoring job's key: 2 is the stratified layout (1, one |score| histogram per
# side, was written before strata; a game stored in it reads as `LegacyCheck`).
CHECK_LAYOUT = 2
# Why a check could not run (the verdict then says "reference unchecked" or untrusted, with this reason).
NO_CHECK_ROWS = "no check rows: every row of the day trained the model or the reference's correction"
DELTA_NOT_SUPPORTED = ("the capacity check is derived for pure (delta = 0) claims; a delta > 0 VIOLATION cannot be "
                       "vouched for")
LEGACY_CHECK = ("the game was stored before the check compared like with like (strata of the guessed views); score "
                "the day again to check it")
NO_MATCHED_STRATUM = ("no stratum of the guessed views (released label, direction, reference bin) holds both audited "
                      "and check guesses at the planned threshold: the check cannot vouch")
# The composition's family: pi_s proportional to G_B,s^lambda G_H,s^(1 - lambda), over the matched strata or over
# those where the selection half is right more than half the time.
_COMPOSITION_POWERS = (0.0, 0.25, 0.5, 0.75, 1.0)
# The keyed stream of the subsampling draws (mixed with the game's draw seed).
_SUBSAMPLE_STREAM = 0x5EED_C4EC


def coarse_bins(spec: BinSpec, to: BinSpec = CHECK_BINS) -> np.ndarray:
    """For every bin of ``spec``, the bin of ``to`` it lies in: same exponent window, fewer mantissa bits, so each
    coarse bin is a run of whole fine bins and merging histograms is exact."""
    if (spec.min_exponent, spec.max_exponent) != (to.min_exponent, to.max_exponent) or \
            spec.mantissa_bits < to.mantissa_bits:
        raise LabelDPInputError(f"cannot merge bins {spec} into {to}: the exponent windows must match and the "
                                "target must be coarser")
    fine = np.arange(spec.num_bins)
    coarse = ((fine - 1) >> (spec.mantissa_bits - to.mantissa_bits)) + 1
    coarse[0], coarse[-1] = 0, to.num_bins - 1  # underflow and overflow bins map onto themselves
    return coarse


def rebin(values, spec: BinSpec, to: BinSpec = CHECK_BINS) -> np.ndarray:
    """A histogram over ``spec``'s bins (its last axis) merged into ``to``'s (integer counts stay integers)."""
    values = np.asarray(values)
    if values.shape[-1:] != (spec.num_bins,):
        raise LabelDPInputError(f"histogram of {values.shape} bins; expected {spec.num_bins} in the last axis")
    target = coarse_bins(spec, to)
    flat = values.reshape(-1, spec.num_bins)
    merged = np.stack([np.bincount(target, weights=row, minlength=to.num_bins) for row in flat])
    merged = merged.reshape((*values.shape[:-1], to.num_bins))
    return merged.astype(np.int64) if values.dtype.kind in "iu" else merged


def bin_lower_edge(index: int, spec: BinSpec = CHECK_BINS) -> float:
    """The smallest |score| of bin ``index`` (0 for the underflow bin)."""
    if index <= 0:
        return 0.0
    if index >= spec.num_bins - 1:
        return float(2.0 ** spec.max_exponent)
    code = index - 1 + ((1023 + spec.min_exponent) << spec.mantissa_bits)
    return float(np.array([code << (52 - spec.mantissa_bits)], dtype=np.uint64).view(np.float64)[0])


def reference_bin(p_released) -> np.ndarray:
    """The fine reference bin of each row: its reference probability of the released label on the log-odds scale,
    cut at the whole numbers -8..8."""
    p = np.clip(np.asarray(p_released, dtype=np.float64), 1e-300, 1.0)
    return np.searchsorted(REFERENCE_EDGES, special.logit(p), side="right")


def stratum_of(released, positive, p_released) -> np.ndarray:
    """The fine stratum of each view: (released label * 2 + (score > 0)) * FINE_REFERENCE_BINS + reference bin."""
    released = np.asarray(released, dtype=np.int64)
    positive = np.asarray(positive, dtype=np.int64)
    return (released * 2 + positive) * FINE_REFERENCE_BINS + reference_bin(p_released)


def stratum_label(stratum: int) -> tuple[int, bool, float, float]:
    """(released label, guess "trained", lowest and highest reference probability) of a fine stratum."""
    group, fine = divmod(int(stratum), FINE_REFERENCE_BINS)
    label, positive = divmod(group, 2)
    edges = np.concatenate([[-np.inf], REFERENCE_EDGES, [np.inf]])
    return label, bool(positive), float(special.expit(edges[fine])), float(special.expit(edges[fine + 1]))


@dataclass(frozen=True)
class Views:
    """Repetition 0's views of a chunk of rows as the check counts them: each row's fine stratum, its |score| bin
    in `CHECK_BINS` and whether the guess was right."""

    stratum: np.ndarray
    bin: np.ndarray
    correct: np.ndarray


def views_of_tables(tables: GameTables, seed: int, bins: BinSpec) -> Views:
    """The views of the kernel's tables (built with |score| bins ``bins``): the same keyed draws as the game's
    repetition 0 (`auditing.game.kernel.released_labels`)."""
    released, bit = released_labels(tables, seed, 0)
    rows = np.arange(tables.rows)
    code = tables.codes[rows, released].astype(np.int64)
    positive = code & 1
    return Views(stratum_of(released, positive, tables.p_reference[rows, released]),
                 coarse_bins(bins)[code >> 1], (1 - positive) == bit)


def views_of_scores(scores, released, correct, p_reference) -> Views:
    """The views of the numpy game (`auditing.game.play.play_repetition` with the released labels): scores of the
    released labels, the labels and the reference's class probabilities (n x k)."""
    scores = np.asarray(scores, dtype=np.float64)
    rows = np.arange(scores.size)
    return Views(stratum_of(released, scores > 0, np.asarray(p_reference)[rows, released]),
                 bin_index(scores, CHECK_BINS), np.asarray(correct, dtype=bool))


def histograms_from_views(classes: int, seed: int, audited: Views | None, selection: np.ndarray | None,
                          check: Views | None) -> CheckHistograms:
    """The histograms of audited rows' views (``selection``: True for the selection half) and check rows' views."""
    shape = (strata_count(classes), CHECK_BINS.num_bins)
    size = shape[0] * shape[1]

    def count(views: Views | None, mask: np.ndarray | None) -> list[np.ndarray]:
        if views is None or views.stratum.size == 0:
            return [np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)]
        cells = views.stratum * shape[1] + views.bin
        if mask is not None:
            cells, right = cells[mask], views.correct[mask]
        else:
            right = views.correct
        rows = np.bincount(cells, minlength=size).reshape(shape)
        hits = np.bincount(cells[right], minlength=size).reshape(shape)
        return [rows.astype(np.int64), hits.astype(np.int64)]

    halves = np.zeros(0, dtype=bool) if selection is None else np.asarray(selection, dtype=bool)
    parts = count(audited, halves) + count(audited, ~halves) + count(check, None)
    return CheckHistograms(classes, seed, *parts)


def histograms_of(audited: GameTables | None, check: GameTables | None, seed: int, bins: BinSpec,
                  classes: int) -> CheckHistograms:
    """Repetition 0's check histograms of a chunk of rows: ``audited`` tables built with the selection half
    (`auditing.game.slots.selection_half_mask`) and ``check`` tables of the check rows, with |score| bins ``bins``
    (any spec `coarse_bins` can merge into `CHECK_BINS`). The draws are the game's own (keyed by seed, repetition
    0, row id), so the audited halves' outcomes are those of the audit's repetition 0."""
    audited_views = None if audited is None or not audited.rows else views_of_tables(audited, seed, bins)
    check_views = None if check is None or not check.rows else views_of_tables(check, seed, bins)
    return histograms_from_views(classes, seed, audited_views, None if audited is None else audited.selection,
                                 check_views)


# ------------------------------------------------------------------------------------------ the plan
def _lower(c: int, n: int, alpha: float) -> float:
    """Clopper-Pearson lower limit of a binomial rate at one-sided level alpha (0 when c = 0)."""
    return 0.0 if c <= 0 else float(special.betaincinv(c, n - c + 1, alpha))


def _upper(c: int, n: int, alpha: float) -> float:
    """Clopper-Pearson upper limit (1 when c = n, which includes n = 0)."""
    return 1.0 if c >= n else float(special.betaincinv(c + 1, n - c, 1.0 - alpha))


def _logit(p: float) -> float:
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return math.log(p) - math.log1p(-p)


def _planned_epsilon(accuracy: float, guesses: int, check_guesses: int, critical: float) -> float:
    """About the epsilon_check a plan would give if the matched audited guesses were right ``accuracy`` of the time
    and the check's ``check_guesses`` half of the time: the test's statistic at its normal critical value (-inf when
    it could give nothing). Only the plan uses it."""
    if guesses <= 0 or check_guesses <= 0:
        return -math.inf
    se = math.sqrt(1.0 / ((guesses + 1) * accuracy * (1 - accuracy)) + 4.0 / (check_guesses + 1))
    return _logit(accuracy) - critical * se


def _grid_thresholds(rows: np.ndarray, correct: np.ndarray, grid_kind: str, grid_points: int,
                     grid_min_fraction: float) -> np.ndarray:
    """The distinct threshold bins the audit's guess grid reaches on this histogram: for each c' of the grid, the
    bin holding the c'-th ranked row (guessing on the whole bin, so at least c' guesses)."""
    m = int(rows.sum())
    grid = guess_grid(m, kind=grid_kind, points=grid_points, min_fraction=grid_min_fraction)
    return np.unique(boundary_bins(rows, correct, grid).bin)[::-1]  # highest threshold first


def _from_top(values: np.ndarray) -> np.ndarray:
    """out[..., j] = the sum of values[..., j:]: the guesses at threshold bin j."""
    return np.flip(np.cumsum(np.flip(values, axis=-1), axis=-1), axis=-1)


def _strata(selection_guesses: np.ndarray, classes: int) -> np.ndarray:
    """The plan's strata: for each fine stratum, its coarse stratum. Per released label and direction the fine
    reference bins are merged, in order, into at most `COARSE_REFERENCE_BINS` runs holding about equal shares of
    the selection half's guesses (each bin goes to the run its midpoint share falls in)."""
    groups = selection_guesses.reshape(classes * 2, FINE_REFERENCE_BINS).astype(np.float64)
    total = groups.sum(axis=1, keepdims=True)
    middle = np.cumsum(groups, axis=1) - groups / 2
    share = np.divide(middle, total, out=np.zeros_like(middle), where=total > 0)
    run = np.minimum((share * COARSE_REFERENCE_BINS).astype(np.int64), COARSE_REFERENCE_BINS - 1)
    return (np.arange(classes * 2)[:, None] * COARSE_REFERENCE_BINS + run).ravel()


@dataclass(frozen=True)
class _Plan:
    value: float
    threshold: int
    strata: np.ndarray  # fine -> coarse
    power: float
    positive_only: bool
    bound_take: np.ndarray  # matched audited guesses per coarse stratum
    check_take: np.ndarray
    selection_accuracy: float


def _compositions(bound: np.ndarray, check: np.ndarray, selection_accuracy: np.ndarray):
    """The candidate compositions: (power, positive_only, bound_take, check_take) per coarse stratum."""
    matched = (bound > 0) & (check > 0)
    supports = [(False, matched)]
    favourable = matched & (selection_accuracy > 0.5)
    if favourable.any() and not np.array_equal(favourable, matched):
        supports.append((True, favourable))
    for positive_only, support in supports:
        if not support.any():
            continue
        for power in _COMPOSITION_POWERS:
            weight = np.where(support, bound.astype(np.float64) ** power * check.astype(np.float64) ** (1 - power), 0)
            pi = weight / weight.sum()
            inside = pi > 0
            n_bound = math.floor(float(np.min(bound[inside] / pi[inside])))
            n_check = math.floor(float(np.min(check[inside] / pi[inside])))
            bound_take = np.minimum(np.round(pi * n_bound), bound).astype(np.int64)
            check_take = np.minimum(np.round(pi * n_check), check).astype(np.int64)
            yield power, positive_only, bound_take, check_take


def _plan(cum: dict[str, np.ndarray], candidates: np.ndarray, classes: int, critical: float) -> _Plan | None:
    """The threshold, strata and composition maximising the planned epsilon_check (module docstring, step 1): the
    selection half's outcomes and the views' guess counts only."""
    best = None
    for k in candidates:
        k = int(k)
        strata = _strata(cum["selection_rows"][:, k], classes)
        size = classes * 2 * COARSE_REFERENCE_BINS

        def merged(name, k=k, strata=strata, size=size):
            return np.bincount(strata, weights=cum[name][:, k], minlength=size).astype(np.int64)

        sel_rows, sel_correct = merged("selection_rows"), merged("selection_correct")
        bound, check = merged("bound_rows"), merged("check_rows")
        accuracy = (sel_correct + 0.5) / (sel_rows + 1.0)
        for power, positive_only, bound_take, check_take in _compositions(bound, check, accuracy):
            n_bound, n_check = int(bound_take.sum()), int(check_take.sum())
            if n_bound == 0 or n_check == 0:
                continue
            planned_accuracy = float(np.sum(bound_take * accuracy) / n_bound)
            value = _planned_epsilon(planned_accuracy, n_bound, n_check, critical)
            if best is None or value > best.value:  # ties: the higher threshold, the earlier composition
                best = _Plan(value, k, strata, power, positive_only, bound_take, check_take, planned_accuracy)
    return best


def _subsample(correct: np.ndarray, guesses: np.ndarray, take: np.ndarray, rng: np.random.Generator) -> int:
    """The correct guesses among a uniform draw of ``take`` of each stratum's ``guesses`` (hypergeometric given the
    stratum's ``correct``), summed; the strata are drawn in order, so the draws are reproducible."""
    total = 0
    for c, g, t in zip(correct.tolist(), guesses.tolist(), take.tolist(), strict=True):
        if t > 0:
            total += int(rng.hypergeometric(c, g - c, t))
    return total


def unchecked(reason: str, *, confidence: float, audited_rows: int = 0, check_rows: int = 0) -> CapacityCheck:
    """The record of a check that could not run."""
    return CapacityCheck(checked=False, reason=reason, confidence=confidence,
                         audited_rows=audited_rows, check_rows=check_rows)


def capacity_check(histograms: CheckHistograms | LegacyCheck, *, confidence: float, delta: float = 0.0,
                   grid_kind: str = "log", grid_points: int = 100, grid_min_fraction: float = 1e-4) -> CapacityCheck:
    """Runs the check on repetition 0's histograms (module docstring; docs/soundness.md section 8).

    Args:
        histograms: the selection half, bound half and check rows per stratum and `CHECK_BINS` bin.
        confidence: the verdict's confidence (the check spends the same 1 - confidence).
        delta: the audit's delta; the check is derived for delta = 0 and does not run otherwise.
        grid_*: the audit's guess grid, whose thresholds the selection half chooses among.
    """
    if isinstance(histograms, LegacyCheck):
        return unchecked(LEGACY_CHECK, confidence=confidence, check_rows=histograms.check_rows)
    m_sel, m_bound = int(histograms.selection_rows.sum()), int(histograms.bound_rows.sum())
    m_check = int(histograms.check_rows.sum())
    audited = m_sel + m_bound
    if delta > 0.0:
        return unchecked(DELTA_NOT_SUPPORTED, confidence=confidence, audited_rows=audited, check_rows=m_check)
    if m_check == 0:
        return unchecked(NO_CHECK_ROWS, confidence=confidence, audited_rows=audited)
    if m_sel == 0 or m_bound == 0:
        return unchecked("the keyed halves of the audited rows left one half empty (too few audited rows)",
                         confidence=confidence, audited_rows=audited, check_rows=m_check)
    from scipy import stats  # imported when a check runs: 0.3 s to import

    gamma = 1.0 - confidence
    grid = dict(grid_kind=grid_kind, grid_points=grid_points, grid_min_fraction=grid_min_fraction)
    cum = {name: _from_top(getattr(histograms, name)) for name in CheckHistograms._FIELDS}
    candidates = _grid_thresholds(histograms.selection_rows.sum(axis=0), histograms.selection_correct.sum(axis=0),
                                  **grid)
    plan = _plan(cum, candidates, histograms.classes, float(stats.norm.isf(gamma)))

    # The misfit the model shows on the check rows at all (lower confidence, Bonferroni over the thresholds).
    check_rows, check_correct = histograms.check_rows.sum(axis=0), histograms.check_correct.sum(axis=0)
    own = _grid_thresholds(check_rows, check_correct, **grid)
    own_counts = np.array([(int(check_rows[j:].sum()), int(check_correct[j:].sum())) for j in own])
    check_misfit = float(pure_epsilon_lower_bounds(own_counts[:, 1], own_counts[:, 0],
                                                   confidence=1.0 - gamma / own.size).max())
    common = dict(checked=True, confidence=confidence, audited_rows=audited, check_rows=m_check,
                  check_misfit_kappa=check_misfit, check_grid_size=int(own.size))
    if plan is None:
        k = int(candidates[0])
        return CapacityCheck(**common, reason=NO_MATCHED_STRATUM, threshold_bin=k, threshold_score=bin_lower_edge(k),
                             rule="stratified")

    k, size = plan.threshold, histograms.classes * 2 * COARSE_REFERENCE_BINS

    def merged(name: str) -> np.ndarray:
        return np.bincount(plan.strata, weights=cum[name][:, k], minlength=size).astype(np.int64)

    sel_rows, sel_correct = merged("selection_rows"), merged("selection_correct")
    bound, bound_correct = merged("bound_rows"), merged("bound_correct")
    check, check_correct_s = merged("check_rows"), merged("check_correct")
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([histograms.seed, _SUBSAMPLE_STREAM])))
    c_bound = _subsample(bound_correct, bound, plan.bound_take, rng)
    c_check = _subsample(check_correct_s, check, plan.check_take, rng)
    n_bound, n_check = int(plan.bound_take.sum()), int(plan.check_take.sum())
    # The composition each side was matched to; rounding leaves them a little apart (module docstring, step 2).
    slack = float(np.clip(plan.bound_take / n_bound - plan.check_take / n_check, 0.0, None).sum())
    epsilon_check = exact_epsilon_lower(c_bound, n_bound, c_check, n_check, gamma, slack)
    upper = _upper(c_check, n_check, gamma)
    table = tuple(_stratum_counts(s, plan, sel_rows, sel_correct, bound, bound_correct, check, check_correct_s)
                  for s in range(size) if bound[s] or check[s])
    sel_total = int(cum["selection_rows"][:, k].sum())
    sel_total_correct = int(cum["selection_correct"][:, k].sum())
    return CapacityCheck(
        **common, reason=None, threshold_bin=k, threshold_score=bin_lower_edge(k),
        selection_guesses=sel_total, selection_correct=sel_total_correct,
        selection_bound=float(pure_epsilon_lower_bounds(sel_total_correct, sel_total, confidence=confidence)),
        planned_check_guesses=float(n_check),
        bound_guesses=int(bound.sum()), bound_correct=int(bound_correct.sum()),
        check_guesses=int(check.sum()), check_correct=int(check_correct_s.sum()),
        audited_accuracy_lower=_lower(c_bound, n_bound, gamma), check_accuracy_upper=upper,
        misfit_kappa_upper=_logit(upper), epsilon_check=float(epsilon_check),
        rule="stratified", strata=int(np.count_nonzero(plan.bound_take)), composition_power=plan.power,
        composition_favourable_only=plan.positive_only, matched_bound_guesses=n_bound,
        matched_bound_correct=c_bound, matched_check_guesses=n_check, matched_check_correct=c_check,
        unmatched_bound_guesses=int(bound[check == 0].sum()), composition_slack=slack,
        selection_matched_accuracy=plan.selection_accuracy, strata_table=table,
    )


def _stratum_counts(s: int, plan: _Plan, sel_rows, sel_correct, bound, bound_correct, check,
                    check_correct) -> StratumCounts:
    """The row of the strata table for coarse stratum ``s``: its label, direction and reference range (over the
    fine bins merged into it) and each side's guesses."""
    fine = np.flatnonzero(plan.strata == s)
    first, last = stratum_label(int(fine[0])), stratum_label(int(fine[-1]))
    return StratumCounts(label=first[0], trained=first[1], reference_low=first[2], reference_high=last[3],
                         selection_guesses=int(sel_rows[s]), selection_correct=int(sel_correct[s]),
                         bound_guesses=int(bound[s]), bound_correct=int(bound_correct[s]),
                         check_guesses=int(check[s]), check_correct=int(check_correct[s]),
                         matched_bound_guesses=int(plan.bound_take[s]), matched_check_guesses=int(plan.check_take[s]))


__all__ = ["CHECK_LAYOUT", "COARSE_REFERENCE_BINS", "DELTA_NOT_SUPPORTED", "LEGACY_CHECK", "NO_CHECK_ROWS",
           "NO_MATCHED_STRATUM", "Views", "bin_lower_edge", "capacity_check", "coarse_bins", "histograms_from_views",
           "histograms_of", "rebin", "reference_bin", "stratum_of", "unchecked", "views_of_scores", "views_of_tables"]
