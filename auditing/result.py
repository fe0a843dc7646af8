"""An audit's result: the record the game and the bound produce (`auditing.audit.audit_counts`) and a verdict judges.

Data only (no bound or game code), so the verdict and its sinks can name the type without importing the audit.
`AuditResult.from_dict` is the one reader of a stored result record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from labeldp.errors import LabelDPInputError


@dataclass(frozen=True)
class AuditResult:
    """An audit's outcome. `epsilon_lower_bound` is valid at `confidence` unless `optimistic` is True."""

    epsilon_lower_bound: float
    optimistic: bool
    method: str
    strategy: str
    confidence: float
    point_confidence: float
    delta: float
    kappa: float
    m: int
    repetitions: int
    seed: int
    score: str
    score_power: float
    grid: str
    grid_size: int
    selected_guesses: int
    selected_correct: int
    selected_m: int
    max_certifiable_epsilon: float
    epsilon_mean: float
    epsilon_std: float
    epsilon_median: float
    paper_statistic_label: str
    per_repetition: list = field(default_factory=list)
    curve: list = field(default_factory=list)  # [{guesses, correct, epsilon_lower_bound}] of repetition 0
    config_hash: str = ""
    # which rows were audited ("all" for results written before the option existed), and
    # for the split strategy both halves' repetition-0 counts {"selection"|"bound": {m, guesses, correct}}, so
    # that claim-dependent figures (auditing.verdict.robustness) can redo the selection at another kappa.
    audit_rows: str = "all"
    split_halves: dict = field(default_factory=dict)
    # repetition 0's |score| histogram with correct guesses (auditing.game.score_histogram, the
    # report's score panel), and for controls the game's expected correct guesses over the grid of repetition
    # 0, {"guesses": [...], "correct": [...]} (auditing.game.expected.expected_histogram; empty unless asked for).
    score_histogram: dict = field(default_factory=dict)
    expected_correct: dict = field(default_factory=dict)
    # the reference's probabilities over the audited rows as a claim-free histogram
    # (auditing.risk.figures.PriorHistogram.to_dict(); empty for results written before it), the priors of the risk
    # figures that auditing.risk.figures.risk_assessment computes for a claimed and the demonstrated epsilon.
    prior_histogram: dict = field(default_factory=dict)
    # The reference correction this result's reference went through (REFERENCE_CALIBRATIONS; "none" for
    # results written before it existed) and, for the f-DP method, the Gaussian reading at the selected point:
    # the largest mu rejected ("not mu-GDP"), a statement about mu only, never an epsilon that decides.
    reference_calibration: str = "none"
    gdp_mu_lower_bound: float | None = None
    # The capacity check of repetition 0 (auditing.verdict.capacity_check.CapacityCheck.to_dict(); claim-free): whether
    # the evidence exceeds what the reference's misfit explains, judged by the model on its check rows. Empty
    # for results written before it existed.
    capacity_check: dict = field(default_factory=dict)
    # Rows whose labels move together (auditing.game.row_groups.RowGroups.to_dict(): the grouping rule, the rows left
    # out and why, the label-agreement diagnostic); empty when no grouping was applied. inconclusive_reason: why
    # there was nothing to bound (m = 0), else None.
    row_groups: dict = field(default_factory=dict)
    inconclusive_reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> AuditResult:
        """The one reader of a result record (``to_dict()`` as a job stored it, JSON or Python): a field added
        since the record was written takes its default; a result written before kappa (a ``tau`` and no
        ``kappa``: a total-variation figure, not a bound's kappa) is refused, as is a field no version had or a
        missing required one, each named."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise LabelDPInputError(f"result must be an AuditResult or its to_dict(); got {type(data).__name__}")
        if "kappa" not in data and "tau" in data:
            raise LabelDPInputError(
                "result: written before kappa (it has tau, a total-variation figure, and no kappa); audit it again "
                "with this version")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise LabelDPInputError(f"result: unknown field(s) {unknown} (expected AuditResult.to_dict())")
        missing = [name for name, f in fields.items() if name not in data
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise LabelDPInputError(f"result: missing field(s) {missing} (expected AuditResult.to_dict())")
        return cls(**dict(data))
