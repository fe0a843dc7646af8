"""Benchmark: the f-DP epsilon lower bound (paper Alg. 3 on the (eps, delta) curve, `auditing.bounds.fdp`).

Prints, after JIT warm-up, the median (and min) wall time of
  - one `fdp_epsilon_lower_bound` call for m = 1e6, c' = 2e5 at c = 0.55c', 0.6c', 0.75c', 0.9c' (delta = 1e-5,
    the f-DP default, and delta = 0), with the bound and the number of Algorithm 3 decisions it took;
  - one `fdp_rejects` decision at the bound (what `auditing.bounds.lower_bound.best_bound` prunes with);
  - a sweep: `best_bound` and `pointwise_bounds` (`auditing.bounds.lower_bound`, method fdp) over a 100-point log grid of c'
    from 1e-4 m to m with counts drawn as randomized response at eps = 2 and at eps = 0.2 plays them (each
    guess right with probability e^eps/(1+e^eps)), the 100 repetitions of `audit_from_counts`' paper statistic
    (100 x best_bound), and the "max certifiable" sweep (c = c' everywhere);
  - one `fdp_mu_lower_bound` call (the Gaussian mu reading).
The one-time numba cost is measured separately in fresh subprocesses: a cold compile into an empty cache
directory, then a start that loads that cache; and the process's peak memory (ru_maxrss).

    .venv/bin/python benchmarks/bench_fdp_bound.py [--runs 15]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a plain script from anywhere

DELTA = 1e-5
CONFIDENCE = 0.95
M, GUESSES = 10**6, 2 * 10**5
FRACTIONS = (0.55, 0.6, 0.75, 0.9)
SWEEP_POINTS, SWEEP_MIN_FRACTION, REPETITIONS = 100, 1e-4, 100

_FIRST_CALL = """
import time
t0 = time.perf_counter()
from auditing.bounds.fdp import fdp_epsilon_lower_bound
t1 = time.perf_counter()
fdp_epsilon_lower_bound(110000, 200000, 1000000, delta=1e-5)
t2 = time.perf_counter()
fdp_epsilon_lower_bound(110000, 200000, 1000000, delta=1e-5)
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


def count_decisions(c: int, cp: int, m: int, delta: float) -> int:
    """How many Algorithm 3 decisions one bound takes (the kernel call is counted through a wrapper)."""
    import auditing.bounds.fdp as module

    calls = 0
    kernel = module._curve_rejects

    def counting(*args):
        nonlocal calls
        calls += 1
        return kernel(*args)

    module._curve_rejects = counting
    try:
        module.fdp_epsilon_lower_bound(c, cp, m, delta=delta)
    finally:
        module._curve_rejects = kernel
    return calls


def sweep_counts(rng: np.random.Generator, epsilon: float, repetitions: int) -> tuple[np.ndarray, np.ndarray]:
    grid = np.unique(np.clip(np.ceil(np.geomspace(SWEEP_MIN_FRACTION, 1.0, SWEEP_POINTS) * M - 1e-9), 1, M)
                     .astype(np.int64))
    accuracy = math.exp(epsilon) / (1 + math.exp(epsilon))
    # Nested guess sets: the correct count grows along the grid like the product's sweep counts do.
    increments = rng.binomial(np.diff(grid, prepend=0), accuracy, size=(repetitions, grid.size))
    return np.cumsum(increments, axis=1), grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per point (default 15)")
    args = parser.parse_args()

    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load average before: "
          f"{os.getloadavg()[0]:.2f}")
    cold, cached = first_call_costs()
    print(f"one-time cost, fresh process, empty numba cache: import {cold[0]:.2f} s, first call (compiles) "
          f"{cold[1]:.2f} s, second call {cold[2] * 1e3:.3f} ms")
    print(f"one-time cost, fresh process, warm numba cache:  import {cached[0]:.2f} s, first call (loads cache) "
          f"{cached[1]:.2f} s, second call {cached[2] * 1e3:.3f} ms")

    from auditing.bounds.fdp import fdp_epsilon_lower_bound, fdp_mu_lower_bound, fdp_rejects
    from auditing.bounds.lower_bound import best_bound, pointwise_bounds

    fdp_epsilon_lower_bound(110000, GUESSES, M, delta=DELTA)  # JIT warm-up
    fdp_mu_lower_bound(110000, GUESSES, M)
    print(f"\none bound: m = {M}, c' = {GUESSES}, confidence = {CONFIDENCE}, kappa = 0; {args.runs} runs each")
    print("| c | c/c' | delta | eps lower bound | decisions | median ms | min ms | one fdp_rejects at the bound, "
          "median us |")
    print("|---|---|---|---|---|---|---|---|")
    for fraction in FRACTIONS:
        c = round(fraction * GUESSES)
        for delta in (DELTA, 0.0):
            median, best, eps = timed(lambda c=c, d=delta: fdp_epsilon_lower_bound(c, GUESSES, M, delta=d),
                                      args.runs)
            reject_median, _, _ = timed(lambda c=c, d=delta, e=eps: fdp_rejects(c, GUESSES, M, e, delta=d),
                                        args.runs)
            print(f"| {c} | {fraction} | {delta:g} | {eps:.4f} | {count_decisions(c, GUESSES, M, delta)} | "
                  f"{median * 1e3:.3f} | {best * 1e3:.3f} | {reject_median * 1e6:.1f} |")

    print("\nGaussian mu reading (fdp_mu_lower_bound, relative tolerance 1e-10):")
    for fraction in FRACTIONS:
        c = round(fraction * GUESSES)
        median, _, mu = timed(lambda c=c: fdp_mu_lower_bound(c, GUESSES, M), args.runs)
        print(f"  c = {c}: mu lower bound {mu:.6f}, median {median * 1e3:.3f} ms")

    rng = np.random.default_rng(0)
    runs = max(3, args.runs // 3)
    print(f"\nsweep: m = {M}, {SWEEP_POINTS}-point log grid of c' from {SWEEP_MIN_FRACTION:g} m to m, "
          f"method fdp, delta = {DELTA:g}, confidence {CONFIDENCE}; {runs} runs each")
    print("| counts | best_bound (1 sweep), median ms | best value | pointwise_bounds (100 bounds), median ms | "
          f"{REPETITIONS} x best_bound (paper statistic), median s |")
    print("|---|---|---|---|---|")
    kw = dict(method="fdp", delta=DELTA, confidence=CONFIDENCE)
    for epsilon in (2.0, 0.2):
        correct, grid = sweep_counts(rng, epsilon, REPETITIONS)
        one, _, (value, _) = timed(lambda c=correct, g=grid: best_bound(c[0], g, M, **kw), runs)
        point, _, _ = timed(lambda c=correct, g=grid: pointwise_bounds(c[0], g, M, **kw), runs)
        allrep, _, _ = timed(lambda c=correct, g=grid: [best_bound(c[r], g, M, **kw) for r in range(REPETITIONS)],
                             max(1, runs // 2))
        print(f"| RR at eps = {epsilon} | {one * 1e3:.2f} | {value:.4f} | {point * 1e3:.2f} | {allrep:.3f} |")
    grid = sweep_counts(rng, 2.0, 1)[1]
    cert, _, (value, _) = timed(lambda: best_bound(grid, grid, M, **kw), runs)
    print(f"| max certifiable (c = c' on every point) | {cert * 1e3:.2f} | {value:.4f} | | |")

    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"\npeak memory of this process (ru_maxrss, imports included): {peak_kib / 1024:.1f} MiB")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
