"""`labeldp-audit spool list | discard`: what waits in the spool for its warehouse, listed; discarded only with a
confirmation (or --yes), each file's whole content appended to the log first."""

from __future__ import annotations

import json

from auditing.sinks.warehouse import destination
from auditing.sinks.warehouse.spool import spool_payload
from flows.cli import main
from tests.support.warehouse_rows import make_row


def _spool(root, target):
    spool = root / "spool"
    first = spool_payload(*make_row(model_id="m-1", marker=0.4), spool, destination(target))
    second = spool_payload(*make_row(model_id="m-2", marker=0.6, status="VIOLATION"), spool, destination(target))
    (spool / "broken.json.rejected").write_text("{")
    return first, second


def test_spool_list_names_every_payload_and_its_warehouse(tmp_path, capsys):
    target = str(tmp_path / "wh" / "warehouse.duckdb")
    first, _second = _spool(tmp_path, target)
    assert main(["spool", "list", "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"3 file(s) in {tmp_path / 'spool'}"
    assert out[1] == "broken.json.rejected: set aside by a drain: not a valid payload"
    assert out[2].startswith(f"{first.name}: m-1 2024-01-02 nightly claim 1.0 PASS eps_lb 0.4, run run-0.4, for "
                             f"duckdb {target}, spooled ")
    assert main(["spool", "list", "--data-root", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(item["model_id"], item["status"]) for item in listed] == [(None, None), ("m-1", "PASS"),
                                                                        ("m-2", "VIOLATION")]
    assert listed[1]["destination"]["address"] == target


def test_spool_discard_asks_or_takes_yes_and_keeps_what_it_discarded_in_the_log(tmp_path, capsys, monkeypatch):
    target = str(tmp_path / "wh" / "warehouse.duckdb")
    first, second = _spool(tmp_path, target)
    before = second.read_text()
    # no terminal to ask on, no --yes: refused, nothing removed
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["spool", "discard", second.name, "--data-root", str(tmp_path)]) == 2
    assert "needs a confirmation: pass --yes" in capsys.readouterr().err and second.exists()
    # asked, and answered no: nothing removed
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["spool", "discard", second.name, "--data-root", str(tmp_path)]) == 0
    assert "nothing discarded" in capsys.readouterr().out and second.exists()
    # answered yes: removed, its whole content in the log first
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["spool", "discard", str(second), "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    log = tmp_path / "logs" / "spool-discarded.jsonl"
    assert not second.exists() and first.exists() and f"their content is in {log}" in out
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["content"] == before and record["model_id"] == "m-2" and record["status"] == "VIOLATION"
    # --all --yes: the rest, without asking; a file not in the spool is bad input
    assert main(["spool", "discard", "nope.json", "--data-root", str(tmp_path)]) == 2
    assert "not in the spool" in capsys.readouterr().err
    assert main(["spool", "discard", "--all", "--yes", "--data-root", str(tmp_path)]) == 0
    assert not list((tmp_path / "spool").iterdir()) and len(log.read_text().splitlines()) == 3
    assert main(["spool", "discard", "--all", "--yes", "--data-root", str(tmp_path)]) == 2
