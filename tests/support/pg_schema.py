"""A PostgreSQL schema of a test's own: the server the tests use (``LABELDP_TEST_POSTGRES_URL``, default the local
one), a fresh schema named by the caller's prefix, and its URL with the schema as search_path. Dropped afterwards.
Without a server the test is skipped loudly, naming what was not tested.

`postgres_url` is the same as a session fixture: a test module imports it (``from tests.support.pg_schema import
postgres_url``) and gets one schema for the session."""

from __future__ import annotations

import os
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

PG_URL = os.environ.get("LABELDP_TEST_POSTGRES_URL", "postgresql://127.0.0.1:5432/test")


def with_search_path(url: str, schema: str) -> str:
    """``url`` with ``schema`` as its search_path (libpq's ``options``)."""
    parts = urllib.parse.urlsplit(url)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


@contextmanager
def own_schema(prefix: str, untested: str = "POSTGRESQL BACKEND NOT TESTED") -> Iterator[str]:
    """The URL of a new schema ``<prefix>_<pid>_<random>`` on the tests' server, dropped on exit; skips the test
    ("!!! <untested>: ... !!!") when no server answers."""
    psycopg = pytest.importorskip("psycopg")
    from psycopg import sql

    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"!!! {untested}: no server answers at {PG_URL} ({str(exc).strip()}); "
                    "start one or set LABELDP_TEST_POSTGRES_URL !!!")
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        try:
            yield with_search_path(PG_URL, name)
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def postgres_url():
    """The URL of a PostgreSQL schema of this session (`own_schema` with the prefix ``labeldp_test``)."""
    with own_schema("labeldp_test") as url:
        yield url
