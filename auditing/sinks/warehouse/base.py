"""What both warehouse backends share: validation, the write-once transaction, reads and retry timing; and the
read-only view of a warehouse that ``labeldp-audit results`` uses (``open_read_only``).

A backend supplies ``_transaction(fn)`` (run ``fn(cursor)`` inside ONE transaction, retrying conflicts),
and ``_query(sql, params)``, and brings the tables to the latest schema version when it opens a warehouse
(``migrations.upgrade``). Everything else, including every SQL statement, is here, in ``schema`` and in
``migrations``, so both backends behave the same way. ``ReadOnlyWarehouse`` is the exception that opens
nothing for writing: it only reads what a warehouse of any version up to ``migrations.LATEST`` holds.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from auditing.sinks.warehouse import migrations, schema
from auditing.sinks.warehouse.address import (
    WarehouseUnavailable,
    describe_target,
    is_postgres_target,
    warehouse_target,
)
from auditing.sinks.warehouse.records import ResultRow, upgrade_row
from auditing.sinks.warehouse.rows import (
    AuditKey,
    as_key,
    check_run_id,
    check_stored_run_kind,
    normalize_curve,
    normalize_row,
    normalize_slices,
)
from auditing.verdict.types import STATUSES, TRUST_STATES, UNTRUSTED
from labeldp import faults
from labeldp.errors import LabelDPInputError
from labeldp.names import check_name, parse_date, require_date


def backoff_delays(initial: float, maximum: float, deadline: float) -> Iterator[float]:
    """Jittered exponential delays (initial, 2*initial, ... capped at maximum) until ``deadline`` (monotonic).

    The jitter (50-100% of each step) keeps processes that collided once from colliding again in lockstep.
    """
    step = initial
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        yield min(remaining, step * (0.5 + 0.5 * random.random()))
        step = min(maximum, step * 2)


class Written(NamedTuple):
    """What `Warehouse.write_audit` did: the verdict's key, and whether this call wrote its row (False: the row was
    stored already, by a run on identical inputs; this run was recorded against it)."""

    key: AuditKey
    new: bool


def run_values(row: Mapping) -> dict:
    """The ``audit_runs`` row of a validated result row (`normalize_row`): the run that computed it."""
    return {name: row[name] for name in schema.RUN_NAMES}


class Warehouse:
    """The warehouse interface (the tables: docs/warehouse.md and ``auditing.sinks.warehouse.schema``); get one from
    ``open_warehouse``."""

    dialect = ""
    placeholder = ""  # "qmark" (DuckDB) or "format" (psycopg)
    target = ""

    # -- writes ------------------------------------------------------------------------------------------
    def write_audit(self, row: ResultRow | Mapping, curve: Sequence[Mapping],
                    slices: Sequence[Mapping] = ()) -> Written:
        """Writes one audit's row, its curve and its slices (`auditing.sinks.warehouse.rows.slice_record`; none when
        the verdict declared none) and its run (``audit_runs``) in ONE transaction. A row is written once: when its
        key (model, model fingerprint, day, run kind, claim, audit config, inputs fingerprint) is already stored,
        the row, curve and slices stay exactly as they are and only the run is recorded against it (a run of
        identical inputs). The same run recorded twice (a retry, a spool drained again) writes nothing.

        The result row is inserted first (INSERT ... ON CONFLICT DO NOTHING RETURNING): on PostgreSQL a concurrent
        writer of the same key waits for the first's commit and then writes nothing, so curves and slices are
        written by the one that wrote the row. If anything fails the transaction rolls back whole. Returns the key
        and whether this call wrote the row (`Written`).
        """
        clean = normalize_row(row)
        key = as_key(clean)
        points = normalize_curve(curve, key)
        pieces = normalize_slices(slices, key)
        wrote: list[bool] = []
        self._transaction(lambda cursor: wrote.append(self._write(cursor, clean, key, points, pieces)))
        return Written(key, wrote[-1])

    def _write(self, cursor, row: dict, key: AuditKey, points: list[dict], slices: list[dict] = ()) -> bool:
        cursor.execute(schema.insert_result_sql(self.placeholder), [row[name] for name in schema.RESULT_NAMES])
        new = bool(cursor.fetchall())
        faults.point("warehouse.transaction")  # inert unless a crash test asks (labeldp.faults)
        if new:
            self._insert_curve(cursor, points)
            self._insert_slices(cursor, list(slices))
        cursor.execute(schema.insert_run_sql(self.placeholder), [run_values(row)[name] for name in schema.RUN_NAMES])
        return new

    def _insert_curve(self, cursor, points: list[dict]) -> None:
        if points:
            cursor.executemany(schema.insert_curve_sql(self.placeholder),
                               [[p[name] for name in schema.CURVE_NAMES] for p in points])

    def _insert_slices(self, cursor, slices: list[dict]) -> None:
        if slices:
            cursor.executemany(schema.insert_slices_sql(self.placeholder),
                               [[s[name] for name in schema.SLICE_NAMES] for s in slices])

    # -- reads -------------------------------------------------------------------------------------------
    def fetch_results(self, model_id: str | None = None, since: str | dt.date | None = None,
                      until: str | dt.date | None = None) -> list[ResultRow]:
        """audit_results rows (`auditing.sinks.warehouse.records.ResultRow`, every column, read through its one
        upgrader) ordered by partition_date, model_id, config hash.

        Dates come back as ``datetime.date``, timestamps as UTC-aware datetimes; ``durations`` and
        ``result_json`` are JSON text as stored.
        """
        params: list[Any] = []
        if model_id is not None:
            params.append(check_name(model_id, "model_id"))
        if since is not None:
            params.append(parse_date(since, "since"))
        if until is not None:
            params.append(parse_date(until, "until"))
        if since is not None and until is not None and params[-2] > params[-1]:
            raise LabelDPInputError(f"since ({params[-2]}) must not be after until ({params[-1]})")
        sql = schema.select_results_sql(self.placeholder, by_model=model_id is not None,
                                        since=since is not None, until=until is not None)
        return [upgrade_row(self._row_dict(schema.RESULT_NAMES, values)) for values in self._query(sql, params)]

    # Newest first: the latest partition date first; on one date by model, then the audit that finished last.
    _NEWEST_FIRST = ("partition_date DESC, model_id, finished_at DESC NULLS LAST, run_kind, claimed_epsilon, "
                     "audit_config_hash, model_fingerprint, inputs_fingerprint")

    def fetch_verdicts(self, *, model_id: str | None = None, since: dt.date | None = None,
                       until: dt.date | None = None, status: str | None = None, run_kind: str | None = None,
                       trust: str | None = None, latest: bool = False, run_id: str | None = None) -> list[ResultRow]:
        """audit_results rows (``ResultRow``, every column, as ``fetch_results``), newest partition date first (on one
        date by model_id, then the audit that finished last first).

        The filters pick rows (all must hold; dates are ``datetime.date``, parsed at the edge); ``latest`` then
        keeps, per model, kind (target / control) and run kind (nightly / guardrail / backfill), only its newest
        picked row: the latest partition date, and of several verdicts of that date (claims, audit configs,
        model files) the one that finished last. With ``since`` = ``until`` it is the latest verdict per model,
        day and run kind. A query: no row is ever replaced by another key's. ``trust`` (one of
        `auditing.verdict.types.TRUST_STATES`) picks rows of that trust; a row written before per-verdict trust (trust
        NULL) counts as untrusted when it carries an untrusted_reason (its night was), as
        `auditing.sinks.warehouse.records.trust_state` reads it, and matches no other trust. ``run_id`` picks the
        rows that run wrote or was recorded against (``audit_runs``).
        """
        mark = schema.placeholders(self.placeholder, 1)[0]
        conditions, params = [], []
        if model_id is not None:
            conditions.append(f"model_id = {mark}")
            params.append(check_name(model_id, "model_id"))
        for name, value, operator in (("since", since, ">="), ("until", until, "<=")):
            if value is not None:
                conditions.append(f"partition_date {operator} {mark}")
                params.append(require_date(value, name))
        if since is not None and until is not None and since > until:
            raise LabelDPInputError(f"since ({since}) must not be after until ({until})")
        if status is not None:
            if status not in STATUSES:
                raise LabelDPInputError(f"status must be one of {list(STATUSES)}; got {status!r}")
            conditions.append(f"status = {mark}")
            params.append(status)
        if run_kind is not None:
            conditions.append(f"run_kind = {mark}")
            params.append(check_stored_run_kind(run_kind))
        if trust is not None:
            if trust not in TRUST_STATES:
                raise LabelDPInputError(f"trust must be one of {list(TRUST_STATES)}; got {trust!r}")
            legacy = " OR (trust IS NULL AND untrusted_reason IS NOT NULL)" if trust == UNTRUSTED else ""
            conditions.append(f"(trust = {mark}{legacy})")
            params.append(trust)
        if run_id is not None:
            conditions.append(self._run_condition(mark))
            params += [check_run_id(run_id, "run_id")] * (2 if self._has_runs() else 1)
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        names = ", ".join(schema.RESULT_NAMES)
        # The innermost SELECT names every column of the latest schema (see _stored_columns: an older warehouse
        # read as it is has NULL for the columns it lacks), and the filters apply to it; only constant fragments
        # are joined here, every value is a bound parameter.
        stored = f"(SELECT {', '.join(self._stored_columns())} FROM audit_results) AS stored{where}"
        if latest:
            rank = ("ROW_NUMBER() OVER (PARTITION BY model_id, COALESCE(kind, 'target'), run_kind ORDER BY "
                    "partition_date DESC, finished_at DESC NULLS LAST, claimed_epsilon, audit_config_hash, "
                    "model_fingerprint, inputs_fingerprint)")
            stored = f"(SELECT {names}, {rank} AS newest FROM {stored}) AS ranked WHERE newest = 1"
        sql = f"SELECT {names} FROM {stored} ORDER BY {self._NEWEST_FIRST}"
        return [upgrade_row(self._row_dict(schema.RESULT_NAMES, values)) for values in self._query(sql, params)]

    def _stored_columns(self) -> Sequence[str]:
        """The select list of audit_results: its columns at the latest schema version (the backends migrate)."""
        return schema.RESULT_NAMES

    def _has_runs(self) -> bool:
        """Whether the warehouse has the runs' table (schema version 9; the writing backends migrate)."""
        return True

    def _run_condition(self, mark: str) -> str:
        """The rows a run wrote (their run_id) or was recorded against (audit_runs), for ``fetch_verdicts``."""
        if not self._has_runs():
            return f"run_id = {mark}"
        same_key = " AND ".join(f"r.{k} = stored.{k}" for k in schema.KEY_COLUMNS)
        return f"(run_id = {mark} OR EXISTS (SELECT 1 FROM audit_runs r WHERE r.run_id = {mark} AND {same_key}))"

    def fetch_runs(self, key: Any) -> list[dict]:
        """The runs of one verdict (``audit_runs`` rows: run_id, the key, flow_run_id, started_at, finished_at,
        code_version and the status and bound that run computed), the first started first; empty on a warehouse
        older than the runs' table. key: as ``fetch_curve``."""
        if not self._has_runs():
            return []
        rows = self._query(schema.select_runs_sql(self.placeholder), list(as_key(key)))
        return [self._row_dict(schema.RUN_NAMES, values) for values in rows]

    def fetch_curve(self, key: Any) -> list[dict]:
        """The curve of one audit, ordered by point_index (empty if the key has none). key: an AuditKey, a tuple
        in ``schema.KEY_COLUMNS`` order or a row."""
        key = as_key(key)
        rows = self._query(schema.select_curve_sql(self.placeholder), list(key))
        return [self._row_dict(schema.CURVE_NAMES, values) for values in rows]

    # Keys per query when reading the slices of many verdicts (each key binds its six columns).
    _SLICE_KEYS_PER_QUERY = 100

    def fetch_slices(self, key: Any) -> list[dict]:
        """The slices of one verdict (``audit_slices`` rows: the key, slicing, slice_name, the slices' budget and
        declared count, confidence, rows, check_rows, epsilon_lower_bound, max_certifiable_epsilon, status, trust,
        trust_reason, note), the largest bound first; empty when it declared none. key: as ``fetch_curve``."""
        key = as_key(key)
        return self.slices_of([key]).get(key, [])

    def slices_of(self, keys: Sequence[Any]) -> dict[AuditKey, list[dict]]:
        """The slices of several verdicts at once (``fetch_slices`` of each): key -> its slices, the largest bound
        first; a verdict without slices is absent. keys: AuditKeys, key tuples or rows."""
        wanted = list(dict.fromkeys(as_key(k) for k in keys))
        out: dict[AuditKey, list[dict]] = {}
        for start in range(0, len(wanted), self._SLICE_KEYS_PER_QUERY):
            chunk = wanted[start:start + self._SLICE_KEYS_PER_QUERY]
            sql = schema.select_slices_sql(self.placeholder, len(chunk))
            for values in self._query(sql, [v for k in chunk for v in k]):
                piece = self._row_dict(schema.SLICE_NAMES, values)
                out.setdefault(as_key(piece), []).append(piece)
        for pieces in out.values():  # the same order on both backends, whatever the text collation
            pieces.sort(key=lambda s: (-s["epsilon_lower_bound"], s["slicing"], s["slice_name"]))
        return out

    @staticmethod
    def _row_dict(names: Sequence[str], values: Sequence) -> dict:
        out = {}
        for name, value in zip(names, values, strict=True):
            if isinstance(value, dt.datetime):
                value = value.astimezone(dt.UTC)
            elif isinstance(value, dt.date):
                value = dt.date(value.year, value.month, value.day)
            out[name] = value
        return out

    # -- schema ------------------------------------------------------------------------------------------
    def schema_versions(self) -> list[dict]:
        """The schema versions applied to this warehouse, oldest first: dicts of version, description and
        applied_at (UTC). Opening the warehouse has brought it to ``migrations.LATEST``."""
        sql = f"SELECT version, description, applied_at FROM {schema.VERSION_TABLE} ORDER BY version"
        return [self._row_dict(("version", "description", "applied_at"), values) for values in self._query(sql, [])]

    _TABLE_COLUMNS_SQL = (
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_catalog = current_database() "
        "AND table_name IN ('audit_results', 'audit_curves') ORDER BY table_name, ordinal_position"
    )

    # -- backend hooks -------------------------------------------------------------------------------------
    def _transaction(self, fn: Callable[[Any], None]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _query(self, sql: str, params: Sequence) -> list[tuple]:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Releases the connection (if the backend holds one); the object must not be used afterwards."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({describe_target(self.target)!r})"


# ------------------------------------------------------------------------------------------------ read-only
class ReadOnlyWarehouse(Warehouse):
    """A warehouse opened only to read (``open_read_only``): it never creates, migrates or writes.

    DuckDB: every read opens the file with ``read_only=True`` and closes it (a writer holding the file is
    waited for, like the writing backend does). PostgreSQL: one connection whose transactions are read-only
    (``default_transaction_read_only``). Opening reads the recorded schema version: one newer than this code
    knows is refused; an older one is read as it is (a column that version lacks reads None), not migrated.
    """

    def __init__(self, target: str, dialect: str, run: Callable[[Callable[[Any], Any]], Any],
                 close: Callable[[], None] = lambda: None):
        self.target, self.dialect = target, dialect
        self.placeholder = "format" if dialect == "postgres" else "qmark"
        self._run, self._close = run, close
        try:
            self.version, self.columns, self.curve_columns, self.slice_columns, self.run_columns = \
                self._read_schema()
        except BaseException:
            close()
            raise

    def _read_schema(self) -> tuple[int | None, frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
        where = describe_target(self.target)

        def state(cursor) -> tuple[dict, int | None, str]:
            ctx = migrations.Context(cursor, self.dialect, self.placeholder, where)
            found = migrations.found_columns(ctx)
            location = f" in schema {ctx.fetch('SELECT current_schema()')[0][0]}" if self.dialect == "postgres" else ""
            return found, migrations.recorded_version(ctx, found), location

        found, version, location = self._run(state)
        if not any(table in found for table in schema.TABLES):
            raise LabelDPInputError(
                f"warehouse {where}: the audit tables do not exist{location} (nothing audited into it yet)")
        if version is not None and version > migrations.LATEST:
            raise LabelDPInputError(
                f"warehouse {where}: its schema version {version} is newer than this code knows (it reads up to "
                f"version {migrations.LATEST}); read it with a newer labeldp-audit")
        # Refuses tables of a shape no version had (one table, an unknown NOT NULL column, ...).
        migrations.check_shape(found, migrations.expected_tables(version or 1), where)
        return (version, frozenset(found.get("audit_results", ())), frozenset(found.get("audit_curves", ())),
                frozenset(found.get("audit_slices", ())), frozenset(found.get("audit_runs", ())))

    def _stored_columns(self) -> Sequence[str]:
        return [_stored_column(name, self.columns) for name in schema.RESULT_NAMES]

    def _has_runs(self) -> bool:
        return bool(self.run_columns)

    def fetch_curve(self, key: Any) -> list[dict]:
        """As `Warehouse.fetch_curve`; on a warehouse older than the key's columns (read as it is) the curve is
        found by the key columns its table has."""
        if self.curve_columns >= set(schema.KEY_COLUMNS):
            return super().fetch_curve(key)
        key = as_key(key)._asdict()
        names = [name for name in schema.KEY_COLUMNS if name in self.curve_columns]
        mark = schema.placeholders(self.placeholder, 1)[0]
        stored = [_stored_column(name, self.curve_columns) if name in self.curve_columns or name not in key
                  else f"{mark} AS {name}" for name in schema.CURVE_NAMES]
        absent = [key[name] for name in schema.CURVE_NAMES if name not in self.curve_columns and name in key]
        sql = (f"SELECT {', '.join(stored)} FROM audit_curves WHERE "
               + " AND ".join(f"{name} = {mark}" for name in names) + " ORDER BY point_index")
        rows = self._query(sql, [*absent, *(key[name] for name in names)])
        return [self._row_dict(schema.CURVE_NAMES, values) for values in rows]

    def slices_of(self, keys: Sequence[Any]) -> dict[AuditKey, list[dict]]:
        """As `Warehouse.slices_of`; a warehouse older than the slices' table (read as it is) has none, and on one
        whose slices lack a key column (version 8: inputs_fingerprint) each verdict's slices are found by the key
        columns its table has."""
        if not self.slice_columns:
            return {}
        if self.slice_columns >= set(schema.KEY_COLUMNS):
            return super().slices_of(keys)
        mark = schema.placeholders(self.placeholder, 1)[0]
        names = [name for name in schema.KEY_COLUMNS if name in self.slice_columns]
        select = [name if name in self.slice_columns else f"{mark} AS {name}" for name in schema.SLICE_NAMES]
        sql = (f"SELECT {', '.join(select)} FROM audit_slices WHERE "
               + " AND ".join(f"{name} = {mark}" for name in names)
               + " ORDER BY epsilon_lower_bound DESC, slicing, slice_name")
        out: dict[AuditKey, list[dict]] = {}
        for key in dict.fromkeys(as_key(k) for k in keys):
            values = key._asdict()
            absent = [values[name] for name in schema.SLICE_NAMES if name not in self.slice_columns and name in values]
            found = [self._row_dict(schema.SLICE_NAMES, v)
                     for v in self._query(sql, [*absent, *(values[name] for name in names)])]
            if found:
                out[key] = found
        return out

    def _query(self, sql: str, params: Sequence) -> list[tuple]:
        return self._run(lambda cursor: cursor.execute(sql, list(params)).fetchall())

    def _transaction(self, fn: Callable[[Any], None]) -> None:
        raise LabelDPInputError(f"warehouse {describe_target(self.target)} was opened read-only")

    def close(self) -> None:
        self._close()


def _stored_column(name: str, present: frozenset[str]) -> str:
    """A select-list item for ``name`` of the latest schema on a table that may be older: the column itself, what
    the migration to the version adding it would store (a key column), or NULL."""
    unrecorded = schema.sql_literal(schema.UNRECORDED)  # migrations 4 and 9: what a row written before records
    if name == "model_fingerprint" and name in present and "run_kind" not in present:
        return f"COALESCE({name}, {unrecorded}) AS {name}"
    if name in present:
        return name
    if name in ("run_kind", "model_fingerprint", "inputs_fingerprint"):
        return f"{unrecorded} AS {name}"
    if name == "run_id":
        return f"COALESCE(flow_run_id, {unrecorded}) AS {name}"
    return f"NULL AS {name}"


def open_read_only(target: str | os.PathLike | None = None, *, data_root: str | os.PathLike | None = None,
                   timeout: float = 30.0) -> ReadOnlyWarehouse:
    """The warehouse named by ``target`` (as ``open_warehouse``: a postgresql:// URL, a DuckDB file, None for
    ``<data_root>/warehouse.duckdb``), opened read-only. Nothing is created: a missing file is an error.

    Raises:
        LabelDPInputError: a bad target, a missing file, no audit tables, a schema newer than this code.
        WarehouseUnavailable: the server does not answer or the file stays locked for ``timeout`` seconds.
    """
    if not (timeout > 0):
        raise LabelDPInputError(f"timeout must be > 0 seconds; got {timeout!r}")
    target = warehouse_target(target, data_root)
    if is_postgres_target(target):
        return ReadOnlyWarehouse(target, "postgres", *_postgres_reader(target, timeout))
    if "://" in target:
        raise LabelDPInputError(
            f"warehouse must be a DuckDB file path or a postgresql:// URL; got {describe_target(target)!r}")
    path = Path(target).expanduser().absolute()
    if path.is_dir():
        raise LabelDPInputError(f"warehouse: {path} is a directory; expected a DuckDB file path")
    if not path.is_file():
        raise LabelDPInputError(f"warehouse: DuckDB file not found: {path}")
    return ReadOnlyWarehouse(str(path), "duckdb", _duckdb_reader(path, timeout))


def _duckdb_reader(path: Path, timeout: float) -> Callable[[Callable[[Any], Any]], Any]:
    """run(fn): fn(a read-only connection to the file), opened for this call only; a writer's lock is waited
    out with backoff until ``timeout``."""
    import duckdb

    def run(fn: Callable[[Any], Any]) -> Any:
        delays = backoff_delays(0.02, 0.5, time.monotonic() + timeout)
        while True:
            try:
                conn = duckdb.connect(str(path), read_only=True)
            except duckdb.Error as exc:
                delay = next(delays, None) if "lock" in str(exc).lower() else None
                if delay is None:
                    raise WarehouseUnavailable(f"cannot open warehouse {path} for reading: {exc}") from exc
                time.sleep(delay)
                continue
            try:
                return fn(conn)
            except duckdb.IOException as exc:
                raise WarehouseUnavailable(f"warehouse {path}: I/O error: {exc}") from exc
            finally:
                conn.close()

    return run


def _postgres_reader(url: str, timeout: float) -> tuple[Callable[[Callable[[Any], Any]], Any], Callable[[], None]]:
    """(run, close): run(fn) is fn(a cursor of one connection whose transactions are read-only)."""
    import psycopg

    where = describe_target(url)
    try:
        # libpq's connect_timeout is whole seconds, and values below 2 are raised to 2.
        conn = psycopg.connect(url, autocommit=True, connect_timeout=max(2, math.ceil(timeout)))
    except psycopg.OperationalError as exc:
        raise WarehouseUnavailable(f"cannot connect to warehouse {where}: {str(exc).strip()}") from exc
    except psycopg.ProgrammingError as exc:
        raise LabelDPInputError(f"warehouse: invalid PostgreSQL URL {where!r}: {exc}") from None

    def run(fn: Callable[[Any], Any]) -> Any:
        try:
            with conn.cursor() as cursor:
                return fn(cursor)
        except psycopg.OperationalError as exc:
            raise WarehouseUnavailable(f"warehouse {where}: {str(exc).strip()}") from exc

    try:
        run(lambda cursor: cursor.execute("SET default_transaction_read_only = on"))
    except BaseException:
        conn.close()
        raise
    return run, conn.close
