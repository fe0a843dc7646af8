"""The depth of auditing/: its longest chain of module-level imports, and its two-way ties.

An edge A -> B means module A of auditing/ imports module B of auditing/ when it loads: the imports of the module
body (inside ``if``/``try``/``with`` blocks too), not those inside functions or under ``if TYPE_CHECKING``, as
the graph of tests/architecture/test_layering.py resolves them (``from auditing.game import counts`` is an edge to
``auditing.game.counts``; a package's own ``__init__`` is not an edge of its modules). The longest chain is the
longest path of that graph, counted in files. A two-way tie is a pair that imports each other: of modules at
module level (a circle, which the layering test forbids), and of packages (a module of package P imports one of
package Q and the other way round, imports inside functions included, since those still tie the two ideas).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/import_chain.py [--all]
"""

from __future__ import annotations

import argparse
import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "auditing"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(body: list[ast.stmt], module_level: bool):
    """The import statements of a body: at load time only (``module_level``), or everywhere."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not module_level:
                yield from (n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))
            elif isinstance(node, ast.ClassDef):  # a class body runs at load time
                yield from _imports(node.body, module_level)
        elif isinstance(node, ast.If) and module_level and _is_type_checking(node.test):
            yield from _imports(node.orelse, module_level)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    yield from _imports(inner, module_level)


def import_graph(module_level: bool = True, modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` (default: auditing/'s) it imports, at load time only or everywhere;
    importing a submodule runs its packages' ``__init__`` first, which is not an edge of its own."""
    if modules is None:
        modules = {_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py")) if p.name != "__main__.py"}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")).body, module_level):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in modules}
            elif node.level == 0 and node.module:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    if sub in modules or node.module in modules:
                        deps.add(sub if sub in modules else node.module)
        graph[name] = {d for d in deps if d != name and not name.startswith(d + ".")}
    return graph


def longest_chains(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every longest path of an acyclic graph (ValueError on a circle)."""
    visiting: set[str] = set()

    @functools.cache
    def longest_from(node: str) -> tuple[tuple[str, ...], ...]:
        if node in visiting:
            raise ValueError(f"import circle through {node}")
        visiting.add(node)
        tails = [t for child in sorted(graph[node]) for t in longest_from(child)]
        visiting.discard(node)
        if not tails:
            return ((node,),)
        best = max(map(len, tails))
        return tuple((node, *t) for t in tails if len(t) == best)

    chains = [c for node in sorted(graph) for c in longest_from(node)]
    best = max(map(len, chains))
    return [list(c) for c in chains if len(c) == best]


def module_ties(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))


def _package(module: str, graph: dict[str, set[str]]) -> str:
    """A module's idea: its subpackage of auditing/ (``auditing.game``), or itself for a top-level module."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or any(m.startswith(module + ".") for m in graph) else module


def package_ties(graph: dict[str, set[str]]) -> list[tuple[str, str, list[str]]]:
    """Pairs of packages that import each other, each with the module edges that tie them."""
    edges: dict[tuple[str, str], list[str]] = {}
    for a, deps in graph.items():
        for b in deps:
            pa, pb = _package(a, graph), _package(b, graph)
            if pa != pb:
                edges.setdefault((pa, pb), []).append(f"{a} -> {b}")
    return sorted((p, q, sorted(edges[p, q] + edges[q, p])) for p, q in edges if p < q and (q, p) in edges)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="print every longest chain, not only the first")
    args = parser.parse_args()
    loaded = import_graph(module_level=True)
    chains = longest_chains(loaded)
    print(f"longest module-level import chain in {PACKAGE}/: {len(chains[0])} files "
          f"({len(chains)} chain(s) of that length)")
    for chain in chains if args.all else chains[:1]:
        print("  " + "\n  -> ".join(chain))
    ties = module_ties(loaded)
    print(f"two-way ties between modules (module level): {len(ties)}")
    for a, b in ties:
        print(f"  {a} <-> {b}")
    packages = package_ties(import_graph(module_level=False))
    print(f"two-way ties between packages (imports inside functions included): {len(packages)}")
    for p, q, edges in packages:
        print(f"  {p} <-> {q}: " + "; ".join(edges))


if __name__ == "__main__":
    main()
