"""How often a day is passed as its parts, and how often a record crosses a layer as a dict.

Three counts, from the source (ast, no import):

- ``root+date``: functions of auditing/ pipelines/ flows/ labeldp/ whose parameters include both a root-like
  one (``root``, ``data_root``) and a day-like one (``date``, ``day``) and that are not in ``BY_DESIGN``: a day
  passed as (root, date) where its handle (`pipelines.data.day.Day`), resolved once by the caller, should be.
  The functions that take (root, date) by design are counted apart, by category (``BY_DESIGN``), and an entry
  of ``BY_DESIGN`` that no longer takes both is named, so the list cannot go stale unseen;
- ``.get("``: ``.get("...")`` calls with a string key in auditing/ pipelines/ flows/ labeldp/: a record read as a
  dict. Each is classed as an edge (untyped data entering: JSON, SQL, the environment, the CLI, decoded once
  there; `GET_EDGES` names each edge and why) or not; both counts are printed;
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


# The functions that take (root, date) by design, by category and file; every other function taking both is to
# convert. Keyed by name, not line, so a function that moves stays classified and a new one is counted.
BY_DESIGN: dict[str, dict[str, set[str]]] = {
    # Build, write or find a partition, or a file beside it or under the data root, where no handle can exist
    # yet (the partition is being written, or only its records are read): the layout's paths, the writers and
    # ingesters, the replacement, provenance, dataset and oracle records, the scoring outputs' and stored
    # nights' directories.
    "storage": {
        "pipelines/data/layout.py": {"partition_dir", "partition_listing", "partition_record", "oracle_dir",
                                     "model_dir"},
        "pipelines/data/schema.py": {"refuse_existing_partition", "_replaced_record", "replaced_partitions",
                                     "replaced_since", "_replacement_record", "write_partition", "read_provenance",
                                     "write_oracle", "read_oracle"},
        "pipelines/data/dataset_spec.py": {"dataset_of"},
        "pipelines/data/synth.py": {"write_synthetic_day"},
        "pipelines/data/criteo_ingest.py": {"ingest_criteo"},
        "pipelines/data/tabular_ingest.py": {"ingest_table_files"},
        "pipelines/scoring/beam_request.py": {"sweep_dir", "scored_dir"},
        "flows/rejudge.py": {"nights_dir", "night_path"},
    },
    # Where a date becomes a handle: the resolvers and the checks they run before the handle exists, and the
    # flows' entry points (Prefect parameters arrive as text; a backfill's day is resolved after the skip rule,
    # which must not read the partition).
    "edge": {
        "pipelines/data/day.py": {"resolve_day", "listed_day"},
        # schema's readers of a day named by its date, for a caller without a handle (users:
        # `pipelines.read_partition`; the data commands; a model registered by its address) and the listing they
        # share: each lists the day's files once (not through `listed_day`: pipelines.data.day imports schema).
        "pipelines/data/schema.py": {"missing_partition", "_partition_files", "read_partition",
                                     "partition_fingerprint"},
        "flows/steps.py": {"check_partition"},
        "flows/nightly.py": {"check_partition", "night_partition", "nightly_audit", "release_guardrail",
                             "backfill_day"},
    },
    # (root, name, date) is a model's address (``models/<name>/date=D``), not a day: the model of a date may
    # exist without its day's partition (registered before the day was ingested, a D-1 reference).
    # register_model and candidate_name read the day only when it is there.
    "model address": {
        "pipelines/models/handle.py": {"resolve_model"},
        "pipelines/models/registry.py": {"save_model", "read_metadata"},
        "pipelines/models/registration.py": {"find_registered", "register_model", "candidate_name", "show_model"},
        "pipelines/scoring/beam_request.py": {"resolve_reference"},
    },
    # The date is a verdict's (or an alert's, a report's, a stored night's) and the partition may be gone,
    # missing or just replaced: what they key is the data root and the date, never the partition's files.
    "verdict day": {
        "flows/steps.py": {"publish", "_family", "send_failure_alert", "mark_replaced_reports", "day_is_complete"},
        "auditing/sinks/report/pages.py": {"mark_replaced_reports"},
        "flows/commands/data.py": {"_replaced"},
        "flows/rejudge.py": {"read_night"},
    },
}
TO_CONVERT = "to convert"


def classify(hits: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """(category -> the ``root_and_date`` hits in it, ``TO_CONVERT`` for the rest; the ``BY_DESIGN`` entries that
    are not hits, as ``path name``)."""
    out: dict[str, list[str]] = {TO_CONVERT: [], **{category: [] for category in BY_DESIGN}}
    seen = set()
    for hit in hits:
        where, name = hit.split(" ", 1)
        path = where.rsplit(":", 1)[0]
        category = next((c for c, files in BY_DESIGN.items() if name in files.get(path, ())), TO_CONVERT)
        out[category].append(hit)
        seen.add((path, name))
    stale = [f"{path} {name}" for files in BY_DESIGN.values() for path, names in files.items()
             for name in sorted(names) if (path, name) not in seen]
    return out, stale


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


# Where a ``.get("key")`` reads untyped data at its entry, before (or while) it is decoded once: (module, function)
# -> why; function None: the whole module. Nothing else is an edge; a lookup on a dict a function of ours built, or
# on a record already decoded, is not.
GET_EDGES = {
    ("auditing/sinks/warehouse/rows.py", None): "normalises a row dict a caller or the database gives, value by value",
    ("auditing/sinks/warehouse/records.py", "upgrade_row"): "upgrades a row the database returns (SQL) in an older "
                                                            "shape, before it is typed",
    ("auditing/sinks/warehouse/base.py", "_read_schema"): "reads the tables and columns the database's catalog lists "
                                                          "(SQL)",
    ("auditing/sinks/warehouse/address.py", "_postgres_address"): "reads libpq's parse of a warehouse URL from the "
                                                                  "CLI (conninfo_to_dict)",
    ("flows/preflight.py", "_check_postgres"): "reads libpq's parse of the --warehouse URL (conninfo_to_dict)",
    ("auditing/sinks/warehouse/spool.py", None): "reads a spooled JSON file (this or an older version wrote it) "
                                                 "before decoding it",
    ("flows/plan_schema.py", None): "walks the plan's JSON Schema (a JSON object) to word a validation error",
    ("flows/plan.py", "load_plan"): "reads the plan JSON a user wrote, checked against its schema, decoded once",
    ("flows/plan.py", "target_from_dict"): "reads a plan's target JSON object, decoded once",
    ("labeldp/codec.py", None): "the codec itself: dataclass field metadata and the stored dicts it decodes",
    ("labeldp/settings.py", "describe"): "reads a JSON Schema fragment to word it",
    ("pipelines/models/metadata.py", "upgraded"): "ModelMetadata's upgrade hook: a stored version-1 metadata.json "
                                                  "turned into the current shape before decoding",
    ("pipelines/models/metadata.py", "as_metadata"): "refuses a metadata.json of a newer version before decoding it",
    ("pipelines/data/schema.py", "pandas_index_columns"): "reads the pandas JSON metadata a Parquet file holds",
    ("pipelines/scoring/scored_batch.py", "batch_from_predictions"): "reads a predictions Parquet file's key-value "
                                                                     "metadata, decoded once into a ScoredBatch",
    ("auditing/game/counts.py", "load"): "reads a counts.npz's JSON records (an older version's may lack a key) "
                                         "before decoding them",
    ("auditing/game/prior_histogram.py", "_decoded"): "PriorHistogram's codec hook: reads its sparse stored form "
                                                      "(JSON) once",
    ("pipelines/reference/recalibration.py", "fit_correction"): "reads CatBoost's evals dict (the library's own "
                                                                "untyped return value)",
}
ENVIRON_EDGE = "reads os.environ"  # any ``os.environ.get("NAME")``


def _gets(tree: ast.AST):
    """(node, enclosing function's name or None) of every ``x.get("key", ...)`` call in ``tree``."""
    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr == "get"
                    and child.args and isinstance(child.args[0], ast.Constant)
                    and isinstance(child.args[0].value, str)):
                yield child, function
            yield from walk(child, inner)
    yield from walk(tree, None)


