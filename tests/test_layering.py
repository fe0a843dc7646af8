"""The dependency direction is flows -> pipelines -> auditing, and nothing points back up.

Checked two ways: statically (every `import` / `from ... import` in a package's source, including imports
inside functions, which a runtime check would miss) and at run time (importing every auditing module in a
fresh interpreter loads no pipelines or flows module).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package -> the packages it must never import
FORBIDDEN = {"auditing": ("pipelines", "flows"), "pipelines": ("flows",)}


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_upward_imports(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in _imported_modules(path):
            top = module.split(".")[0]
            if top in FORBIDDEN[package]:
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, f"{package}/ must not import {FORBIDDEN[package]}:\n" + "\n".join(offenders)


def test_the_static_check_sees_function_level_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from pipelines.layout import parse_date\n    import flows.cli\n")
    assert [m for _, m in _imported_modules(probe)] == ["pipelines.layout", "flows.cli"]


def test_importing_all_of_auditing_loads_no_pipelines_or_flows_module():
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "auditing").rglob("*.py") if p.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pipelines', 'flows')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
