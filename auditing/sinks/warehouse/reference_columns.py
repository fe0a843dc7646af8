"""The night's reference check as warehouse columns: its validated shape (`check_reference_check`), the columns it
fills and the check read back from a row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auditing.sinks.warehouse.records import ResultRow
from auditing.sinks.warehouse.schema import REFERENCE_CALIBRATIONS
from auditing.sinks.warehouse.values import as_count, optional_float
from labeldp.errors import LabelDPInputError

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
REFERENCE_CHECK_KEYS = ("calibration", "checked", "note", "calibration_figures", "label_blind")


def _check_keys(value: Any, name: str, allowed: Sequence[str]) -> dict:
    if not isinstance(value, Mapping):
        raise LabelDPInputError(f"{name} must be a dict; got {type(value).__name__}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise LabelDPInputError(f"{name}: unknown key(s) {unknown}; allowed: {list(allowed)}")
    return dict(value)


def check_reference_check(check: Any, calibration: str | None = None) -> dict:
    """The validated reference check of a night (the ``reference_check`` keyword of `audit_record` and
    `auditing.sinks.report.render_run_report`)::

        {"calibration": "boost" | "none",            # required; equals the result's reference_calibration
         "checked": bool,                             # required; False: correction and label-blind control skipped
         "note": str | None,                          # why not checked / what it means; required when checked is
                                                      # False
         "calibration_figures": None | {"rows_fit": int, "rows_validation": int, "rounds": int,
                                        "logloss_before": float, "logloss_after": float,
                                        "ece_before": float, "ece_after": float},   # when the correction ran
         "label_blind": None | {"epsilon_lower_bound": float,   # its valid bound at the plan's kappa, >= 0
                                "misfit_kappa": float,          # smallest kappa bringing it to 0, >= 0
                                "flagged": bool}}               # True: the reference does not fit day D

    A checked night may lack a figure group (the label-blind control could not run: the night is untrusted
    through the control machinery; the report says "did not run"). Errors name the field
    (``reference_check.label_blind.misfit_kappa`` ...). Absent optional keys read None.
    """
    check = _check_keys(check, "reference_check", REFERENCE_CHECK_KEYS)
    missing = [k for k in ("calibration", "checked") if check.get(k) is None]
    if missing:
        raise LabelDPInputError(f"reference_check: missing {missing}")
    if check["calibration"] not in REFERENCE_CALIBRATIONS:
        raise LabelDPInputError(f"reference_check.calibration must be one of {list(REFERENCE_CALIBRATIONS)}; "
                                f"got {check['calibration']!r}")
    if calibration is not None and check["calibration"] != calibration:
        raise LabelDPInputError(f"reference_check.calibration {check['calibration']!r} differs from the result's "
                                f"reference_calibration {calibration!r}")
    if not isinstance(check["checked"], bool):
        raise LabelDPInputError(f"reference_check.checked must be True or False; got {check['checked']!r}")
    note = check.get("note")
    if note is not None and (not isinstance(note, str) or not note.strip()):
        raise LabelDPInputError(f"reference_check.note must be non-empty text or None; got {note!r}")
    out = {"calibration": check["calibration"], "checked": check["checked"], "note": note,
           "calibration_figures": None, "label_blind": None}
    figures = check.get("calibration_figures")
    if figures is not None:
        figures = _check_keys(figures, "reference_check.calibration_figures", tuple(CALIBRATION_FIGURES))
        missing = [k for k in CALIBRATION_FIGURES if figures.get(k) is None]
        if missing:
            raise LabelDPInputError(f"reference_check.calibration_figures: missing {missing}")
        if check["calibration"] != "boost":
            raise LabelDPInputError("reference_check.calibration_figures are for calibration 'boost' (the "
                                    f"correction ran); got calibration {check['calibration']!r}")
        clean = {}
        for key in CALIBRATION_FIGURES:
            name = f"reference_check.calibration_figures.{key}"
            if key.startswith(("rows", "rounds")):
                clean[key] = as_count({name: figures[key]}, name)
            else:
                clean[key] = optional_float({name: figures[key]}, name, high=1.0 if key.startswith("ece") else None)
        if clean["rows_validation"] < 1:
            raise LabelDPInputError(f"reference_check.calibration_figures.rows_validation must be >= 1 (the "
                                    f"figures are measured on them); got {clean['rows_validation']}")
        out["calibration_figures"] = clean
    blind = check.get("label_blind")
    if blind is not None:
        blind = _check_keys(blind, "reference_check.label_blind", tuple(LABEL_BLIND_FIGURES))
        missing = [k for k in LABEL_BLIND_FIGURES if blind.get(k) is None]
        if missing:
            raise LabelDPInputError(f"reference_check.label_blind: missing {missing}")
        clean = {}
        for key in ("epsilon_lower_bound", "misfit_kappa"):
            name = f"reference_check.label_blind.{key}"
            clean[key] = optional_float({name: blind[key]}, name)
        if not isinstance(blind["flagged"], bool):
            raise LabelDPInputError(f"reference_check.label_blind.flagged must be True or False; got "
                                    f"{blind['flagged']!r}")
        clean["flagged"] = blind["flagged"]
        if clean["flagged"] and not clean["epsilon_lower_bound"] > 0:
            raise LabelDPInputError("reference_check.label_blind: flagged needs epsilon_lower_bound > 0 (the "
                                    f"control flags a positive bound); got {clean['epsilon_lower_bound']!r}")
        out["label_blind"] = clean
    if not out["checked"]:
        given = [k for k in ("calibration_figures", "label_blind") if out[k] is not None]
        if given:
            raise LabelDPInputError(f"reference_check: checked is False but {given} given (figures mean it ran)")
        if note is None:
            raise LabelDPInputError("reference_check.note is required when checked is False (say why it was "
                                    "skipped, e.g. no held-out rows)")
    return out


def reference_check_columns(check: Mapping | None, calibration: str | None = None) -> dict:
    """The warehouse columns of a reference check (all None for None: no check recorded)."""
    columns = {name: None for name in (*CALIBRATION_FIGURES.values(), *LABEL_BLIND_FIGURES.values(),
                                       "reference_checked", "reference_check_note")}
    if check is None:
        return columns
    check = check_reference_check(check, calibration)
    columns["reference_checked"] = int(check["checked"])
    columns["reference_check_note"] = check["note"]
    for key, column in CALIBRATION_FIGURES.items():
        columns[column] = (check["calibration_figures"] or {}).get(key)
    for key, column in LABEL_BLIND_FIGURES.items():
        value = (check["label_blind"] or {}).get(key)
        columns[column] = int(value) if key == "flagged" and value is not None else value
    return columns


def reference_check_from_row(row: ResultRow) -> dict | None:
    """The reference check (`check_reference_check`'s shape) a warehouse row stores; None when it records none
    (reference_checked NULL: a legacy row or an audit outside the nightly flow)."""
    if row.reference_checked is None:
        return None
    figures = None
    if row.calibration_rows_fit is not None:
        figures = {key: getattr(row, column) for key, column in CALIBRATION_FIGURES.items()}
    blind = None
    if row.label_blind_bound is not None:
        blind = {"epsilon_lower_bound": row.label_blind_bound, "misfit_kappa": row.reference_misfit_kappa,
                 "flagged": bool(row.label_blind_flagged)}
    return {"calibration": row.reference_calibration or "none", "checked": bool(row.reference_checked),
            "note": row.reference_check_note, "calibration_figures": figures, "label_blind": blind}
