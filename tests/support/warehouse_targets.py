"""What the warehouse tests share: a fresh target of each backend (DuckDB, PostgreSQL), an outage of it, and
`only` (the one row of a list). A test file imports the fixtures with postgres_url (tests/support/pg_schema.py),
which the PostgreSQL case asks for."""

from __future__ import annotations

import subprocess
import sys

import pytest

from auditing.sinks.warehouse import open_warehouse


@pytest.fixture(params=["duckdb", "postgres"])
def target(request, tmp_path) -> str:
    """A fresh, empty warehouse target for the backend under test."""
    if request.param == "duckdb":
        return str(tmp_path / "wh" / "warehouse.duckdb")
    url = request.getfixturevalue("postgres_url")
    with open_warehouse(url) as wh:  # creates the tables on first use, then empty them for this test
        wh._transaction(lambda cur: (cur.execute("DELETE FROM audit_curves"), cur.execute("DELETE FROM audit_slices"),
                                     cur.execute("DELETE FROM audit_runs"), cur.execute("DELETE FROM audit_results")))
    return url


def only(rows):
    assert len(rows) == 1, rows
    return rows[0]


_HOLD_LOCK = ("import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); "
              "sys.stdin.read(); c.close()")


class Outage:
    """A target of the backend under test that cannot be used until ``end()`` is called: a DuckDB file whose lock
    another process holds, or a PostgreSQL address where nothing listens until its gate opens."""

    def __init__(self, target: str, holder: subprocess.Popen | None = None, gate=None):
        self.target, self._holder, self._gate = target, holder, gate

    def end(self) -> None:
        if self._holder is not None and self._holder.poll() is None:
            self._holder.stdin.close()
            self._holder.wait(timeout=30)
        if self._gate is not None and self._gate._listener is None:
            self._gate.open()


@pytest.fixture
def outage(target):
    if target.startswith("postgresql"):
        # imported here: processes started with this module's code do not have tests/ on their path
        from tests.support.pg_gate import PostgresGate

        with PostgresGate(target) as gate:  # the same address once the outage ends
            yield Outage(gate.url, gate=gate)
        return
    with open_warehouse(target):
        pass  # the file exists; now another process holds its lock until the outage ends
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, target], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    down = Outage(target, holder)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield down
    finally:
        down.end()
