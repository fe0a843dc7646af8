"""The day-over-day data diagnostic a verdict carries (computed by `pipelines.reference.shift_diagnostics`): how the
reference M' fits day D against its own day D-1, and how far the features moved. A diagnostic, not a proof. Data
only (no math), so the sinks that render it may import it.

`ShiftDiagnostic.from_dict` is the one reader of its JSON (a stored night) and `to_dict` writes it back unchanged:
one of three shapes, each with its keys in the order the producer writes them (``error``: it failed;
``not_computed``: no two days to compare; else the figures).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from labeldp.errors import LabelDPInputError
from labeldp.names import parse_date
from labeldp.records import record_keys

NAME = "shift_diagnostic"


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise LabelDPInputError(f"{name} must be text; got {value!r}")
    return value


def _number(value: Any, name: str, *, optional: bool = True) -> float | None:
    """A number as stored (a non-finite one is written as text by the JSON writers); None when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, str) and value.lower() in ("inf", "-inf", "nan", "infinity", "-infinity"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LabelDPInputError(f"{name} must be a number{' or None' if optional else ''}; got {value!r}")
    return float(value)


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 0:
        raise LabelDPInputError(f"{name} must be a whole number >= 0; got {value!r}")
    return int(value)


@dataclass(frozen=True)
class DayFit:
    """M''s fit on one day's rows it never saw: log-loss and ECE (None without rows), the rows and their click
    rate; ``rows_rule`` (day D-1 only): which of the day's rows those are."""

    log_loss: float | None
    ece: float | None
    rows: int
    click_rate: float | None
    rows_rule: str | None = None

    @classmethod
    def from_dict(cls, data: Any, name: str) -> DayFit:
        data = record_keys(data, name, tuple(f.name for f in fields(cls)), ("log_loss", "ece", "rows", "click_rate"))
        rule = data.get("rows_rule")
        return cls(_number(data["log_loss"], f"{name}.log_loss"), _number(data["ece"], f"{name}.ece"),
                   _count(data["rows"], f"{name}.rows"), _number(data["click_rate"], f"{name}.click_rate"),
                   None if rule is None else _text(rule, f"{name}.rows_rule"))

    def to_dict(self) -> dict:
        out = {"log_loss": self.log_loss, "ece": self.ece, "rows": self.rows, "click_rate": self.click_rate}
        if self.rows_rule is not None:
            out["rows_rule"] = self.rows_rule
        return out


@dataclass(frozen=True)
class FeaturePsi:
    feature: str
    psi: float


@dataclass(frozen=True)
class FeatureShift:
    """The features' day-over-day population stability index: how it was binned, its max, median and mean over
    the features, the five largest (``top``) and every feature's (``per_feature``: feature -> PSI)."""

    statistic: str
    bins: str
    max_psi: float
    median_psi: float
    mean_psi: float
    top: tuple[FeaturePsi, ...]
    per_feature: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> FeatureShift:
        name = f"{NAME}.feature_shift"
        keys = tuple(f.name for f in fields(cls))
        data = record_keys(data, name, keys, keys)
        top = data["top"]
        if not isinstance(top, list | tuple):
            raise LabelDPInputError(f"{name}.top must be a list; got {top!r}")
        items = []
        for index, item in enumerate(top):
            where = f"{name}.top[{index}]"
            item = record_keys(item, where, ("feature", "psi"), ("feature", "psi"))
            items.append(FeaturePsi(_text(item["feature"], f"{where}.feature"),
                                    _number(item["psi"], f"{where}.psi", optional=False)))
        per_feature = record_keys(data["per_feature"], f"{name}.per_feature", tuple(data["per_feature"] or ()), ())
        return cls(_text(data["statistic"], f"{name}.statistic"), _text(data["bins"], f"{name}.bins"),
                   *(_number(data[k], f"{name}.{k}", optional=False) for k in ("max_psi", "median_psi", "mean_psi")),
                   top=tuple(items),
                   per_feature={str(k): _number(v, f"{name}.per_feature.{k}", optional=False)
                                for k, v in per_feature.items()})

    def to_dict(self) -> dict:
        return {"statistic": self.statistic, "bins": self.bins, "max_psi": self.max_psi,
                "median_psi": self.median_psi, "mean_psi": self.mean_psi,
                "top": [{"feature": item.feature, "psi": item.psi} for item in self.top],
                "per_feature": dict(self.per_feature)}


@dataclass(frozen=True)
class ShiftDiagnostic:
    """The diagnostic of one night and reference.

    label: the "diagnostic, not a proof" caveat. reference: the reference measured (name@day); previous_day /
    current_day: the two days compared. error: why it failed (nothing else is recorded); not_computed: why two
    days cannot be compared. Otherwise the figures: M''s fit on each day (``fit_previous``, ``fit_current``),
    their log-loss and ECE differences (None when a day has no rows), the features' shift and its max.
    """

    label: str
    reference: str | None = None
    previous_day: dt.date | None = None
    current_day: dt.date | None = None
    fit_previous: DayFit | None = None
    fit_current: DayFit | None = None
    reference_log_loss_shift: float | None = None
    reference_ece_shift: float | None = None
    feature_shift: FeatureShift | None = None
    feature_shift_max_psi: float | None = None
    not_computed: str | None = None
    error: str | None = None

    @property
    def computed(self) -> bool:
        return self.error is None and self.not_computed is None

    @property
    def why_not_computed(self) -> str | None:
        return self.not_computed or self.error

    @classmethod
    def from_dict(cls, data: Any) -> ShiftDiagnostic:
        """The diagnostic of its JSON (one of `to_dict`'s three shapes)."""
        if isinstance(data, Mapping) and "error" in data:
            data = record_keys(data, NAME, ("label", "error"), ("label", "error"))
            return cls(_text(data["label"], f"{NAME}.label"), error=_text(data["error"], f"{NAME}.error"))
        base = ("label", "reference", "days")
        if isinstance(data, Mapping) and "not_computed" in data:
            data = record_keys(data, NAME, (*base, "not_computed"), (*base, "not_computed"))
            return cls(**cls._base(data), not_computed=_text(data["not_computed"], f"{NAME}.not_computed"))
        figures = ("reference_fit", "reference_log_loss_shift", "reference_ece_shift", "feature_shift",
                   "feature_shift_max_psi")
        data = record_keys(data, NAME, (*base, *figures), (*base, *figures))
        fit = record_keys(data["reference_fit"], f"{NAME}.reference_fit", ("previous", "current"), ("previous", "current"))
        return cls(**cls._base(data),
                   fit_previous=DayFit.from_dict(fit["previous"], f"{NAME}.reference_fit.previous"),
                   fit_current=DayFit.from_dict(fit["current"], f"{NAME}.reference_fit.current"),
                   reference_log_loss_shift=_number(data["reference_log_loss_shift"],
                                                    f"{NAME}.reference_log_loss_shift"),
                   reference_ece_shift=_number(data["reference_ece_shift"], f"{NAME}.reference_ece_shift"),
                   feature_shift=FeatureShift.from_dict(data["feature_shift"]),
                   feature_shift_max_psi=_number(data["feature_shift_max_psi"], f"{NAME}.feature_shift_max_psi"))

    @staticmethod
    def _base(data: Mapping) -> dict:
        days = record_keys(data["days"], f"{NAME}.days", ("previous", "current"), ("previous", "current"))
        return {"label": _text(data["label"], f"{NAME}.label"), "reference": _text(data["reference"],
                                                                                   f"{NAME}.reference"),
                "previous_day": parse_date(days["previous"], f"{NAME}.days.previous"),
                "current_day": parse_date(days["current"], f"{NAME}.days.current")}

    def to_dict(self) -> dict:
        if self.error is not None:
            return {"label": self.label, "error": self.error}
        out = {"label": self.label, "reference": self.reference,
               "days": {"previous": self.previous_day.isoformat(), "current": self.current_day.isoformat()}}
        if self.not_computed is not None:
            return {**out, "not_computed": self.not_computed}
        return {**out, "reference_fit": {"previous": self.fit_previous.to_dict(), "current": self.fit_current.to_dict()},
                "reference_log_loss_shift": self.reference_log_loss_shift,
                "reference_ece_shift": self.reference_ece_shift, "feature_shift": self.feature_shift.to_dict(),
                "feature_shift_max_psi": self.feature_shift_max_psi}


__all__ = ["DayFit", "FeaturePsi", "FeatureShift", "ShiftDiagnostic"]
