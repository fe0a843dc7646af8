"""The day-over-day data diagnostic a verdict carries (computed by `pipelines.reference.shift_diagnostics`): how the
reference M' fits day D against its own day D-1, and how far the features moved. A diagnostic, not a proof. Data
only (no math), so the sinks that render it may import it.

`labeldp.codec` reads and writes its JSON (a stored night): one of three shapes (``error``: it failed;
``not_computed``: no two days to compare; else the figures), each a record below with its keys in the order the
producer writes them; ``ShiftDiagnostic`` is written as its shape and read from whichever the JSON holds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labeldp.codec import OMIT_DEFAULT, decode
from labeldp.errors import LabelDPInputError

NAME = "shift_diagnostic"


@dataclass(frozen=True)
class DayFit:
    """M''s fit on one day's rows it never saw: log-loss and ECE (None without rows), the rows and their click
    rate; ``rows_rule`` (day D-1 only): which of the day's rows those are."""

    log_loss: float | None
    ece: float | None
    rows: int
    click_rate: float | None
    rows_rule: str | None = field(default=None, metadata=OMIT_DEFAULT)  # absent, not null, when None

    def __post_init__(self):
        if self.rows < 0:
            raise LabelDPInputError(f"{NAME}: a day fit's rows must be >= 0; got {self.rows!r}")


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


@dataclass(frozen=True)
class _Days:
    previous: dt.date
    current: dt.date


@dataclass(frozen=True)
class _Fits:
    previous: DayFit
    current: DayFit


@dataclass(frozen=True)
class _Failed:
    """The shape of a diagnostic that failed."""

    label: str
    error: str


@dataclass(frozen=True)
class _NotComputed:
    """The shape of a diagnostic with no two days to compare."""

    label: str
    reference: str
    days: _Days
    not_computed: str


@dataclass(frozen=True)
class _Figures:
    """The shape of a computed diagnostic."""

    label: str
    reference: str
    days: _Days
    reference_fit: _Fits
    reference_log_loss_shift: float | None
    reference_ece_shift: float | None
    feature_shift: FeatureShift
    feature_shift_max_psi: float | None


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

    def _encoded(self) -> _Failed | _NotComputed | _Figures:
        """Its shape (module docstring)."""
        if self.error is not None:
            return _Failed(self.label, self.error)
        days = _Days(self.previous_day, self.current_day)
        if self.not_computed is not None:
            return _NotComputed(self.label, self.reference, days, self.not_computed)
        return _Figures(self.label, self.reference, days, _Fits(self.fit_previous, self.fit_current),
                        self.reference_log_loss_shift, self.reference_ece_shift, self.feature_shift,
                        self.feature_shift_max_psi)

    @classmethod
    def _decoded(cls, value: Any, name: str) -> ShiftDiagnostic:
        """The diagnostic of whichever shape ``value`` holds (its keys checked as that shape's)."""
        shape = _Figures
        if isinstance(value, Mapping):
            shape = _Failed if "error" in value else _NotComputed if "not_computed" in value else _Figures
        read = decode(shape, value, name)
        if isinstance(read, _Failed):
            return cls(read.label, error=read.error)
        base = {"label": read.label, "reference": read.reference, "previous_day": read.days.previous,
                "current_day": read.days.current}
        if isinstance(read, _NotComputed):
            return cls(**base, not_computed=read.not_computed)
        return cls(**base, fit_previous=read.reference_fit.previous, fit_current=read.reference_fit.current,
                   reference_log_loss_shift=read.reference_log_loss_shift,
                   reference_ece_shift=read.reference_ece_shift, feature_shift=read.feature_shift,
                   feature_shift_max_psi=read.feature_shift_max_psi)


__all__ = ["DayFit", "FeaturePsi", "FeatureShift", "ShiftDiagnostic"]
