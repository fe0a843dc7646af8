"""The warehouse's rows as types generated from its table schema, and the one place an older row is upgraded.

``ResultRow`` is a frozen dataclass with one field per column of ``audit_results`` (``schema.RESULT_COLUMNS``):
its name, its Python type read from the column's logical type, ``None`` allowed exactly where the column is
nullable. A column added to the schema is a field here with no edit.

``upgrade_row`` is the only code that reads a row written by an older version of this tool (a warehouse read as it
is, a spool file, a row a test or an integration hands in): absent columns become ``None`` (the key columns a row
written before schema versions 4 and 9 lack become ``'unrecorded'``, and a missing ``run_id`` the row's
``flow_run_id`` or ``'unrecorded'``, as those migrations store), retired columns holding
the neutral value every row since carries are dropped, a retired figure that carries a value is refused (a
pre-kappa verdict cannot be read as one of today's), and dates and timestamps become ``datetime.date`` and UTC
``datetime``. Everything past it reads attributes, never ``row.get(...)``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

from auditing.sinks.warehouse import schema
from auditing.verdict.types import (
    ACCEPTED_UNCHECKED,
    ACT,
    NO_EVIDENCE,
    NO_POWER,
    TRUSTED,
    UNCONFIRMED,
    UNTRUSTED,
    VOID,
    is_void_night,
)
from labeldp.errors import LabelDPInputError

_PYTHON_TYPES = {"text": str, "date": dt.date, "double": float, "bigint": int, "integer": int,
                 "timestamptz": dt.datetime}
# Retired columns an older version's row may still carry: dropped when they hold the values every row written
# since kappa holds (tau 0, breaking_tau None); anything else is a pre-kappa row, refused.
RETIRED_COLUMNS = {"tau": (0, 0.0, None), "breaking_tau": (None,)}
# What a key column holds on a row written before the key had it (migrations 4 and 9).
_UNRECORDED_KEYS = ("run_kind", "model_fingerprint", "inputs_fingerprint")
_FINGERPRINT_RE = re.compile(r"^[a-z0-9]+:([0-9a-f]{12,})$")


class AuditKey(NamedTuple):
    """The key of one verdict: one row in audit_results, its curve and slices (``schema.KEY_COLUMNS``).

    A row is written once: a run on identical inputs (the same ``inputs_fingerprint``: partition, model file,
    training rows, reference and correction, stored game, configuration) of the same kind and claim records itself
    in audit_runs and changes nothing; a run of another kind, claim or inputs adds its own row. ``name`` is the key
    as one file name stem (reports and spool files are named by it)."""

    model_id: str
    model_fingerprint: str
    partition_date: dt.date
    run_kind: str
    claimed_epsilon: float
    audit_config_hash: str
    inputs_fingerprint: str

    @property
    def name(self) -> str:
        """'<run kind>__eps-<claim>__<config hash>__in-<inputs fingerprint>' (the inputs cover the model file), or
        on a row written before schema version 9 (inputs unrecorded) '<run kind>__eps-<claim>__<config
        hash>__<model fingerprint>', the name its files already have: the key without model and date, for file
        names (`claim_text`, `fingerprint_text`)."""
        head = f"{self.run_kind}__eps-{claim_text(self.claimed_epsilon)}__{self.audit_config_hash}__"
        if self.inputs_fingerprint == schema.UNRECORDED:
            return head + fingerprint_text(self.model_fingerprint)
        return head + "in-" + fingerprint_text(self.inputs_fingerprint)


def claim_text(claimed_epsilon: float) -> str:
    """A claim as file-name text that tells every two claims apart: 'inf', '1', '0.5', '1e-05'."""
    value = float(claimed_epsilon)
    return "inf" if math.isinf(value) else repr(value).removesuffix(".0")


def fingerprint_text(fingerprint: str) -> str:
    """A model fingerprint as 12 file-name-safe characters: the first 12 hex digits of 'sha256:<hex>', else
    the first 12 of the text's own sha256 ('unrecorded' as it is)."""
    if fingerprint == schema.UNRECORDED:
        return schema.UNRECORDED
    match = _FINGERPRINT_RE.match(fingerprint)
    return match.group(1)[:12] if match else hashlib.sha256(fingerprint.encode()).hexdigest()[:12]


def _fields(columns: tuple[schema.Column, ...]) -> list[tuple[str, Any, dataclasses.Field]]:
    out = []
    for column in columns:
        kind = _PYTHON_TYPES[column.kind]
        metadata = {"column": column}
        if column.nullable:
            out.append((column.name, kind | None, dataclasses.field(default=None, metadata=metadata)))
        else:
            out.append((column.name, kind, dataclasses.field(metadata=metadata)))
    return out


