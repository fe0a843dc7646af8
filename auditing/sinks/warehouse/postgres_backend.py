"""The production warehouse: PostgreSQL through psycopg 3, same tables and statements as DuckDB.

The target is a libpq URL (``postgresql://user@host:5432/db``). Tables live in the connection's current
schema; pick another with libpq's options, e.g. ``...?options=-csearch_path%3Dmy_schema`` (the schema must
exist). Concurrent writers are safe: each write is one transaction whose first statement is
``INSERT ... ON CONFLICT DO NOTHING`` on the result row, which row-locks the key until commit, so concurrent
writers of one key run one after another (the later one writes nothing but its run) and writers of different
keys do not wait for each other.
Serialization failures and deadlocks are retried; a lost connection is re-opened once per call.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from auditing.sinks.warehouse import migrations
from auditing.sinks.warehouse.address import WarehouseUnavailable, describe_target
from auditing.sinks.warehouse.base import Warehouse, backoff_delays
from labeldp.errors import LabelDPInputError

# Any constant works: it names the advisory lock that serializes schema changes across sessions (concurrent
# CREATE TABLE IF NOT EXISTS can otherwise fail on PostgreSQL's catalog unique index, and a migration must run
# once).
_DDL_ADVISORY_LOCK = 0x1A_BE1D_0A0D
_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)


class PostgresWarehouse(Warehouse):
    dialect = "postgres"
    placeholder = "format"

    def __init__(self, url: str, *, timeout: float = 30.0, create: bool = True):
        self.target = url
        self.timeout = float(timeout)
        self._create = create
        self._lock = threading.Lock()
        self._conn: psycopg.Connection | None = None
        self._ensure_tables()

    def _connection(self) -> psycopg.Connection:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            # libpq's connect_timeout is whole seconds, and values below 2 are raised to 2.
            self._conn = psycopg.connect(self.target, autocommit=True,
                                         connect_timeout=max(2, math.ceil(self.timeout)))
        except psycopg.OperationalError as exc:
            raise WarehouseUnavailable(
                f"cannot connect to warehouse {describe_target(self.target)}: {str(exc).strip()}"
            ) from exc
        except psycopg.ProgrammingError as exc:
            raise LabelDPInputError(
                f"warehouse: invalid PostgreSQL URL {describe_target(self.target)!r}: {exc}"
            ) from None
        return self._conn

    def _run(self, fn: Callable[[psycopg.Connection], Any]) -> Any:
        """fn(connection) with one reconnect if the connection was lost and retries of conflicts."""
        deadline = time.monotonic() + self.timeout
        delays = backoff_delays(0.02, 0.5, deadline)
        reconnected = False
        with self._lock:
            while True:
                conn = self._connection()
                try:
                    return fn(conn)
                except _RETRYABLE as exc:
                    delay = next(delays, None)
                    if delay is None:
                        raise WarehouseUnavailable(
                            f"warehouse {describe_target(self.target)}: kept conflicting: {exc}") from exc
                    time.sleep(delay)
                except psycopg.OperationalError as exc:
                    if conn.broken and not reconnected:
                        reconnected = True
                        continue
                    raise WarehouseUnavailable(
                        f"warehouse {describe_target(self.target)}: {str(exc).strip()}") from exc

    def _transaction(self, fn: Callable[[Any], None]) -> None:
        def body(conn: psycopg.Connection) -> None:
            with conn.transaction(), conn.cursor() as cursor:
                fn(cursor)

        self._run(body)

    def _query(self, sql: str, params: Sequence) -> list[tuple]:
        def body(conn: psycopg.Connection) -> list[tuple]:
            with conn.cursor() as cursor:
                cursor.execute(sql, list(params))
                return cursor.fetchall()

        return self._run(body)

    def _ensure_tables(self) -> None:
        """Creates or migrates the tables (``migrations.upgrade``); every step holds the schema advisory lock."""
        def body(conn: psycopg.Connection) -> None:
            with conn.cursor() as cursor:
                cursor.execute("SELECT current_schema()")
                current = cursor.fetchone()[0]
                if current is None:
                    raise LabelDPInputError(
                        f"warehouse {describe_target(self.target)}: no schema of the search_path exists; "
                        "create it first (CREATE SCHEMA ...)"
                    )

                def transaction(fn: Callable[[Any], Any]) -> None:
                    with conn.transaction():
                        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DDL_ADVISORY_LOCK])
                        fn(cursor)

                migrations.upgrade(migrations.SchemaSession(
                    dialect=self.dialect, placeholder=self.placeholder, where=describe_target(self.target),
                    read=lambda fn: fn(cursor), transaction=transaction, location=f" in schema {current}",
                ), create=self._create)

        self._run(body)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
