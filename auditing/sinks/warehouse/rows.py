"""Warehouse rows: built from an AuditResult, validated before any write, and made JSON-safe for the spool.

A row is a ``ResultRow`` (``auditing.sinks.warehouse.records``: one typed field per column of ``audit_results``),
built from the validated dict of its columns; a curve is a list of dicts
with ``guesses``, ``correct``, ``epsilon_lower_bound`` and ``point_confidence`` (the key and ``point_index``
come from the row and the list order); a verdict's slices are a list of dicts of the ``audit_slices`` columns
without the key (``slice_record``). ``normalize_row`` / ``normalize_curve`` / ``normalize_slices`` check every
value and raise ``LabelDPInputError`` naming the column, what was expected and the value received, so a bad row
never reaches SQL and is never spooled.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from auditing.bounds.methods import BOUND_METHODS, bound_method
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.records.game import AttackCurve
from auditing.result import AuditResult, CapacityCheck
from auditing.sinks.warehouse.records import (
    DERIVED_DECISION,
    AuditKey,
    ResultRow,
    stored_decision,
    without_retired,
)
from auditing.sinks.warehouse.reference_columns import (
    CALIBRATION_FIGURES,
    LABEL_BLIND_FIGURES,
    reference_check_columns,
)
from auditing.sinks.warehouse.schema import (
    ATTACK_FIGURES,
    CURVE_NAMES,
    FAMILY_COLUMNS,
    FDP_CURVES,
    INPUT_FINGERPRINTS,
    KEY_COLUMNS,
    RESULT_COLUMNS,
    RESULT_NAMES,
    SLICE_NAMES,
    SLICE_STATUSES,
    UNRECORDED,
    stored_declarations,
)
from auditing.sinks.warehouse.values import as_count as _count
from auditing.sinks.warehouse.values import as_float as _float
from auditing.verdict.control_check import CONTROL, ControlCheck
from auditing.verdict.family_evidence import NightEvidence
from auditing.verdict.run_kinds import check_run_kind
from auditing.verdict.split_test import TESTED, SplitTest
from auditing.verdict.types import TRUST_STATES, Decision, TrustFigures, Verdict
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.names import check_claim, check_name, parse_date
from labeldp.stored import COUNT, FLAG, NUMBER, SMALL_COUNT, TEXT, Stored, stored_values

# The columns declared on a record's field (`schema.STORED_BLOCKS`) and their declarations.
STORED = stored_declarations()

_HASH_RE = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
LINEAGE_FIELDS = (
    "model_uri", "model_fingerprint", "reference_model", "partition_fingerprint", "code_version", "flow_run_id",
    "started_at", "finished_at", "durations", "run_id", "training_rows_fingerprint", "reference_fingerprint",
    "correction_fingerprint", "scoring_key", "night_fingerprint",
)
_TEXT_LINEAGE = ("model_uri", "reference_model", "partition_fingerprint", "code_version", "flow_run_id",
                 "training_rows_fingerprint", "reference_fingerprint", "correction_fingerprint", "scoring_key",
                 "night_fingerprint")
# Filled in: the model fingerprint when absent ('unrecorded'), the inputs' fingerprint (always computed from the
# row's fingerprints, except on a row written before schema version 9: 'unrecorded') and the run id when absent (the
# flow run id, else 'unrecorded').
_OPTIONAL = ({c.name for c in RESULT_COLUMNS if c.nullable}
             | {"gamma", "model_fingerprint", "inputs_fingerprint", "run_id"})


def check_config_hash(value: Any, name: str = "audit_config_hash") -> str:
    if not isinstance(value, str) or not _HASH_RE.match(value):
        raise LabelDPInputError(f"{name} must be 1-64 characters from [0-9A-Za-z_-]; got {value!r}")
    return value


def check_fingerprint(value: Any, name: str = "model_fingerprint") -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200 or not value.isprintable():
        raise LabelDPInputError(f"{name} must be printable text of 1-200 characters; got {value!r}")
    return value


def check_run_id(value: Any, name: str = "run_id") -> str:
    """A run id: printable text of 1-100 characters without '/' (it names files)."""
    if not isinstance(value, str) or not value.strip() or len(value) > 100 or not value.isprintable() or "/" in value:
        raise LabelDPInputError(f"{name} must be printable text of 1-100 characters without '/'; got {value!r}")
    return value


def inputs_fingerprint(row: Mapping) -> str:
    """'sha256:<hex>' over the row's input fingerprints (`schema.INPUT_FINGERPRINTS`: partition, model file, training
    rows, reference, its correction, the stored game's key, the audit configuration, the night's controls and
    acceptance; None where not recorded): equal exactly when every one of them is."""
    payload = json.dumps({name: row.get(name) for name in INPUT_FINGERPRINTS}, sort_keys=True)
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def check_stored_run_kind(value: Any, name: str = "run_kind") -> str:
    """A run kind a row may hold: one of `auditing.verdict.run_kinds.RUN_KINDS`, or UNRECORDED (a row from before)."""
    return value if value == UNRECORDED else check_run_kind(value, name)


def as_key(key: Any) -> AuditKey:
    """An AuditKey from an AuditKey, a tuple in ``KEY_COLUMNS`` order, a ``ResultRow`` or a mapping with the key
    columns; validated."""
    if isinstance(key, ResultRow):
        return as_key(key.to_dict())
    if isinstance(key, Mapping):
        missing = [k for k in KEY_COLUMNS if k not in key]
        if missing:
            raise LabelDPInputError(f"key: missing {missing}; a key needs {list(KEY_COLUMNS)}")
        key = tuple(key[k] for k in KEY_COLUMNS)
    if not isinstance(key, tuple | list) or len(key) != len(KEY_COLUMNS):
        raise LabelDPInputError(f"key must be ({', '.join(KEY_COLUMNS)}); got {key!r}")
    model_id, fingerprint, date, run_kind, claimed, config_hash, inputs = key
    return AuditKey(check_name(model_id, "model_id"), check_fingerprint(fingerprint), parse_date(date, "partition_date"),
                    check_stored_run_kind(run_kind), check_claim(claimed), check_config_hash(config_hash),
                    check_fingerprint(inputs, "inputs_fingerprint"))


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


def normalize_row(row: ResultRow | Mapping) -> dict:
    """A validated copy of ``row`` with every audit_results column (absent optional columns become None): what a
    write binds, checked value by value (a row read back is upgraded by `auditing.sinks.warehouse.records`)."""
    if isinstance(row, ResultRow):
        row = row.to_dict()
    if not isinstance(row, Mapping):
        raise LabelDPInputError(f"row must be a dict of audit_results columns; got {type(row).__name__}")
    row = without_retired(row)
    unknown = sorted(set(row) - set(RESULT_NAMES))
    if unknown:
        raise LabelDPInputError(f"row: unknown column(s) {unknown}; audit_results has {list(RESULT_NAMES)}")
    missing = [name for name in RESULT_NAMES if name not in _OPTIONAL and row.get(name) is None]
    if missing:
        raise LabelDPInputError(f"row: missing required column(s) {missing}")
    if row.get("model_fingerprint") is None:
        row = {**row, "model_fingerprint": UNRECORDED}
    for name in _TEXT_LINEAGE:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise LabelDPInputError(f"{name} must be text or None; got {value!r}")
    if row.get("inputs_fingerprint") != UNRECORDED:  # derived from the row's fingerprints, whatever was given
        row = {**row, "inputs_fingerprint": inputs_fingerprint(row)}
    out: dict[str, Any] = dict(as_key(row)._asdict())
    out["run_id"] = check_run_id(row.get("run_id") or row.get("flow_run_id") or UNRECORDED)
    normalize_stored(row, out)
    # gamma is derived, not a record's field: 1 - confidence, whatever was given (a value that differs is refused)
    expected_gamma = 1.0 - out["confidence"]
    if row.get("gamma") is not None and not math.isclose(_float(row, "gamma"), expected_gamma, abs_tol=1e-12):
        raise LabelDPInputError(f"gamma must equal 1 - confidence = {expected_gamma!r}; got {row['gamma']!r}")
    out["gamma"] = expected_gamma
    if not out["selected_correct"] <= out["selected_guesses"] <= out["m"]:
        raise LabelDPInputError(
            "selected_correct <= selected_guesses <= m must hold; got "
            f"selected_correct={out['selected_correct']}, selected_guesses={out['selected_guesses']}, m={out['m']}"
        )
    for name in _TEXT_LINEAGE:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise LabelDPInputError(f"{name} must be text or None; got {value!r}")
        out[name] = value
    out["started_at"] = _timestamp(row.get("started_at"), "started_at")
    out["finished_at"] = _timestamp(row.get("finished_at"), "finished_at")
    out["durations"] = _durations(row.get("durations"))
    out["result_json"] = _json_text(row.get("result_json"), "result_json", required=True)
    out["shift_diagnostic"] = _json_text(row.get("shift_diagnostic"), "shift_diagnostic", required=False)
    _check_control_columns(out)
    _normalize_kappa_columns(row, out)
    _normalize_reference_columns(row, out)
    _check_attack_intervals(out)
    _check_family_figures(out)
    _derive_decision(out)
    return {name: out[name] for name in RESULT_NAMES}


def _or_none(declaration: Stored) -> str:
    """What a message adds to what a value must be: " or None" for a nullable column, nothing for a required one."""
    return "" if declaration.required else " or None"


def _stored_text(row: Mapping, name: str, declaration: Stored) -> str | None:
    value = row.get(name)
    if value is not None and declaration.choices is not None:
        allowed = tuple(declaration.choices())
        if value not in allowed:
            raise LabelDPInputError(f"{name} must be one of {list(allowed)}{_or_none(declaration)}; got {value!r}")
    if value is not None and (not isinstance(value, str) or not (declaration.blank or value.strip())):
        raise LabelDPInputError(f"{name} must be {'' if declaration.blank else 'non-empty '}text"
                                f"{_or_none(declaration)}; got {value!r}")
    return value


def _stored_count(row: Mapping, name: str, declaration: Stored) -> int | None:
    if row.get(name) is None:
        return None
    value = _count(row, name)
    if not declaration.in_range(value):  # a count above 0 (its low), e.g. the game's repetitions
        raise LabelDPInputError(f"{name} must be a whole number {declaration.range_text()}; got {value!r}")
    return value


def _stored_number(row: Mapping, name: str, declaration: Stored) -> float | None:
    if row.get(name) is None:
        return None
    value = _float(row, name)
    if not declaration.in_range(value):
        raise LabelDPInputError(f"{name} must be a finite number {declaration.range_text()}{_or_none(declaration)}; "
                                f"got {value!r}")
    return value


# How a stored column's value is checked, by its declared kind (`labeldp.stored`); a required column's absence is
# refused before (`normalize_row`: missing required column).
_STORED_CHECKS = {
    TEXT: _stored_text, COUNT: _stored_count, SMALL_COUNT: _stored_count,
    FLAG: lambda row, name, declaration: _optional_flag(row, name),
    NUMBER: _stored_number,
}


def normalize_stored(row: Mapping, out: dict) -> None:
    """Every column declared on a record's field (`schema.STORED_BLOCKS`) checked by its declared kind: a text (one
    of its choices, if it has any), a count, a flag (0 or 1) or a number in its range; each None where absent (a
    required one never is)."""
    for name, declaration in STORED.items():
        out[name] = _STORED_CHECKS[declaration.kind](row, name, declaration)


def _derive_decision(out: dict) -> None:
    """A target's row without a decision (written before them) gets the one the reader derives from its status and
    trust (`records.stored_decision`)."""
    if out["decision"] is None and out.get("kind", "target") != "control":
        out["decision"] = stored_decision(out["status"], out["trust"], out["detectability"], out["untrusted_reason"])
        out["decision_reason"] = out["decision_reason"] or DERIVED_DECISION


def _check_family_figures(out: dict) -> None:
    """The family's figures (schema version 7): all three or none."""
    given = [name for name in FAMILY_COLUMNS if out[name] is not None]
    if given and len(given) != len(FAMILY_COLUMNS):
        raise LabelDPInputError(f"{list(FAMILY_COLUMNS)}: set all three or none; got only {given}")


