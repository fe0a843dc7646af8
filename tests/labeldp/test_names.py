"""Names from the command line (labeldp/names.py): dates and model names refused naming the flag, and the data root
from the argument or LABELDP_DATA_ROOT."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeldp.errors import LabelDPInputError
from labeldp.names import check_name, parse_date, resolve_data_root


@pytest.mark.parametrize("text", ["2024-1-5", "20240105", "2024-02-30", "yesterday", "", " 2024-01-05x"])
def test_parse_date_rejects(text):
    with pytest.raises(LabelDPInputError, match="--when"):
        parse_date(text, "--when")


@pytest.mark.parametrize("text", ["../x", "a/b", "..", ".hidden", "", "a b", "x" * 129, "a\\b"])
def test_check_name_rejects(text):
    with pytest.raises(LabelDPInputError, match="model name"):
        check_name(text)


def test_resolve_data_root(monkeypatch, tmp_path):
    monkeypatch.delenv("LABELDP_DATA_ROOT", raising=False)
    assert resolve_data_root(None) == Path(".labeldp")
    monkeypatch.setenv("LABELDP_DATA_ROOT", str(tmp_path / "env"))
    assert resolve_data_root(None) == tmp_path / "env"
    assert resolve_data_root(str(tmp_path / "arg")) == tmp_path / "arg"
