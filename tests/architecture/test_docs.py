"""The README starts people and the docs hold the rest: the README stays within 200 lines, the pages written for
reading keep their lines under 120 characters, and every relative link of the README and docs/ leads to a file
that exists and, with an anchor, to a heading of that file (a section moved out of the README leaves no link
pointing at it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "infra" / "README.md"]
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces to hyphens)."""
    out = set()
    code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            code = not code
        if code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_the_readme_is_at_most_200_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, len(lines)
    assert "    bash scripts/run-main.sh" in lines and "    bash scripts/run-tests.sh" in lines  # CI runs the latter


@pytest.mark.parametrize("name", ["README.md", "docs/commands.md", "docs/concepts.md", "docs/operations.md",
                                  "docs/performance.md", "docs/layout.md"])
def test_lines_stay_under_120_characters(name):
    long = [n for n, line in enumerate((REPO / name).read_text(encoding="utf-8").splitlines(), 1) if len(line) >= 120]
    assert not long, f"{name}: lines {long}"


def test_every_relative_link_leads_to_a_file_and_a_heading():
    broken = []
    for page in PAGES:
        for target in _LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
