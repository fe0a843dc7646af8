"""The command line's side of the library's errors (flows/cli.py): a field named by the library is printed as the
command's flag, every mapped flag is an option of its command, and an unknown option or bad input names the
subcommand it was given to. The library's side: tests/labeldp/test_errors.py."""

from __future__ import annotations

import datetime as dt

import pytest

DAY = dt.date(2024, 1, 2)


def test_the_command_line_prints_its_flags(tmp_path, capsys):
    from flows.cli import main

    code = main(["score", "--model", "m", "--date", DAY.isoformat(), "--reference", "bad/name",
                 "--data-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("labeldp-audit score: error: --reference may contain only"), err
    missing = tmp_path / "missing.cbm"
    code = main(["models", "register", "--name", "team", "--date", DAY.isoformat(), "--file", str(missing),
                 "--format", "catboost", "--claimed-epsilon", "1", "--data-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == f"labeldp-audit models register: error: --file: {missing} is not a file", err


def test_each_commands_flags_are_its_own_options():
    """A FLAGS entry maps a field to an option the command (or one of its subcommands) really has."""
    import argparse
    import importlib

    from flows.cli import COMMAND_MODULES, COMMON_FLAGS, build_parser

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    options: dict[str, set[str]] = {}
    for sub in list(parsers(build_parser()))[1:]:
        module = getattr(sub.get_default("func"), "__module__", None)
        options.setdefault(module, set()).update(o for a in sub._actions for o in a.option_strings)
    for module_name in COMMAND_MODULES:
        flags = getattr(importlib.import_module(module_name), "FLAGS", {})
        assert set(flags.values()) <= options[module_name], (module_name, set(flags.values()) - options[module_name])
    assert set(COMMON_FLAGS.values()) == {"--data-root", "--date"}


@pytest.mark.parametrize(("argv", "command", "unknown"), [
    (["data", "ingest", "log.csv", "--dataset", "spec.json", "--date", "2024-01-02", "--delimeter", ","],
     "labeldp-audit data ingest", "--delimeter"),
    (["nightly", "--dry-run"], "labeldp-audit nightly", "--dry-run"),
    (["results", "show", "m", "--bogus"], "labeldp-audit results show", "--bogus"),
    (["data", "--bogus"], "labeldp-audit data", "--bogus"),
])
def test_an_unknown_option_prints_the_usage_of_the_subcommand_it_was_given_to(capsys, argv, command, unknown):
    """argparse leaves an option no subparser knows to the top-level parser, whose usage says nothing of the
    subcommand's options; the command line hands it back to the subcommand's parser."""
    from flows.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith(f"usage: {command} "), err
    assert err.strip().splitlines()[-1].startswith(f"{command}: error: unrecognized arguments: {unknown}"), err


def test_a_subcommands_bad_input_names_the_subcommand(tmp_path, capsys):
    from flows.cli import main

    code = main(["data", "validate", "--date", "2024-13-01", "--data-root", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("labeldp-audit data validate: error: --date"), err
