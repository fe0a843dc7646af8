"""Peak memory and wall time of `labeldp-audit score` against rows, through the command line.

Each run is a fresh process under GNU time (``/usr/bin/time -v``: peak RSS = its "Maximum resident set size"),
on data roots made by benchmarks/bench_scaling.py's ``beam_day`` (a synthetic day of N rows, 2024-05-02, and the
250-tree models of benchmarks/bench_beam_scoring.py linked in). ``--trees`` runs the same command from other
copies of the code (e.g. ``git archive <commit> | tar -x -C /tmp/base``) with this virtual environment, one run of
each tree in turn, so that before and after share the machine's load. The day's output directory is removed
before each run (a stored game would be reused). ``--slices SPEC[,SPEC...]``: each root is also scored with
those slicings declared (``score --slice SPEC``; docs/slices.md), so the peak with slices stands beside the peak
without them, in the same round.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_memory.py \\
        --roots /tmp/mem/r1m,/tmp/mem/rows-4000000 --trees /tmp/mem/base,. --runs 3 -- --repetitions 20 --audit-rows all
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DAY = "2024-05-02"
MODEL = "bench-target"


def run_once(tree: Path, root: Path, extra: list[str], slices: tuple[str, ...] = ()) -> dict:
    shutil.rmtree(root / "sweeps", ignore_errors=True)
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "flows.cli", "score", "--data-root", str(root),
               "--date", DAY, "--model", MODEL, "--reference", MODEL, "--quiet", *extra,
               *(arg for spec in slices for arg in ("--slice", spec))]
    load = os.getloadavg()[0]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - began
    if done.returncode:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-3000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) / 1024
    eps = re.search(r"epsilon lower bound: (\S+)", done.stdout)
    return {"tree": str(tree), "root": root.name, "slices": ", ".join(slices) or "none", "peak_mib": peak,
            "wall_s": wall, "load": load, "eps_lb": eps.group(1) if eps else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", required=True, help="comma-separated data roots")
    parser.add_argument("--trees", default=str(ROOT), help="comma-separated code trees (default: this one)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--slices", default="", help="comma-separated slicings: also score each root with them")
    parser.add_argument("extra", nargs="*", help="arguments for `score`, after --")
    args = parser.parse_args()
    trees = [Path(tree).resolve() for tree in args.trees.split(",")]
    declared = [()] + ([tuple(s for s in args.slices.split(",") if s)] if args.slices else [])
    results = []
    for root in (Path(r) for r in args.roots.split(",")):
        for _ in range(args.runs):
            for tree in trees:
                for slices in declared:
                    result = run_once(tree, root, args.extra, slices)
                    results.append(result)
                    print(result, file=sys.stderr, flush=True)
    print("| tree | root | slices | runs | peak RSS (median, range) | wall (median, range) | load at start | eps_lb |")
    print("|---|---|---|---|---|---|---|---|")
    for root, slices in dict.fromkeys((r["root"], r["slices"]) for r in results):
        for tree in trees:
            mine = [r for r in results if r["root"] == root and r["slices"] == slices and r["tree"] == str(tree)]
            peaks, walls = [r["peak_mib"] for r in mine], [r["wall_s"] for r in mine]
            loads = ", ".join(f"{r['load']:.1f}" for r in mine)
            eps = ", ".join(sorted({str(r["eps_lb"]) for r in mine}))
            print(f"| {tree.name} | {root} | {slices} | {len(mine)} | {statistics.median(peaks):,.0f} MiB "
                  f"({min(peaks):,.0f}-{max(peaks):,.0f}) | {statistics.median(walls):.1f} s "
                  f"({min(walls):.1f}-{max(walls):.1f}) | {loads} | {eps} |")


if __name__ == "__main__":
    main()
