"""Peak traced allocation (tracemalloc) of counting a day's slices in-process (`auditing.slices.count_slices`, the
step the driver runs after the scoring job when slices are declared) against rows: a synthetic world of
tests/test_slices.py, three slicings (17 slices), R = 20 for the game (a slice plays repetition 0 alone).

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache PYTHONPATH=$PWD .venv/bin/python benchmarks/slice_count_memory.py
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

SLICINGS = ["column:category:top=5", "prior-deciles", "shown-label"]


def main() -> None:
    from test_slices import rr_world

    from auditing.config import GameConfig
    from auditing.slices import count_slices

    print("| rows | peak traced | per row |")
    print("|---|---|---|")
    for n in (100_000, 200_000, 400_000):
        target, reference, y, category, _ = rr_world(np.random.default_rng(0), n, 1.0, categories=50)
        # compiled once before measuring
        count_slices(target[:1000], reference[:1000], y[:1000], None, GameConfig(repetitions=1), ["shown-label"])
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        count_slices(target, reference, y, None, GameConfig(repetitions=20), SLICINGS, columns={"category": category})
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        print(f"| {n:,} | {peak / 2**20:.1f} MiB | {peak / n:.0f} B |")


if __name__ == "__main__":
    main()
