"""Compares two golden-output trees (benchmarks/golden_outputs.py) apart from figures added since the base: keys
starting with ``attack``, ``family`` or ``signed`` in every JSON file (and in the JSON text inside it), the report's
Attack ROC and Evidence across nights panels, and the page's style block. Prints the files that still differ.

    .venv/bin/python benchmarks/golden_compare.py /work/golden-base /work/golden-new
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

NEW = ("attack", "family", "signed")
PANELS = ("attack", "family")


def strip(value):
    """``value`` without the new keys, JSON text parsed first."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return {key: strip(item) for key, item in value.items() if not key.startswith(NEW)}
    if isinstance(value, list):
        return [strip(item) for item in value]
    return value


def page(text: str) -> str:
    for panel in PANELS:
        text = re.sub(rf'<section class="card" id="{panel}">.*?</section>', "", text, flags=re.S)
    return re.sub(r"<style>.*?</style>", "", text, flags=re.S)


def main() -> None:
    base, new = Path(sys.argv[1]), Path(sys.argv[2])
    files = sorted(p.relative_to(base) for p in base.rglob("*") if p.is_file())
    added = sorted({str(p.relative_to(new)) for p in new.rglob("*") if p.is_file()} - {str(f) for f in files})
    differ = []
    for rel in files:
        before, after = (base / rel).read_text(), (new / rel).read_text()
        if before == after:
            continue
        if rel.suffix == ".json":
            same = strip(json.loads(before)) == strip(json.loads(after))
        elif rel.suffix == ".html":
            same = page(before) == page(after)
        else:
            same = False
        if not same:
            differ.append(str(rel))
    print(f"{len(files)} files; only in the new tree: {added}; differ beyond the new figures: {differ}")


if __name__ == "__main__":
    main()