def get_edge(module: str, function: str | None, call: ast.Call) -> str | None:
    """Why this ``.get`` is an edge (`GET_EDGES`, `ENVIRON_EDGE`), None when it is not one."""
    if ast.unparse(call.func.value) == "os.environ":
        return ENVIRON_EDGE
    return GET_EDGES.get((module, None)) or GET_EDGES.get((module, function))


def string_gets(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``path:line key`` of every ``x.get("key", ...)`` call, with ``[edge: why]`` for an edge (`get_edge`)."""
    out = []
    for path in paths:
        module = path.relative_to(root).as_posix()
        for node, function in _gets(ast.parse(path.read_text(encoding="utf-8"))):
            edge = get_edge(module, function, node)
            out.append(f"{module}:{node.lineno} {node.args[0].value}" + (f" [edge: {edge}]" if edge else ""))
    return sorted(out, key=lambda hit: (hit.split(":")[0], int(hit.split(":")[1].split()[0])))


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
    categories, stale = classify(root_and_date(_files("auditing", "pipelines", "flows", "labeldp")))
    counts = {
        "root+date": categories.pop(TO_CONVERT),
        '.get("': string_gets(_files("auditing", "pipelines", "flows", "labeldp")),
        "partition_dir": partition_dir_calls(_files("auditing", "pipelines", "flows", "labeldp")),
    }
    counts['.get(" outside edges'] = [hit for hit in counts['.get("'] if "[edge: " not in hit]
    for name, hits in counts.items():
        print(f"{name}: {len(hits)}")
        if args.list:
            for hit in hits:
                print(f"  {hit}")
        if name == "root+date":  # then those that take (root, date) by design, by category
            print(f"root+date by design: {sum(map(len, categories.values()))} ("
                  + ", ".join(f"{category} {len(found)}" for category, found in categories.items()) + ")")
            if args.list:
                for category, found in categories.items():
                    for hit in found:
                        print(f"  {category}: {hit}")
            for entry in stale:
                print(f"  no longer takes (root, date), drop it from BY_DESIGN: {entry}")


if __name__ == "__main__":
    main()
