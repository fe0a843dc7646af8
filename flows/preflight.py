"""Every input of a nightly, guardrail or backfill run, checked before anything heavy starts.

The command line runs `check_run` before Prefect, Beam or CatBoost are imported, so bad input ends in about a
second with exit 2 and ONE line naming the file or field, and nothing is written:

1. the plan (`load_plan`, ``--models`` against its targets);
2. each day's partition (`flows.steps.check_partition`: files present, columns and types from the footers, the
   row key and label columns read: no null or repeated key, labels in range and taking at least two values);
3. the models the run loads: the reference of D-1 (present and fitting the dataset and day, or its D-1
   partition present when the plan trains it; refused when missing with ``on_missing_reference`` "fail"), the
   registered targets (present and fitting, unless the plan skips missing ones), the trained targets when the
   plan does not train them (``on_missing_target`` "fail" or "skip": present and made as the plan says);
4. the warehouse (`check_warehouse`): a DuckDB path whose directory is missing (unless ``create``), a file
   that is not a DuckDB database, a directory that is not writable, a PostgreSQL URL libpq cannot parse, a
   PostgreSQL server that answers and refuses the login (authentication failed, no such role or database, no
   pg_hba.conf entry, no CONNECT privilege), a warehouse whose schema version is newer than this code: bad
   input. A PostgreSQL server that does not answer within 2 s, or refuses the connection itself, is not: the
   rows will be spooled (exit 3); it comes back as a warning.

The flows keep their own checks (a deployment run does not go through the command line).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
from dataclasses import replace
from pathlib import Path

from flows import steps
from flows.plan import AuditPlan, RegisteredTarget, TargetSpec, load_plan
from labeldp import hints
from labeldp.errors import LabelDPInputError
from labeldp.names import check_name
from pipelines.data.day import Day
from pipelines.data.layout import model_dir

CONNECT_SECONDS = 2
# What libpq says when the server answered and refused the login: fixed by the URL or the server's set-up, not by
# waiting (every other failure to connect is an outage).
LOGIN_REFUSED = re.compile(r'authentication failed|no password supplied|role ".*" does not exist|'
                           r'database ".*" does not exist|no pg_hba\.conf entry|permission denied for database')


def plan_for(plan_file: str | os.PathLike | None, models: list[str] | None = None) -> AuditPlan:
    """The plan, narrowed to ``models`` (``--models``) when given."""
    plan = load_plan(plan_file)
    if models:
        plan = replace(plan, targets=tuple(plan.target(check_name(m, "--models")) for m in models))
    return plan


def _footer(day: Day):
    """The schema of the day's first file (its footer): the columns a model's features must find."""
    from pipelines.data import schema

    return schema.open_parquet(day.files[0]).schema_arrow


def _model(day: Day, name: str, date: dt.date, plan: AuditPlan, role: str):
    """Model ``name`` of ``date`` (``day``'s own, or its reference's D-1) registered under ``day``'s data root,
    resolved and checked: complete, its file the registered one, for the plan's dataset and ``date``, reading
    columns ``day``'s partition has."""
    from pipelines.models.handle import resolve_model
    from pipelines.scoring.beam_request import check_model_for_day

    model = resolve_model(day.root, name, date)
    check_model_for_day(model.meta, plan.dataset, date, role)
    _reads_columns(model, _footer(day))
    return model


def _reads_columns(model, footer) -> None:
    from pipelines.models import registry

    if model.meta.feature_schema:
        registry.check_features(model.meta, footer)


def check_reference(day: Day, plan: AuditPlan, checked_days: set[dt.date]) -> None:
    """The reference of ``day`` (the D-1 checkpoint, under the day's data root): present and fitting, or trainable
    on D-1's partition (checked once per day: ``checked_days``), or refused when missing and the plan says "fail"."""
    root = day.root
    ref_day = day.date - dt.timedelta(days=1)
    if model_dir(root, plan.reference_name, ref_day).is_dir():
        _model(day, plan.reference_name, ref_day, plan, "reference")
    elif plan.on_missing_reference == "fail":
        raise steps.missing_reference(day, plan)
    elif ref_day not in checked_days:
        try:
            steps.check_partition(root, ref_day, plan)
        except LabelDPInputError as exc:
            raise LabelDPInputError(f"the reference {plan.reference_name}@{ref_day.isoformat()} is missing and would "
                                    f"be trained on that day's partition: {exc.template}", field=exc.field) from None
        checked_days.add(ref_day)


