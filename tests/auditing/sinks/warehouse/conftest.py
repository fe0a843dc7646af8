"""The warehouse tests' shared fixtures (``target`` and ``outage`` come from tests/auditing/sinks/conftest.py).

``postgres_url`` (tests/support/pg_schema.py): one PostgreSQL schema for the session, which ``target``'s postgres
case empties before each test; a test that alters the tables takes a schema of its own (``isolated_target`` and
``target`` in test_migrations.py). ``sliced_verdict``, built once per session: read-only (a frozen verdict;
``audit_record`` and ``slice_record`` only read it)."""

import pytest

from auditing.verdict.judge import judge
from tests.support.pg_schema import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)


@pytest.fixture(scope="session")
def sliced_verdict():
    """A trusted VIOLATION at claimed eps 1 with 12 declared slices: a trusted and an untrusted slice VIOLATION,
    the rest PASS (tests/support/sliced_audits.py)."""
    from tests.support.sliced_audits import sliced

    return judge(sliced(), 1.0)
