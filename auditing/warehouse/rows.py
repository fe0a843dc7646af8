"""Warehouse rows: built from an AuditResult, validated before any write, and made JSON-safe for the spool.

A row is a dict with the columns of ``audit_results`` (``schema.RESULT_COLUMNS``); a curve is a list of dicts
with ``guesses``, ``correct``, ``epsilon_lower_bound`` and ``point_confidence`` (the key and ``point_index``
come from the row and the list order). ``normalize_row`` / ``normalize_curve`` check every value and raise
``LabelDPInputError`` naming the column, what was expected and the value received, so a bad row never reaches
SQL and is never spooled.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from auditing.errors import LabelDPInputError
from auditing.guardrail import guardrail_status
from auditing.names import check_name, parse_date
from auditing.warehouse.schema import (
    CURVE_NAMES,
    FDP_CURVES,
    KEY_COLUMNS,
    METHODS,
    REFERENCE_CALIBRATIONS,
    RESULT_COLUMNS,
    RESULT_NAMES,
    STATUSES,
)

_HASH_RE = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
LINEAGE_FIELDS = (
    "model_uri", "model_fingerprint", "reference_model", "partition_fingerprint", "code_version", "flow_run_id",
    "started_at", "finished_at", "durations",
)
_TEXT_LINEAGE = LINEAGE_FIELDS[:6]
_OPTIONAL = {c.name for c in RESULT_COLUMNS if c.nullable} | {"gamma"}
_NONNEGATIVE_FLOATS = ("claimed_epsilon", "delta", "tau", "epsilon_lower_bound", "max_certifiable_epsilon")
_PAPER_STATISTIC = ("epsilon_mean", "epsilon_std", "epsilon_median")
_COUNTS = ("m", "selected_guesses", "selected_correct", "repetitions", "seed")
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


class AuditKey(NamedTuple):
    """The key of one audit: one row in audit_results, one curve in audit_curves."""

    model_id: str
    partition_date: dt.date
    audit_config_hash: str


def check_config_hash(value: Any, name: str = "audit_config_hash") -> str:
    if not isinstance(value, str) or not _HASH_RE.match(value):
        raise LabelDPInputError(f"{name} must be 1-64 characters from [0-9A-Za-z_-]; got {value!r}")
    return value


def as_key(key: Any) -> AuditKey:
    """An AuditKey from an AuditKey, a 3-tuple or a mapping with the key columns; validated."""
    if isinstance(key, Mapping):
        missing = [k for k in KEY_COLUMNS if k not in key]
        if missing:
            raise LabelDPInputError(f"key: missing {missing}; a key needs {list(KEY_COLUMNS)}")
        key = tuple(key[k] for k in KEY_COLUMNS)
    if not isinstance(key, tuple | list) or len(key) != 3:
        raise LabelDPInputError(f"key must be (model_id, partition_date, audit_config_hash); got {key!r}")
    model_id, date, config_hash = key
    return AuditKey(check_name(model_id, "model_id"), parse_date(date, "partition_date"),
                    check_config_hash(config_hash))


def _float(row: Mapping, name: str, *, allow_inf: bool = False) -> float:
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LabelDPInputError(f"{name} must be a number; got {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise LabelDPInputError(f"{name} must be a finite number; got {value!r}")
    return value


def _count(row: Mapping, name: str) -> int:
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 0:
        raise LabelDPInputError(f"{name} must be a whole number >= 0; got {value!r}")
    return int(value)


def _timestamp(value: Any, name: str) -> dt.datetime | None:
    """A timezone-aware UTC datetime from a datetime or ISO-8601 text; naive values are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise LabelDPInputError(f"{name} must be an ISO-8601 timestamp; got {value!r}") from None
    if not isinstance(value, dt.datetime):
        raise LabelDPInputError(f"{name} must be a datetime or ISO-8601 text; got {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def _json_text(value: Any, name: str, *, required: bool) -> str | None:
    if value is None:
        if required:
            raise LabelDPInputError(f"{name} is required (a JSON object or a dict)")
        return None
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise LabelDPInputError(f"{name} is not valid JSON ({exc}); got {value[:80]!r}") from None
    else:
        parsed = value
    if not isinstance(parsed, dict):
        raise LabelDPInputError(f"{name} must be a JSON object; got {type(parsed).__name__}")
    try:
        return json.dumps(parsed, sort_keys=True, default=_json_default)
    except TypeError as exc:
        raise LabelDPInputError(f"{name} cannot be written as JSON: {exc}") from None


def _durations(value: Any) -> str | None:
    text = _json_text(value, "durations", required=False)
    if text is not None:
        for stage, seconds in json.loads(text).items():
            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)
                                        or not seconds >= 0):
                raise LabelDPInputError(f"durations[{stage!r}] must be seconds >= 0 or null; got {seconds!r}")
    return text


