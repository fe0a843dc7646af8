"""Shifts on demand for the synthetic generator (`pipelines.synth`): a sudden day-over-day move of one day.

``DayShift`` bundles a global logit shift, ``SegmentShift``s (the rows holding one value of a categorical
column) and ``PopularityShift``s (new sampling weights of a column's values); the module docstring of
`pipelines.synth` says what a shifted day is and what stays bit for bit the same. Every setting is checked when
the object is built (LabelDPInputError naming the setting); `check_shift` also checks segment values against
the world of a seed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from auditing.errors import LabelDPInputError
from pipelines import schema
from pipelines.synth_world import DEFAULT_SEED, VOCAB_SIZES, CategoricalLaw, check_seed, seed_world

MAX_LOGIT_SHIFT = 10.0  # |logit shift| of a DayShift or SegmentShift
MAX_ZIPF_EXPONENT = 5.0  # PopularityShift.exponent in 0..5
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


def _column_index(column: object, what: str) -> int:
    if not isinstance(column, str) or column not in schema.CATEGORICAL_COLUMNS:
        raise LabelDPInputError(f"{what} must name a categorical column C1..C26; got {column!r}")
    return schema.CATEGORICAL_COLUMNS.index(column)


def _number(value: object, what: str, low: float, high: float) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating)
            or not math.isfinite(value) or not low <= value <= high):
        raise LabelDPInputError(f"{what} must be a finite number in {low:g}..{high:g}; got {value!r}")
    return float(value)


def _integer(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value <= high:
        raise LabelDPInputError(f"{what} must be a whole number in {low}..{high}; got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class SegmentShift:
    """Adds ``logit`` to logit(p_click) of the rows whose categorical ``column`` (``"C1"``..``"C26"``) has one
    value, chosen by exactly one of:

    - ``value``: the value as it appears in the data (8 hex digits; must be in the column's vocabulary of this
      seed's world);
    - ``rank``: the ``rank``-th most popular value of the column on that day (0 = the most popular), by the
      day's sampling weights (after any ``PopularityShift`` of the same column and day; ties by vocabulary
      order). E.g. ``rank=0`` of C9 (3 values) covers about 40-70% of the rows, without knowing its hex string.

    Rows where the column is missing are never in the segment.
    """

    column: str
    logit: float
    value: str | None = None
    rank: int | None = None

    def __post_init__(self) -> None:
        j = _column_index(self.column, "segment column")
        object.__setattr__(self, "logit", _number(self.logit, "segment logit shift", -MAX_LOGIT_SHIFT,
                                                  MAX_LOGIT_SHIFT))
        if (self.value is None) == (self.rank is None):
            raise LabelDPInputError(f"a segment of {self.column} needs exactly one of a value (8 hex digits) or a "
                                    f"popularity rank; got value={self.value!r}, rank={self.rank!r}")
        if self.value is not None:
            if not isinstance(self.value, str) or not _HEX8.fullmatch(self.value):
                raise LabelDPInputError(f"segment value of {self.column} must be 8 hex digits (as in the data, "
                                        f"e.g. 0a1b2c3d); got {self.value!r}")
            object.__setattr__(self, "value", self.value.lower())
        else:
            size = VOCAB_SIZES[j]
            object.__setattr__(self, "rank", _integer(self.rank, f"segment rank of {self.column} ({size} values)",
                                                      0, size - 1))

    def settings(self) -> dict:
        selector = {"value": self.value} if self.value is not None else {"rank": self.rank}
        return {"column": self.column, **selector, "logit": self.logit}


@dataclass(frozen=True, kw_only=True)
class PopularityShift:
    """Changes the sampling weights (popularity) of the values of categorical ``column`` on the day.

    The base weight of the value at Zipf position k is (k + 1)^-s (s = the column's exponent, 1.05..1.35), times
    the value's slow daily drift. ``exponent`` replaces s (0 = all values equally popular; larger = more
    concentrated on the top values); ``rotate`` K (1..n-1, n = the vocabulary size) then rotates the ordering:
    the value at position k takes the weight of position (k + K) mod n, so the K least popular values become
    the most popular ones and every other value moves down K places. The values' effects on the click logit are
    unchanged: P(label | features) keeps its form; only the feature distribution moves.
    """

    column: str
    rotate: int = 0
    exponent: float | None = None

    def __post_init__(self) -> None:
        j = _column_index(self.column, "popularity shift column")
        size = VOCAB_SIZES[j]
        object.__setattr__(self, "rotate", _integer(self.rotate, f"popularity rotation of {self.column} "
                                                                 f"({size} values)", 0, size - 1))
        if self.exponent is not None:
            object.__setattr__(self, "exponent", _number(self.exponent, f"popularity exponent of {self.column}",
                                                         0.0, MAX_ZIPF_EXPONENT))
        if self.rotate == 0 and self.exponent is None:
            raise LabelDPInputError(f"a popularity shift of {self.column} needs a rotation (1..{size - 1}) or an "
                                    f"exponent (0..{MAX_ZIPF_EXPONENT:g}); got neither")

    def settings(self) -> dict:
        return {"column": self.column, "rotate": self.rotate, "exponent": self.exponent}

    def log_weight(self, base: CategoricalLaw) -> np.ndarray:
        """The shifted base popularity (log scale, before the daily drift) of the column's values."""
        log_w = base.log_weight
        if self.exponent is not None:
            log_w = -self.exponent * np.log1p(np.arange(len(log_w), dtype=np.float64))
        return np.roll(log_w, -self.rotate) if self.rotate else log_w


