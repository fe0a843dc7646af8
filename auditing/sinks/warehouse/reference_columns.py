"""The night's reference check (`auditing.verdict.reference_check.ReferenceCheck`) as warehouse columns: the
columns it fills and the check read back from a row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditing.verdict.reference_check import CalibrationFigures, LabelBlindFigures, ReferenceCheck

if TYPE_CHECKING:  # a row is only read by its attributes here: the row type (and the verdict under it) is not loaded
    from auditing.sinks.warehouse.records import ResultRow

# The reference check's calibration figures: the keyword's names (AUDIT_RECORD's ``reference_check``) -> columns
CALIBRATION_FIGURES = {
    "rows_fit": "calibration_rows_fit", "rows_validation": "calibration_rows_validation",
    "rounds": "calibration_rounds", "logloss_before": "calibration_log_loss_before",
    "logloss_after": "calibration_log_loss_after", "ece_before": "calibration_ece_before",
    "ece_after": "calibration_ece_after",
}
# The label-blind control's figures: keyword names -> columns
LABEL_BLIND_FIGURES = {"epsilon_lower_bound": "label_blind_bound", "misfit_kappa": "reference_misfit_kappa",
                       "flagged": "label_blind_flagged"}


def reference_check_columns(check: ReferenceCheck | None, calibration: str | None = None) -> dict:
    """The warehouse columns of a reference check (all None for None: no check recorded); ``calibration``: the
    result's reference_calibration, which the check must be of."""
    columns = {name: None for name in (*CALIBRATION_FIGURES.values(), *LABEL_BLIND_FIGURES.values(),
                                       "reference_checked", "reference_check_note")}
    if check is None:
        return columns
    check.require_calibration(calibration)
    columns["reference_checked"] = int(check.checked)
    columns["reference_check_note"] = check.note
    if check.calibration_figures is not None:
        for key, column in CALIBRATION_FIGURES.items():
            columns[column] = getattr(check.calibration_figures, key)
    if check.label_blind is not None:
        for key, column in LABEL_BLIND_FIGURES.items():
            value = getattr(check.label_blind, key)
            columns[column] = int(value) if key == "flagged" else value
    return columns


def reference_check_from_row(row: ResultRow) -> ReferenceCheck | None:
    """The reference check a warehouse row stores; None when it records none (reference_checked NULL: a legacy
    row or an audit outside the nightly flow)."""
    if row.reference_checked is None:
        return None
    figures = None
    if row.calibration_rows_fit is not None:
        figures = CalibrationFigures(**{key: getattr(row, column) for key, column in CALIBRATION_FIGURES.items()})
    blind = None
    if row.label_blind_bound is not None:
        blind = LabelBlindFigures(row.label_blind_bound, row.reference_misfit_kappa, bool(row.label_blind_flagged))
    return ReferenceCheck(row.reference_calibration or "none", bool(row.reference_checked), row.reference_check_note,
                          figures, blind)
