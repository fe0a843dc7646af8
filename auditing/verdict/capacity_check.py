"""The capacity check: does a VIOLATION's evidence exceed what the reference's misfit can explain, as judged by
the audited model itself on rows whose labels it never saw? Pure numpy/scipy; the derivation, its assumption and
where it fails are in docs/soundness.md, section 8.

Why a check at all: the bound is valid when the reference M' is within kappa of the day's true label law on every
audited row (docs/soundness.md, section 1). A reference fitted on finite data always misjudges some rows a
little, and the attacker guesses exactly where the model knows better than M'. The check measures that misfit
with the audited model's own capacity, on the day's check rows: rows that trained neither the model nor the
reference's correction (pipelines decide which). There the model never saw the label, so the game's accuracy on
them is the accuracy misfit alone buys.

The rule, all on repetition 0 and on one bin spec (`CHECK_BINS`) so that the in-process audit and the Beam job
give the same figures:

1. The guess threshold is planned, among the |score| bin thresholds the audit's grid reaches, on the selection
   half of the audited rows (`auditing.audit.selection_half_mask`, the keyed half the split strategy selects
   on) and on the check rows' expected guess counts under the reference's law (no check label or coin): the
   threshold whose planned ``epsilon_check`` is largest. The bound half and the check rows' outcomes play no
   part.
2. At that threshold: the bound half's guesses and correct guesses, and the check rows' (whose accuracy is what
   misfit alone buys there).
3. The exact test (`exact_epsilon_lower`, docs/soundness.md section 8.3): eps is rejected when, for every
   misfit-only accuracy a, counts as extreme as those observed have probability at most 1 - confidence with the
   audited accuracy at f_eps(a) = sigmoid(eps + logit a) and the check accuracy at a (an unconditional exact test
   of the odds ratio, the supremum over a taken numerically). ``epsilon_check`` is the largest eps it rejects (0
   when none): a lower bound on eps at the confidence, with no kappa, under assumption T of docs/soundness.md
   section 8 (the audited guesses' misfit-only accuracy is no larger than the check rows' at the same threshold).
   A VIOLATION is trusted only if ``epsilon_check`` also exceeds the claim; since the verdict's own bound must
   exceed it too, a trusted false VIOLATION needs both tests wrong, and has probability at most 1 - confidence
   if either kappa covers the reference or T holds.
4. Each side's own one-sided limit at the confidence is reported too (descriptive): the bound half's accuracy
   lower limit, and the check rows' upper limit, whose logit ``misfit_kappa_upper`` is the misfit the model shows
   on unseen rows where the verdict's guesses are.

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
from auditing.game.kernel import GameTables, slot_histograms, slot_keys
from auditing.game.sweep import guess_grid
from auditing.game.sweep_reduce import BinSpec, boundary_bins
from auditing.result import CapacityCheck
from labeldp.errors import LabelDPInputError

# The bins every check is computed on: the Beam job's default; finer in-process histograms are merged into them
# exactly (`rebin`).
CHECK_BINS = BinSpec()
# Why a check could not run (the verdict then says "reference unchecked").
NO_CHECK_ROWS = "no check rows: every row of the day trained the model or the reference's correction"
DELTA_NOT_SUPPORTED = ("the capacity check is derived for pure (delta = 0) claims; a delta > 0 VIOLATION cannot be "
                       "vouched for")


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
    """A histogram over ``spec``'s bins merged into ``to``'s (integer counts stay integers)."""
    values = np.asarray(values)
    if values.shape != (spec.num_bins,):
        raise LabelDPInputError(f"histogram of {values.shape} bins; expected {spec.num_bins}")
    merged = np.bincount(coarse_bins(spec, to), weights=values, minlength=to.num_bins)
    return merged.astype(np.int64) if values.dtype.kind in "iu" else merged


def bin_lower_edge(index: int, spec: BinSpec = CHECK_BINS) -> float:
    """The smallest |score| of bin ``index`` (0 for the underflow bin)."""
    if index <= 0:
        return 0.0
    if index >= spec.num_bins - 1:
        return float(2.0 ** spec.max_exponent)
    code = index - 1 + ((1023 + spec.min_exponent) << spec.mantissa_bits)
    return float(np.array([code << (52 - spec.mantissa_bits)], dtype=np.uint64).view(np.float64)[0])


@dataclass(frozen=True)
class CheckHistograms:
    """Repetition 0's rows and correct guesses per `CHECK_BINS` bin of |score|, for the audited rows' selection
    half, their bound half, and the check rows; and ``check_planned``, the check rows' expected guesses per bin
    had their shown labels been drawn from the reference (sum over rows and labels a of M'(a|x) at the bin of
    score(a)): free of the check rows' labels and coins, so the threshold may be planned on it. Histograms of
    disjoint row chunks add."""

    selection_rows: np.ndarray
    selection_correct: np.ndarray
    bound_rows: np.ndarray
    bound_correct: np.ndarray
    check_rows: np.ndarray
    check_correct: np.ndarray
    check_planned: np.ndarray

    _FIELDS = ("selection_rows", "selection_correct", "bound_rows", "bound_correct", "check_rows", "check_correct",
               "check_planned")

    def __post_init__(self):
        for name in self._FIELDS:
            value = np.asarray(getattr(self, name), dtype=np.float64 if name == "check_planned" else np.int64)
            if value.shape != (CHECK_BINS.num_bins,):
                raise LabelDPInputError(f"check histogram {name}: {value.shape} bins; expected "
                                        f"{CHECK_BINS.num_bins}")
            object.__setattr__(self, name, value)
        for part in ("selection", "bound", "check"):
            rows, correct = getattr(self, f"{part}_rows"), getattr(self, f"{part}_correct")
            if np.any(correct < 0) or np.any(correct > rows):
                raise LabelDPInputError(f"check histogram {part}: need 0 <= correct <= rows in every bin")

    @classmethod
    def empty(cls) -> CheckHistograms:
        return cls(*(np.zeros(CHECK_BINS.num_bins) for _ in cls._FIELDS))

    def merge(self, other: CheckHistograms) -> CheckHistograms:
        return CheckHistograms(*(getattr(self, f) + getattr(other, f) for f in self._FIELDS))

    def to_dict(self) -> dict:
        """Sparse: {"bins": non-empty bin indices, field: values at those bins} (result.json stays small)."""
        used = np.flatnonzero(self.selection_rows + self.bound_rows + self.check_rows + self.check_planned)
        return {"bins": used.tolist(), **{f: getattr(self, f)[used].tolist() for f in self._FIELDS}}

    @classmethod
    def from_dict(cls, data: dict | None) -> CheckHistograms | None:
        if not data:
            return None
        used = np.asarray(data["bins"], dtype=np.int64)
        arrays = []
        for name in cls._FIELDS:
            full = np.zeros(CHECK_BINS.num_bins)
            full[used] = np.asarray(data[name], dtype=np.float64)
            arrays.append(full)
        return cls(*arrays)


def histograms_of(audited: GameTables | None, check: GameTables | None, seed: int, bins: BinSpec) -> CheckHistograms:
    """Repetition 0's check histograms of a chunk of rows: ``audited`` tables built with the selection half
    (`auditing.audit.selection_half_mask`) and ``check`` tables of the check rows, binned by ``bins`` (any spec
    `rebin` can merge into `CHECK_BINS`). The draws are the game's own (keyed by seed, repetition 0, row id), so
    the audited halves' outcomes are those of the audit's repetition 0."""
    out = []
    for tables, slots in ((audited, [(0, 0), (0, 1)]), (check, [(0, None)])):
        rows = np.zeros((len(slots), bins.num_bins), dtype=np.int64)
        hits = np.zeros_like(rows)
        if tables is not None and tables.rows:
            slot_histograms(tables, slot_keys(seed, slots), rows, hits)
        for s in range(len(slots)):
            out += [rebin(rows[s], bins), rebin(hits[s], bins)]
    planned = np.zeros(bins.num_bins)
    if check is not None and check.rows:
        for a in range(check.codes.shape[1]):
            planned += np.bincount(check.codes[:, a] >> 1, weights=check.p_reference[:, a], minlength=bins.num_bins)
    return CheckHistograms(*out, rebin(planned, bins))


# ------------------------------------------------------------------------------------------ the exact test
# Numerical settings of the test's supremum over the nuisance accuracy a (docs/soundness.md section 8.3).
_SUP_GRID = np.linspace(-15.0, 15.0, 121)  # logit(a), then refined around the largest value
_EPS_HIGH = 20.0  # bisection's upper end for epsilon_check
_EPS_TOLERANCE = 1e-5  # epsilon_check is reported to this precision, rounded down
_SUPPORT_SD = 12.0  # C_H values beyond this many standard deviations carry under e^-72 of the mass: skipped


def _wald(cb, nb: int, ch, nh: int, eps: float):
    """The test's statistic: the smoothed log-odds difference minus eps, over its estimated standard error."""
    pb = (np.asarray(cb, dtype=np.float64) + 0.5) / (nb + 1)
    ph = (np.asarray(ch, dtype=np.float64) + 0.5) / (nh + 1)
    se = np.sqrt(1.0 / ((nb + 1) * pb * (1 - pb)) + 1.0 / ((nh + 1) * ph * (1 - ph)))
    return (special.logit(pb) - eps - special.logit(ph)) / se