def check_targets(day: Day, plan: AuditPlan) -> None:
    """The plan's targets of ``day`` (its handle, `steps.check_partition`, whose fingerprint is computed only when
    a target needs it) that the night loads without training them (see the module docstring)."""
    from pipelines.scoring.beam_request import check_model_for_day

    footer = _footer(day)
    for spec in plan.targets:
        try:
            if isinstance(spec, RegisteredTarget):
                model = steps.ensure_registered(day, spec, plan)
            elif plan.on_missing_target != "train":  # never trains: refuses, skips, or reuses the model
                model = steps.ensure_target(day, spec, plan)
                check_model_for_day(model.meta, plan.dataset, day.date, "target")
            else:
                continue
            _reads_columns(model, footer)
        except steps.TargetSkipped:
            continue  # the plan skips it; the night records why


def check_candidate(day: Day, name: str, plan: AuditPlan) -> None:
    """A guardrail's candidate: registered for ``day`` (its handle) under its data root, for the plan's dataset, on
    the day's partition as it is now, reading the partition's columns."""
    from pipelines.models.registration import check_registration_matches_day

    model = _model(day, check_name(name, "--model"), day.date, plan, "candidate")
    check_registration_matches_day(day, model.meta, "candidate")


def check_candidate_metadata(metadata, day: Day, plan: AuditPlan) -> None:
    """A candidate file not registered yet (``guardrail --model-file --check-only``), by the metadata its
    registration would write (`ModelMetadata`): for the plan's dataset and ``day``, reading the partition's
    columns."""
    from pipelines.models import registry
    from pipelines.scoring.beam_request import check_model_for_day

    check_model_for_day(metadata, plan.dataset, day.date, "candidate")
    if metadata.feature_schema:
        registry.check_features(metadata, _footer(day))


def check_warehouse(root: Path, warehouse: str | None, create: bool = False) -> list[str]:
    """The warehouse target (see the module docstring); returns warnings (an unreachable PostgreSQL server)."""
    from auditing.sinks.warehouse import DEFAULT_FILE_NAME, is_postgres_target

    if warehouse is None or str(warehouse) == "":
        return _check_duckdb(Path(root) / DEFAULT_FILE_NAME, create)
    target = str(warehouse)
    if is_postgres_target(target):
        return _check_postgres(target)
    if "://" in target:
        raise LabelDPInputError(f"--warehouse must be a DuckDB file path or a postgresql:// URL; got {target!r}")
    return _check_duckdb(Path(target).expanduser().absolute(), create)


def _newer_schema(ctx) -> int | None:
    """The recorded schema version when it is newer than this code's, else None."""
    from auditing.sinks.warehouse import migrations

    version = migrations.recorded_version(ctx, migrations.found_columns(ctx))
    return version if version is not None and version > migrations.LATEST else None


def _refuse_newer(version: int | None, where: str) -> None:
    from auditing.sinks.warehouse.migrations import LATEST

    if version is not None:
        raise LabelDPInputError(f"--warehouse {where}: its schema version {version} is newer than this code knows "
                                f"(up to {LATEST}); run a newer labeldp-audit or point --warehouse elsewhere")


def _check_duckdb(path: Path, create: bool) -> list[str]:
    if path.is_dir():
        raise LabelDPInputError(f"--warehouse {path}: is a directory; expected a DuckDB file path")
    parent = path.parent
    if not parent.is_dir():
        if create:
            return []
        raise LabelDPInputError(f"--warehouse {path}: its directory {parent} does not exist; create it, fix the path "
                                f"or pass --create-warehouse")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise LabelDPInputError(f"--warehouse {path}: its directory {parent} is not writable")
    if not path.exists():
        return []
    if not os.access(path, os.R_OK | os.W_OK):
        raise LabelDPInputError(f"--warehouse {path}: the file is not readable and writable")
    import duckdb

    from auditing.sinks.warehouse.migrations import Context

    try:
        conn = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        text = str(exc).strip().splitlines()[0]
        if "lock" in text.lower():  # another run is writing: it waits its turn, not bad input
            return [f"warehouse {path} is in use by another process ({text}); this run will wait for it"]
        raise LabelDPInputError(f"--warehouse {path}: not a DuckDB database ({text})") from None
    try:
        version = _newer_schema(Context(conn, "duckdb", "qmark", str(path)))
    finally:
        conn.close()
    _refuse_newer(version, str(path))
    return []