@dataclass(frozen=True, kw_only=True)
class DayShift:
    """A day-over-day shift applied to one generated day (module docstring of `pipelines.synth`, "Shifts on
    demand").

    ``logit``: added to logit(p_click) of every row. ``segments``: ``SegmentShift``s, each added to the
    logit of its segment's rows. ``popularity``: ``PopularityShift``s (at most one per column). ``DayShift()``
    moves nothing: the day is generated exactly as without a shift. Example::

        shift = DayShift(logit=0.7, segments=(SegmentShift(column="C9", rank=0, logit=-0.5),),
                         popularity=(PopularityShift(column="C3", rotate=100),))
        generate_day(date, rows=100_000, shift=shift)
    """

    logit: float = 0.0
    segments: tuple[SegmentShift, ...] = ()
    popularity: tuple[PopularityShift, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "logit", _number(self.logit, "logit shift", -MAX_LOGIT_SHIFT, MAX_LOGIT_SHIFT))
        for field, kind in (("segments", SegmentShift), ("popularity", PopularityShift)):
            items = getattr(self, field)
            if isinstance(items, kind):
                items = (items,)
            if isinstance(items, str | bytes) or not hasattr(items, "__iter__"):
                raise LabelDPInputError(f"DayShift.{field} must be a sequence of {kind.__name__}; got {items!r}")
            items = tuple(items)
            for item in items:
                if not isinstance(item, kind):
                    raise LabelDPInputError(f"DayShift.{field} must hold {kind.__name__} objects; got {item!r}")
            object.__setattr__(self, field, items)
        columns = [item.column for item in self.popularity]
        for column in columns:
            if columns.count(column) > 1:
                raise LabelDPInputError(f"at most one popularity shift per column; {column} has "
                                        f"{columns.count(column)}")

    @property
    def is_identity(self) -> bool:
        """True if the shift moves nothing (the day is then generated exactly as without a shift)."""
        return self.logit == 0.0 and not self.popularity and all(s.logit == 0.0 for s in self.segments)

    def settings(self) -> dict:
        """The shift's settings, JSON-able (as recorded in ``_provenance.json``)."""
        return {"logit": self.logit, "segments": [s.settings() for s in self.segments],
                "popularity": [p.settings() for p in self.popularity]}


def effective_shift(shift: DayShift | None) -> DayShift | None:
    """None for no shift or one that moves nothing, else ``shift``; TypeError for anything but a DayShift."""
    if shift is None:
        return None
    if not isinstance(shift, DayShift):
        raise TypeError(f"shift must be a DayShift or None; got {type(shift).__name__} {shift!r}")
    return None if shift.is_identity else shift


def value_index(seed: int, segment: SegmentShift) -> int:
    """The vocabulary index of ``segment.value`` in the world of ``seed``."""
    dictionary = seed_world(seed).categoricals[schema.CATEGORICAL_COLUMNS.index(segment.column)].dictionary
    index = pc.index(dictionary, segment.value).as_py()
    if index < 0:
        raise LabelDPInputError(f"{segment.value} is not a value of {segment.column} in the synthetic world of seed "
                                f"{seed} ({len(dictionary)} values); pick it from the data, or by popularity rank")
    return index


def check_shift(shift: DayShift | None, seed: int = DEFAULT_SEED) -> None:
    """Raises ``LabelDPInputError`` if ``shift`` names a segment value that is not in its column's vocabulary of
    the world of ``seed`` (everything else is checked when the ``DayShift`` is built). For the command line,
    which checks all its days' settings before writing anything."""
    seed = check_seed(seed)
    shift = effective_shift(shift)
    for segment in shift.segments if shift is not None else ():
        if segment.value is not None:
            value_index(seed, segment)