def _region(cb: int, nb: int, ch: int, nh: int, eps: float) -> np.ndarray:
    """The rejection region as k[ch'] for ch' = 0..nh: reject when the audited count is >= k[ch'] (nb + 1: never).
    k is the first audited count whose statistic reaches the observed one (the statistic rises and then falls in
    the audited count, so the first crossing lies before its peak), made non-decreasing in ch': the region grows
    with the audited count and shrinks with the check count, which is what lets stochastic dominance bound its
    probability."""
    z_obs = float(_wald(cb, nb, ch, nh, eps))
    chs = np.arange(nh + 1)
    lo, hi = np.zeros(nh + 1, dtype=np.int64), np.full(nh + 1, nb, dtype=np.int64)
    while np.any(hi - lo > 2):  # the peak of a unimodal sequence, per ch' (ternary search)
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        up = _wald(m1, nb, chs, nh, eps) < _wald(m2, nb, chs, nh, eps)
        lo, hi = np.where(up, m1 + 1, lo), np.where(up, hi, m2 - 1)
        hi = np.maximum(hi, lo)
    candidates = np.stack([lo, np.minimum(lo + 1, nb), np.minimum(lo + 2, nb)])
    values = _wald(candidates, nb, chs[None, :], nh, eps)
    peak = candidates[np.argmax(values, axis=0), chs]
    reaches = _wald(peak, nb, chs, nh, eps) >= z_obs - 1e-12
    lo, hi = np.zeros(nh + 1, dtype=np.int64), peak.copy()
    while np.any(lo < hi):  # the first count reaching z_obs on the rising part
        mid = (lo + hi) // 2
        ok = _wald(mid, nb, chs, nh, eps) >= z_obs - 1e-12
        lo, hi = np.where(ok, lo, mid + 1), np.where(ok, mid, hi)
    k = np.where(reaches, lo, nb + 1)
    return np.maximum.accumulate(k)