def _check_postgres(url: str) -> list[str]:
    import psycopg
    from psycopg import conninfo

    from auditing.sinks.warehouse.address import describe_target
    from auditing.sinks.warehouse.migrations import Context

    shown = describe_target(url)
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise LabelDPInputError(f"--warehouse {shown}: not a valid PostgreSQL URL ({str(exc).strip()})") from None
    for port in str(params.get("port") or "5432").split(","):  # libpq only finds a bad port when it connects
        if not (port.strip().isdigit() and 0 < int(port) < 65536):
            raise LabelDPInputError(f"--warehouse {shown}: not a valid PostgreSQL URL (port {port!r} is not a whole "
                                    f"number in 1..65535)")
    try:
        conn = psycopg.connect(url, connect_timeout=CONNECT_SECONDS, autocommit=True)
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if LOGIN_REFUSED.search(str(exc)):
            refusal = reason.split("FATAL:", 1)[-1].strip()
            raise LabelDPInputError(f"--warehouse {shown}: the server refused the login ({refusal}); fix the "
                                    "URL's user, password or database") from None
        return [f"warehouse {shown} does not answer within {CONNECT_SECONDS} s ({reason}); results it cannot take "
                f"are spooled under the data root (exit 3)"]
    try:
        with conn.cursor() as cursor:
            version = _newer_schema(Context(cursor, "postgres", "format", shown))
    finally:
        conn.close()
    _refuse_newer(version, shown)
    return []


def check_run(root: Path, days: list[dt.date], plan: AuditPlan, warehouse: str | None,
              create_warehouse: bool = False, targets: bool = True) -> list[str]:
    """Everything ``days`` of ``plan`` need (partitions, references, the plan's targets unless ``targets`` is
    False, as for a guardrail, whose candidate is `check_candidate`, the warehouse), cheapest first; returns
    warnings.

    Raises:
        LabelDPInputError (steps.DataMissingError for a missing or empty partition): the first bad input.
    """
    checked: set[dt.date] = set()
    partitions = {day: steps.check_partition(root, day, plan) for day in days}
    checked.update(days)
    for day in days:
        check_reference(partitions[day], plan, checked)
        if targets:
            check_targets(partitions[day], plan)
    return [*holdout_warnings(plan, min(p.rows for p in partitions.values())),
            *check_warehouse(root, warehouse, create_warehouse)]


def holdout_warnings(plan: AuditPlan, rows: int) -> list[str]:
    """A warning for each claim of the plan's trained targets that no night of ``rows`` rows can confirm a violation
    of with the built-in split's holdout (`auditing.verdict.power.can_ever_confirm`): even an attacker right on every
    guess could not be vouched for; `labeldp-audit plan power` says more. One warning when the plan holds no row out
    at all (audit_rows 'all')."""
    from auditing.verdict.power import can_ever_confirm, rows_of_day
    from pipelines.data.splits import CORRECTION_SHARE, FRACTIONS, TEST

    claims = sorted({t.claimed_epsilon for t in plan.targets if isinstance(t, TargetSpec)
                     and t.claimed_epsilon is not None and math.isfinite(t.claimed_epsilon)})
    if plan.game.audit_rows != "training":
        return [f"audit_rows {plan.game.audit_rows!r}: the game plays on every row, so no row is held out to check "
                "the reference; a VIOLATION can never be confirmed (its decision is an unconfirmed leak, exit 4)"]
    if not claims:
        return []
    share = CORRECTION_SHARE if plan.game.reference_calibration != "none" else 0.0
    audited, check = rows_of_day(rows, FRACTIONS[TEST], share)
    return [f"no night of {rows:,} rows can confirm a violation of claimed eps {claim:g}: its {check:,} check rows "
            f"could not vouch even for an attacker right on every guess; hold out more rows or see "
            f"{hints.PLAN_POWER.line(rows=rows, claim=f'{claim:g}')}"
            for claim in claims if not can_ever_confirm(audited, check, claim, plan.bound.confidence)]
