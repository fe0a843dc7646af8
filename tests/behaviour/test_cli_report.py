"""The `report` command (flows/commands/report.py): a model's trend page rendered from the warehouse of a data
root or a given one, within --since/--until, at its default path or --output; bad input is one clear line and exit 2.
The pages themselves: tests/auditing/sinks/report/test_pages.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from auditing.verdict.judge import judge
from flows.cli import main as cli_main
from tests.support.report_pages import (
    CLAIMED,
    run,  # noqa: F401  (fixture: the realistic run, once per session)
)
from tests.support.report_pages import parse_page as _parse


@pytest.fixture(scope="module")
def seeded_root(run, tmp_path_factory) -> Path:  # noqa: F811
    """A data root whose default DuckDB warehouse holds 5 nights of rr-eps1."""
    from auditing.sinks.warehouse import audit_record, open_warehouse

    data_root = tmp_path_factory.mktemp("seeded")
    with open_warehouse(None, data_root=data_root) as wh:
        for d, night in enumerate(run["trend"][:5]):
            data = dataclasses.replace(run["result"], epsilon_lower_bound=night.epsilon_lower_bound)
            row, curve = audit_record(judge(data, CLAIMED), run_kind="nightly", model_id="rr-eps1",
                                      partition_date=night.partition_date, lineage={"flow_run_id": f"run-{d}"})
            wh.write_audit(row, curve)
    return data_root


def test_report_command_renders_from_the_warehouse(seeded_root, tmp_path, capsys):
    assert cli_main(["report", "--model", "rr-eps1", "--data-root", str(seeded_root), "--since", "2024-01-02"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(seeded_root / "reports" / "rr-eps1" / "trend.html")
    dom = _parse(Path(printed).read_text())
    assert dom.count("trend-point") == 4 and "2024-01-01" not in dom.visible
    out = tmp_path / "custom.html"
    warehouse = str(seeded_root / "warehouse.duckdb")
    assert cli_main(["report", "--model", "rr-eps1", "--warehouse", warehouse, "--until", "2024-01-02",
                     "--output", str(out)]) == 0
    assert _parse(out.read_text()).count("trend-point") == 2


@pytest.mark.parametrize("argv, message", [
    (["--model", "../etc"], "--model"),
    (["--model", "rr-eps1", "--since", "2024-13-01"], "--since"),
    (["--model", "nobody"], "no audit results"),
    (["--model", "rr-eps1", "--warehouse", "/nonexistent/w.duckdb"], "not found"),
])
def test_report_command_errors_are_one_clear_line(seeded_root, capsys, argv, message):
    assert cli_main(["report", "--data-root", str(seeded_root), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
