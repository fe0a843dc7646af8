"""Warehouse addresses (auditing/sinks/warehouse/address.py): a destination is the address without credentials,
and an unavailable warehouse is named without its password."""

from __future__ import annotations

import json
import socket

import pytest

from auditing.sinks.warehouse import (
    WarehouseUnavailable,
    destination,
    open_warehouse,
)
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_destination_is_the_address_without_credentials(tmp_path, monkeypatch):
    for name in ("PGHOST", "PGPORT", "PGDATABASE", "PGUSER"):
        monkeypatch.delenv(name, raising=False)
    base = destination("postgresql://auditor:s3cret@DB.example:5432/audit")
    assert base.backend == "postgres" and base.address == "postgresql://db.example:5432/audit"
    assert "s3cret" not in json.dumps(encode(base)) and "auditor" not in json.dumps(encode(base))
    for same in ("postgresql://other:pw@db.example/audit", "postgres://db.example:5432/audit?sslmode=require",
                 "postgresql://db.example/audit?password=x&connect_timeout=3"):
        assert destination(same).fingerprint == base.fingerprint, same
    for other in ("postgresql://db.example:5433/audit", "postgresql://db2.example/audit",
                  "postgresql://db.example/audit2", "postgresql://db.example/audit?options=-csearch_path%3Dx"):
        assert destination(other).fingerprint != base.fingerprint, other
    local = destination(None, data_root=tmp_path)
    assert local == destination(tmp_path / "warehouse.duckdb") and local.backend == "duckdb"
    assert local.fingerprint != destination(tmp_path / "other.duckdb").fingerprint
    with pytest.raises(LabelDPInputError, match="not a valid PostgreSQL URL"):
        destination("postgresql://db.example:5432/audit?nonsense=1")
    with pytest.raises(LabelDPInputError, match="postgresql:// URL"):
        destination("mysql://db/audit")


def test_unavailable_error_names_the_target_without_password():
    url = f"postgresql://auditor:s3cret@127.0.0.1:{_free_port()}/test"
    with pytest.raises(WarehouseUnavailable) as info:
        open_warehouse(url, timeout=1)
    assert "s3cret" not in str(info.value) and "auditor:***@127.0.0.1" in str(info.value)
