"""The night's reference check (`auditing.verdict.reference_check.ReferenceCheck`) as warehouse columns: the
columns it fills and the check read back from a row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditing.verdict.reference_check import CalibrationFigures, LabelBlindFigures, ReferenceCheck
from labeldp.stored import from_stored, stored_fields, stored_values

if TYPE_CHECKING:  # a row is only read by its attributes here: the row type (and the verdict under it) is not loaded
    from auditing.sinks.warehouse.records import ResultRow

# The reference check's figures: the record's field names -> columns (each declared on its field, `labeldp.stored`).
CALIBRATION_FIGURES = {name: column for name, column, _ in stored_fields(CalibrationFigures)}
LABEL_BLIND_FIGURES = {name: column for name, column, _ in stored_fields(LabelBlindFigures)}


def reference_check_columns(check: ReferenceCheck | None, calibration: str | None = None) -> dict:
    """The warehouse columns of a reference check (all None for None: no check recorded); ``calibration``: the
    result's reference_calibration, which the check must be of."""
    if check is not None:
        check.require_calibration(calibration)
    return {**stored_values(CalibrationFigures, None if check is None else check.calibration_figures),
            **stored_values(LabelBlindFigures, None if check is None else check.label_blind),
            **stored_values(ReferenceCheck, check)}


def reference_check_from_row(row: ResultRow) -> ReferenceCheck | None:
    """The reference check a warehouse row stores; None when it records none (reference_checked NULL: a legacy
    row or an audit outside the nightly flow)."""
    if row.reference_checked is None:
        return None
    figures = None if row.calibration_rows_fit is None else CalibrationFigures(**from_stored(CalibrationFigures, row))
    blind = None if row.label_blind_bound is None else LabelBlindFigures(**from_stored(LabelBlindFigures, row))
    return ReferenceCheck(row.reference_calibration or "none", calibration_figures=figures, label_blind=blind,
                          **from_stored(ReferenceCheck, row))
