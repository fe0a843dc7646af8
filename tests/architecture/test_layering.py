"""The dependency direction is flows -> pipelines -> auditing -> labeldp, and nothing points back up.

Checked two ways: statically (every `import` / `from ... import` in a package's source, including imports
inside functions, which a runtime check would miss) and at run time (importing every auditing module in a
fresh interpreter loads no pipelines or flows module).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.benchmark_scripts import benchmark

ROOT = Path(__file__).resolve().parents[2]
# package -> the packages it must never import
FORBIDDEN = {"labeldp": ("auditing", "pipelines", "flows"), "auditing": ("pipelines", "flows"),
             "pipelines": ("flows",)}


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
    probe.write_text("def f():\n    from pipelines.data.layout import parse_date\n    import flows.cli\n")
    assert [m for _, m in _imported_modules(probe)] == ["pipelines.data.layout", "flows.cli"]


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


def test_reading_a_result_or_starting_the_command_line_imports_no_compiler():
    """A result reader (`auditing.result`, the report, the records a verdict reads back) and the command line's
    start-up do without numba (about 0.4 s of imports) and scipy.stats: only the modules that compute load them."""
    code = ("import sys, auditing.result, auditing.sinks.listing, auditing.sinks.report, flows.cli\n"
            "import auditing.game.attack_curve, auditing.game.score_histogram, auditing.game.sweep_reduce\n"
            "print(sorted(m for m in ('numba', 'scipy.stats', 'apache_beam') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# ------------------------------------------------------------------------------------------ dates
# A date is parsed once, at the edge (argv, flow parameters, plan files, JSON read back), and passed inward as
# datetime.date; the inner layers check the type cheaply and refuse a string with a TypeError naming the
# argument (a programming error, not user input), instead of parsing it again.


def _inner_date_calls():
    import datetime as dt

    from auditing.sinks.report import run_report_path
    from pipelines.data import criteo_ingest, layout, schema, synth
    from pipelines.data.day import listed_day, resolve_day
    from pipelines.models import registry
    from pipelines.models.handle import resolve_model
    from pipelines.scoring import beam_request
    from pipelines.training import train as training

    day = dt.date(2024, 1, 2)
    return {
        "layout.partition_dir": (lambda d: layout.partition_dir("/r", d), "date"),
        "layout.model_dir": (lambda d: layout.model_dir("/r", "m", d), "date"),
        "schema.read_partition": (lambda d: schema.read_partition("/r", d), "date"),
        "synth.generate_day": (lambda d: synth.generate_day(d, rows=10), "date"),
        "synth.day_seed": (lambda d: synth.day_seed(1, d), "date"),
        "criteo_ingest.ingest_criteo": (lambda d: criteo_ingest.ingest_criteo("/x.tsv", "/r", d), "date"),
        "day.listed_day": (lambda d: listed_day("/r", d), "date"),
        "day.resolve_day": (lambda d: resolve_day("/r", d), "date"),
        "training.reference_date": (training.reference_date, "date"),
        "registry.read_metadata": (lambda d: registry.read_metadata("/r", "m", d), "date"),
        "handle.resolve_model": (lambda d: resolve_model("/r", "m", d), "date"),
        "beam_request.ScoringRequest": (lambda d: beam_request.ScoringRequest("/r", d, "m"), "date"),
        "beam_request.ScoringRequest (reference_date)":
            (lambda d: beam_request.ScoringRequest("/r", day, "m", reference_date=d), "reference_date"),
        "beam_request.resolve_reference": (lambda d: beam_request.resolve_reference("/r", "m", d), "date"),
        "beam_request.sweep_dir": (lambda d: beam_request.sweep_dir("/r", "m", d, "0123456789abcdef"), "date"),
        "report.run_report_path": (lambda d: run_report_path("/r", {
            "model_id": "m", "model_fingerprint": "unrecorded", "partition_date": d, "run_kind": "nightly",
            "claimed_epsilon": 1.0, "audit_config_hash": "abc123"}), "partition_date"),
    }


@pytest.mark.parametrize("call", sorted(_inner_date_calls()))
@pytest.mark.parametrize("value", ["2024-01-02", "garbage", 20240102])
def test_inner_layers_refuse_an_unparsed_date(call, value):
    function, argument = _inner_date_calls()[call]
    with pytest.raises(TypeError, match=rf"^{argument} must be a datetime\.date \(parse it at the edge"):
        function(value)


def test_require_date_passes_dates_and_refuses_datetimes():
    import datetime as dt

    from labeldp.names import require_date

    day = dt.date(2024, 1, 2)
    assert require_date(day, "x") is day
    with pytest.raises(TypeError, match=r"^when must be a datetime\.date .*got datetime"):
        require_date(dt.datetime(2024, 1, 2, 3), "when")


# ------------------------------------------------------------------------------------ module structure
# Three rules that keep a change local: no module reaches into another module's private (_underscore) names; the
# import graph of auditing/, pipelines/ and flows/ has no circle (imports inside functions included: a circle
# hidden in a function is still a circle); and the sinks (warehouse, report, alerts) render a Verdict without
# calling the math that computes one.

PACKAGES = ("labeldp", "auditing", "pipelines", "flows")
SINKS = ("auditing.sinks.warehouse", "auditing.sinks.report", "auditing.sinks.alerts")
VERDICT_MATH = ("auditing.risk.figures", "auditing.verdict.robustness", "auditing.verdict.exposure_floor", "auditing.verdict.judge",
                "auditing.risk.attack_bounds", "auditing.risk.column_bound", "auditing.game.prior_histogram")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _private_imports(path: Path, modules) -> list[str]:
    """`from m import _x` and `m._x` where m is one of our modules imported into this file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    aliases, found = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] in PACKAGES:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                if f"{node.module}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            found.append(f"{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_name():
    modules = _modules()
    offenders = [f"{path.relative_to(ROOT)}:{hit}" for path in modules.values()
                 for hit in _private_imports(path, modules)]
    assert not offenders, "private names imported across modules:\n" + "\n".join(offenders)


def test_the_private_import_check_sees_both_forms(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from auditing.audit import _hidden\nfrom pipelines.training import train\ntrain._pool()\n")
    found = _private_imports(probe, {"pipelines.training.train": probe})
    assert found == ["1: from auditing.audit import _hidden", "3: pipelines.training.train._pool"]


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Every import of ``modules`` (function bodies included) between them (benchmarks/import_chain.py's graph)."""
    return _import_chain_benchmark().import_graph(module_level=False, modules=modules)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_circle():
    circles = _circles(_import_graph(_modules()))
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_circle_check_finds_a_circle_through_a_function_level_import(tmp_path):
    for pkg in PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "auditing" / "a.py").write_text("from auditing.b import f\n")
    (tmp_path / "auditing" / "b.py").write_text("def f():\n    from auditing import a\n")
    (tmp_path / "auditing" / "c.py").write_text("import auditing.a\n")
    modules = {".".join(p.relative_to(tmp_path).with_suffix("").parts): p for p in (tmp_path / "auditing").glob("*.py")}
    assert _circles(_import_graph(modules)) == [["auditing.a", "auditing.b"]]


@pytest.mark.parametrize("sink", SINKS)
def test_sinks_render_a_verdict_and_call_no_verdict_math(sink):
    offenders = []
    for path in sorted((ROOT / Path(*sink.split("."))).rglob("*.py")):
        for line, module in _imported_modules(path):
            if module in VERDICT_MATH or module.startswith(tuple(m + "." for m in VERDICT_MATH)):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, f"{sink} must only render a Verdict:\n" + "\n".join(offenders)


def _code_strings(path: Path) -> list[str]:
    """The string literals of a file, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_sentence_about_a_verdict_is_built_in_flows():
    """The verdict's words live in auditing (judge, report.text): no string in flows/ phrases one."""
    phrases = ("the violation holds unless", "valid lower bound at", "the audit itself is broken",
               "would have flagged the claim", "the reference does not fit")
    offenders = [f"{path.relative_to(ROOT)}: {text[:60]!r}" for path in sorted((ROOT / "flows").rglob("*.py"))
                 for text in _code_strings(path) if any(p in text for p in phrases)]
    assert not offenders, "flows/ phrases a verdict:\n" + "\n".join(offenders)


def test_the_front_door_exports_resolve():
    import auditing

    assert auditing.__all__ and all(getattr(auditing, name) is not None for name in auditing.__all__)
    assert {"GameConfig", "BoundConfig", "config_hash", "AuditResult", "run_audit", "judge", "Verdict", "epsilon_lower_bound",
            "LabelDPInputError", "BOUND_METHODS", "STRATEGIES_REGISTRY"} <= set(auditing.__all__)


def test_the_front_door_example_runs(tmp_path, monkeypatch):
    """The five-line example of auditing's docstring, on a scores table written here."""
    import numpy as np
    import pandas as pd

    import auditing

    rng = np.random.default_rng(0)
    n = 4000
    p = rng.uniform(0.05, 0.3, n)
    label = (rng.uniform(size=n) < p).astype(np.int64)
    pd.DataFrame({"label": label, "p_target": np.where(label == 1, 0.9, 0.1), "p_reference": p,
                  "row_id": np.arange(n)}).to_parquet(tmp_path / "scored.parquet")
    example = auditing.__doc__.split("::", 1)[1].split("\n\n")[1]
    lines = [line[4:] for line in example.splitlines()]
    assert len(lines) == 5
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec("\n".join(lines).replace("print(", "outcome = ("), namespace)
    bound, status = namespace["outcome"]
    assert bound > 1.0 and status == "VIOLATION"


def test_the_pipelines_front_door_example_runs(tmp_path, monkeypatch):
    """The example of pipelines' docstring end to end (3,000 rows instead of 20,000): real partitions, a real
    CatBoost model, the real Beam job; it prints a bound."""
    import pipelines

    assert all(getattr(pipelines, name) is not None for name in pipelines.__all__)
    example = pipelines.__doc__.split("::", 1)[1].split("\n\n")[1]
    lines = [line[4:] for line in example.splitlines()]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec("\n".join(lines).replace("20_000", "3_000").replace("print(", "outcome = ("), namespace)
    assert namespace["outcome"] >= 0.0
    assert (tmp_path / "data" / "models" / "rr-eps1").is_dir()


# ------------------------------------------------------------------------------------------ fields, not flags
# Library errors name the field they are about (`labeldp.errors`); only the command line knows its flags
# (`flows.cli.error_text` and each command's FLAGS). labeldp/hints.py is left out: a hint is a command line
# suggested to the user.
_FLAG_IN_TEXT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_NAME_TAKING = {"check_name", "parse_date", "refuse_future", "model_format", "get"}  # "<name> must be ..."


def _flags_in_error_messages(path: Path, root: Path = ROOT) -> list[str]:
    """The "--flag"s a LabelDPInputError message of ``path`` writes: in the string literals of the raise, or
    given as the ``name`` a checking helper puts in its message (or as such a parameter's default)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if callee == "LabelDPInputError":
                texts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            elif callee in _NAME_TAKING:
                texts = [a.value for a in [*node.args[1:], *(k.value for k in node.keywords)]
                         if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            else:
                continue
            found += [f"{path.relative_to(root)}:{node.lineno}: {flag}" for text in texts
                      for flag in _FLAG_IN_TEXT.findall(text)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [f"{path.relative_to(root)}:{node.lineno}: default {d.value}"
                      for d in [*node.args.defaults, *node.args.kw_defaults]
                      if isinstance(d, ast.Constant) and isinstance(d.value, str) and _FLAG_IN_TEXT.match(d.value)]
    return found


def test_library_errors_name_fields_not_flags():
    offenders = [hit for package in ("labeldp", "auditing", "pipelines")
                 for path in sorted((ROOT / package).rglob("*.py")) if path != ROOT / "labeldp" / "hints.py"
                 for hit in _flags_in_error_messages(path)]
    assert not offenders, "a library error names a command line flag (name its field):\n" + "\n".join(offenders)


def test_the_flag_check_sees_raises_and_helper_names(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('def f(x, name="--format"):\n'
                     '    check_name(x, "--model")\n'
                     '    raise LabelDPInputError(f"bad {x}; pass --replace to overwrite it")\n'
                     'def g(x):\n'
                     '    subprocess.run(["git", "diff", "--quiet"])\n'
                     '    raise LabelDPInputError(f"model must be a name; got {x!r}", field="model")\n')
    hits = _flags_in_error_messages(probe, tmp_path)
    assert sorted(h.split(": ", 1)[1] for h in hits) == ["--model", "--replace", "default --format"]


# ------------------------------------------------------------------------------------------ floors of auditing/
# auditing/ is layered by idea: the data-only records at the bottom, the game on them, the bounds, the verdict and the
# sinks above. The rules below keep the floors apart; benchmarks/import_chain.py measures the depth they give.
# Imports inside functions count too: a tie hidden in a function still ties two ideas.

def _auditing_imports(package: str) -> list[str]:
    """'file:line imports module' for every import of an auditing module in ``package`` (a folder or a module)."""
    base = ROOT / Path(*package.split("."))
    paths = sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    return [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in paths
            for line, module in _imported_modules(path) if module.split(".")[0] == "auditing"]


def _outside(hits: list[str], *allowed: str) -> list[str]:
    return [hit for hit in hits if not any(hit.split(" imports ")[1] == a or hit.split(" imports ")[1].startswith(a + ".")
                                           for a in allowed)]


def test_the_records_import_nothing_else_from_auditing():
    offenders = _outside(_auditing_imports("auditing.records"), "auditing.records")
    assert not offenders, "auditing/records/ is data only:\n" + "\n".join(offenders)


def test_the_game_imports_nothing_above_it():
    """game/ stands on the records only: no configuration, result, bound, verdict or sink."""
    offenders = _outside(_auditing_imports("auditing.game"), "auditing.game", "auditing.records")
    assert not offenders, "auditing/game/ imports a floor above it:\n" + "\n".join(offenders)


def test_the_stylesheet_and_the_wording_import_no_panel_or_page():
    offenders = _auditing_imports("auditing.sinks.report.stylesheet") + _outside(
        _auditing_imports("auditing.sinks.report.wording"), "auditing.verdict.types", "auditing.sinks.warehouse.records")
    assert not offenders, "the stylesheet imports nothing; the wording reads verdicts and rows only:\n" + "\n".join(
        offenders)


def test_panels_and_pages_take_their_css_and_words_from_the_shared_modules():
    """html.py imports no panel (its CSS is the stylesheet's), and no HTML module imports the command line's text."""
    html = [p for p in sorted((ROOT / "auditing" / "sinks" / "report").glob("*.py"))
            if p.stem.endswith("_panel") or p.stem in ("html", "pages", "index_page")]
    offenders = [f"{p.relative_to(ROOT)}:{line} imports {module}" for p in html for line, module in _imported_modules(p)
                 if module == "auditing.sinks.report.text"
                 or (p.stem == "html" and module.startswith("auditing.sinks.report.") and module.endswith("_panel"))]
    assert not offenders, "\n".join(offenders)


def _import_chain_benchmark():
    return benchmark("import_chain")


def test_no_two_packages_of_auditing_import_each_other():
    ties = _import_chain_benchmark().package_ties(_import_chain_benchmark().import_graph(module_level=False))
    assert not ties, "two-way ties between packages:\n" + "\n".join(f"{p} <-> {q}: {'; '.join(e)}" for p, q, e in ties)


# The longest chain of module-level imports in auditing/, in files (benchmarks/import_chain.py prints it): a deeper
# chain is a new floor, to be placed on purpose. A result holds its GameConfig and BoundConfig, so it stands on
# auditing.config and auditing.game.config (the bound registries only where a bound is checked or used); the
# warehouse's modules above it import only what they use when they load (the spool catches WarehouseUnavailable
# from the address, the reference check's columns read a row without loading its type), which keeps the chain at 10.
LONGEST_IMPORT_CHAIN = 10


def test_the_longest_import_chain_in_auditing_stays_short():
    bench = _import_chain_benchmark()
    chain = bench.longest_chains(bench.import_graph(module_level=True))[0]
    assert len(chain) <= LONGEST_IMPORT_CHAIN, f"{len(chain)} files:\n  " + "\n  -> ".join(chain)


def test_the_tie_and_chain_measures_see_what_they_count(tmp_path, monkeypatch):
    bench = _import_chain_benchmark()
    (tmp_path / "auditing" / "p").mkdir(parents=True)
    (tmp_path / "auditing" / "q").mkdir()
    for path, text in {"__init__.py": "", "p/__init__.py": "", "q/__init__.py": "",
                       "p/a.py": "from auditing.q import b\n", "q/b.py": "def f():\n    from auditing.p import c\n",
                       "p/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from auditing.p import a\n"}.items():
        (tmp_path / "auditing" / path).write_text(text)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    assert bench.import_graph(module_level=True)["auditing.p.c"] == set()
    assert [len(c) for c in bench.longest_chains(bench.import_graph(module_level=True))] == [2]
    assert [(p, q) for p, q, _ in bench.package_ties(bench.import_graph(module_level=False))] == [
        ("auditing.p", "auditing.q")]


# Paths under the data root belong to pipelines/data/layout.py and the day's handle (pipelines/data/day.py): every
# other module asks them (`layout.partition_listing`, `Day.files`), never builds a partition's directory itself.
def _signature_benchmark():
    return benchmark("count_signatures")


def test_only_the_layout_and_the_day_handle_build_a_partitions_directory():
    bench = _signature_benchmark()
    paths = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
    offenders = bench.partition_dir_calls(paths)
    assert not offenders, "partition_dir called outside pipelines/data/layout.py and day.py:\n" + "\n".join(offenders)


def test_the_partition_dir_check_sees_both_call_forms(tmp_path):
    bench = _signature_benchmark()
    (tmp_path / "pipelines" / "data").mkdir(parents=True)
    probe = tmp_path / "pipelines" / "probe.py"
    probe.write_text("from pipelines.data import layout\nfrom pipelines.data.layout import partition_dir\n"
                     "a = layout.partition_dir('/r', d)\nb = partition_dir('/r', d)\n")
    owner = tmp_path / "pipelines" / "data" / "day.py"
    owner.write_text("from pipelines.data.layout import partition_dir\nx = partition_dir('/r', d)\n")
    assert bench.partition_dir_calls([owner, probe], root=tmp_path) == ["pipelines/probe.py:3", "pipelines/probe.py:4"]
