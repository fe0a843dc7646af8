"""Benchmark: one f-DP epsilon lower bound (paper Alg. 3 + Gaussian-DP conversion, `auditing.fdp_bounds`).

Prints, for m = 1e6 and c' = 2e5 at c = 0.55c', 0.6c', 0.75c', 0.9c': the median (and min) wall time of one
`fdp_epsilon_lower_bound` call over several runs after JIT warm-up, the bound, and the process's peak memory
(ru_maxrss). The one-time numba cost is measured separately in fresh subprocesses: a cold compile into an empty
cache directory, then a start that loads that cache. Finally it runs the public reference's approach (a fixed
1000-value noise grid with a scalar Python/scipy recursion per value, `benchmarks/reference_fdp_grid.py`) and
ours on m = 20000, c = 5000, c' = 8000 and reports both times, the ratio and both eps values.

    .venv/bin/python benchmarks/bench_fdp_bound.py [--runs 15] [--skip-reference]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a plain script from anywhere
sys.path.insert(0, str(Path(__file__).resolve().parent))

DELTA = 1e-6
CONFIDENCE = 0.95
M, GUESSES = 10**6, 2 * 10**5
FRACTIONS = (0.55, 0.6, 0.75, 0.9)
REFERENCE_POINT = (5000, 8000, 20000)  # (c, c', m) of DESIGN.md

_FIRST_CALL = """
import time
t0 = time.perf_counter()
from auditing.fdp_bounds import fdp_epsilon_lower_bound
t1 = time.perf_counter()
fdp_epsilon_lower_bound(110000, 200000, 1000000, delta=1e-6)
t2 = time.perf_counter()
fdp_epsilon_lower_bound(110000, 200000, 1000000, delta=1e-6)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def first_call_costs() -> tuple[list[float], list[float]]:
    """(import, first call, second call) seconds in a fresh process: cold compile, then cached."""
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        out = []
        for _ in range(2):
            text = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, check=True, capture_output=True,
                                  text=True).stdout
            out.append([float(v) for v in text.split()])
    return out[0], out[1]


def timed(fn, runs: int) -> tuple[float, float, object]:
    times, value = [], None
    for _ in range(runs):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per point (default 15)")
    parser.add_argument("--skip-reference", action="store_true", help="skip the slow reference comparison")
    args = parser.parse_args()

    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average before: "
          f"{os.getloadavg()[0]:.2f}")
    cold, cached = first_call_costs()
    print(f"one-time cost, fresh process, empty numba cache: import {cold[0]:.2f} s, first call (compiles) "
          f"{cold[1]:.2f} s, second call {cold[2] * 1e3:.2f} ms")
    print(f"one-time cost, fresh process, warm numba cache:  import {cached[0]:.2f} s, first call (loads cache) "
          f"{cached[1]:.2f} s, second call {cached[2] * 1e3:.2f} ms")

    from auditing.fdp_bounds import fdp_epsilon_lower_bound, fdp_mu_lower_bound

    fdp_epsilon_lower_bound(110000, GUESSES, M, delta=DELTA)  # JIT warm-up
    print(f"\nm = {M}, c' = {GUESSES}, delta = {DELTA}, confidence = {CONFIDENCE}, tau = 0; {args.runs} runs each")
    print("| c | c/c' | eps lower bound | mu lower bound | median ms | min ms |")
    print("|---|---|---|---|---|---|")
    for fraction in FRACTIONS:
        c = round(fraction * GUESSES)
        median, best, eps = timed(lambda c=c: fdp_epsilon_lower_bound(c, GUESSES, M, delta=DELTA), args.runs)
        mu = fdp_mu_lower_bound(c, GUESSES, M)
        print(f"| {c} | {fraction} | {eps:.4f} | {mu:.6f} | {median * 1e3:.3f} | {best * 1e3:.3f} |")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"peak memory of this process (ru_maxrss, imports included): {peak_kib / 1024:.1f} MiB")

    if args.skip_reference:
        return
    from reference_fdp_grid import reference_grid_epsilon

    c, cp, m = REFERENCE_POINT
    ours_median, _, ours_eps = timed(lambda: fdp_epsilon_lower_bound(c, cp, m, delta=DELTA), args.runs)
    print(f"\nreference comparison at m = {m}, c = {c}, c' = {cp}, delta = {DELTA}:")
    start = time.perf_counter()
    ref_eps, ref_index, ref_found = reference_grid_epsilon(c, cp, m, delta=DELTA, gamma=1 - CONFIDENCE)
    ref_seconds = time.perf_counter() - start
    print(f"  ours:      eps = {ours_eps:.4f}   median {ours_median * 1e3:.3f} ms over {args.runs} runs")
    print(f"  reference: eps = {ref_eps:.4f}   {ref_seconds:.1f} s, one run (grid index {ref_index}, "
          f"sigma = {0.001 + 0.01 * ref_index:.3f}, rejected anything: {ref_found})")
    print(f"  ratio reference / ours: {ref_seconds / ours_median:,.0f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
