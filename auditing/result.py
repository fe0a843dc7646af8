"""An audit's result: the record the game and the bound produce (`auditing.audit.audit_counts`) and a verdict judges,
and the records nested in it (the capacity check, the slices; the game's own records, the curve, the split halves,
the histograms, are in `auditing.records.game`).

Data only (no bound or game code beyond the two configurations it holds), so the verdict and its sinks can name the
types without importing the audit. The records are written and read by `labeldp.codec` (``encode(result)``,
``decode(AuditResult, stored, "result")``): the JSON the result has always stored (its configurations flat, by
`AuditResult._encoded` / `_decoded`), with `AuditResult._upgrade` refusing a result written before kappa.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.prior_histogram import PriorHistogram
from auditing.game.row_groups import RowGroups
from auditing.records.game import AttackCurve, CurvePoint, ExpectedCorrect, ScoreHistogram, SplitHalves
from labeldp.codec import EMPTY_IS_NONE, INF_AS_STRING, decode, decode_fields, encode, encode_fields
from labeldp.errors import LabelDPInputError
from labeldp.stored import COUNT, NUMBER, SMALL_COUNT, TEXT, stored


@dataclass(frozen=True)
class StratumCounts:
    """One stratum of the capacity check's matched comparison (docs/soundness.md section 8.3): the released label,
    the guess's direction (``trained``: score > 0), the range of the reference's probability of that label, each
    side's guesses and correct guesses at the threshold, and how many guesses of each side the composition kept."""

    label: int
    trained: bool
    reference_low: float
    reference_high: float
    selection_guesses: int
    selection_correct: int
    bound_guesses: int
    bound_correct: int
    check_guesses: int
    check_correct: int
    matched_bound_guesses: int
    matched_check_guesses: int


# How a capacity check compared the sides (`CapacityCheck.rule`).
CHECK_RULES = ("stratified", "pooled")


@dataclass(frozen=True)
class CapacityCheck:
    """The capacity check of one audit (claim-free: the claim enters only through `vouches_for`).

    checked: False when it could not run (``reason`` says why; a VIOLATION is then "reference unchecked" or
    untrusted). threshold_bin / threshold_score: the guess threshold planned on the selection half and the views'
    guess counts (bin of `CHECK_BINS`, and the smallest |score| in it). selection_*: the selection half at that
    threshold (and its pointwise bound at kappa 0). bound_* and check_*: guesses and correct guesses at the threshold
    on the audited rows' bound half and on the check rows, all strata. rule: "stratified" (like with like: strata of
    the guessed views, docs/soundness.md section 8.3), or "pooled" for a result computed before strata (read back).
    strata / composition_*: the matched strata and the composition they were matched to (pi proportional to
    G_B^power G_H^(1 - power), over the strata where the selection half is right more than half the time when
    ``composition_favourable_only``); matched_*: the guesses each side kept and how many were right;
    unmatched_bound_guesses: audited guesses in strata with no check guess (left out: the worst case); composition_slack:
    the rounding's mismatch, added to the test; selection_matched_accuracy: the selection half's accuracy on the
    composition (the plan's, and the check's e-value's alternative). planned_check_guesses: the matched check
    guesses. audited_accuracy_lower / check_accuracy_upper: each matched side's one-sided limit (descriptive; the
    decision is the exact test's). misfit_kappa_upper: logit(check_accuracy_upper), the misfit the model shows on
    unseen rows where the verdict's guesses are (upper confidence). epsilon_check: the kappa-free lower bound on eps
    (valid at ``confidence`` under assumption T_u). check_misfit_kappa: the check rows' own game bounded at kappa 0
    (lower confidence, Bonferroni over ``check_grid_size`` thresholds): misfit the model can see at all.
    strata_table: every stratum with guesses at the threshold (`StratumCounts`).
    """

    checked: bool
    reason: str | None
    confidence: float
    audited_rows: int
    check_rows: int
    threshold_bin: int | None = None
    threshold_score: float | None = None
    selection_guesses: int | None = None
    selection_correct: int | None = None
    selection_bound: float | None = None
    planned_check_guesses: float | None = None
    bound_guesses: int | None = None
    bound_correct: int | None = None
    check_guesses: int | None = None
    check_correct: int | None = None
    audited_accuracy_lower: float | None = None
    check_accuracy_upper: float | None = None
    misfit_kappa_upper: float | None = field(default=None, metadata=INF_AS_STRING)  # JSON has no infinity
    epsilon_check: float = 0.0
    check_misfit_kappa: float | None = None
    check_grid_size: int | None = None
    # stored in the warehouse where the check ran (schema version 10)
    rule: str = stored(
        TEXT, "how the capacity check compared the sides: stratified (like with like) or pooled (a result stored "
        "before strata: it vouches for nothing); NULL: the check did not run", column="check_rule",
        choices=lambda: CHECK_RULES, default="pooled")
    strata: int | None = stored(SMALL_COUNT, "strata of guessed views the capacity check matched",
                                column="check_strata", default=None)
    composition_power: float | None = None
    composition_favourable_only: bool | None = None
    matched_bound_guesses: int | None = None
    matched_bound_correct: int | None = None
    matched_check_guesses: int | None = stored(COUNT, "check guesses the composition matching kept",
                                               column="check_matched_guesses", default=None)
    matched_check_correct: int | None = None
    unmatched_bound_guesses: int | None = stored(
        COUNT, "audited guesses in strata with no check guess (left out: the worst case)",
        column="check_unmatched_audited", default=None)
    composition_slack: float | None = None
    selection_matched_accuracy: float | None = None
    strata_table: tuple[StratumCounts, ...] = ()

    @property
    def stratified(self) -> bool:
        """True when the check compared like with like (a result computed before strata was not)."""
        return self.rule == "stratified"

    def vouches_for(self, claimed_epsilon: float) -> bool:
        """True when the check rejects the claim too: the evidence exceeds what misfit can explain. A check
        computed before strata (assumption T, which a memorising model breaks) vouches for nothing."""
        return bool(self.checked and self.stratified and self.epsilon_check > claimed_epsilon)

    def sees_misfit(self, kappa: float) -> bool:
        """True when the model shows more misfit on the check rows than ``kappa`` covers (lower confidence)."""
        return bool(self.checked and self.check_misfit_kappa is not None and self.check_misfit_kappa > kappa)