def normalize_row(row: Mapping) -> dict:
    """A validated copy of ``row`` with every audit_results column (absent optional columns become None)."""
    if not isinstance(row, Mapping):
        raise LabelDPInputError(f"row must be a dict of audit_results columns; got {type(row).__name__}")
    unknown = sorted(set(row) - set(RESULT_NAMES))
    if unknown:
        raise LabelDPInputError(f"row: unknown column(s) {unknown}; audit_results has {list(RESULT_NAMES)}")
    missing = [name for name in RESULT_NAMES if name not in _OPTIONAL and row.get(name) is None]
    if missing:
        raise LabelDPInputError(f"row: missing required column(s) {missing}")
    key = as_key(row)
    out: dict[str, Any] = dict(key._asdict())
    out["claimed_epsilon"] = _float(row, "claimed_epsilon", allow_inf=True)
    for name in _NONNEGATIVE_FLOATS:
        if name != "claimed_epsilon":
            out[name] = _float(row, name)
        if not out[name] >= 0:
            raise LabelDPInputError(f"{name} must be >= 0; got {out[name]!r}")
    if out["delta"] >= 1 or out["tau"] >= 1:
        raise LabelDPInputError(f"delta and tau must be < 1; got delta={out['delta']!r}, tau={out['tau']!r}")
    out["confidence"] = _float(row, "confidence")
    if not 0 < out["confidence"] < 1:
        raise LabelDPInputError(f"confidence must be in (0, 1); got {out['confidence']!r}")
    expected_gamma = 1.0 - out["confidence"]
    if row.get("gamma") is not None and not math.isclose(_float(row, "gamma"), expected_gamma, abs_tol=1e-12):
        raise LabelDPInputError(f"gamma must equal 1 - confidence = {expected_gamma!r}; got {row['gamma']!r}")
    out["gamma"] = expected_gamma
    for name in _COUNTS:
        out[name] = _count(row, name)
    if not out["selected_correct"] <= out["selected_guesses"] <= out["m"]:
        raise LabelDPInputError(
            "selected_correct <= selected_guesses <= m must hold; got "
            f"selected_correct={out['selected_correct']}, selected_guesses={out['selected_guesses']}, m={out['m']}"
        )
    if out["repetitions"] < 1:
        raise LabelDPInputError(f"repetitions must be >= 1; got {out['repetitions']}")
    for name in _PAPER_STATISTIC:
        out[name] = None if row.get(name) is None else _float(row, name)
    for name, allowed in (("status", STATUSES), ("method", METHODS)):
        if row[name] not in allowed:
            raise LabelDPInputError(f"{name} must be one of {list(allowed)}; got {row[name]!r}")
        out[name] = row[name]
    if not isinstance(row["strategy"], str) or not row["strategy"]:
        raise LabelDPInputError(f"strategy must be a non-empty string; got {row['strategy']!r}")
    out["strategy"] = row["strategy"]
    for name in _TEXT_LINEAGE:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise LabelDPInputError(f"{name} must be text or None; got {value!r}")
        out[name] = value
    out["started_at"] = _timestamp(row.get("started_at"), "started_at")
    out["finished_at"] = _timestamp(row.get("finished_at"), "finished_at")
    out["durations"] = _durations(row.get("durations"))
    out["result_json"] = _json_text(row.get("result_json"), "result_json", required=True)
    _normalize_trust_columns(row, out)
    _normalize_control_columns(row, out)
    _normalize_risk_columns(row, out)
    _normalize_kappa_columns(row, out)
    _normalize_reference_columns(row, out)
    return {name: out[name] for name in RESULT_NAMES}