def _check_attack_intervals(out: dict) -> None:
    """The attack curve's intervals: only beside their figure, lower <= upper."""
    for figure in ATTACK_FIGURES:
        value, lower, upper = (out[f"attack_{figure}{suffix}"] for suffix in ("", "_lower", "_upper"))
        if value is None and (lower is not None or upper is not None):
            raise LabelDPInputError(f"attack_{figure}_lower / _upper need attack_{figure} (an interval of a figure "
                                    "not recorded)")
        if lower is not None and upper is not None and lower > upper:
            raise LabelDPInputError(f"attack_{figure}_lower must be <= attack_{figure}_upper; got {lower!r} > "
                                    f"{upper!r}")


def _optional_flag(row: Mapping, name: str) -> int | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, float) or value not in (0, 1):
        raise LabelDPInputError(f"{name} must be 0, 1 (or a bool) or None; got {value!r}")
    return int(value)


def _normalize_kappa_columns(row: Mapping, out: dict) -> None:
    """fdp_curve, and the rules of kappa, gdp_mu_lower_bound and breaking_kappa (their values are checked by their
    kinds).

    A row without kappa is a legacy row (written before kappa) and has none of the kappa-era figures. An fdp
    row with kappa states
    its curve (fdp_curve 'eps-delta'); only fdp rows carry fdp_curve and gdp_mu_lower_bound."""
    curve = row.get("fdp_curve")  # the method's trade-off curve (its registry entry), not a record's field
    if curve is not None and curve not in FDP_CURVES:
        raise LabelDPInputError(f"fdp_curve must be one of {list(FDP_CURVES)} or None; got {curve!r}")
    out["fdp_curve"] = curve
    if out["kappa"] is None:
        newer = [name for name in ("breaking_kappa", "fdp_curve") if out[name] is not None]
        if newer:
            raise LabelDPInputError(f"{', '.join(newer)} need(s) kappa: a row without kappa is a legacy row "
                                    "(written before kappa, its tau a TV figure) and has no kappa-era figures")
    else:
        if bound_method(out["method"]).curve is not None and curve is None:
            raise LabelDPInputError(f"fdp_curve must be set on an {out['method']} row with kappa (None marks a "
                                    f"legacy Gaussian-reading row); one of {list(FDP_CURVES)}")
    if bound_method(out["method"]).curve is None and (curve is not None or out["gdp_mu_lower_bound"] is not None):
        raise LabelDPInputError(f"fdp_curve / gdp_mu_lower_bound are for rows of a trade-off-curve method "
                                f"({[m.name for m in BOUND_METHODS if m.curve]}) only; got method {out['method']!r}")


