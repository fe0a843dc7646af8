"""Benchmark: synthetic day generation and Criteo TSV ingest ("target: 1M rows/day under 10 s").

Each measurement runs in a fresh subprocess, so its peak resident memory (VmHWM, which unlike ru_maxrss is not
inherited from the parent through fork + exec) is its own. Prints the
median (and min/max) wall seconds over --runs runs of:

- synth generate:     `synth.generate_day` for 1M rows (in memory only);
- synth day:          `synth.write_synthetic_day` (generate + validate + write partition and oracle), what
                      `labeldp-audit data synth` does per day;
- ingest plain / gzip: `criteo_ingest.ingest_criteo` of a 1M-line TSV rendering of a synthetic day (all rows);
- ingest sample:      the same gzip file with --sample-rows 100000.

The load average before and after is printed: with other jobs on the 2 cores, wall times are inflated; the
median process CPU seconds (user + system, all threads) are printed too, as they depend much less on
sharing: with 2 dedicated cores the wall time is at most about the CPU time (the work is mostly one thread).

    .venv/bin/python benchmarks/bench_synth.py [--rows 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a plain script from anywhere

from benchmarks.process_memory import peak_rss_mib  # noqa: E402  (after the path is set)


def _worker(kind: str, rows: int, work: str, run: int) -> dict:
    """One measurement; returns seconds and the peak RSS of this process."""
    from pipelines.data import criteo_ingest, synth

    date = dt.date(2024, 6, 1 + run)
    root = Path(work) / f"root-{kind}-{run}"
    began = time.perf_counter()
    cpu_began = time.process_time()
    extra = {}
    if kind == "generate":
        synth.generate_day(date, rows=rows)
    elif kind == "day":
        synth.write_synthetic_day(root, date, rows=rows)
    elif kind in ("ingest-plain", "ingest-gzip", "ingest-sample"):
        path = Path(work) / ("day.tsv" if kind == "ingest-plain" else "day.tsv.gz")
        report = criteo_ingest.ingest_criteo(path, root, date,
                                             sample_rows=100_000 if kind == "ingest-sample" else None)
        extra = {"lines": report.lines_read, "bytes": report.bytes_read, "rows_written": report.rows_written}
    elif kind == "prepare":  # the input TSV files, rendered from a synthetic day
        table = synth.generate_day(dt.date(2024, 5, 31), rows=rows).table
        criteo_ingest.write_criteo_tsv(table, Path(work) / "day.tsv")
        criteo_ingest.write_criteo_tsv(table, Path(work) / "day.tsv.gz", compress=True)
    else:
        raise SystemExit(f"unknown kind {kind}")
    seconds = time.perf_counter() - began
    cpu = time.process_time() - cpu_began
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": peak_rss_mib(), **extra}


def _run(kind: str, rows: int, work: str, run: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", kind, "--rows", str(rows), "--work", work,
                          "--run", str(run)], check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.rows, args.work, args.run)))
        return

    print(f"rows={args.rows} runs={args.runs} cpus={os.cpu_count()} load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-synth-") as work:
        _run("prepare", args.rows, work, 0)
        sizes = {name: (Path(work) / name).stat().st_size / 1e6 for name in ("day.tsv", "day.tsv.gz")}
        print(f"TSV rendering: {sizes['day.tsv']:.0f} MB plain, {sizes['day.tsv.gz']:.0f} MB gzip", flush=True)
        print(f"{'measurement':<16}{'median s':>10}{'min s':>8}{'max s':>8}{'CPU s':>8}{'peak RSS MiB':>14}  notes")
        for kind, runs in (("generate", args.runs), ("day", args.runs), ("ingest-plain", max(3, args.runs // 2)),
                           ("ingest-gzip", max(3, args.runs // 2)), ("ingest-sample", max(3, args.runs // 2))):
            results = [_run(kind, args.rows, work, run) for run in range(runs)]
            seconds = [r["seconds"] for r in results]
            median = statistics.median(seconds)
            peak = max(r["peak_rss_mib"] for r in results)
            note = ""
            if "lines" in results[0]:
                note = (f"{results[0]['lines'] / median / 1e6:.2f} M lines/s, "
                        f"{results[0]['bytes'] / median / 1e6:.0f} MB/s of TSV, "
                        f"{results[0]['rows_written']} rows written")
            else:
                note = f"{args.rows / median / 1e6:.2f} M rows/s"
            cpu = statistics.median(r["cpu_seconds"] for r in results)
            print(f"{kind:<16}{median:>10.2f}{min(seconds):>8.2f}{max(seconds):>8.2f}{cpu:>8.2f}{peak:>14.0f}  "
                  f"{note}", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
