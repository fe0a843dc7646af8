"""The night's reference check: was the reference M' checked on day D's held-out rows, and what its correction
did. Data only (no math), so the sinks that render it may import it.

`labeldp.codec` reads and writes its JSON (a stored night, an alert's payload): ``label_blind`` only on a night the
retired control ran (an alert's body carries it always, null when absent). Errors name the field
(``reference_check.label_blind.misfit_kappa`` ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from auditing.records.game import REFERENCE_CALIBRATIONS
from labeldp.codec import OMIT_DEFAULT
from labeldp.errors import LabelDPInputError
from labeldp.stored import COUNT, FLAG, NUMBER, SMALL_COUNT, TEXT, stored

NAME = "reference_check"


def _figure(value: float, name: str, high: float | None = None) -> None:
    """Refuses a figure outside [0, high] (the warehouse column's range; high None: no upper limit) or not finite."""
    if not math.isfinite(value) or value < 0 or (high is not None and value > high):
        where = f"in [0, {high:g}]" if high is not None else ">= 0"
        raise LabelDPInputError(f"{name} must be a finite number {where}; got {value!r}")


@dataclass(frozen=True)
class CalibrationFigures:
    """The correction's figures (`pipelines.reference.recalibration.calibration_figures`): its fit and validation
    rows, its boosting rounds, and log-loss and ECE before and after on the validation rows."""

    # stored in the warehouse as calibration_*; NULL where no correction ran
    rows_fit: int = stored(
        COUNT, "reference correction: rows of day D it was fitted on (a keyed share of the training rows, left out "
        "of every game; held-out rows in rows written before 2026-11-29); NULL: no correction ran",
        column="calibration_rows_fit")
    rows_validation: int = stored(
        COUNT, "reference correction: rows of day D of its share, not used to fit it, on which the before/after "
        "figures were measured", column="calibration_rows_validation")
    rounds: int = stored(SMALL_COUNT, "reference correction: boosting rounds kept", column="calibration_rounds")
    logloss_before: float = stored(NUMBER, "reference correction: M' log-loss on the validation rows before the "
                                   "correction", column="calibration_log_loss_before")
    logloss_after: float = stored(NUMBER, "reference correction: the corrected M' log-loss on the validation rows",
                                  column="calibration_log_loss_after")
    ece_before: float = stored(NUMBER, "reference correction: M' expected calibration error on the validation rows "
                               "before the correction", column="calibration_ece_before", high=1.0)
    ece_after: float = stored(NUMBER, "reference correction: the corrected M' expected calibration error on the "
                              "validation rows", column="calibration_ece_after", high=1.0)

    def __post_init__(self):
        for f in fields(self):
            value, name = getattr(self, f.name), f"{NAME}.calibration_figures.{f.name}"
            if f.name.startswith(("rows", "rounds")):
                if value < 0:
                    raise LabelDPInputError(f"{name} must be a whole number >= 0; got {value!r}")
            else:
                _figure(value, name, 1.0 if f.name.startswith("ece") else None)
        if self.rows_validation < 1:
            raise LabelDPInputError(f"{NAME}.calibration_figures.rows_validation must be >= 1 (the figures are "
                                    f"measured on them); got {self.rows_validation}")


@dataclass(frozen=True)
class LabelBlindFigures:
    """The retired label-blind control's figures, on a night it ran: its valid bound at the plan's kappa, the
    smallest kappa bringing it to 0, and whether it flagged the reference."""

    # stored in the warehouse; NULL where it did not run
    epsilon_lower_bound: float = stored(
        NUMBER, "the night's label-blind control (trained only on held-out rows the correction did not use; true eps "
        "0 on the audited rows): its valid eps lower bound at the plan's kappa; above 0 it says the reference does "
        "not fit day D; NULL: not run", column="label_blind_bound")
    misfit_kappa: float = stored(
        NUMBER, "the smallest kappa that brings the label-blind control's bound to 0: the night's measured reference "
        "misfit (click odds off by up to a factor e^reference_misfit_kappa); NULL: not run",
        column="reference_misfit_kappa")
    flagged: bool = stored(
        FLAG, "1 if the label-blind control flagged the reference (the night is untrusted: the reference does not "
        "fit day D), 0 if it did not; NULL: not run", column="label_blind_flagged")

    def __post_init__(self):
        _figure(self.epsilon_lower_bound, f"{NAME}.label_blind.epsilon_lower_bound")
        _figure(self.misfit_kappa, f"{NAME}.label_blind.misfit_kappa")
        if self.flagged and not self.epsilon_lower_bound > 0:
            raise LabelDPInputError(f"{NAME}.label_blind: flagged needs epsilon_lower_bound > 0 (the control flags "
                                    f"a positive bound); got {self.epsilon_lower_bound!r}")


@dataclass(frozen=True)
class ReferenceCheck:
    """The night's reference check.

    calibration: "boost" | "none" (the results' reference_calibration); checked: False when neither the
    correction nor the capacity check could run (no usable held-out rows), with ``note`` saying why; note: what
    the check means or why it was skipped; calibration_figures: when the correction ran; label_blind: the retired
    label-blind control's figures, on a night it ran (a checked night may lack a figure group).
    """

    calibration: str
    # stored in the warehouse; NULL where no check is recorded
    checked: bool = stored(
        FLAG, "1 if the night checked the reference (correction and label-blind control), 0 if that was skipped "
        "(reference_check_note says why); NULL: no reference check recorded (a row written before it, or an audit "
        "outside the nightly flow)", column="reference_checked")
    note: str | None = stored(TEXT, "why the reference was not (fully) checked, or what the check means for this "
                              "night", column="reference_check_note", blank=False, default=None)
    calibration_figures: CalibrationFigures | None = None
    label_blind: LabelBlindFigures | None = field(default=None, metadata=OMIT_DEFAULT)

    def __post_init__(self):
        if self.calibration not in REFERENCE_CALIBRATIONS:
            raise LabelDPInputError(f"{NAME}.calibration must be one of {list(REFERENCE_CALIBRATIONS)}; got "
                                    f"{self.calibration!r}")
        if not isinstance(self.checked, bool):
            raise LabelDPInputError(f"{NAME}.checked must be True or False; got {self.checked!r}")
        if self.note is not None and (not isinstance(self.note, str) or not self.note.strip()):
            raise LabelDPInputError(f"{NAME}.note must be non-empty text or None; got {self.note!r}")
        if self.calibration_figures is not None and self.calibration != "boost":
            raise LabelDPInputError(f"{NAME}.calibration_figures are for calibration 'boost' (the correction ran); "
                                    f"got calibration {self.calibration!r}")
        if not self.checked:
            given = [k for k in ("calibration_figures", "label_blind") if getattr(self, k) is not None]
            if given:
                raise LabelDPInputError(f"{NAME}: checked is False but {given} given (figures mean it ran)")
            if self.note is None:
                raise LabelDPInputError(f"{NAME}.note is required when checked is False (say why it was skipped, "
                                        "e.g. no held-out rows)")

    @property
    def flagged(self) -> bool:
        """The retired label-blind control flagged the reference on this night."""
        return self.label_blind is not None and self.label_blind.flagged

    def skipped(self, reason: str) -> ReferenceCheck:
        """This check on a night whose held-out rows cannot be used (neither the recalibration nor the capacity
        check runs), with the reason as its note."""
        return ReferenceCheck(self.calibration, False, f"reference not checked: {reason}")

    def not_checked_reason(self) -> str:
        """The note without a leading "reference not checked:" (the caller says it)."""
        note = str(self.note or "no reason recorded").strip()
        prefix = "reference not checked:"
        return note[len(prefix):].strip() if note.lower().startswith(prefix) else note

    def require_calibration(self, calibration: str | None) -> ReferenceCheck:
        """Itself, when it is of the result's ``reference_calibration`` (None: not recorded, not compared)."""
        if calibration is not None and self.calibration != calibration:
            raise LabelDPInputError(f"{NAME}.calibration {self.calibration!r} differs from the result's "
                                    f"reference_calibration {calibration!r}")
        return self


__all__ = ["CalibrationFigures", "LabelBlindFigures", "ReferenceCheck"]
