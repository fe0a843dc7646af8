"""The night's grouped-rows stage on one day: every row's group keys (the whole feature vector and each declared
group column, `pipelines.scoring.row_grouping`), read from the partition in batches and hashed, as
`night_exclusion` does for the audited day and again for the reference's training day.

    .venv/bin/python benchmarks/bench_row_groups.py --root /work/rowgroups [--rows 1000000] [--runs 3]

Setup (skipped when --root already holds it): a synthetic day of --rows rows (`pipelines.data.synth`). Each run
is a fresh process (imports not timed): the keys of the whole day, their wall time and the process's peak RSS.
Prints the medians, seconds per 1e6 rows, and a digest of the keys (equal digests: equal keys).

``--night``: the whole stage instead, `night_exclusion` of day D against the D-1 reference, in a fresh process
per run (peak RSS is the process's VmHWM, `benchmarks/process_memory.py`):

    .venv/bin/python benchmarks/bench_row_groups.py --night --root /work/rg-bench/rows-1000000 --rows 1000000 \
        [--code /tmp/rg-before]

Setup (skipped when --root already holds it): D-1 a synthetic day of --rows rows; D a synthetic day of --rows rows
plus copies (new row ids) of 1% of its own rows and of 0.5% of D-1's, so that some rows share a group within the
day and some with the reference's training rows; the reference on D-1 trained as the nightly trains it (10
CatBoost iterations, its training rows the split's, recorded as a hash rule). ``--code``: a checkout whose
`pipelines` the child imports (e.g. a worktree of an earlier commit). Prints wall time, peak RSS, and the
result's counts, agreement and a digest of excluded and with_inputs (equal digests: equal results).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAY = dt.date(2024, 5, 2)
NIGHT_D0, NIGHT_D1 = dt.date(2024, 5, 1), dt.date(2024, 5, 2)


def child(root: str) -> None:
    import resource
    import time

    from pipelines.data.day import listed_day
    from pipelines.scoring import row_grouping

    day = listed_day(root, DAY)
    dataset = day.dataset
    rels = row_grouping.relations(dataset)
    began = time.perf_counter()
    ids, keys = row_grouping._day_keys(day, dataset, rels)
    wall = time.perf_counter() - began
    digest = hashlib.sha256(ids.tobytes() + b"".join(k.tobytes() for k in keys)).hexdigest()[:16]
    print(json.dumps({"rows": int(ids.size), "relations": len(rels), "wall_s": wall, "digest": digest,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def night_setup(root: str, rows: int) -> None:
    """The --night data: D-1, D with copies, and the reference (module docstring)."""
    import numpy as np
    import pyarrow as pa

    from flows import steps
    from flows.plan import AuditPlan, RegisteredTarget
    from pipelines.data import schema, synth
    from pipelines.data.day import listed_day

    if not (Path(root) / "partitions" / f"date={NIGHT_D0.isoformat()}").is_dir():
        synth.write_synthetic_day(root, NIGHT_D0, rows=rows)
    if not (Path(root) / "partitions" / f"date={NIGHT_D1.isoformat()}").is_dir():
        day = synth.generate_day(NIGHT_D1, rows=rows).table
        before = schema.read_partition(root, NIGHT_D0).slice(0, rows // 200)
        parts = [day]
        for k, copies in enumerate((day.slice(0, rows // 100), before)):
            ids = np.arange(copies.num_rows, dtype=np.int64) + (k + 1) * 10 ** 12  # not a row id of either day
            index = copies.schema.get_field_index(schema.ROW_ID)
            parts.append(copies.set_column(index, copies.schema.field(index), pa.array(ids)))
        schema.write_partition(root, NIGHT_D1, pa.concat_tables(parts), source="bench_row_groups --night")
        del day, before, parts
    plan = AuditPlan(targets=(RegisteredTarget("unused"),), catboost_iterations=10)
    steps.ensure_reference(listed_day(root, NIGHT_D1), plan, progress=print)


def night_child(root: str) -> None:
    import hashlib
    import time

    began_imports = time.perf_counter()
    from benchmarks.process_memory import peak_rss_mib, reset_peak_rss
    from pipelines.data.day import listed_day
    from pipelines.models.handle import resolve_model
    from pipelines.scoring import row_grouping

    reference = resolve_model(root, "reference", NIGHT_D0)
    lines = []
    reset_peak_rss()
    began = time.perf_counter()
    result = row_grouping.night_exclusion(listed_day(root, NIGHT_D1), reference, progress=lines.append)
    wall = time.perf_counter() - began
    digest = hashlib.sha256(result.excluded.tobytes() + b"|" + result.with_inputs.tobytes()).hexdigest()[:16]
    print(json.dumps({"code": str(Path(row_grouping.__file__).resolve().parents[2]), "wall_s": wall,
                      "peak_rss_mib": peak_rss_mib(), "excluded": int(result.excluded.size),
                      "with_inputs": int(result.with_inputs.size), "agreement": list(vars(result.agreement).values()),
                      "note": result.note, "digest": digest, "progress": lines,
                      "imports_s": began - began_imports}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--night", action="store_true", help="the whole stage, night_exclusion (docstring)")
    parser.add_argument("--code", help="--night: the checkout whose pipelines the child imports")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        (night_child if args.night else child)(args.root)
        return
    if args.night:
        night(args)
        return
    if not (Path(args.root) / "partitions" / f"date={DAY.isoformat()}").is_dir():
        from pipelines.data.synth import write_synthetic_day

        print(f"writing a synthetic day of {args.rows} rows under {args.root}", flush=True)
        write_synthetic_day(args.root, DAY, rows=args.rows)
    results = []
    for run in range(args.runs):
        done = subprocess.run([sys.executable, __file__, "--root", args.root, "--child"], capture_output=True,
                              text=True, check=True, cwd=REPO)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"run {run}: {results[-1]}", flush=True)
    wall = statistics.median(r["wall_s"] for r in results)
    rows = results[0]["rows"]
    print(f"keys of {rows} rows ({results[0]['relations']} relation(s)): median {wall:.2f} s, "
          f"{wall * 1e6 / rows:.2f} s per 1e6 rows; peak RSS {max(r['peak_rss_mib'] for r in results):.0f} MiB; "
          f"digests {sorted({r['digest'] for r in results})}")


def night(args) -> None:
    import os

    night_setup(args.root, args.rows)
    env = dict(os.environ)
    code = str(Path(args.code).resolve()) if args.code else str(REPO)
    env["PYTHONPATH"] = os.pathsep.join([code, str(REPO)])  # the child's pipelines from --code; benchmarks from here
    results = []
    for run in range(args.runs):
        done = subprocess.run([sys.executable, __file__, "--root", args.root, "--night", "--child"],
                              capture_output=True, text=True, check=True, cwd=code, env=env)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"run {run}: {json.dumps(results[-1])}", flush=True)
    if not results:  # --runs 0: the setup only
        return
    walls = [r["wall_s"] for r in results]
    print(f"night_exclusion ({results[0]['code']}): wall {statistics.median(walls):.1f} s "
          f"({', '.join(f'{w:.1f}' for w in walls)}); peak RSS {max(r['peak_rss_mib'] for r in results):.0f} MiB; "
          f"excluded {results[0]['excluded']}, with_inputs {results[0]['with_inputs']}, agreement "
          f"{results[0]['agreement']}, note {results[0]['note']!r}; digests {sorted({r['digest'] for r in results})}")


if __name__ == "__main__":
    main()
