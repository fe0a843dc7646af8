"""The embedded warehouse (auditing/sinks/warehouse/duckdb_backend.py): its default file under the data root, and
a DuckDB target that is a directory or missing refused, as are another scheme's URL and bad curve points."""

from __future__ import annotations

import pytest

from auditing.sinks.warehouse import open_warehouse
from labeldp.errors import LabelDPInputError
from tests.support.warehouse_rows import make_row


def test_bad_curves_and_targets_are_refused(tmp_path):
    row, curve = make_row()
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(LabelDPInputError, match=r"curve\[1\]"):
            wh.write_audit(row, [curve[0], {**curve[1], "correct": 999}])
        with pytest.raises(LabelDPInputError, match=r"curve\[0\]: missing"):
            wh.write_audit(row, [{"guesses": 1}])
    with pytest.raises(LabelDPInputError, match="postgresql:// URL"):
        open_warehouse("mysql://host/db")
    with pytest.raises(LabelDPInputError, match="not found"):
        open_warehouse(tmp_path / "missing.duckdb", create=False)
    with pytest.raises(LabelDPInputError, match="is a directory"):
        open_warehouse(tmp_path)


def test_default_target_is_the_data_root_file(tmp_path):
    with open_warehouse(None, data_root=tmp_path) as wh:
        wh.write_audit(*make_row())
    assert (tmp_path / "warehouse.duckdb").is_file()
