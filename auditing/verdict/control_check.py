"""A nightly control's outcome (`auditing.verdict.controls.check_control` judges it): passed, and in words why. Data
only (no math), so the flows and the sinks that carry it may import it.

`labeldp.codec.encode` writes its JSON (its fields), as the verdict and the night's trust carry it; `ControlCheck.from_dict`
reads it back, checking the control's kind and each number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from labeldp.errors import LabelDPInputError

POSITIVE, NEGATIVE = "positive", "negative"
CONTROL_KINDS = (POSITIVE, NEGATIVE)
LABEL_BLIND = "label-blind"  # retired: the kind of the label-blind control's rows in existing warehouses
NAME = "control"


def _number(data: Mapping, key: str, *, optional: bool = False) -> float | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise LabelDPInputError(f"{NAME}.{key} must be a number{' or None' if optional else ''}; got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ControlCheck:
    """A control's outcome: passed, and in words why (for the warehouse, the report and the alert).

    control: positive | negative (label-blind on the retired control's nights); epsilon_lower_bound: its valid
    bound; floor: the positive control's pre-registered floor (None for the negative); ceiling: eps_c for the
    positive, 0 for the negative; message: the sentence the row, the report and the alert carry; floor_detail:
    how the floor was derived (`auditing.verdict.controls.positive_control_floor`); misfit_kappa: legacy (the
    retired label-blind control's measured misfit).
    """

    control: str
    passed: bool
    epsilon_lower_bound: float
    floor: float | None
    ceiling: float
    message: str
    floor_detail: dict | None = None
    misfit_kappa: float | None = None

    @classmethod
    def from_dict(cls, data: Any) -> ControlCheck:
        """The check of its JSON (its fields; floor_detail and misfit_kappa may be absent)."""
        if not isinstance(data, Mapping):
            raise LabelDPInputError(f"{NAME} must be a dict; got {type(data).__name__}")
        allowed = tuple(f.name for f in fields(cls))
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise LabelDPInputError(f"{NAME}: unknown key(s) {unknown}; allowed: {list(allowed)}")
        missing = [k for k in ("control", "passed", "epsilon_lower_bound", "floor", "ceiling", "message")
                   if k not in data]
        if missing:
            raise LabelDPInputError(f"{NAME}: missing {missing}")
        if data["control"] not in (*CONTROL_KINDS, LABEL_BLIND):
            raise LabelDPInputError(f"{NAME}.control must be one of {[*CONTROL_KINDS, LABEL_BLIND]}; got "
                                    f"{data['control']!r}")
        if not isinstance(data["passed"], bool):
            raise LabelDPInputError(f"{NAME}.passed must be True or False; got {data['passed']!r}")
        if not isinstance(data["message"], str) or not data["message"].strip():
            raise LabelDPInputError(f"{NAME}.message must be non-empty text; got {data['message']!r}")
        detail = data.get("floor_detail")
        if detail is not None and not isinstance(detail, Mapping):
            raise LabelDPInputError(f"{NAME}.floor_detail must be a dict or None; got {detail!r}")
        return cls(data["control"], data["passed"], _number(data, "epsilon_lower_bound"),
                   _number(data, "floor", optional=True), _number(data, "ceiling"), data["message"],
                   None if detail is None else dict(detail), _number(data, "misfit_kappa", optional=True))


__all__ = ["CONTROL_KINDS", "LABEL_BLIND", "NEGATIVE", "POSITIVE", "ControlCheck"]