def _optional_float(row: Mapping, name: str, *, low: float = 0.0, high: float | None = None) -> float | None:
    """None, or a finite number in [low, high] (high None: no upper limit); the error names the column."""
    if row.get(name) is None:
        return None
    value = _float(row, name)
    if value < low or (high is not None and value > high):
        where = f"[{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise LabelDPInputError(f"{name} must be a finite number {'in ' if high is not None else ''}{where} or "
                                f"None; got {value!r}")
    return value


def _optional_flag(row: Mapping, name: str) -> int | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, float) or value not in (0, 1):
        raise LabelDPInputError(f"{name} must be 0, 1 (or a bool) or None; got {value!r}")
    return int(value)


def _normalize_kappa_columns(row: Mapping, out: dict) -> None:
    """kappa, breaking_kappa, fdp_curve, gdp_mu_lower_bound, and the legacy tau / breaking_tau beside them.

    A row with kappa (written since kappa replaced tau) stores tau = 0 and breaking_tau NULL; a row without it
    is a legacy row (tau is its TV figure) and has none of the kappa-era figures. An fdp row with kappa states
    its curve (fdp_curve 'eps-delta'); only fdp rows carry fdp_curve and gdp_mu_lower_bound."""
    out["kappa"] = _optional_float(row, "kappa")
    out["breaking_kappa"] = _optional_float(row, "breaking_kappa")
    curve = row.get("fdp_curve")
    if curve is not None and curve not in FDP_CURVES:
        raise LabelDPInputError(f"fdp_curve must be one of {list(FDP_CURVES)} or None; got {curve!r}")
    out["fdp_curve"] = curve
    out["gdp_mu_lower_bound"] = _optional_float(row, "gdp_mu_lower_bound")
    if out["kappa"] is None:
        newer = [name for name in ("breaking_kappa", "fdp_curve") if out[name] is not None]
        if newer:
            raise LabelDPInputError(f"{', '.join(newer)} need(s) kappa: a row without kappa is a legacy row "
                                    "(written before kappa, its tau a TV figure) and has no kappa-era figures")
    else:
        if out["tau"] != 0.0 or out["breaking_tau"] is not None:
            raise LabelDPInputError(
                "tau and breaking_tau are legacy columns: a row with kappa stores tau = 0 and breaking_tau None; "
                f"got tau={out['tau']!r}, breaking_tau={out['breaking_tau']!r}")
        if out["method"] == "fdp" and curve is None:
            raise LabelDPInputError("fdp_curve must be set on an fdp row with kappa (None marks a legacy "
                                    f"Gaussian-reading row); one of {list(FDP_CURVES)}")
    if out["method"] != "fdp" and (curve is not None or out["gdp_mu_lower_bound"] is not None):
        raise LabelDPInputError(f"fdp_curve / gdp_mu_lower_bound are for method 'fdp' rows only; got method "
                                f"{out['method']!r}")


