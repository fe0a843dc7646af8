"""Where a warehouse is, without credentials: what a spooled payload records so that it is written there and
nowhere else.

A `Destination` is the backend and the warehouse's address as this code reaches it: a DuckDB file's absolute
path (symbolic links resolved), or a PostgreSQL server, port, database and ``options`` (the schema a
``search_path`` picks), with libpq's defaults and environment (PGHOST, PGPORT, PGDATABASE, PGUSER) filled in.
User names, passwords and every other connection parameter are left out: two users of one database reach the
same warehouse. ``fingerprint`` is the sha256 of backend and address (16 hex digits).
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from labeldp.errors import LabelDPInputError
from labeldp.names import resolve_data_root

DEFAULT_FILE_NAME = "warehouse.duckdb"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
DUCKDB, POSTGRES = "duckdb", "postgres"


class WarehouseUnavailable(RuntimeError):
    """The warehouse cannot be reached right now (server down, file locked past the timeout, I/O error).

    Transient by assumption: ``write_or_spool`` retries, then spools the payload to disk. It lives beside the
    address, not in ``base``, so the spool catches it without loading the backends' shared code.
    """


@dataclass(frozen=True)
class Destination:
    backend: str
    address: str
    fingerprint: str


def describe_target(target: str) -> str:
    """The target with any password replaced by ***, safe for logs and error messages."""
    parts = urllib.parse.urlsplit(target)
    if parts.scheme and parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return target


def warehouse_target(target, data_root=None) -> str:
    """A warehouse target as text: None or "" is ``<data_root>/warehouse.duckdb``, a path becomes its text; anything
    else than text is refused, naming it. (Whether it is a PostgreSQL URL or a DuckDB file is the caller's next
    question: `is_postgres_target`.)"""
    if target is None or str(target) == "":
        target = resolve_data_root(data_root) / DEFAULT_FILE_NAME
    target = os.fspath(target) if isinstance(target, os.PathLike) else target
    if not isinstance(target, str):
        raise LabelDPInputError(f"warehouse must be a DuckDB file path or a postgresql:// URL; got {target!r}")
    return target


def is_postgres_target(target: object) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def _destination(backend: str, address: str) -> Destination:
    text = json.dumps({"backend": backend, "address": address}, sort_keys=True)
    return Destination(backend, address, hashlib.sha256(text.encode()).hexdigest()[:16])


def _postgres_address(url: str) -> str:
    """postgresql://host:port/dbname[?options=...] of a libpq URL, defaults filled in; no user, no password.

    Raises:
        LabelDPInputError: libpq cannot parse the URL (the message shows it with any password as ***).
    """
    from psycopg import ProgrammingError, conninfo

    try:
        params = conninfo.conninfo_to_dict(url)
    except ProgrammingError as exc:
        raise LabelDPInputError(f"warehouse {describe_target(url)!r}: not a valid PostgreSQL URL "
                                f"({str(exc).strip()})") from None
    host = str(params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST") or "localhost").lower()
    port = str(params.get("port") or os.environ.get("PGPORT") or "5432")
    user = params.get("user") or os.environ.get("PGUSER") or getpass.getuser()
    dbname = params.get("dbname") or os.environ.get("PGDATABASE") or user
    options = f"?options={params['options']}" if params.get("options") else ""
    return f"postgresql://{host}:{port}/{dbname}{options}"


def destination(target: str | os.PathLike | None, data_root: str | os.PathLike | None = None) -> Destination:
    """The `Destination` of a warehouse target as ``open_warehouse`` takes it: a postgresql:// URL, a DuckDB
    file path, or None / "" for ``<data_root>/warehouse.duckdb``.

    Raises:
        LabelDPInputError: a target that is neither, or a PostgreSQL URL libpq cannot parse.
    """
    target = warehouse_target(target, data_root)
    if is_postgres_target(target):
        return _destination(POSTGRES, _postgres_address(target))
    if "://" in target:
        raise LabelDPInputError(
            f"warehouse must be a DuckDB file path or a postgresql:// URL; got {describe_target(target)!r}")
    return _destination(DUCKDB, os.path.realpath(Path(target).expanduser().absolute()))
