"""Scaling benchmark: time and peak memory against rows and repetitions.

Two parts, each measurement in a fresh subprocess so that its peak resident memory (VmHWM) is its own:

- in-process: `auditing.audit.run_audit` (compiled game, binomial bonferroni, 100-point grid) on the binary
  randomized-response data of benchmarks/bench_audit.py at each --audit-rows, with R = --repetitions; and at
  the middle size with R = 10 as well, to show that memory does not grow with R (only the O(R x bins)
  histograms do: 0.75 MB per repetition);
- Beam job on FnApiRunner (`pipelines.scoring.beam_scoring.score_day`, through benchmarks/bench_beam_scoring.py's
  child modes) and its bare cost (frame + both predict_proba) at each --beam-rows, on synthetic days of that
  size that share the models of --models-root (made by bench_beam_scoring.py: 250 trees of depth 6; the cost
  of prediction depends on the trees, not on the rows they were trained on).

    .venv/bin/python benchmarks/bench_scaling.py --models-root /tmp/kernel/b1m --work /tmp/kernel/scaling \
        [--audit-rows 100000,1000000,10000000] [--beam-rows 100000,1000000] [--repetitions 100] [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from auditing.game.config import GameConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.process_memory import peak_rss_mib  # noqa: E402  (after the path is set)

BEAM_BENCH = ROOT / "benchmarks" / "bench_beam_scoring.py"


def audit_child(rows: int, repetitions: int) -> dict:
    import numpy as np

    from auditing.audit import run_audit
    from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior

    rng = np.random.default_rng(0)
    x, y = gaussian_mixture(rows, 2, rng)
    target = randomized_response(y, 2, 2.0, rng).astype(np.float64)
    reference = true_posterior(x, 2)[:, 1]
    del x
    run_audit(target[:2000], reference[:2000], y[:2000], game=GameConfig(repetitions=2))  # load the kernels
    data_rss = peak_rss_mib()
    cpu = time.process_time()
    began = time.perf_counter()
    result = run_audit(target, reference, y, game=GameConfig(repetitions=repetitions))
    return {"part": "audit", "rows": rows, "repetitions": repetitions, "wall_s": time.perf_counter() - began,
            "cpu_s": time.process_time() - cpu, "data_rss_mib": data_rss, "peak_rss_mib": peak_rss_mib(),
            "epsilon_lower_bound": result.epsilon_lower_bound, "load": os.getloadavg()[0]}


def beam_day(work: Path, models_root: Path, rows: int) -> Path:
    """A data root holding a synthetic day of `rows` rows and (a link to) the benchmark's models."""
    from benchmarks.bench_beam_scoring import DAY
    from pipelines.data import synth

    root = work / f"rows-{rows}"
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "partitions" / f"date={DAY}").is_dir():
        began = time.perf_counter()
        synth.write_synthetic_day(root, DAY, rows=rows)
        print(f"wrote {rows} rows in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    if not (root / "models").exists():
        (root / "models").symlink_to((models_root / "models").resolve(), target_is_directory=True)
    return root


def run_child(command: list[str]) -> dict:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        print(done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"{command} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models-root", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--audit-rows", default="100000,1000000,10000000")
    parser.add_argument("--beam-rows", default="100000,1000000")
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--child-audit", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_audit:
        rows, repetitions = (int(v) for v in args.child_audit.split(":"))
        print(json.dumps(audit_child(rows, repetitions)))
        return

    audit_rows = [int(v) for v in args.audit_rows.split(",") if v]
    beam_rows = [int(v) for v in args.beam_rows.split(",") if v]
    results = []
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    jobs = [(rows, args.repetitions) for rows in audit_rows]
    if len(audit_rows) > 1:
        jobs.append((audit_rows[len(audit_rows) // 2], 10))
    for rows, repetitions in jobs:
        for _ in range(args.runs):
            out = run_child([sys.executable, __file__, "--models-root", str(args.models_root), "--work",
                             str(args.work), "--child-audit", f"{rows}:{repetitions}"])
            results.append(out)
            print(json.dumps(out), flush=True)
    for rows in beam_rows:
        root = beam_day(args.work, args.models_root, rows)
        for _ in range(args.runs):
            for mode in ("bare", "fnapi"):
                out = run_child([sys.executable, str(BEAM_BENCH), "--root", str(root), "--repetitions",
                                 str(args.repetitions), "--child", mode])
                out.update(part="beam", rows=rows, load=os.getloadavg()[0])
                results.append(out)
                print(json.dumps({k: v for k, v in out.items() if k not in ("timings", "diagnostics")}), flush=True)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)

    print("\npart      rows        R   wall s (median)  CPU s   peak RSS MiB  wall / 1e6 rows")
    for rows, repetitions in jobs:
        mine = [r for r in results if r["part"] == "audit" and r["rows"] == rows and r["repetitions"] == repetitions]
        wall = statistics.median(r["wall_s"] for r in mine)
        print(f"audit {rows:>10} {repetitions:>5} {wall:14.2f} {statistics.median(r['cpu_s'] for r in mine):8.2f} "
              f"{max(r['peak_rss_mib'] for r in mine):12.0f} {wall / rows * 1e6:14.2f}")
    for rows in beam_rows:
        bare = [r for r in results if r["part"] == "beam" and r["rows"] == rows and r["mode"] == "bare"]
        job = [r for r in results if r["part"] == "beam" and r["rows"] == rows and r["mode"] == "fnapi"]
        bare_s = statistics.median(r["bare_s"] for r in bare)
        wall = statistics.median(r["wall_s"] for r in job)
        print(f"beam  {rows:>10} {args.repetitions:>5} {wall:14.2f} {'':>8} {max(r['peak_rss_mib'] for r in job):12.0f} "
              f"{wall / rows * 1e6:14.2f}   bare {bare_s:.2f} s ({wall / bare_s:.2f}x), bare peak "
              f"{max(r['peak_rss_mib'] for r in bare):.0f} MiB")


if __name__ == "__main__":
    main()
