"""How many modules have their unit tests at their mirrored path (docs/tests.md).

A module ``auditing/x/y.py`` of auditing/ pipelines/ flows/ labeldp/ (``__init__.py`` aside) counts as mirrored when
``tests/auditing/x/test_y.py`` exists. Prints one line per module (``+`` mirrored, ``-`` not) with ``--list``, only
the missing ones with ``--missing``, and always the count.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/count_mirrored_tests.py [--list | --missing]
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("auditing", "pipelines", "flows", "labeldp")


def modules() -> list[Path]:
    """Every module of the four packages, relative to the repository, ``__init__.py`` aside."""
    return sorted(p.relative_to(ROOT) for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if p.name != "__init__.py" and "__pycache__" not in p.parts)


def mirror(module: Path) -> Path:
    """The test file a module's unit tests go to: ``tests/<folder>/test_<module>.py``."""
    return Path("tests") / module.parent / f"test_{module.name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--list", action="store_true", help="every module, + mirrored or - not")
    shown.add_argument("--missing", action="store_true", help="only the modules without a mirrored test file")
    args = parser.parse_args()
    found = {m: (ROOT / mirror(m)).exists() for m in modules()}
    for module, has in found.items():
        if args.list or (args.missing and not has):
            print(f"{'+' if has else '-'} {module}  ->  {mirror(module)}")
    print(f"{sum(found.values())} of {len(found)} modules have a test file at their mirrored path")


if __name__ == "__main__":
    main()