def _pvalue(cb: int, nb: int, ch: int, nh: int, eps: float) -> float:
    """sup over a of P[(C_B, C_H) in the region] with C_B ~ Binomial(nb, f_eps(a)), C_H ~ Binomial(nh, a)."""
    from scipy import optimize, stats  # imported when a check runs: scipy.stats alone takes 0.3 s to import

    k = _region(cb, nb, ch, nh, eps)

    def at(x: float) -> float:
        a, q = special.expit(x), special.expit(eps + x)
        spread = _SUPPORT_SD * math.sqrt(nh * a * (1 - a)) + 10
        first, last = max(0, int(nh * a - spread)), min(nh, int(nh * a + spread) + 1)
        chs = np.arange(first, last + 1)
        return float(np.sum(stats.binom.pmf(chs, nh, a) * stats.binom.sf(k[first:last + 1] - 1, nb, q)))

    values = np.array([at(x) for x in _SUP_GRID])
    i = int(np.argmax(values))
    refined = optimize.minimize_scalar(lambda x: -at(x), method="bounded", options={"xatol": 1e-7},
                                       bounds=(_SUP_GRID[max(i - 1, 0)], _SUP_GRID[min(i + 1, _SUP_GRID.size - 1)]))
    return max(float(values[i]), -float(refined.fun))