def _normalize_reference_columns(row: Mapping, out: dict) -> None:
    """reference_calibration, the correction's figures, the label-blind control's figures, reference_checked
    and its note. Each group is all set or all NULL; figures only where the check ran; a flagged label-blind
    control has a positive bound and makes the row untrusted."""
    calibration = row.get("reference_calibration")
    if calibration is not None and calibration not in REFERENCE_CALIBRATIONS:
        raise LabelDPInputError(f"reference_calibration must be one of {list(REFERENCE_CALIBRATIONS)} or None; "
                                f"got {calibration!r}")
    out["reference_calibration"] = calibration
    for column in ("calibration_rows_fit", "calibration_rows_validation", "calibration_rounds"):
        out[column] = None if row.get(column) is None else _count(row, column)
    for column in ("calibration_log_loss_before", "calibration_log_loss_after"):
        out[column] = _optional_float(row, column)
    for column in ("calibration_ece_before", "calibration_ece_after"):
        out[column] = _optional_float(row, column, high=1.0)
    out["label_blind_bound"] = _optional_float(row, "label_blind_bound")
    out["reference_misfit_kappa"] = _optional_float(row, "reference_misfit_kappa")
    out["label_blind_flagged"] = _optional_flag(row, "label_blind_flagged")
    out["reference_checked"] = _optional_flag(row, "reference_checked")
    note = row.get("reference_check_note")
    if note is not None and (not isinstance(note, str) or not note.strip()):
        raise LabelDPInputError(f"reference_check_note must be non-empty text or None; got {note!r}")
    out["reference_check_note"] = note
    groups = {"calibration figures": list(CALIBRATION_FIGURES.values()),
              "label-blind figures": list(LABEL_BLIND_FIGURES.values())}
    present = {}
    for group, columns in groups.items():
        given = [c for c in columns if out[c] is not None]
        if given and len(given) != len(columns):
            raise LabelDPInputError(f"{group}: set all of {columns} or none; got only {given}")
        present[group] = bool(given)
    if present["calibration figures"] and calibration != "boost":
        raise LabelDPInputError("calibration_* figures are for reference_calibration 'boost' (the correction ran); "
                                f"got reference_calibration {calibration!r}")
    checked = out["reference_checked"]
    if checked != 1 and (present["calibration figures"] or present["label-blind figures"]):
        raise LabelDPInputError("calibration_* / label_blind_* figures need reference_checked = 1; got "
                                f"reference_checked {checked!r}")
    if checked == 0 and note is None:
        raise LabelDPInputError("reference_check_note is required when reference_checked = 0 (why it was skipped)")
    if checked is None and note is not None:
        raise LabelDPInputError("reference_check_note needs reference_checked (0 or 1)")
    if out["label_blind_flagged"] == 1:
        if not out["label_blind_bound"] > 0:
            raise LabelDPInputError("label_blind_flagged = 1 needs label_blind_bound > 0 (the control flags a "
                                    f"positive bound); got label_blind_bound {out['label_blind_bound']!r}")
        if out["untrusted_reason"] is None:
            raise LabelDPInputError("label_blind_flagged = 1 needs untrusted_reason (a night whose reference does "
                                    "not fit day D is untrusted)")


def _normalize_risk_columns(row: Mapping, out: dict) -> None:
    """issue 8 (risk): risk_* / risk_lb_* are None or probabilities in [0, 1] (column_expected: a count >= 0);
    risk_headline is None or text."""
    for name in RESULT_NAMES:
        if not name.startswith("risk_") or name == "risk_headline":
            continue
        value = None if row.get(name) is None else _float(row, name)
        if value is not None and not (value >= 0 and (name.endswith("column_expected") or value <= 1)):
            raise LabelDPInputError(f"{name} must be in [0, 1] (a count >= 0 for column_expected) or None; "
                                    f"got {value!r}")
        out[name] = value
    headline = row.get("risk_headline")
    if headline is not None and not isinstance(headline, str):
        raise LabelDPInputError(f"risk_headline must be text or None; got {headline!r}")
    out["risk_headline"] = headline


def _normalize_control_columns(row: Mapping, out: dict) -> None:
    """issue 9 (trust-b): kind, control_passed, control_floor, untrusted_reason (all nullable)."""
    kind = row.get("kind")
    if kind is not None and kind not in ("target", "control"):
        raise LabelDPInputError(f"kind must be 'target', 'control' or None; got {kind!r}")
    out["kind"] = kind
    passed = row.get("control_passed")
    if passed is not None and (isinstance(passed, float) or passed not in (0, 1)):
        raise LabelDPInputError(f"control_passed must be 0, 1 or None; got {passed!r}")
    out["control_passed"] = None if passed is None else int(passed)
    out["control_floor"] = None if row.get("control_floor") is None else _float(row, "control_floor")
    if out["control_floor"] is not None and out["control_floor"] < 0:
        raise LabelDPInputError(f"control_floor must be >= 0; got {out['control_floor']!r}")
    if kind != "control" and (passed is not None or out["control_floor"] is not None):
        raise LabelDPInputError(f"control_passed / control_floor are for kind 'control' rows only; got kind {kind!r}")
    reason = row.get("untrusted_reason")
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        raise LabelDPInputError(f"untrusted_reason must be non-empty text or None; got {reason!r}")
    out["untrusted_reason"] = reason


