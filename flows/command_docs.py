"""docs/commands.md, generated from the command line's parsers (`flows.cli.build_parser`), so that the page
cannot drift from the commands: a list of every command and subcommand with its one-line help, then each
one's ``--help`` as the command prints it, at a fixed width.

Rewrite it with ``python -m flows.command_docs --write`` (without ``--write`` it prints the page);
tests/flows/test_command_docs.py fails when the checked-in page differs from what the parsers give.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

COMMANDS_DOC_FILE = Path(__file__).resolve().parent.parent / "docs" / "commands.md"
WIDTH = 100  # the help's width on the page (argparse reads $COLUMNS)
INTRO = """\
# Commands

Generated from the command line's parsers by `flows/command_docs.py`; rewrite it with
`python -m flows.command_docs --write`, do not edit (tests/flows/test_command_docs.py fails when it is stale). Each
section is the command's `--help`.

Every command takes `--help`. Data lives under `--data-root` (or `$LABELDP_DATA_ROOT`, default `./.labeldp`).
What the figures and statuses mean is in [concepts.md](concepts.md); how the long commands run, stop, log and
exit in [operations.md](operations.md); every setting and its one default in [settings.md](settings.md).
"""


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """name -> (parser, one-line help) of a parser's subcommands, in the order of its help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return {}


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(words, parser, help) of every command and subcommand, depth first, in the order of the help."""
    for name, (sub, text) in _subcommands(parser).items():
        yield (*words, name), sub, text
        yield from _walk(sub, (*words, name))


def _anchor(words: tuple[str, ...]) -> str:
    """GitHub's anchor of a section headed ``labeldp-audit <words>`` (in backquotes)."""
    return "-".join(("labeldp-audit", *words))


def commands_doc() -> str:
    """The page (module docstring)."""
    from flows.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        parser = build_parser()
        found = list(_walk(parser))
        sections = [f"## `{sub.prog}`\n\n```text\n{sub.format_help().rstrip()}\n```\n" for _, sub, _ in found]
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    rows = [textwrap.fill(f"- [`{' '.join(words)}`](#{_anchor(words)}): {' '.join(text.split())}", 116,
                          subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
            for words, _, text in found]
    return "\n".join([INTRO, *rows, "", *sections]).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(prog="python -m flows.command_docs", description=__doc__.splitlines()[0])
    args.add_argument("--write", action="store_true", help=f"rewrite {COMMANDS_DOC_FILE.name} instead of printing")
    options = args.parse_args(argv)
    text = commands_doc()
    if options.write:
        from flows.plan_schema import write_text

        write_text(text, COMMANDS_DOC_FILE)
        print(COMMANDS_DOC_FILE)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
