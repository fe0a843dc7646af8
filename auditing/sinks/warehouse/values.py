"""Checked scalar values of a warehouse row: every error names the column and what it got."""

from __future__ import annotations

import math
from collections.abc import Mapping

from labeldp.errors import LabelDPInputError


def as_float(row: Mapping, name: str, *, allow_inf: bool = False) -> float:
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LabelDPInputError(f"{name} must be a number; got {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise LabelDPInputError(f"{name} must be a finite number; got {value!r}")
    return value


def as_count(row: Mapping, name: str) -> int:
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 0:
        raise LabelDPInputError(f"{name} must be a whole number >= 0; got {value!r}")
    return int(value)


def optional_float(row: Mapping, name: str, *, low: float = 0.0, high: float | None = None) -> float | None:
    """None, or a finite number in [low, high] (high None: no upper limit); the error names the column."""
    if row.get(name) is None:
        return None
    value = as_float(row, name)
    if value < low or (high is not None and value > high):
        where = f"[{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise LabelDPInputError(f"{name} must be a finite number {'in ' if high is not None else ''}{where} or "
                                f"None; got {value!r}")
    return value
