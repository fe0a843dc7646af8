"""docs/commands.md is the command line's own help (`flows.command_docs`): the checked-in page equals what the
parsers give now, so that it cannot drift, and it lists every command and subcommand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flows.command_docs import COMMANDS_DOC_FILE, commands_doc

REPO = Path(__file__).resolve().parents[2]


def test_the_commands_page_is_generated_from_the_parsers():
    text = commands_doc()
    assert COMMANDS_DOC_FILE.read_text(encoding="utf-8") == text, (
        "docs/commands.md is stale: run `python -m flows.command_docs --write`")
    for words in ("nightly", "guardrail", "backfill", "data ingest", "models register", "results show", "plan check"):
        assert f"\n## `labeldp-audit {words}`\n" in text, words
    assert "--check-only" in text and "--delimiter" in text  # options reach the page with their help
    assert max(len(line) for line in text.splitlines()) < 120


def test_a_changed_option_makes_the_page_stale(monkeypatch):
    """The page follows the parsers: a new option of a command changes it (so the test above would fail)."""
    import flows.commands.bound as bound

    before = commands_doc()
    original = bound.register

    def register(subparsers):
        original(subparsers)
        subparsers.choices["bound"].add_argument("--brand-new-option", help="an option added after the page")

    monkeypatch.setattr(bound, "register", register)
    after = commands_doc()
    assert after != before and "--brand-new-option" in after


def test_the_script_prints_the_page():
    done = subprocess.run([sys.executable, "-m", "flows.command_docs"], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout == COMMANDS_DOC_FILE.read_text(encoding="utf-8")
