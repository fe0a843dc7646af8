"""The ``.get("key")`` count of benchmarks/count_signatures.py stays honest: every edge its allowlist names still
exists and still reads such a lookup (a stale entry would hide a lookup moved into a function of that name), and
a lookup outside the allowlist is counted as outside the edges."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.benchmark_scripts import benchmark

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("auditing", "pipelines", "flows", "labeldp")


def _benchmark():
    return benchmark("count_signatures")


def test_every_edge_names_a_module_and_function_that_reads_a_key():
    bench = _benchmark()
    stale = []
    for (module, function), reason in bench.GET_EDGES.items():
        path = ROOT / module
        assert reason.strip(), f"{module} {function}: an edge needs its reason"
        if not path.is_file():
            stale.append(f"{module}: no such module")
            continue
        found = {name for _, name in bench._gets(ast.parse(path.read_text(encoding="utf-8")))}
        if (function is None and not found) or (function is not None and function not in found):
            stale.append(f"{module} {function or ''}: reads no .get(\"key\") there")
    assert not stale, "stale entries in GET_EDGES:\n" + "\n".join(stale)


def test_a_lookup_is_an_edge_only_where_the_allowlist_or_the_environment_says(tmp_path):
    bench = _benchmark()
    (tmp_path / "flows").mkdir()
    probe = tmp_path / "flows" / "probe.py"
    probe.write_text("import os\n\ndef load_plan(data):\n    return data.get('audit')\n\n"
                     "def other(record):\n    return record.get('kind'), os.environ.get('HOME')\n")
    plan = tmp_path / "flows" / "plan.py"
    plan.write_text(probe.read_text())
    hits = bench.string_gets([probe, plan], root=tmp_path)
    edges = [hit for hit in hits if "[edge: " in hit]
    assert [hit.split(" [")[0] for hit in edges] == ["flows/plan.py:4 audit", "flows/plan.py:7 HOME",
                                                     "flows/probe.py:7 HOME"]
    assert len(hits) - len(edges) == 3  # the probe's load_plan is no edge: only plan.py's is
