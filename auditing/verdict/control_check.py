"""A nightly control's outcome (`auditing.verdict.controls.check_control` judges it): passed, and in words why. Data
only (no math), so the flows and the sinks that carry it may import it.

`labeldp.codec` writes its JSON (its fields), as the verdict and the night's trust carry it, and reads it back;
the record checks the control's kind, its message and each number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labeldp.errors import LabelDPInputError
from labeldp.stored import FLAG, NUMBER, stored

TARGET, CONTROL = "target", "control"  # a verdict's kind (`Verdict.kind`, the warehouse column kind)
VERDICT_KINDS = (TARGET, CONTROL)
POSITIVE, NEGATIVE = "positive", "negative"
CONTROL_KINDS = (POSITIVE, NEGATIVE)
LABEL_BLIND = "label-blind"  # retired: the kind of the label-blind control's rows in existing warehouses
NAME = "control"


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
    passed: bool = stored(FLAG, "controls only: 1 if the control came out as constructed (auditing.verdict.controls), "
                          "else 0", column="control_passed")
    epsilon_lower_bound: float
    floor: float | None = stored(
        NUMBER, "positive control only: the pre-registered floor its valid bound had to exceed (99.9% power)",
        column="control_floor")
    ceiling: float
    message: str
    floor_detail: dict | None = None
    misfit_kappa: float | None = None

    def __post_init__(self):
        if self.control not in (*CONTROL_KINDS, LABEL_BLIND):
            raise LabelDPInputError(f"{NAME}.control must be one of {[*CONTROL_KINDS, LABEL_BLIND]}; got "
                                    f"{self.control!r}")
        if not isinstance(self.passed, bool):
            raise LabelDPInputError(f"{NAME}.passed must be True or False; got {self.passed!r}")
        if not isinstance(self.message, str) or not self.message.strip():
            raise LabelDPInputError(f"{NAME}.message must be non-empty text; got {self.message!r}")
        for name in ("epsilon_lower_bound", "floor", "ceiling", "misfit_kappa"):
            value = getattr(self, name)
            if value is not None and math.isnan(value):
                raise LabelDPInputError(f"{NAME}.{name} must be a number; got {value!r}")


__all__ = ["CONTROL", "CONTROL_KINDS", "LABEL_BLIND", "NEGATIVE", "POSITIVE", "TARGET", "VERDICT_KINDS", "ControlCheck"]