def _normalize_trust_columns(row: Mapping, out: dict) -> None:
    """issue 9 (trust-a): audit_rows, the legacy breaking_tau, detection_floor_rows, exposed_rows_floor and the
    shift diagnostic (nullable)."""
    audit_rows = row.get("audit_rows")
    if audit_rows is not None and audit_rows not in ("training", "all"):
        raise LabelDPInputError(f"audit_rows must be 'training', 'all' or None; got {audit_rows!r}")
    out["audit_rows"] = audit_rows
    legacy = row.get("breaking_tau")  # a TV figure of rows written before kappa
    if legacy is not None:
        legacy = _float(row, "breaking_tau")
        if not 0 <= legacy < 1:
            raise LabelDPInputError(f"breaking_tau must be in [0, 1) or None; got {legacy!r}")
    out["breaking_tau"] = legacy
    out["detection_floor_rows"] = None if row.get("detection_floor_rows") is None else _count(row, "detection_floor_rows")
    out["exposed_rows_floor"] = None if row.get("exposed_rows_floor") is None else _count(row, "exposed_rows_floor")
    out["shift_diagnostic"] = _json_text(row.get("shift_diagnostic"), "shift_diagnostic", required=False)
    for name in ("reference_log_loss_shift", "feature_shift_max_psi"):
        out[name] = None if row.get(name) is None else _float(row, name)
    if out["feature_shift_max_psi"] is not None and out["feature_shift_max_psi"] < 0:
        raise LabelDPInputError(f"feature_shift_max_psi must be >= 0; got {out['feature_shift_max_psi']!r}")


def normalize_curve(curve: Sequence[Mapping], key: AuditKey) -> list[dict]:
    """Validated curve rows with the key and point_index (the position in ``curve``) filled in."""
    if isinstance(curve, str | bytes) or not isinstance(curve, Sequence):
        raise LabelDPInputError(f"curve must be a list of points; got {type(curve).__name__}")
    out = []
    for index, point in enumerate(curve):
        if not isinstance(point, Mapping):
            raise LabelDPInputError(f"curve[{index}] must be a dict; got {point!r}")
        missing = [k for k in ("guesses", "correct", "epsilon_lower_bound", "point_confidence") if k not in point]
        if missing:
            raise LabelDPInputError(f"curve[{index}]: missing {missing}")
        try:
            guesses, correct = _count(point, "guesses"), _count(point, "correct")
            bound = _float(point, "epsilon_lower_bound")
            confidence = _float(point, "point_confidence")
        except LabelDPInputError as exc:
            raise LabelDPInputError(f"curve[{index}]: {exc}") from None
        if correct > guesses or bound < 0 or not 0 < confidence < 1:
            raise LabelDPInputError(
                f"curve[{index}]: need correct <= guesses, epsilon_lower_bound >= 0 and point_confidence in "
                f"(0, 1); got correct={correct}, guesses={guesses}, epsilon_lower_bound={bound}, "
                f"point_confidence={confidence}"
            )
        out.append({**key._asdict(), "point_index": index, "guesses": guesses, "correct": correct,
                    "epsilon_lower_bound": bound, "point_confidence": confidence})
    return [{name: p[name] for name in CURVE_NAMES} for p in out]