def exact_epsilon_lower(correct: int, guesses: int, check_correct: int, check_guesses: int, gamma: float) -> float:
    """The largest eps the exact test rejects at level ``gamma`` (0 when it rejects none): eps such that, for every
    misfit-only accuracy a, the audited and check counts are as extreme as observed with probability <= gamma
    when the audited accuracy is f_eps(a) = sigmoid(eps + logit(a)) and the check accuracy a."""
    if guesses <= 0 or check_guesses <= 0:
        return 0.0
    if _pvalue(correct, guesses, check_correct, check_guesses, 0.0) > gamma:
        return 0.0
    lo, hi = 0.0, _EPS_HIGH
    while hi - lo > _EPS_TOLERANCE:
        mid = (lo + hi) / 2
        if _pvalue(correct, guesses, check_correct, check_guesses, mid) <= gamma:
            lo = mid
        else:
            hi = mid
    return lo


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


def _planned_epsilon(correct: int, guesses: int, check_guesses: float, gamma: float) -> float:
    """About the epsilon_check a threshold would give if the bound half matched the selection half's counts and
    the check rows made ``check_guesses`` guesses, right half of the time: the test's statistic at its normal
    critical value (-inf when it could give nothing). Only the plan uses it."""
    if guesses <= 0 or correct <= 0 or check_guesses <= 0.0:
        return -math.inf
    p = (correct + 0.5) / (guesses + 1)
    se = math.sqrt(1.0 / ((guesses + 1) * p * (1 - p)) + 4.0 / (check_guesses + 1))
    from scipy import stats  # imported when needed: 0.3 s to import

    return _logit(p) - stats.norm.isf(gamma) * se


def _above(rows: np.ndarray, correct: np.ndarray, k: int) -> tuple[int, int]:
    """Guesses and correct guesses at threshold bin k: every row whose |score| bin is k or higher."""
    return int(rows[k:].sum()), int(correct[k:].sum())


def _grid_thresholds(rows: np.ndarray, correct: np.ndarray, grid_kind: str, grid_points: int,
                     grid_min_fraction: float) -> np.ndarray:
    """The distinct threshold bins the audit's guess grid reaches on this histogram: for each c' of the grid, the
    bin holding the c'-th ranked row (guessing on the whole bin, so at least c' guesses)."""
    m = int(rows.sum())
    grid = guess_grid(m, kind=grid_kind, points=grid_points, min_fraction=grid_min_fraction)
    return np.unique(boundary_bins(rows, correct, grid).bin)[::-1]  # highest threshold first


def unchecked(reason: str, *, confidence: float, audited_rows: int = 0, check_rows: int = 0) -> CapacityCheck:
    """The record of a check that could not run."""
    return CapacityCheck(checked=False, reason=reason, confidence=confidence,
                         audited_rows=audited_rows, check_rows=check_rows)


