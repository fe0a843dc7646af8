"""``python -m auditing.sinks.warehouse duckdb|postgres`` (auditing/sinks/warehouse/__main__.py): prints the DDL the
code creates, exits 2 with a usage line on a bad argument. That infra/warehouse/*.sql is that DDL:
tests/auditing/sinks/warehouse/test_migrations.py."""

import runpy
import sys

import pytest

from auditing.sinks.warehouse.migrations import ddl_text


def _run(monkeypatch, *args) -> int:
    monkeypatch.setattr(sys, "argv", ["auditing.sinks.warehouse", *args])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("auditing.sinks.warehouse", run_name="__main__")
    return exit_info.value.code


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_the_module_prints_the_dialect_s_ddl(monkeypatch, capsys, dialect):
    assert _run(monkeypatch, dialect) == 0
    assert capsys.readouterr().out == ddl_text(dialect)


@pytest.mark.parametrize("args", [(), ("sqlite",), ("duckdb", "postgres")])
def test_a_bad_argument_exits_2_with_the_usage(monkeypatch, capsys, args):
    assert _run(monkeypatch, *args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "usage: python -m auditing.sinks.warehouse {duckdb|postgres}" in captured.err