def audit_record(
    result: Any, *, model_id: str, partition_date: str | dt.date, claimed_epsilon: float,
    lineage: Mapping | None = None, shift_diagnostic: Mapping | None = None, kind: str = "target",
    control: Mapping | None = None, untrusted_reason: str | None = None, reference_check: Mapping | None = None,
) -> tuple[dict, list[dict]]:
    """(row, curve) for the warehouse from an ``AuditResult`` (or its ``to_dict()``).

    The status is ``guardrail_status`` of the VALID bound against ``claimed_epsilon``; an optimistic result
    (strategy ``max``, the paper's statistic) is refused, because the table's ``epsilon_lower_bound`` is the
    valid one, and so is a result written before kappa (``tau`` and no ``kappa``: audit again; its old rows
    stay in the warehouse as they are). ``lineage`` may hold: model_uri, model_fingerprint, reference_model,
    partition_fingerprint, code_version, flow_run_id, started_at, finished_at, durations (a dict of seconds per
    stage). The row stores kappa, reference_calibration and (method fdp) fdp_curve 'eps-delta' and
    gdp_mu_lower_bound from the result; tau = 0 and breaking_tau None (legacy columns). The claim-dependent
    trust figures (``auditing.robustness``: breaking_kappa, detection_floor_rows, exposed_rows_floor) are
    computed here from the result and the claim; ``shift_diagnostic`` (pipelines.shift_diagnostics, a
    diagnostic, not a proof) is stored as given with its two summary scalars. ``kind`` (target | control),
    ``control`` (`auditing.controls.ControlCheck.to_dict()` for a control) and ``untrusted_reason`` (set on
    every row of a night whose control failed or whose reference does not fit the day) fill the control
    columns. ``reference_check``: the night's reference check (`check_reference_check` gives its shape), or
    None when none was made (reference_checked NULL).
    """
    data = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(data, Mapping):
        raise LabelDPInputError(f"result must be an AuditResult or its to_dict(); got {type(result).__name__}")
    if data.get("optimistic"):
        raise LabelDPInputError(
            "result is optimistic (strategy 'max', the paper's statistic); the warehouse stores only valid bounds"
        )
    if "kappa" not in data and "tau" in data:
        raise LabelDPInputError(
            "result: written before kappa (it has tau, a total-variation figure, and no kappa); audit it again "
            "with this version (rows written before stay in the warehouse as they are)")
    lineage = dict(lineage or {})
    unknown = sorted(set(lineage) - set(LINEAGE_FIELDS))
    if unknown:
        raise LabelDPInputError(f"lineage: unknown field(s) {unknown}; allowed: {list(LINEAGE_FIELDS)}")
    needed = ("epsilon_lower_bound", "confidence", "point_confidence", "delta", "kappa", "m", "selected_guesses",
              "selected_correct", "max_certifiable_epsilon", "method", "strategy", "repetitions", "seed",
              "config_hash", "curve")
    missing = [k for k in needed if k not in data]
    if missing:
        raise LabelDPInputError(f"result: missing field(s) {missing} (expected AuditResult.to_dict())")
    claimed = float(claimed_epsilon)
    status = guardrail_status(data["epsilon_lower_bound"], claimed, data["max_certifiable_epsilon"])
    calibration = data.get("reference_calibration") or "none"
    row = {
        "model_id": model_id, "partition_date": partition_date, "audit_config_hash": data["config_hash"],
        "claimed_epsilon": claimed, "delta": data["delta"], "confidence": data["confidence"],
        "tau": 0.0, "kappa": data["kappa"], "m": data["m"], "selected_guesses": data["selected_guesses"],
        "selected_correct": data["selected_correct"], "epsilon_lower_bound": data["epsilon_lower_bound"],
        "epsilon_mean": data.get("epsilon_mean"), "epsilon_std": data.get("epsilon_std"),
        "epsilon_median": data.get("epsilon_median"), "strategy": data["strategy"], "method": data["method"],
        "status": status, "max_certifiable_epsilon": data["max_certifiable_epsilon"],
        "repetitions": data["repetitions"], "seed": data["seed"], "result_json": dict(data), **lineage,
        **trust_columns(data, claimed, status, shift_diagnostic),
        "kind": kind, "untrusted_reason": untrusted_reason,
        "control_passed": None if control is None else int(bool(control["passed"])),
        "control_floor": None if control is None else control.get("floor"),
        **risk_record(data, claimed),
        "reference_calibration": calibration,
        "fdp_curve": fdp_curve_of(data),
        "gdp_mu_lower_bound": data.get("gdp_mu_lower_bound") if data["method"] == "fdp" else None,
        **reference_check_columns(reference_check, calibration),
    }
    row = normalize_row(row)
    curve = [{**point, "point_confidence": data["point_confidence"]} for point in data["curve"]]
    return row, normalize_curve(curve, as_key(row))


