"""The night's grouped-rows stage on one day: every row's group keys (the whole feature vector and each declared
group column, `pipelines.scoring.row_grouping`), read from the partition in batches and hashed, as
`night_exclusion` does for the audited day and again for the reference's training day.

    .venv/bin/python benchmarks/bench_row_groups.py --root /work/rowgroups [--rows 1000000] [--runs 3]

Setup (skipped when --root already holds it): a synthetic day of --rows rows (`pipelines.data.synth`). Each run
is a fresh process (imports not timed): the keys of the whole day, their wall time and the process's peak RSS.
Prints the medians, seconds per 1e6 rows, and a digest of the keys (equal digests: equal keys).
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


def child(root: str) -> None:
    import resource
    import time

    from pipelines.data.dataset_spec import dataset_of
    from pipelines.scoring import row_grouping

    dataset = dataset_of(root, DAY)
    rels = row_grouping.relations(dataset)
    began = time.perf_counter()
    ids, keys = row_grouping._day_keys(root, DAY, dataset, rels)
    wall = time.perf_counter() - began
    digest = hashlib.sha256(ids.tobytes() + b"".join(k.tobytes() for k in keys)).hexdigest()[:16]
    print(json.dumps({"rows": int(ids.size), "relations": len(rels), "wall_s": wall, "digest": digest,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.root)
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


if __name__ == "__main__":
    main()
