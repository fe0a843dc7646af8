"""The embedded warehouse: one DuckDB file (default ``<data_root>/warehouse.duckdb``).

DuckDB lets one process at a time open a file for writing (it takes an OS file lock). So this backend holds
the file only for the duration of one operation: each call opens it, runs one transaction and closes it.
A second process that finds the file locked waits and retries with jittered exponential backoff until
``timeout`` seconds have passed, then raises ``WarehouseUnavailable``. Threads of one process are serialized
by a per-file lock, and a transaction conflict reported by DuckDB is retried the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from auditing.sinks.warehouse import migrations, schema
from auditing.sinks.warehouse.address import WarehouseUnavailable
from auditing.sinks.warehouse.base import Warehouse, backoff_delays
from labeldp.errors import LabelDPInputError

_FILE_LOCKS: dict[str, threading.Lock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _file_lock(path: Path) -> threading.Lock:
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(str(path), threading.Lock())


def _is_lock_conflict(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


class DuckDBWarehouse(Warehouse):
    dialect = "duckdb"
    placeholder = "qmark"

    def __init__(self, path: str | Path, *, timeout: float = 30.0, create: bool = True):
        self.path = Path(path).expanduser().absolute()
        self.target = str(self.path)
        self.timeout = float(timeout)
        if self.path.is_dir():
            raise LabelDPInputError(f"warehouse: {self.path} is a directory; expected a DuckDB file path")
        if not create and not self.path.exists():
            raise LabelDPInputError(f"warehouse: DuckDB file not found: {self.path}")
        if create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise WarehouseUnavailable(f"cannot create the directory for warehouse {self.path}: {exc}") from exc
        self._create = create
        self._lock = _file_lock(self.path)
        self._run(self._ensure_tables)

    # One operation = open, work, close: the file lock is held as briefly as possible.
    def _connect(self, deadline: float) -> duckdb.DuckDBPyConnection:
        delays = backoff_delays(0.02, 0.5, deadline)
        while True:
            try:
                return duckdb.connect(str(self.path))
            except duckdb.IOException as exc:
                if _is_lock_conflict(exc):
                    delay = next(delays, None)
                    if delay is not None:
                        time.sleep(delay)
                        continue
                    raise WarehouseUnavailable(
                        f"warehouse {self.path} stayed locked by another process for {self.timeout:g} s: {exc}"
                    ) from exc
                raise WarehouseUnavailable(f"cannot open warehouse {self.path}: {exc}") from exc
            except duckdb.Error as exc:
                raise WarehouseUnavailable(f"cannot open warehouse {self.path}: {exc}") from exc

    def _run(self, fn: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        deadline = time.monotonic() + self.timeout
        delays = backoff_delays(0.02, 0.5, deadline)
        with self._lock:
            while True:
                conn = self._connect(deadline)
                try:
                    return fn(conn)
                except duckdb.TransactionException as exc:
                    # A conflict with a transaction of another connection to the same file: retry.
                    delay = next(delays, None)
                    if delay is None:
                        raise WarehouseUnavailable(f"warehouse {self.path}: transaction conflict: {exc}") from exc
                    time.sleep(delay)
                except duckdb.IOException as exc:
                    raise WarehouseUnavailable(f"warehouse {self.path}: I/O error: {exc}") from exc
                finally:
                    conn.close()

    def _in_transaction(self, conn: duckdb.DuckDBPyConnection, fn: Callable[[Any], None]) -> None:
        conn.execute("BEGIN TRANSACTION")
        try:
            fn(conn)
            conn.execute("COMMIT")
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except duckdb.Error:
                pass  # a failed COMMIT has already rolled back
            raise

    def _insert_curve(self, cursor, points: list[dict]) -> None:
        if points:
            first = points[0]
            columns = [name for name in schema.CURVE_NAMES if name not in schema.KEY_COLUMNS]
            params = [first[k] for k in schema.KEY_COLUMNS] + [[p[name] for p in points] for name in columns]
            cursor.execute(schema.insert_curve_unnest_sql_duckdb(), params)

    def _insert_slices(self, cursor, slices: list[dict]) -> None:
        if slices:  # one statement, as the curve (executemany costs a few ms per row)
            first = slices[0]
            columns = [name for name in schema.SLICE_NAMES if name not in schema.KEY_COLUMNS]
            params = [first[k] for k in schema.KEY_COLUMNS] + [[s[name] for s in slices] for name in columns]
            cursor.execute(schema.insert_slices_unnest_sql_duckdb(), params)

    def _transaction(self, fn: Callable[[Any], None]) -> None:
        self._run(lambda conn: self._in_transaction(conn, fn))

    def _query(self, sql: str, params: Sequence) -> list[tuple]:
        return self._run(lambda conn: conn.execute(sql, list(params)).fetchall())

    def _ensure_tables(self, conn: duckdb.DuckDBPyConnection) -> None:
        """Creates or migrates the tables (``migrations.upgrade``) on this one connection."""
        migrations.upgrade(migrations.SchemaSession(
            dialect=self.dialect, placeholder=self.placeholder, where=str(self.path),
            read=lambda fn: fn(conn), transaction=lambda fn: self._in_transaction(conn, fn),
        ), create=self._create)