def fdp_curve_of(data: Mapping) -> str | None:
    """Which f-DP curve an fdp result or row used: its ``fdp_curve`` when it states one, 'eps-delta' for a
    result written since kappa (it has ``kappa``), None for binomial and for a legacy fdp result/row (the
    Gaussian reading)."""
    if data.get("method") != "fdp":
        return None
    if data.get("fdp_curve") is not None:
        return data["fdp_curve"]
    if data.get("kappa") is not None:
        return FDP_CURVES[0]
    return None


def _check_keys(value: Any, name: str, allowed: Sequence[str]) -> dict:
    if not isinstance(value, Mapping):
        raise LabelDPInputError(f"{name} must be a dict; got {type(value).__name__}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise LabelDPInputError(f"{name}: unknown key(s) {unknown}; allowed: {list(allowed)}")
    return dict(value)


def check_reference_check(check: Any, calibration: str | None = None) -> dict:
    """The validated reference check of a night (the ``reference_check`` keyword of `audit_record` and
    `auditing.report.render_run_report`)::

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
                clean[key] = _count({name: figures[key]}, name)
            else:
                clean[key] = _optional_float({name: figures[key]}, name, high=1.0 if key.startswith("ece") else None)
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
            clean[key] = _optional_float({name: blind[key]}, name)
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


def reference_check_from_row(row: Mapping) -> dict | None:
    """The reference check (`check_reference_check`'s shape) a warehouse row stores; None when it records none
    (reference_checked NULL: a legacy row or an audit outside the nightly flow)."""
    if row.get("reference_checked") is None:
        return None
    figures = None
    if row.get("calibration_rows_fit") is not None:
        figures = {key: row.get(column) for key, column in CALIBRATION_FIGURES.items()}
    blind = None
    if row.get("label_blind_bound") is not None:
        blind = {"epsilon_lower_bound": row["label_blind_bound"], "misfit_kappa": row.get("reference_misfit_kappa"),
                 "flagged": bool(row.get("label_blind_flagged"))}
    return {"calibration": row.get("reference_calibration") or "none", "checked": bool(row["reference_checked"]),
            "note": row.get("reference_check_note"), "calibration_figures": figures, "label_blind": blind}


def risk_record(data: Mapping, claimed: float) -> dict:
    """issue 8: the risk scalars for the claim (risk_*) and the valid bound (risk_lb_*) and the headline
    (auditing.risk.risk_assessment, from the result's claim-free prior histogram and the claim)."""
    from auditing.risk import risk_assessment, risk_columns

    return risk_columns(risk_assessment(dict(data), claimed))


def trust_columns(data: Mapping, claimed: float, status: str, shift_diagnostic: Mapping | None = None) -> dict:
    """The trust columns of a row: audit_rows, breaking_kappa and detection_floor_rows (None when the result
    cannot support them, e.g. a split result written before split_halves existed), exposed_rows_floor (the
    game-aware floor, auditing.exposure_floor; None with a reason there), the diagnostic, and the legacy
    breaking_tau (None: never computed for a row with kappa)."""
    from auditing.exposure_floor import exposed_rows_floor
    from auditing.robustness import breaking_kappa, detection_floor_rows

    out: dict[str, Any] = {"audit_rows": data.get("audit_rows"), "breaking_tau": None}
    try:
        out["breaking_kappa"] = breaking_kappa(data, claimed)
        out["detection_floor_rows"] = detection_floor_rows(data, claimed)
    except LabelDPInputError:
        out["breaking_kappa"] = out["detection_floor_rows"] = None
    out["exposed_rows_floor"] = exposed_rows_floor(data, claimed)
    diagnostic = dict(shift_diagnostic) if shift_diagnostic else None
    out["shift_diagnostic"] = diagnostic
    out["reference_log_loss_shift"] = (diagnostic or {}).get("reference_log_loss_shift")
    out["feature_shift_max_psi"] = (diagnostic or {}).get("feature_shift_max_psi")
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json_safe(row: Mapping) -> dict:
    """Dates and timestamps as ISO text (normalize_row reads them back)."""
    return {k: (v.isoformat() if isinstance(v, dt.date | dt.datetime) else v) for k, v in row.items()}