# The slices' design (docs/slices.md): their own status and their own false-alarm budget, so a global verdict means
# what it meant before slices existed.
SLICE_DESIGN = ("slices have their own status and budget: each slice's bound is valid at 1 - budget / S (Bonferroni "
                "over the S declared slices), the global verdict is unchanged; any false alarm of either kind at most "
                "the global 1 - confidence plus the slices' budget")


@dataclass(frozen=True)
class SliceResult:
    """One slice's valid bound, claim-free: the rows of the slice played alone (repetition 0, the same keyed
    coins as the global game) at the slice's confidence. ``note`` says why a slice has no bound at all (no row, a
    keyed half left empty); a slice too small to show any claim has a ``max_certifiable_epsilon`` at or under it."""

    slicing: str
    name: str
    rows: int
    check_rows: int
    epsilon_lower_bound: float = 0.0
    max_certifiable_epsilon: float = 0.0
    selected_guesses: int = 0
    selected_correct: int = 0
    selected_m: int = 0
    capacity_check: CapacityCheck | None = None
    note: str | None = None


@dataclass(frozen=True)
class SliceAudit:
    """The slice audit of one result (auditing.slices): the declared slicings, the budget and each slice's bound.

    budget: the slices' own false-alarm rate; declared: S, the slices it is split over (fixed from the features and
    the reference before any guess); confidence: each slice's, 1 - budget / S."""

    budget: float
    declared: int
    confidence: float
    slicings: tuple[str, ...]
    slices: tuple[SliceResult, ...]
    design: str = SLICE_DESIGN


# The stored layout of a result: its fields in this order, the settings of its game and bound among them flat (as
# written before the result held the two configurations; `AuditResult._encoded` writes it, `_decoded` reads it).
STORED_FIELDS = (
    "epsilon_lower_bound", "optimistic", "method", "strategy", "confidence", "point_confidence", "delta", "kappa", "m",
    "repetitions", "seed", "score", "score_power", "grid", "grid_size", "selected_guesses", "selected_correct",
    "selected_m", "max_certifiable_epsilon", "epsilon_mean", "epsilon_std", "epsilon_median", "paper_statistic_label",
    "per_repetition", "curve", "config_hash", "audit_rows", "split_halves", "score_histogram", "expected_correct",
    "prior_histogram", "reference_calibration", "gdp_mu_lower_bound", "capacity_check", "row_groups",
    "inconclusive_reason", "attack_curve", "slices", "coins_night")