class _Row:
    """What every generated row type can do (the fields come from the schema)."""

    __slots__ = ()
    COLUMNS: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The row as a dict of its columns, in schema order (what the SQL statements bind)."""
        return {name: getattr(self, name) for name in self.COLUMNS}

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)


class _ResultMethods(_Row):
    __slots__ = ()
    COLUMNS = schema.RESULT_NAMES

    @property
    def key(self) -> AuditKey:
        """The row's `AuditKey`."""
        return AuditKey(*(getattr(self, name) for name in schema.KEY_COLUMNS))

    @property
    def is_control(self) -> bool:
        return self.kind == "control"


ResultRow = dataclasses.make_dataclass(
    "ResultRow", _fields(schema.RESULT_COLUMNS), bases=(_ResultMethods,), frozen=True, kw_only=True,
    namespace={"__module__": __name__,
               "__doc__": "One row of audit_results; fields generated from schema.RESULT_COLUMNS."})


_KINDS = {column.name: column.kind for column in schema.RESULT_COLUMNS}


def _value(name: str, value: Any) -> Any:
    """A stored value as its column's Python type: a date column's value a ``date`` (a driver may hand a midnight
    ``datetime``), a timestamp UTC-aware (a naive one is UTC)."""
    kind = _KINDS[name]
    if kind == "date" and isinstance(value, dt.date):
        return dt.date(value.year, value.month, value.day)
    if kind == "timestamptz" and isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return value


def without_retired(stored: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` without its retired columns, each of which must hold the neutral value (`RETIRED_COLUMNS`)."""
    bad = {name: stored[name] for name in RETIRED_COLUMNS if name in stored
           and stored[name] not in RETIRED_COLUMNS[name]}
    if bad:
        raise LabelDPInputError(f"row: retired column(s) {bad}: a row written before kappa (tau was a "
                                "total-variation figure); audit it again with this version")
    return {name: value for name, value in stored.items() if name not in RETIRED_COLUMNS}


def upgrade_row(stored: Mapping[str, Any]) -> ResultRow:
    """A row of audit_results of any schema version as the current ``ResultRow``. Raises `LabelDPInputError`
    naming the column for a column no version had, a retired figure that carries a value, or a required column
    that is absent."""
    names = schema.RESULT_NAMES
    stored = without_retired(stored)
    unknown = sorted(set(stored) - set(names))
    if unknown:
        raise LabelDPInputError(f"row: unknown column(s) {unknown}; audit_results has {list(names)}")
    values = {name: _value(name, stored[name]) for name in names if name in stored}
    for name in _UNRECORDED_KEYS:
        if values.get(name) is None:
            values[name] = schema.UNRECORDED
    if values.get("run_id") is None:  # as migration 9 stores it
        values["run_id"] = values.get("flow_run_id") or schema.UNRECORDED
    if values.get("decision") is None and values.get("kind", "target") != "control" and values.get("status"):
        values["decision"] = stored_decision(values["status"], values.get("trust"), values.get("detectability"),
                                             values.get("untrusted_reason"))
        values["decision_reason"] = values.get("decision_reason") or DERIVED_DECISION
    missing = [f.name for f in dataclasses.fields(ResultRow) if values.get(f.name) is None
               and f.default is dataclasses.MISSING]
    if missing:
        raise LabelDPInputError(f"row: missing required column(s) {missing} of audit_results")
    return ResultRow(**values)


DERIVED_DECISION = "derived from the row's stored status and trust (a verdict written before decisions)"


def stored_decision(status: str, trust: str | None, detectability: str | None, untrusted_reason: str | None) -> str:
    """The decision of a target's row written before decisions (schema version 10), read from what it stored, by
    the rules of `auditing.verdict.decision` that its figures allow: a VIOLATION its run trusted (or accepted on an
    unchecked reference) is a leak to act on, any other VIOLATION an unconfirmed one; an INCONCLUSIVE, a PASS whose
    floors a control voided and any verdict of a void night have no power; any other PASS is no evidence."""
    state = trust_state(trust, untrusted_reason)
    if status == "INCONCLUSIVE" or is_void_night(untrusted_reason):
        return NO_POWER
    if status == "VIOLATION":
        return ACT if state in (None, TRUSTED, ACCEPTED_UNCHECKED) else UNCONFIRMED
    return NO_POWER if detectability == VOID else NO_EVIDENCE


def trust_state(trust: str | None, untrusted_reason: str | None) -> str | None:
    """A row's trust state: its ``trust``; on a row written before per-verdict trust (no ``trust``), untrusted when
    it carries an ``untrusted_reason`` (its night was untrusted), else None (not recorded). The warehouse's
    ``fetch_verdicts(trust=...)`` reads stored rows by the same rule."""
    if trust is not None:
        return trust
    return UNTRUSTED if untrusted_reason else None


def new_run_id() -> str:
    """A new run's id: its start (UTC, to the second) and 8 random hex digits, e.g. '20240103T010203Z-1a2b3c4d'
    (an identifier, not a random choice of the audit)."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
