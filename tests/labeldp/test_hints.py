"""Every command line the tool tells a user to run exists: the hints of its messages (`labeldp.hints`), the
examples of its --help texts and the commands of README.md, infra/README.md and docs/.

For each hint's command the real `labeldp-audit ... --help` runs (a subprocess) and must list every flag the
hint names; the hint must name every option the command requires. Examples and documented commands are
collected from the text and checked against the real parser: the command words must lead to a subcommand, and
every flag named after them must be one of its options. No message outside the registry writes a command line
of its own. Whether a hint fits its situation is checked where the situation is made: tests/flows/test_preflight.py
(another team's log and models), tests/flows/test_exit_codes.py (the spool).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli import build_parser
from labeldp import hints

REPO = Path(__file__).resolve().parents[2]
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")
_COMMAND = re.compile(r"labeldp-audit\s+([a-z][^`|\n]*)")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def resolve(text: str) -> tuple[tuple[str, ...], argparse.ArgumentParser | None, str]:
    """(the command words of ``text``, their parser, the rest): as many leading words as lead to subcommands."""
    parser, words = build_parser(), []
    tokens = text.split()
    for token in tokens:
        found = _subcommands(parser).get(token)
        if found is None:
            break
        parser, words = found, [*words, token]
    return tuple(words), (parser if words else None), " ".join(tokens[len(words):])


# ------------------------------------------------------------------------------------------ the registry


def _hint_commands() -> dict[str, list[hints.Hint]]:
    grouped: dict[str, list[hints.Hint]] = {}
    for hint in hints.HINTS:
        grouped.setdefault(hint.command, []).append(hint)
    return grouped


def test_the_registry_holds_the_hints_of_the_messages():
    assert len(hints.HINTS) >= 10
    assert {h.command for h in hints.HINTS} >= {"train", "models register", "data ingest", "nightly"}


@pytest.mark.parametrize("command", sorted(_hint_commands()))
def test_each_hint_names_flags_its_command_has_and_every_option_it_requires(command):
    done = subprocess.run([sys.executable, "-m", "flows.cli", *command.split(), "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = set(_FLAG.findall(done.stdout))
    words, parser, _ = resolve(command)
    assert " ".join(words) == command and parser is not None
    required = {action.option_strings[0] for action in parser._actions if action.required and action.option_strings}
    for hint in _hint_commands()[command]:
        missing = [flag for flag in hint.flags if flag not in listed and flag != "--help"]
        assert not missing, f"{hint.line()} names {missing}, which `labeldp-audit {command} --help` does not list"
        lacking = sorted(required - set(hint.flags)) if "--help" not in hint.flags else []
        assert not lacking, f"{hint.line()} lacks the required {lacking}"


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the string literals of a file, docstrings left out (f-strings: each literal part)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_message_writes_a_command_line_of_its_own():
    """Messages (everything but the --help texts of flows/commands/, checked below) build their command lines
    with `labeldp.hints`, so that the registry test above sees every one."""
    offenders = []
    for package in ("auditing", "pipelines", "flows"):
        for path in sorted((REPO / package).rglob("*.py")):
            if path == REPO / "auditing" / "hints.py" or path.parent == REPO / "flows" / "commands":
                continue
            for line, text in _code_strings(path):
                if re.search(r"`labeldp-audit\s+[a-z]", text) or re.search(r"\blabeldp-audit [a-z-]+ --", text):
                    offenders.append(f"{path.relative_to(REPO)}:{line}: {text[:70]!r}")
    assert not offenders, "command lines written outside labeldp/hints.py:\n" + "\n".join(offenders)


# ------------------------------------------------------------------------------------------ examples and docs


def _documented() -> list[tuple[str, str]]:
    """(where, command text) of every `labeldp-audit ...` in the --help texts and the docs."""
    found = []
    for path in sorted((REPO / "flows" / "commands").glob("*.py")):
        for line, text in _code_strings(path):
            for match in _COMMAND.finditer(text.replace("\\\n", " ")):
                found.append((f"{path.relative_to(REPO)}:{line}", match.group(1)))
    docs = [REPO / "README.md", REPO / "infra" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for path in docs:
        text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))  # a command continued on the next line
        for number, line in enumerate(text.splitlines(), 1):
            for match in _COMMAND.finditer(line):
                found.append((f"{path.relative_to(REPO)}:{number}", match.group(1)))
    return found


def test_documented_commands_and_help_examples_name_flags_that_exist():
    documented = _documented()
    assert len(documented) > 50
    offenders, checked = [], 0
    for where, text in documented:
        words, parser, rest = resolve(text)
        if parser is None:  # prose: "a newer labeldp-audit", the program's own name
            continue
        checked += 1
        ours = re.split(r"(?:^|\s)--(?:\s|$)", rest)[0]  # after a lone --, the arguments of the Beam runner
        unknown = [flag for flag in _FLAG.findall(ours) if flag not in _options(parser)]
        if unknown:
            offenders.append(f"{where}: `labeldp-audit {' '.join(words)}` has no {unknown}: {text[:90]!r}")
    assert checked > 50
    assert not offenders, "\n".join(offenders)
