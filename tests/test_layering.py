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


# ------------------------------------------------------------------------------------------ dates
# A date is parsed once, at the edge (argv, flow parameters, plan files, JSON read back), and passed inward as
# datetime.date; the inner layers check the type cheaply and refuse a string with a TypeError naming the
# argument (a programming error, not user input), instead of parsing it again.


def _inner_date_calls():
    import datetime as dt

    from auditing.audit import AuditConfig
    from auditing.report import run_report_path
    from pipelines import (
        beam_scoring,
        criteo_ingest,
        layout,
        registry,
        schema,
        shift_diagnostics,
        synth,
        training,
    )
    from pipelines.catboost_handler import CatBoostModelHandler
    from pipelines.rr_oracle_handler import RROracleModelHandler

    day = dt.date(2024, 1, 2)
    return {
        "layout.partition_dir": (lambda d: layout.partition_dir("/r", d), "date"),
        "layout.model_dir": (lambda d: layout.model_dir("/r", "m", d), "date"),
        "schema.read_partition": (lambda d: schema.read_partition("/r", d), "date"),
        "synth.generate_day": (lambda d: synth.generate_day(d, rows=10), "date"),
        "synth.day_seed": (lambda d: synth.day_seed(1, d), "date"),
        "criteo_ingest.ingest_criteo": (lambda d: criteo_ingest.ingest_criteo("/x.tsv", "/r", d), "date"),
        "training.load_day": (lambda d: training.load_day("/r", d), "date"),
        "training.reference_date": (training.reference_date, "date"),
        "training.train_and_register": (lambda d: training.train_and_register("/r", d, "rr", 1.0), "date"),
        "registry.read_metadata": (lambda d: registry.read_metadata("/r", "m", d), "date"),
        "shift_diagnostics.shift_diagnostic (reference_date)":
            (lambda d: shift_diagnostics.shift_diagnostic("/r", day, "m", d), "reference_date"),
        "beam_scoring.ScoringRequest": (lambda d: beam_scoring.ScoringRequest("/r", d, "m"), "date"),
        "beam_scoring.ScoringRequest (reference_date)":
            (lambda d: beam_scoring.ScoringRequest("/r", day, "m", reference_date=d), "reference_date"),
        "beam_scoring.resolve_reference": (lambda d: beam_scoring.resolve_reference("/r", "m", d), "date"),
        "beam_scoring.sweep_dir": (lambda d: beam_scoring.sweep_dir("/r", "m", d, AuditConfig()), "date"),
        "CatBoostModelHandler": (lambda d: CatBoostModelHandler("/r", "m", d), "model_date"),
        "RROracleModelHandler": (lambda d: RROracleModelHandler("/r", "m", d), "model_date"),
        "report.run_report_path": (lambda d: run_report_path("/r", "m", d, "abc123"), "partition_date"),
    }


@pytest.mark.parametrize("call", sorted(_inner_date_calls()))
@pytest.mark.parametrize("value", ["2024-01-02", "garbage", 20240102])
def test_inner_layers_refuse_an_unparsed_date(call, value):
    function, argument = _inner_date_calls()[call]
    with pytest.raises(TypeError, match=rf"^{argument} must be a datetime\.date \(parse it at the edge"):
        function(value)


def test_require_date_passes_dates_and_refuses_datetimes():
    import datetime as dt

    from auditing.names import require_date

    day = dt.date(2024, 1, 2)
    assert require_date(day, "x") is day
    with pytest.raises(TypeError, match=r"^when must be a datetime\.date .*got datetime"):
        require_date(dt.datetime(2024, 1, 2, 3), "when")
