"""How often a day is passed as its parts, and how often a record crosses a layer as a dict.

Three counts, from the source (ast, no import):

- ``root+date``: functions of auditing/ pipelines/ flows/ labeldp/ whose parameters include both a root-like
  one (``root``, ``data_root``) and a day-like one (``date``, ``day``): a day passed as (root, date) rather than
  as its handle (`pipelines.data.day.Day`);
- ``.get("``: ``.get("...")`` calls with a string key in pipelines/ and flows/: a record read as a dict;
- ``partition_dir``: calls of ``partition_dir`` outside pipelines/data/layout.py and pipelines/data/day.py.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/count_signatures.py [--list]
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOT_NAMES = {"root", "data_root"}
DAY_NAMES = {"date", "day"}
PATH_OWNERS = {"pipelines/data/layout.py", "pipelines/data/day.py"}


def _files(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = node.args
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def root_and_date(paths: list[Path]) -> list[str]:
    """``path:line name`` of every function taking a root-like and a day-like parameter."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = _params(node)
                if params & ROOT_NAMES and params & DAY_NAMES:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    return out


def string_gets(paths: list[Path]) -> list[str]:
    """``path:line key`` of every ``x.get("key", ...)`` call."""
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.args[0].value}")
    return out


def partition_dir_calls(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``path:line`` of every call of ``partition_dir`` (as a name or an attribute) outside the modules that own
    the paths; ``root``: the tree ``paths`` are in."""
    out = []
    for path in paths:
        if path.relative_to(root).as_posix() in PATH_OWNERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name == "partition_dir":
                    out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name every hit, not only the counts")
    args = parser.parse_args()
    counts = {
        "root+date": root_and_date(_files("auditing", "pipelines", "flows", "labeldp")),
        '.get("': string_gets(_files("pipelines", "flows")),
        "partition_dir": partition_dir_calls(_files("auditing", "pipelines", "flows", "labeldp")),
    }
    for name, hits in counts.items():
        print(f"{name}: {len(hits)}")
        if args.list:
            for hit in hits:
                print(f"  {hit}")


if __name__ == "__main__":
    main()
