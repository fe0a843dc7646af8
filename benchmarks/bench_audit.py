"""Full in-process audit benchmark (issue 2): n = 1e6 binary examples, R = 100 repetitions, a 100-point c'
grid, both bound methods. Prints median wall time per stage and peak resident memory.

    .venv/bin/python benchmarks/bench_audit.py [--rows 1000000] [--repetitions 100] [--runs 3]

The data is randomized response at eps = 2 on the binary Gaussian mixture with counterfactuals from the true
posterior (paper App. 11), so the attack finds real signal and the bounds do real work.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np

from auditing.audit import AuditConfig, audit_from_counts
from auditing.game import as_class_probabilities, play_repetition
from auditing.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.scores import resolve_score
from auditing.sweep import SweepCounts, correct_at, rank_order


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x, y = gaussian_mixture(args.rows, 2, rng)
    released = randomized_response(y, 2, 2.0, rng)
    target = as_class_probabilities(released.astype(np.float64), "p_target")
    reference = as_class_probabilities(true_posterior(x, 2)[:, 1], "p_reference")
    del x
    ids = np.arange(args.rows, dtype=np.int64)
    score = resolve_score("paper")
    print(f"rows={args.rows} repetitions={args.repetitions} runs={args.runs}; after data: peak RSS {peak_rss_mib():.0f} MiB")

    # Warm the numba cache / JIT for the f-DP recursion outside the timed region.
    warm_cfg = AuditConfig(method="fdp", repetitions=1, grid_points=5)
    audit_from_counts(SweepCounts(m=100, guesses=np.array([[10, 50, 100]]), correct=np.array([[9, 40, 70]])), warm_cfg)

    timings: dict[str, list[float]] = {"game+counts": [], "binomial bounds": [], "fdp bounds": [], "total": []}
    results = {}
    for run in range(args.runs):
        t0 = time.perf_counter()
        cfg = AuditConfig(repetitions=args.repetitions, method="binomial")
        grid = cfg.grid_for(args.rows)
        correct = np.empty((args.repetitions, grid.size), dtype=np.int64)
        for r in range(args.repetitions):
            rows = play_repetition(target, reference, y, ids, seed=run, repetition=r, score=score)
            correct[r] = correct_at(rows.correct, rank_order(rows.scores, ids), grid)
        counts = SweepCounts(m=args.rows, guesses=np.broadcast_to(grid, correct.shape).copy(), correct=correct)
        t1 = time.perf_counter()
        results["binomial"] = audit_from_counts(counts, cfg)
        t2 = time.perf_counter()
        results["fdp"] = audit_from_counts(counts, AuditConfig(repetitions=args.repetitions, method="fdp"))
        t3 = time.perf_counter()
        for key, value in (("game+counts", t1 - t0), ("binomial bounds", t2 - t1), ("fdp bounds", t3 - t2), ("total", t3 - t0)):
            timings[key].append(value)
        print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in timings.items()), flush=True)

    print("\nmedians over runs:")
    for key, values in timings.items():
        print(f"  {key:<16} {statistics.median(values):8.2f} s")
    print(f"  peak RSS        {peak_rss_mib():8.0f} MiB")
    for method, res in results.items():
        print(f"  last run, {method}: valid eps_lb {res.epsilon_lower_bound:.4f} (bonferroni, 95%, delta={res.delta:g}), "
              f"paper's statistic {res.epsilon_mean:.4f} +- {res.epsilon_std:.4f}; true eps 2.0")


if __name__ == "__main__":
    main()