def _normalize_reference_columns(row: Mapping, out: dict) -> None:
    """reference_calibration, the correction's figures, the label-blind control's figures, reference_checked
    and its note. Each group is all set or all NULL; figures only where the check ran; a flagged label-blind
    control has a positive bound and makes the row untrusted."""
    calibration = out["reference_calibration"]  # these columns are checked by their kinds (normalize_stored)
    note = out["reference_check_note"]
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


def _check_control_columns(out: dict) -> None:
    """A control's outcome (control_passed, control_floor) only on a control's row (their values are checked by
    their kinds)."""
    if out["kind"] != CONTROL and (out["control_passed"] is not None or out["control_floor"] is not None):
        raise LabelDPInputError(f"control_passed / control_floor are for kind 'control' rows only; got kind "
                                f"{out['kind']!r}")


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


# The columns of a slice row that are not the verdict's key (what `slice_record` gives and a spool file holds).
SLICE_FIELDS = tuple(name for name in SLICE_NAMES if name not in KEY_COLUMNS)


def _slice_text(item: Mapping, name: str, where: str, *, required: bool) -> str | None:
    value = item.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 1000:
        raise LabelDPInputError(f"{where}: {name} must be non-empty text of at most 1000 characters"
                                + ("" if required else " or None") + f"; got {value!r}")
    return value


