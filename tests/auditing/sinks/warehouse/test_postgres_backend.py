"""The PostgreSQL warehouse's connection handling (auditing/sinks/warehouse/postgres_backend.py), on a stand-in
connection (no server): a serialization conflict is retried, a lost connection is reopened once, and a warehouse
that keeps failing is named without its password. The backend against a real server: every test of
tests/auditing/sinks/warehouse/ on its ``target`` fixture."""

import psycopg
import pytest
from psycopg import errors as pg_errors

from auditing.sinks.warehouse import postgres_backend
from auditing.sinks.warehouse.base import WarehouseUnavailable
from auditing.sinks.warehouse.postgres_backend import PostgresWarehouse
from labeldp.errors import LabelDPInputError

URL = "postgresql://auditor:s3cret@db.invalid:5432/audit"


class _Connection:
    def __init__(self):
        self.closed = False
        self.broken = False

    def close(self):
        self.closed = True


@pytest.fixture
def connections(monkeypatch):
    """The connections the warehouse opened, in order (its tables taken as there)."""
    opened = []

    def connect(url, **kwargs):
        opened.append(_Connection())
        return opened[-1]

    monkeypatch.setattr(postgres_backend.psycopg, "connect", connect)
    monkeypatch.setattr(PostgresWarehouse, "_ensure_tables", lambda self: None)
    return opened


def _failing(errors, result="ok"):
    """fn(connection) raising each of ``errors`` in turn (marking the connection broken for any but a conflict),
    then returning ``result``."""
    calls = []

    def fn(conn):
        calls.append(conn)
        if len(calls) <= len(errors):
            error = errors[len(calls) - 1]
            if not isinstance(error, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):  # a conflict: usable
                conn.broken = True
            raise error
        return result

    return fn, calls


def test_conflicts_are_retried_on_the_same_connection(connections):
    warehouse = PostgresWarehouse(URL, timeout=5)
    fn, calls = _failing([pg_errors.SerializationFailure("conflict"), pg_errors.DeadlockDetected("deadlock")])
    assert warehouse._run(fn) == "ok" and len(calls) == 3 and len(connections) == 1


def test_a_lost_connection_is_reopened_once(connections):
    warehouse = PostgresWarehouse(URL, timeout=5)
    fn, calls = _failing([psycopg.OperationalError("server closed the connection")])
    assert warehouse._run(fn) == "ok" and len(connections) == 2 and calls == connections
    fn, _ = _failing([psycopg.OperationalError("lost"), psycopg.OperationalError("lost again")])
    with pytest.raises(WarehouseUnavailable, match="lost again") as info:
        warehouse._run(fn)
    assert "s3cret" not in str(info.value) and "auditor:***@db.invalid" in str(info.value)


def test_a_conflict_past_the_timeout_makes_the_warehouse_unavailable(connections):
    warehouse = PostgresWarehouse(URL, timeout=0.2)
    fn, calls = _failing([pg_errors.SerializationFailure("conflict")] * 10_000)
    with pytest.raises(WarehouseUnavailable, match="kept conflicting: conflict") as info:
        warehouse._run(fn)
    assert "s3cret" not in str(info.value) and 1 < len(calls) < 10_000


def test_close_closes_the_connection_and_the_next_call_opens_another(connections):
    warehouse = PostgresWarehouse(URL, timeout=5)
    warehouse._run(lambda conn: None)
    warehouse.close()
    assert connections[0].closed
    warehouse._run(lambda conn: None)
    assert len(connections) == 2


def test_an_invalid_url_is_refused_as_input():
    with pytest.raises(LabelDPInputError, match="invalid PostgreSQL URL 'postgresql://auditor:\\*\\*\\*@"):
        PostgresWarehouse("postgresql://auditor:s3cret@db.invalid/audit?nonsense=1", timeout=1)
