"""What both warehouse backends share: validation, the upsert transaction, reads and retry timing.

A backend supplies ``_transaction(fn)`` (run ``fn(cursor)`` inside ONE transaction, retrying conflicts),
and ``_query(sql, params)``, and brings the tables to the latest schema version when it opens a warehouse
(``migrations.upgrade``). Everything else, including every SQL statement, is here, in ``schema`` and in
``migrations``, so both backends behave the same way.
"""

from __future__ import annotations

import datetime as dt
import random
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from auditing.errors import LabelDPInputError
from auditing.names import check_name, parse_date
from auditing.warehouse import schema
from auditing.warehouse.rows import AuditKey, as_key, normalize_curve, normalize_row


class WarehouseUnavailable(RuntimeError):
    """The warehouse cannot be reached right now (server down, file locked past the timeout, I/O error).

    Transient by assumption: ``write_or_spool`` retries, then spools the payload to disk.
    """


def describe_target(target: str) -> str:
    """The target with any password replaced by ***, safe for logs and error messages."""
    parts = urllib.parse.urlsplit(target)
    if parts.scheme and parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return target


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


class Warehouse:
    """The warehouse interface (DESIGN.md "Warehouse tables"); get one from ``open_warehouse``."""

    dialect = ""
    placeholder = ""  # "qmark" (DuckDB) or "format" (psycopg)
    target = ""

    # -- writes ------------------------------------------------------------------------------------------
    def upsert_audit(self, row: Mapping, curve: Sequence[Mapping]) -> AuditKey:
        """Writes one audit's row and its curve in ONE transaction; a re-run of the same key replaces both.

        The result row is upserted first (INSERT ... ON CONFLICT DO UPDATE): on PostgreSQL that row lock
        serializes concurrent writers of the same key before they touch its curve, so two writers never
        interleave their curve points. Then the key's curve is deleted and re-inserted. If anything fails
        the transaction rolls back and the previous row and curve stay exactly as they were.
        """
        clean = normalize_row(row)
        key = as_key(clean)
        points = normalize_curve(curve, key)
        self._transaction(lambda cursor: self._write(cursor, clean, key, points))
        return key

    def _write(self, cursor, row: dict, key: AuditKey, points: list[dict]) -> None:
        cursor.execute(schema.upsert_result_sql(self.placeholder), [row[name] for name in schema.RESULT_NAMES])
        cursor.execute(schema.delete_curve_sql(self.placeholder), list(key))
        self._insert_curve(cursor, points)

    def _insert_curve(self, cursor, points: list[dict]) -> None:
        if points:
            cursor.executemany(schema.insert_curve_sql(self.placeholder),
                               [[p[name] for name in schema.CURVE_NAMES] for p in points])

    # -- reads -------------------------------------------------------------------------------------------
    def fetch_results(self, model_id: str | None = None, since: str | dt.date | None = None,
                      until: str | dt.date | None = None) -> list[dict]:
        """audit_results rows (dicts, every column) ordered by partition_date, model_id, config hash.

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
        return [self._row_dict(schema.RESULT_NAMES, values) for values in self._query(sql, params)]

    def fetch_curve(self, key: Any) -> list[dict]:
        """The curve of one audit, ordered by point_index (empty if the key has none)."""
        key = as_key(key)
        rows = self._query(schema.select_curve_sql(self.placeholder), list(key))
        return [self._row_dict(schema.CURVE_NAMES, values) for values in rows]

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
