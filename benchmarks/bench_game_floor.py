"""The game's arithmetic floor against the front door, in one run: n rows x R repetitions.

    .venv/bin/python benchmarks/bench_game_floor.py [--rows 1000000] [--repetitions 100] [--runs 5]

Floors (numba, parallel over repetitions, the kernel's own SplitMix64 functions):
- draws: the game's two keyed words per (row, repetition), the counterfactual's and the secret bit's (four
  SplitMix64 mixes), folded per repetition by XOR and nothing else. Integer only, so the compiler vectorizes it:
  the least any exact replay of these draws can cost.
- draws as doubles: the same two keyed uniforms as doubles u = m * 2**-53, summed per repetition (a float sum
  is a serial chain, not vectorized): what drawing costs one row at a time.
- draws + increments: the draws, one comparison and one histogram increment per (row, repetition), into the
  row's |score| bin of the audit's histograms: the game's work without its bookkeeping.
Then `auditing.run_audit` (validation, tables, both passes, bounds) on the same rows, default settings at R,
and at R = 1 (the valid bound alone). Medians over runs and the peak RSS of the process.

The data is bench_audit.py's: randomized response at eps = 2 on the binary Gaussian mixture.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy as np
from numba import njit, prange

from auditing import run_audit
from auditing.audit import _KERNEL_BINS
from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.kernel import _bit, _mixed, _uniform, _word, game_tables, slot_keys


@njit(cache=True, parallel=True)
def _draws(id_bits, key_cf, key_bit, out):
    for s in prange(key_cf.size):
        kc, kb = key_cf[s], key_bit[s]
        acc = np.uint64(0)
        for i in range(id_bits.size):
            acc ^= _mixed(id_bits[i], kc) ^ _mixed(id_bits[i], kb)
        out[s] = acc


@njit(cache=True, parallel=True)
def _draws_as_doubles(id_bits, key_cf, key_bit, out):
    for s in prange(key_cf.size):
        kc, kb = key_cf[s], key_bit[s]
        acc = 0.0
        for i in range(id_bits.size):
            acc += _uniform(id_bits[i], kc) + _uniform(id_bits[i], kb)
        out[s] = acc


@njit(cache=True, parallel=True)
def _draws_and_increments(id_bits, threshold, bins, key_cf, key_bit, histograms):
    for s in prange(key_cf.size):
        kc, kb = key_cf[s], key_bit[s]
        h = histograms[s]
        for i in range(id_bits.size):
            h[bins[i]] += np.int64(_word(id_bits[i], kc) < threshold[i]) + (_bit(id_bits[i], kb) << 32)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x, y = gaussian_mixture(args.rows, 2, rng)
    target = randomized_response(y, 2, 2.0, rng).astype(np.float64)
    reference = true_posterior(x, 2)[:, 1]
    del x
    ids = np.arange(args.rows, dtype=np.int64)
    id_bits = ids.view(np.uint64)
    keys = slot_keys(0, [(r, None) for r in range(args.repetitions)])
    tables = game_tables(np.column_stack([1 - target, target]), np.column_stack([1 - reference, reference]), y, ids,
                         score="paper", power=2.0, bins=_KERNEL_BINS)
    bins = np.ascontiguousarray(tables.codes[:, 1] >> 1).astype(np.int64)
    folded, summed = np.zeros(keys.size, np.uint64), np.zeros(keys.size)
    histograms = np.zeros((keys.size, _KERNEL_BINS.num_bins), np.int64)
    print(f"rows={args.rows} repetitions={args.repetitions} runs={args.runs}; load average {os.getloadavg()}; "
          f"after data: peak RSS {peak_rss_mib():.0f} MiB", flush=True)

    def floors():
        return {
            "floor: draws": lambda: _draws(id_bits, keys.key_cf, keys.key_bit, folded),
            "floor: draws as doubles": lambda: _draws_as_doubles(id_bits, keys.key_cf, keys.key_bit, summed),
            "floor: draws + increments": lambda: _draws_and_increments(id_bits, tables.threshold, bins, keys.key_cf,
                                                                       keys.key_bit, histograms),
            f"run_audit, R = {args.repetitions}": lambda: run_audit(target, reference, y, ids,
                                                                     GameConfig(repetitions=args.repetitions), BoundConfig()),
            "run_audit, R = 1": lambda: run_audit(target, reference, y, ids, GameConfig(repetitions=1), BoundConfig()),
        }

    stages = floors()
    for work in stages.values():  # compile or load every kernel outside the timed runs
        work()
    timings: dict[str, list[float]] = {name: [] for name in stages}
    for run in range(args.runs):
        for name, work in stages.items():  # interleaved, so that a slow moment of the machine hits all alike
            began = time.perf_counter()
            work()
            timings[name].append(time.perf_counter() - began)
        print(f"run {run}: " + ", ".join(f"{name} {t[-1]:.3f}s" for name, t in timings.items()), flush=True)

    medians = {name: statistics.median(t) for name, t in timings.items()}
    audit = medians[f"run_audit, R = {args.repetitions}"]
    print("\nmedians over runs (wall):")
    for name, value in medians.items():
        print(f"  {name:<28} {value:7.3f} s   (run_audit at R = {args.repetitions} is {audit / value:5.2f}x this)")
    per_million = 1e6 / args.rows
    print(f"  run_audit at R = 1: {1000 * medians['run_audit, R = 1'] * per_million:.0f} ms per 1e6 rows")
    print(f"  peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
