"""A command of `labeldp-audit` run in process: its exit code and what it wrote (tests/behaviour/test_cli_audit.py,
tests/flows/commands/test_bound.py, test_validate_rr.py)."""

from __future__ import annotations

from flows.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
