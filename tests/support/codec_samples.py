"""Sample records for tests/labeldp/test_codec.py, built from each class's fields by type (no codec import), so that the
same samples could be written by the hand-written ``to_dict`` methods the codec replaced
(tests/labeldp/fixtures/codec_before.json holds what they wrote)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import types
import typing

import numpy as np

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.prior_histogram import PriorHistogram
from auditing.game.row_groups import RowGroups
from auditing.records.game import (
    AttackCurve,
    CurvePoint,
    ExpectedCorrect,
    HalfCounts,
    ScoreHistogram,
    SplitHalves,
)
from auditing.result import AuditResult, CapacityCheck, SliceAudit, SliceResult
from auditing.risk.records import RiskAssessment, RiskBlock
from auditing.verdict.split_test import SplitTest
from auditing.verdict.types import Decision, Robustness, SliceVerdict, Trust, TrustFigures

# The night of a sample result's game (stored as its coins_night).
NIGHT = dt.date(2024, 1, 2)


def _value(tp, depth: int):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return _value(next(a for a in args if a is not type(None)), depth)
    if origin is tuple:
        return tuple(_value(args[0], depth) for _ in range(2))
    if tp is np.ndarray:
        counts = np.zeros(PriorHistogram.BUCKETS, dtype=np.int64)
        counts[[3, 17]] = [5, 8]
        return counts
    if dataclasses.is_dataclass(tp):
        return sample(tp, depth + 1)
    return {bool: True, int: 3 + depth, float: 0.25 + depth, str: f"s{depth}", dt.date: NIGHT}[tp]


def sample(cls, depth: int = 0, **overrides):
    """An instance of ``cls`` with every field set (an optional field too), ``overrides`` replacing some; a settings
    class (GameConfig, BoundConfig) as a stored record holds it, unchecked (its sample names are no registered
    choice)."""
    hints = typing.get_type_hints(cls)
    values = {f.name: _value(hints[f.name], depth) for f in dataclasses.fields(cls) if f.init}
    return getattr(cls, "as_stored", cls)(**{**values, **overrides})


def samples() -> dict:
    """name -> record, the records whose JSON must not change."""
    risk_with_priors = sample(RiskBlock, rows=10, mu=None)
    out = {
        "curve_point": sample(CurvePoint), "half_counts": sample(HalfCounts), "split_halves": sample(SplitHalves),
        "score_histogram": sample(ScoreHistogram), "attack_curve": sample(AttackCurve),
        "attack_curve_no_figures": sample(AttackCurve, auroc=None, auroc_lower=None, tpr_at_fpr_0_01=None),
        "expected_correct": sample(ExpectedCorrect),
        "capacity_check": sample(CapacityCheck), "capacity_check_inf": sample(CapacityCheck, misfit_kappa_upper=math.inf),
        "capacity_check_unchecked": CapacityCheck(False, "no check rows", 0.95, 10, 0),
        "slice_result": sample(SliceResult), "slice_result_bare": sample(SliceResult, capacity_check=None, note=None),
        "slice_audit": sample(SliceAudit), "prior_histogram": sample(PriorHistogram),
        "prior_histogram_empty": PriorHistogram.empty("class1"), "row_groups": sample(RowGroups),
        "audit_result": sample(AuditResult, epsilon_lower_bound=math.inf, custom_score=False,
                               game=sample(GameConfig, grid_points=100, grid_min_fraction=1e-4), bound=sample(BoundConfig)),
        "robustness": sample(Robustness), "trust": sample(Trust), "trust_figures": sample(TrustFigures),
        "slice_verdict": sample(SliceVerdict), "split_test": sample(SplitTest),
        "risk_block": risk_with_priors, "risk_block_bare": sample(RiskBlock, rows=0, mu=None),
        "risk_block_gdp": sample(RiskBlock, rows=0, mu=0.5),
        "risk_assessment": RiskAssessment(risk_with_priors, None, "headline"),
    }
    bare = {name: None for name in ("split_halves", "score_histogram", "expected_correct", "prior_histogram",
                                    "capacity_check", "row_groups", "attack_curve", "slices")}
    out["audit_result_bare"] = dataclasses.replace(out["audit_result"], **bare, epsilon_lower_bound=0.5)
    out["decision"] = sample(Decision, decision="act")
    return out
