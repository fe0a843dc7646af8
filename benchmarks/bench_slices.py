"""Benchmark: slices against a planted leak and against a compliant model (docs/slices.md).

Worlds (seeded, tests/support/rr_slice_worlds.py's): click rates D(1 | x) of 1-30%, labels from D, binary
randomized response at eps 1 on every row, the target the Bayes posterior under RR at eps 1, the reference D.
- planted: on 5% of the rows (category 0 of 20) the mechanism does not randomize (eps 20); the model's outputs
  have the same size everywhere. Claim 1. Per seed: the global valid bound and status, and the slice audit
  (column:category:top=20, prior-deciles, shown-label; budget 5%) with its statuses.
- compliant: the same world without the leak (true eps 1); per seed, whether any slice's bound exceeds 1.

    python benchmarks/bench_slices.py [--rows 100000] [--seeds 20] [--compliant-seeds 200 --compliant-rows 20000]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from auditing.config import BoundConfig
from auditing.game.config import GameConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditing.audit import run_audit
from auditing.slices import audit_slices
from auditing.verdict.judge import judge
from tests.support.rr_slice_worlds import rr_world

SLICINGS = ["column:category:top=20", "prior-deciles", "shown-label"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--compliant-rows", type=int, default=20_000)
    parser.add_argument("--compliant-seeds", type=int, default=200)
    args = parser.parse_args()

    game, bound = GameConfig(repetitions=1), BoundConfig()
    global_caught = slice_caught = both = 0
    times, bounds, slice_bounds = [], [], []
    for seed in range(args.seeds):
        target, reference, y, category, _ = rr_world(np.random.default_rng(seed), args.rows, 1.0, leak_eps=20.0)
        seeded = dataclasses.replace(game, seed=seed)
        result = run_audit(target, reference, y, None, seeded, bound)
        start = time.perf_counter()
        audit = audit_slices(target, reference, y, None, seeded, bound, SLICINGS, columns={"category": category})
        times.append(time.perf_counter() - start)
        verdict = judge(dataclasses.replace(result, slices=audit), 1.0)
        leaky = next(s for s in verdict.slices if s.name == "category=0")
        g, s = verdict.status == "VIOLATION", leaky.status == "VIOLATION"
        global_caught += g
        slice_caught += s
        both += g and s
        bounds.append(result.epsilon_lower_bound)
        slice_bounds.append(leaky.epsilon_lower_bound)
        print(f"seed {seed}: global {result.epsilon_lower_bound:.3f} ({verdict.status}); category=0 "
              f"{leaky.epsilon_lower_bound:.3f} ({leaky.status}); slice violations "
              f"{[v.name for v in verdict.slice_violations]}", flush=True)
    print(f"planted leak, {args.rows} rows, {audit.declared} slices each at confidence {audit.confidence:.5f}: "
          f"global VIOLATION in {global_caught}/{args.seeds} seeds (median bound {np.median(bounds):.3f}); leaky "
          f"slice VIOLATION in {slice_caught}/{args.seeds} (median bound {np.median(slice_bounds):.3f}); slice audit "
          f"median {np.median(times):.2f} s")

    above = 0
    for seed in range(args.compliant_seeds):
        target, reference, y, category, _ = rr_world(np.random.default_rng(50_000 + seed), args.compliant_rows, 1.0)
        audit = audit_slices(target, reference, y, None, dataclasses.replace(game, seed=seed), bound, SLICINGS,
                             columns={"category": category})
        above += any(s.epsilon_lower_bound > 1.0 for s in audit.slices)
    pvalue = stats.binomtest(above, args.compliant_seeds, 0.05, alternative="greater").pvalue
    print(f"compliant, {args.compliant_rows} rows, {audit.declared} slices: a slice above the true eps 1 in "
          f"{above}/{args.compliant_seeds} seeds (budget 5%; one-sided binomial p-value {pvalue:.3g})")


if __name__ == "__main__":
    main()
