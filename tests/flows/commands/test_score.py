"""The score command (flows/commands/score.py): the Beam options file, its environment variables and its errors."""

import pytest

from labeldp.errors import LabelDPInputError


def test_beam_options_file(tmp_path, monkeypatch):
    from flows.commands.score import read_options_file

    path = tmp_path / "x.options"
    path.write_text("# comment\n\n--project=${P}\n--max_num_workers=3\n")
    monkeypatch.setenv("P", "proj")
    assert read_options_file(str(path)) == ["--project=proj", "--max_num_workers=3"]
    monkeypatch.delenv("P")
    with pytest.raises(LabelDPInputError, match=r"line 3: environment variable\(s\) \['P'\] are not set"):
        read_options_file(str(path))
    path.write_text("project=x\n")
    with pytest.raises(LabelDPInputError, match="line 1: expected an option"):
        read_options_file(str(path))