def normalize_slices(slices: Sequence[Mapping], key: AuditKey) -> list[dict]:
    """Validated slice rows of the verdict ``key`` (`SLICE_FIELDS` each, the key filled in): one row per (slicing,
    slice_name); the slices' budget and declared count shared by all, no more slices than declared; budget and
    confidence in (0, 1), a status of `SLICE_STATUSES` and a trust of `TRUST_STATES`."""
    if isinstance(slices, str | bytes) or not isinstance(slices, Sequence):
        raise LabelDPInputError(f"slices must be a list of slice rows; got {type(slices).__name__}")
    out, seen = [], set()
    for index, item in enumerate(slices):
        where = f"slices[{index}]"
        if not isinstance(item, Mapping):
            raise LabelDPInputError(f"{where} must be a dict; got {item!r}")
        missing = [name for name in SLICE_FIELDS if name not in item and name not in ("trust_reason", "note")]
        if missing:
            raise LabelDPInputError(f"{where}: missing {missing}")
        try:
            clean = {"slicing": _slice_text(item, "slicing", where, required=True),
                     "slice_name": _slice_text(item, "slice_name", where, required=True),
                     "budget": _float(item, "budget"), "declared": _count(item, "declared"),
                     "confidence": _float(item, "confidence"), "rows": _count(item, "rows"),
                     "check_rows": _count(item, "check_rows"),
                     "epsilon_lower_bound": _float(item, "epsilon_lower_bound"),
                     "max_certifiable_epsilon": _float(item, "max_certifiable_epsilon", allow_inf=True),
                     "status": item["status"], "trust": item["trust"],
                     "trust_reason": _slice_text(item, "trust_reason", where, required=False),
                     "note": _slice_text(item, "note", where, required=False)}
        except LabelDPInputError as exc:
            raise LabelDPInputError(f"{where}: {exc}") from None
        if clean["status"] not in SLICE_STATUSES:
            raise LabelDPInputError(f"{where}: status must be one of {list(SLICE_STATUSES)}; got {clean['status']!r}")
        if clean["trust"] not in TRUST_STATES:
            raise LabelDPInputError(f"{where}: trust must be one of {list(TRUST_STATES)}; got {clean['trust']!r}")
        if not (0 < clean["budget"] < 1 and 0 < clean["confidence"] < 1 and clean["declared"] >= 1):
            raise LabelDPInputError(f"{where}: need budget and confidence in (0, 1) and declared >= 1; got budget "
                                    f"{clean['budget']!r}, confidence {clean['confidence']!r}, declared "
                                    f"{clean['declared']!r}")
        if clean["epsilon_lower_bound"] < 0 or not clean["max_certifiable_epsilon"] >= 0:
            raise LabelDPInputError(f"{where}: epsilon_lower_bound and max_certifiable_epsilon must be >= 0; got "
                                    f"{clean['epsilon_lower_bound']!r}, {clean['max_certifiable_epsilon']!r}")
        name = (clean["slicing"], clean["slice_name"])
        if name in seen:
            raise LabelDPInputError(f"{where}: slice {name[1]!r} of {name[0]!r} given twice")
        seen.add(name)
        out.append({**key._asdict(), **clean})
    if out:
        shared = {(r["budget"], r["declared"]) for r in out}
        if len(shared) != 1:
            raise LabelDPInputError(f"slices: one budget and declared count for all of a verdict's slices; got "
                                    f"{sorted(shared)}")
        if len(out) > out[0]["declared"]:
            raise LabelDPInputError(f"slices: {len(out)} slice rows for {out[0]['declared']} declared slices")
    return [{name: r[name] for name in SLICE_NAMES} for r in out]