# The game's settings a result stores (its grid's points and smallest fraction are not: ``grid_size`` counts the
# grid, and ``config_hash`` keys all of it); those a result written before them lacks, with what they meant then.
_STORED_BOUND = ("method", "strategy", "confidence", "delta", "kappa")
_STORED_GAME = ("repetitions", "seed", "score", "score_power", "grid", "audit_rows", "reference_calibration")
_GAME_DEFAULTS = {"audit_rows": "all", "reference_calibration": "none"}
# The score a result records when a custom score function replaced the game's.
CUSTOM_SCORE = "custom"


def _typed(cls: type, values: dict, name: str) -> dict:
    """``values`` read by their field's type in ``cls`` (the codec's strict reading; a message names the stored key:
    the game's night is stored as ``coins_night``)."""
    hints = typing.get_type_hints(cls)
    return {key: decode(hints[key], value, f"{name}.{'coins_night' if key == 'night' else key}")
            for key, value in values.items()}


@dataclass(frozen=True)
class AuditResult:
    """An audit's outcome. `epsilon_lower_bound` is valid at ``bound.confidence`` unless `optimistic` is True.

    game: the game it was played under (its night keyed the coins with the seed; None: the seed alone), bound: the
    settings that turned the counts into the bound. custom_score: a custom score function replaced ``game.score``.
    Stored flat (`STORED_FIELDS`): the settings side by side with the numbers, the night as ``coins_night``, a custom
    score as ``score`` "custom"; read back as written (`GameConfig.as_stored`: a plugin's names need not be
    registered), the game's grid points and smallest fraction their defaults. Its figures that are columns of
    audit_results say so on their fields (`labeldp.stored`; each group in its own place of the table)."""

    game: GameConfig
    bound: BoundConfig
    epsilon_lower_bound: float = stored(
        NUMBER, "THE statistically valid epsilon lower bound (at confidence, after correcting for selection)",
        required=True, group="bound")
    optimistic: bool
    point_confidence: float
    m: int = stored(COUNT, "examples in the game", required=True, group="counts")
    grid_size: int
    selected_guesses: int = stored(COUNT, "c': guesses at the selected point of the sweep", required=True,
                                   group="counts")
    selected_correct: int = stored(COUNT, "c: correct guesses at the selected point", required=True, group="counts")
    selected_m: int
    max_certifiable_epsilon: float = stored(
        NUMBER, "largest valid bound a perfect attacker could have produced with this audit's size and strategy",
        required=True, group="certifiable")
    # the paper's statistic: any finite number (NULL where not recorded)
    epsilon_mean: float = stored(
        NUMBER, "paper's statistic (optimistic, not a valid bound): mean over repetitions of the max over the sweep",
        low=-math.inf, group="paper")
    epsilon_std: float = stored(
        NUMBER, "paper's statistic (optimistic, not a valid bound): std over repetitions of the max over the sweep",
        low=-math.inf, group="paper")
    epsilon_median: float = stored(
        NUMBER, "paper's statistic (optimistic, not a valid bound): median over repetitions of the max over the sweep",
        low=-math.inf, group="paper")
    paper_statistic_label: str
    per_repetition: tuple[float, ...] = ()  # the paper's statistic per repetition (optimistic)
    curve: tuple[CurvePoint, ...] = ()  # repetition 0's sweep
    config_hash: str = ""
    custom_score: bool = False
    # for a strategy that selects on one half, both halves' repetition-0 counts (None otherwise).
    split_halves: SplitHalves | None = field(default=None, metadata=EMPTY_IS_NONE)
    # repetition 0's |score| histogram (the report's score panel), and for controls the game's expected correct
    # guesses over the grid of repetition 0 (None unless asked for).
    score_histogram: ScoreHistogram | None = field(default=None, metadata=EMPTY_IS_NONE)
    expected_correct: ExpectedCorrect | None = field(default=None, metadata=EMPTY_IS_NONE)
    # the reference's probabilities over the audited rows as a claim-free histogram (None for results written
    # before it), the priors of the risk figures (auditing.risk.figures.risk_assessment).
    prior_histogram: PriorHistogram | None = field(default=None, metadata=EMPTY_IS_NONE)
    # For the f-DP method, the Gaussian reading at the selected point: the largest mu rejected ("not mu-GDP"), a
    # statement about mu only, never an epsilon that decides.
    gdp_mu_lower_bound: float | None = stored(
        NUMBER, "method fdp: the Gaussian reading at the selected point, not mu-GDP for any mu below this (a statement "
        "about mu, never an epsilon); NULL: binomial, not computed (kappa > 0) or a row written before it",
        group="gdp", default=None)
    # The capacity check of repetition 0 (claim-free): whether the evidence exceeds what the reference's misfit
    # explains, judged by the model on its check rows. None for results written before it existed.
    capacity_check: CapacityCheck | None = field(default=None, metadata=EMPTY_IS_NONE)
    # Rows whose labels move together (the grouping rule, the rows left out and why, the label-agreement
    # diagnostic); None when no grouping was applied. inconclusive_reason: why there was nothing to bound (m = 0).
    row_groups: RowGroups | None = field(default=None, metadata=EMPTY_IS_NONE)
    inconclusive_reason: str | None = None
    # Repetition 0's attack as a classifier of the coin: its signed-score histogram, TPR at FPR <= 0.1% and 1%,
    # AUROC, with bootstrap intervals (docs/attack-curve.md). Descriptive, never a bound on epsilon; None for
    # results written before it, or with no row audited.
    attack_curve: AttackCurve | None = field(default=None, metadata=EMPTY_IS_NONE)
    # Valid bounds per declared slice, with their own budget (auditing.slices, docs/slices.md); None when the audit
    # declared no slice.
    slices: SliceAudit | None = field(default=None, metadata=EMPTY_IS_NONE)

    @property
    def score(self) -> str:
        """The score the game ranked by: ``game.score``, or "custom" for a custom score function."""
        return CUSTOM_SCORE if self.custom_score else self.game.score

    @classmethod
    def _upgrade(cls, value: dict) -> dict:
        """A result written before kappa (a ``tau`` and no ``kappa``: a total-variation figure, not a bound's
        kappa) is refused; any other field added since a record was written takes its default."""
        if "kappa" not in value and "tau" in value:
            raise LabelDPInputError(
                "result: written before kappa (it has tau, a total-variation figure, and no kappa); audit it again "
                "with this version")
        return value

    def _encoded(self) -> dict:
        """The stored layout (`STORED_FIELDS`): the game's and the bound's settings flat among the numbers."""
        own = encode_fields(self)
        flat = {**{name: getattr(self.bound, name) for name in _STORED_BOUND},
                **{name: getattr(self.game, name) for name in _STORED_GAME},
                "delta": float(self.bound.delta), "score": self.score,
                "coins_night": "" if self.game.night is None else self.game.night.isoformat()}
        return {name: own[name] if name in own else encode(flat[name]) for name in STORED_FIELDS}

    @classmethod
    def _decoded(cls, value, name: str) -> AuditResult:
        """A stored result (`STORED_FIELDS`, or an older one `_upgrade` reads) with its game and bound rebuilt."""
        if not isinstance(value, Mapping):
            raise LabelDPInputError(f"{name}: expected a record (mapping); got {type(value).__name__}")
        value = cls._upgrade(dict(value))
        missing = [key for key in (*_STORED_BOUND, *_STORED_GAME) if key not in value and key not in _GAME_DEFAULTS]
        if missing:
            raise LabelDPInputError(f"{name}: missing field(s) {missing}")
        bound = {key: value.pop(key) for key in _STORED_BOUND}
        game = {**_GAME_DEFAULTS, **{key: value.pop(key) for key in _STORED_GAME if key in value}}
        game["night"] = value.pop("coins_night", "") or None
        custom = game["score"] == CUSTOM_SCORE
        if custom:  # the game's own score is not stored: a custom function replaced it
            del game["score"]
        game = GameConfig.as_stored(**_typed(GameConfig, game, name))
        bound = BoundConfig.as_stored(**_typed(BoundConfig, bound, name))
        return decode_fields(cls, {**value, "game": game, "bound": bound, "custom_score": custom}, name)
