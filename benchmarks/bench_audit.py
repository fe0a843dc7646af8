"""Full in-process audit benchmark: n = 1e6 binary examples, R = 100 repetitions, a 100-point c'
grid, both bound methods. Prints median wall time per stage and peak resident memory.

    .venv/bin/python benchmarks/bench_audit.py [--rows 1000000] [--repetitions 100] [--runs 3] [--compare-numpy]

The game runs on the compiled kernel (auditing/game/kernel.py) through the two exact passes of
auditing.audit.compiled_sweep; --compare-numpy also times the numpy reference path once, side by side.

The data is randomized response at eps = 2 on the binary Gaussian mixture with counterfactuals from the true
posterior (paper App. 11), so the attack finds real signal and the bounds do real work.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import time

import numpy as np

from auditing.audit import audit_from_counts, compiled_sweep, numpy_sweep, run_audit
from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.play import as_class_probabilities
from auditing.game.scores import resolve_score


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compare-numpy", action="store_true",
                        help="also time the numpy reference path once (auditing.game.play.play_repetition + a full "
                             "ranking per repetition) and check that its counts are equal")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x, y = gaussian_mixture(args.rows, 2, rng)
    released = randomized_response(y, 2, 2.0, rng)
    target = as_class_probabilities(released.astype(np.float64), "p_target")
    reference = as_class_probabilities(true_posterior(x, 2)[:, 1], "p_reference")
    del x
    ids = np.arange(args.rows, dtype=np.int64)
    print(f"rows={args.rows} repetitions={args.repetitions} runs={args.runs}; load average {os.getloadavg()}; "
          f"after data: peak RSS {peak_rss_mib():.0f} MiB")

    # Load the compiled kernels (numba cache) outside the timed region.
    run_audit(target[:2000], reference[:2000], y[:2000], game=GameConfig(repetitions=2), bound=BoundConfig(method="fdp"))

    stages = ("game + counts", "binomial bounds", "fdp bounds", "total")
    timings: dict[str, list[float]] = {key: [] for key in stages}
    cpu: dict[str, list[float]] = {key: [] for key in stages}
    results = {}
    for run in range(args.runs):
        marks = [(time.perf_counter(), time.process_time())]
        cfg_game, cfg_bound = GameConfig(repetitions=args.repetitions, seed=run), BoundConfig(method="binomial")
        # every slot of the slot plan: the R repetitions and both keyed halves of repetition 0
        counts, halves, _, _ = compiled_sweep(target, reference, y, ids, cfg_game, None)
        marks.append((time.perf_counter(), time.process_time()))
        results["binomial"] = audit_from_counts(counts, cfg_game, cfg_bound, halves)
        marks.append((time.perf_counter(), time.process_time()))
        results["fdp"] = audit_from_counts(counts, GameConfig(repetitions=args.repetitions, seed=run), BoundConfig(method="fdp"),
                                           halves)
        marks.append((time.perf_counter(), time.process_time()))
        spans = [(b[0] - a[0], b[1] - a[1]) for a, b in itertools.pairwise(marks)]
        spans.append((marks[-1][0] - marks[0][0], marks[-1][1] - marks[0][1]))
        for key, (wall, used) in zip(stages, spans, strict=True):
            timings[key].append(wall)
            cpu[key].append(used)
        print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in timings.items())
              + f" (process CPU {cpu['total'][-1]:.2f}s); load average {os.getloadavg()[0]:.1f}", flush=True)

    print("\nmedians over runs (wall; process CPU time, both cores, in brackets):")
    for key in stages:
        print(f"  {key:<16} {statistics.median(timings[key]):8.2f} s  [{statistics.median(cpu[key]):6.2f} s CPU]")
    total = statistics.median(timings["total"])
    shares = {key: statistics.median(timings[key]) / total for key in stages[:3]}
    print("  shares of the total: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in shares.items()))
    print(f"  peak RSS        {peak_rss_mib():8.0f} MiB")
    for method, res in results.items():
        print(f"  last run, {method}: valid eps_lb {res.epsilon_lower_bound:.4f} (bonferroni, 95%, delta={res.bound.delta:g}), "
              f"paper's statistic {res.epsilon_mean:.4f} +- {res.epsilon_std:.4f}; true eps 2.0")
    if args.compare_numpy:
        cfg_game, cfg_bound = GameConfig(repetitions=args.repetitions, seed=args.runs - 1), BoundConfig()
        began = time.perf_counter()
        compiled, _, _, _ = compiled_sweep(target, reference, y, ids, cfg_game, None)
        middle = time.perf_counter()
        reference_counts, _, _, _ = numpy_sweep(target, reference, y, ids, cfg_game, resolve_score("paper"), None)
        ended = time.perf_counter()
        print(f"  side by side, game + counts: compiled {middle - began:.2f} s, numpy path {ended - middle:.2f} s "
              f"({(ended - middle) / (middle - began):.1f}x); counts equal: "
              f"{bool(np.array_equal(compiled.correct, reference_counts.correct))}")


if __name__ == "__main__":
    main()
