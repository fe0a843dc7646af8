"""How long `labeldp-audit nightly` takes to refuse bad input on the demo's 200K-row day (target: under 2 s), timed
as the real command line in a subprocess (Python start-up and imports included), median of N runs each.

    .venv/bin/python benchmarks/bench_preflight.py [--runs 5] [--rows 200000] [--data-root DIR]

Setup (not timed): the demo's two synthetic days (2026-11-01, 2026-11-02) under DIR, and a second data root whose
2026-11-02 file lacks the column I5. Timed cases, each must exit 2 with one line on stderr:
  bad plan        a plan whose target names an unknown mechanism (the first check);
  bad partition   the day without I5 (plan, then the partition's footers);
  bad warehouse   a garbage file as --warehouse: every check passes until the last one (plan, partitions, the
                  reference's day, the warehouse), so this is the cost of the whole preflight.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
D0, D1 = "2026-11-01", "2026-11-02"


def setup(root: Path, rows: int) -> tuple[Path, Path]:
    import datetime as dt

    import pyarrow.parquet as pq

    from pipelines.data.synth import write_synthetic_day

    for day in (D0, D1):
        if not (root / "partitions" / f"date={day}").is_dir():
            write_synthetic_day(root, dt.date.fromisoformat(day), rows=rows)
    bad = root.parent / (root.name + "-bad-partition")
    if not bad.is_dir():
        shutil.copytree(root / "partitions", bad / "partitions")
        for path in (bad / "partitions" / f"date={D1}").glob("part-*.parquet"):
            pq.write_table(pq.read_table(path).drop(["I5"]), path)
    return root, bad


def timed(argv: list[str], expect: str) -> float:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "flows.cli", *argv], cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or len(lines) != 1 or expect not in lines[0]:
        raise SystemExit(f"unexpected result of {argv}: exit {done.returncode}\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--data-root", default=None)
    args = parser.parse_args()
    root = Path(args.data_root or Path(tempfile.mkdtemp(prefix="labeldp-bench-preflight-")) / "root")
    root, bad_root = setup(root, args.rows)
    work = Path(tempfile.mkdtemp(prefix="labeldp-bench-preflight-files-"))
    bad_plan = work / "bad-plan.json"
    bad_plan.write_text(json.dumps({"targets": [{"name": "a", "mechanism": "magic", "epsilon": 1}]}))
    garbage = work / "warehouse.duckdb"
    garbage.write_bytes(b"not a database\n" * 1000)
    nightly = ["nightly", "--date", D1]
    cases = {
        "bad plan (unknown mechanism)": ([*nightly, "--data-root", str(root), "--plan", str(bad_plan)],
                                         "mechanism must be one of"),
        "bad partition (column I5 missing)": ([*nightly, "--data-root", str(bad_root)], "missing column(s) ['I5']"),
        "bad warehouse (garbage file; every other check passed)":
            ([*nightly, "--data-root", str(root), "--warehouse", str(garbage)], "not a DuckDB database"),
    }
    print(f"data root {root} ({args.rows} rows/day); {args.runs} runs per case, exit 2 and one line checked each time")
    print("| case | median s | min s | max s |\n|---|---|---|---|")
    for name, (argv, expect) in cases.items():
        times = [timed(argv, expect) for _ in range(args.runs)]
        print(f"| {name} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} |", flush=True)


if __name__ == "__main__":
    main()
