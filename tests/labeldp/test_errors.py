"""Library errors name the field they are about; the command line maps fields to its flags (`labeldp.errors`,
`flows.cli.error_text`): the same bad value says ``reference`` to a library caller and ``--reference`` to a
user of `labeldp-audit score`."""

from __future__ import annotations

import datetime as dt
import pickle

import pytest

from labeldp.errors import LabelDPInputError, mention

DAY = dt.date(2024, 1, 2)


def test_the_leading_field_name_is_marked_and_mapped():
    exc = LabelDPInputError("model must be a safe name; got 'a/b' (model of the night)", field="model")
    assert exc.field == "model" and str(exc) == exc.args[0] == "model must be a safe name; got 'a/b' (model of the night)"
    assert exc.for_flags({"model": "--model"}) == "--model must be a safe name; got 'a/b' (model of the night)"
    assert exc.for_flags({"reference": "--reference"}) == str(exc)  # no flag for the field: its plain name


def test_only_a_whole_leading_word_is_the_field():
    exc = LabelDPInputError("models must be listed", field="model")
    assert exc.for_flags({"model": "--model"}) == "models must be listed"


def test_a_field_named_elsewhere_is_mentioned():
    exc = LabelDPInputError(f"no partition; pass the right {mention('data_root')}, or {mention('replace')}",
                            field="data_root")
    assert str(exc) == "no partition; pass the right data_root, or replace"
    assert exc.for_flags({"data_root": "--data-root", "replace": "--replace"}) == \
        "no partition; pass the right --data-root, or --replace"


def test_a_message_without_a_field_is_unchanged():
    exc = LabelDPInputError("x must be 1; got 2")
    assert exc.field is None and exc.for_flags({"x": "--x"}) == str(exc) == "x must be 1; got 2"


def test_the_field_survives_pickling():
    exc = pickle.loads(pickle.dumps(LabelDPInputError("claimed_epsilon must be >= 0", field="claimed_epsilon")))
    assert exc.field == "claimed_epsilon" and str(exc) == "claimed_epsilon must be >= 0"
    assert exc.for_flags({"claimed_epsilon": "--claimed-epsilon"}) == "--claimed-epsilon must be >= 0"


def test_a_library_error_carries_its_field_and_names_no_flag():
    from pipelines.models.registration import check_claim
    from pipelines.scoring.beam_request import ScoringRequest

    with pytest.raises(LabelDPInputError) as caught:
        ScoringRequest("/r", DAY, "m", reference="bad/name")
    assert caught.value.field == "reference" and str(caught.value).startswith("reference may contain only")
    assert "--" not in str(caught.value)
    with pytest.raises(LabelDPInputError) as caught:
        check_claim(-1.0, 0.0)
    assert caught.value.field == "claimed_epsilon"
    assert str(caught.value).startswith("claimed_epsilon must be >= 0")
    assert caught.value.for_flags({"claimed_epsilon": "--claimed-epsilon"}).startswith("--claimed-epsilon must be")


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