def capacity_check(histograms: CheckHistograms, *, confidence: float, delta: float = 0.0, grid_kind: str = "log",
                   grid_points: int = 100, grid_min_fraction: float = 1e-4) -> CapacityCheck:
    """Runs the check on repetition 0's histograms (module docstring; docs/soundness.md section 8).

    Args:
        histograms: the selection half, bound half and check rows, over `CHECK_BINS`.
        confidence: the verdict's confidence (the check spends the same 1 - confidence).
        delta: the audit's delta; the check is derived for delta = 0 and does not run otherwise.
        grid_*: the audit's guess grid, whose thresholds the selection half chooses among.
    """
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
    gamma = 1.0 - confidence
    grid = dict(grid_kind=grid_kind, grid_points=grid_points, grid_min_fraction=grid_min_fraction)

    # 1. The threshold, planned on what the check may look at: the selection half's outcomes and the check rows'
    #    label-free expected guesses (`check_planned`). The plan maximises the epsilon_check it would give if the
    #    bound half did as the selection half and the check rows were right half the time (no misfit); the bound
    #    half and the check rows' labels and coins play no part, so the limits below need no correction.
    candidates = _grid_thresholds(histograms.selection_rows, histograms.selection_correct, **grid)
    counts = np.array([_above(histograms.selection_rows, histograms.selection_correct, int(k)) for k in candidates])
    planned = np.array([float(histograms.check_planned[int(k):].sum()) for k in candidates])
    plan = np.array([_planned_epsilon(int(c), int(g), e, gamma) for (g, c), e in zip(counts, planned, strict=True)])
    best = int(np.argmax(plan))  # ties: the highest threshold (candidates run from the top)
    k = int(candidates[best])
    selection_bound = float(pure_epsilon_lower_bounds(counts[best, 1], counts[best, 0], confidence=confidence))

    # 2-4. The exact test at that threshold, and each side's own limit (descriptive).
    g_bound, c_bound = _above(histograms.bound_rows, histograms.bound_correct, k)
    g_check, c_check = _above(histograms.check_rows, histograms.check_correct, k)
    lower = _lower(c_bound, g_bound, gamma) if g_bound else 0.0
    upper = _upper(c_check, g_check, gamma)
    misfit_upper = _logit(upper)
    epsilon_check = exact_epsilon_lower(c_bound, g_bound, c_check, g_check, gamma)
    reason = None if g_check else "no check row's |score| reaches the threshold: the check cannot vouch"

    # The misfit the model shows on the check rows at all (lower confidence, Bonferroni over the thresholds).
    own = _grid_thresholds(histograms.check_rows, histograms.check_correct, **grid)
    own_counts = np.array([_above(histograms.check_rows, histograms.check_correct, int(j)) for j in own])
    point = 1.0 - gamma / own.size
    check_misfit = float(pure_epsilon_lower_bounds(own_counts[:, 1], own_counts[:, 0], confidence=point).max())

    return CapacityCheck(
        checked=True, reason=reason, confidence=confidence, audited_rows=audited,
        check_rows=m_check, threshold_bin=k, threshold_score=bin_lower_edge(k),
        selection_guesses=int(counts[best, 0]), selection_correct=int(counts[best, 1]),
        selection_bound=selection_bound, planned_check_guesses=float(planned[best]), bound_guesses=g_bound, bound_correct=c_bound, check_guesses=g_check,
        check_correct=c_check, audited_accuracy_lower=lower, check_accuracy_upper=upper,
        misfit_kappa_upper=misfit_upper, epsilon_check=float(epsilon_check), check_misfit_kappa=check_misfit,
        check_grid_size=int(own.size),
    )


__all__ = ["CHECK_BINS", "DELTA_NOT_SUPPORTED", "NO_CHECK_ROWS", "CheckHistograms",
           "bin_lower_edge", "capacity_check", "exact_epsilon_lower", "histograms_of", "rebin", "unchecked"]