def slice_record(verdict: Verdict) -> list[dict]:
    """The verdict's slices as ``audit_slices`` rows without the key (`SLICE_FIELDS`), largest bound first; empty
    when it declared none. Written with the verdict's row (`Warehouse.write_audit`, `write_or_spool`)."""
    audit = verdict.result.slices
    if audit is None or not verdict.slices:
        return []
    return [{"slicing": s.slicing, "slice_name": s.name, "budget": audit.budget, "declared": audit.declared,
             "confidence": s.confidence, "rows": s.rows, "check_rows": s.check_rows,
             "epsilon_lower_bound": s.epsilon_lower_bound, "max_certifiable_epsilon": s.max_certifiable_epsilon,
             "status": s.status, "trust": s.trust, "trust_reason": s.trust_reason, "note": s.note}
            for s in verdict.slices]


def audit_record(
    verdict: Verdict, *, model_id: str, partition_date: str | dt.date, run_kind: str,
    lineage: Mapping | None = None, family: NightEvidence | None = None,
) -> tuple[ResultRow, list[dict]]:
    """(row, curve) for the warehouse: a rendering of a `Verdict` (`auditing.verdict.judge.judge`), nothing computed.

    run_kind: the kind of run writing it (`auditing.verdict.run_kinds.RUN_KINDS`), part of the row's key with the model,
    its fingerprint (``lineage["model_fingerprint"]``, 'unrecorded' without one), the day, the claim, the audit
    configuration and the fingerprint of its inputs (`inputs_fingerprint`, from the lineage's fingerprints).

    An optimistic result (strategy ``max``, the paper's statistic) is refused, because the table's
    ``epsilon_lower_bound`` is the valid one (a result written before kappa never becomes a verdict:
    ``decode(AuditResult, ...)`` refuses it). ``lineage`` may hold: model_uri,
    model_fingerprint, reference_model, partition_fingerprint, code_version, flow_run_id, started_at,
    finished_at, durations (a dict of seconds per stage). The row stores the verdict's status, robustness,
    risk and trust figures, kappa, reference_calibration, the method's trade-off curve (fdp_curve) and its
    Gaussian reading, and the result's attack curve (attack_*: descriptive, not a bound; docs/attack-curve.md).
    ``verdict.reference_check`` must be of the result's reference_calibration; None records no check
    (reference_checked NULL).

    Raises:
        LabelDPInputError: an optimistic result, unknown lineage fields, a malformed figure.
    """
    if not isinstance(verdict, Verdict):
        raise LabelDPInputError(f"audit_record needs a Verdict (auditing.verdict.judge.judge); got {type(verdict).__name__}")
    result = verdict.result
    if result.optimistic:
        raise LabelDPInputError(
            "result is optimistic (strategy 'max', the paper's statistic); the warehouse stores only valid bounds"
        )
    lineage = dict(lineage or {})
    unknown = sorted(set(lineage) - set(LINEAGE_FIELDS))
    if unknown:
        raise LabelDPInputError(f"lineage: unknown field(s) {unknown}; allowed: {list(LINEAGE_FIELDS)}")
    calibration = result.game.reference_calibration or "none"
    curve_kind = bound_method(result.bound.method).curve if result.bound.method in BOUND_METHODS else None
    row = {
        "model_id": model_id, "partition_date": partition_date, "audit_config_hash": result.config_hash,
        "run_kind": check_run_kind(run_kind), "claimed_epsilon": verdict.claimed_epsilon,
        **stored_values(AuditResult, result), **stored_values(BoundConfig, result.bound),
        **stored_values(GameConfig, result.game),
        "result_json": encode(result), **lineage,
        "shift_diagnostic": encode(verdict.shift_diagnostic),
        **stored_values(Verdict, verdict),  # its status, kind and untrusted reason
        **stored_values(ControlCheck, verdict.control),
        **verdict.risk_columns,
        "reference_calibration": calibration,  # the game's, "none" for a result that names none
        "fdp_curve": curve_kind,
        "gdp_mu_lower_bound": result.gdp_mu_lower_bound if curve_kind is not None else None,  # fdp rows only
        **reference_check_columns(verdict.reference_check, calibration),
        **stored_values(TrustFigures, verdict.trust_figures()),
        **stored_values(AttackCurve, result.attack_curve),
        **stored_values(NightEvidence, family),
        **decision_columns(verdict),
    }
    row = ResultRow(**normalize_row(row))
    curve = [{**encode(point), "point_confidence": result.point_confidence} for point in result.curve]
    return row, normalize_curve(curve, row.key)


def decision_columns(verdict: Verdict) -> dict:
    """The decision, the stratified check's matched comparison and the split test of a verdict (schema version 10):
    the decision's columns None for a control, the check's where it did not run, split_refused for a split not
    tested."""
    check, split = verdict.result.capacity_check, verdict.split_test
    columns = {**stored_values(Decision, verdict.decision),
               **stored_values(CapacityCheck, check if check is not None and check.checked else None),
               **stored_values(SplitTest, split)}
    if split is not None and split.rule != TESTED:
        columns["split_refused"] = None
    return columns


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json_safe(row: Mapping) -> dict:
    """Dates and timestamps as ISO text (normalize_row reads them back)."""
    return {k: (v.isoformat() if isinstance(v, dt.date | dt.datetime) else v) for k, v in row.items()}
