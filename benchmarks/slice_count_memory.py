"""Peak traced allocation (tracemalloc) of counting a day's slices against rows, both ways:

- ``in memory``: `auditing.slices.count_slices` on the day's rows held at once (what `audit-scores --slice` does);
- ``batch by batch``: the scoring job's slice steps (`pipelines.scoring.day_slices.SliceSteps`, each accumulator
  folded over the day's scored batches as the job's CombineFns fold them), on batches of 65,536 rows read with
  their slicing column, with seeded random probabilities in place of the models'.

Synthetic days made by benchmarks/bench_scaling.py's ``beam_day`` (``--roots``), three slicings (17 slices), R = 20:

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache PYTHONPATH=$PWD .venv/bin/python benchmarks/slice_count_memory.py \\
        --roots /tmp/slicemem/rows-100000,/tmp/slicemem/rows-200000,/tmp/slicemem/rows-400000
"""

from __future__ import annotations

import argparse
import datetime as dt
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

SLICINGS = ("column:C9:top=5", "prior-deciles", "shown-label")
DAY = dt.date(2024, 5, 2)
BATCH = 65_536


def day_batches(root: Path):
    """The day's scored batches with their slicing column (random probabilities seeded per batch, every 10th row a
    check row), read a batch at a time; the same batches on every call."""
    from pipelines.data.day import listed_day
    from pipelines.scoring.partition_batches import read_tasks
    from pipelines.scoring.scored_batch import ScoredBatch

    day = listed_day(root, DAY)
    dataset = day.dataset
    number = 0
    for task in read_tasks(list(day.files)):
        for index, batch in enumerate(pq.ParquetFile(task.path).iter_batches(
                batch_size=BATCH, row_groups=[task.row_group], columns=[dataset.row_key, "label", "C9"])):
            ids = batch.column(dataset.row_key).to_numpy().astype(np.int64)
            labels = batch.column("label").to_numpy().astype(np.int64)
            c9 = batch.column("C9")
            c9 = c9.cast(c9.type.value_type) if hasattr(c9.type, "value_type") else c9
            rng = np.random.default_rng(number)
            number += 1
            p_reference = rng.uniform(0.02, 0.3, ids.size)
            p_target = np.clip(p_reference + rng.normal(0, 0.05, ids.size), 0.01, 0.99)
            yield ScoredBatch(f"{task.name}-b{index:05d}", ids, labels, np.column_stack([1 - p_target, p_target]),
                              np.column_stack([1 - p_reference, p_reference]), None, ids % 10 == 0,
                              {"C9": np.asarray(c9.to_numpy(zero_copy_only=False))})


def held(root: Path) -> dict:
    """The day's rows held at once (for the in-memory count)."""
    out = {"ids": [], "labels": [], "target": [], "reference": [], "check": [], "c9": []}
    for batch in day_batches(root):
        for key, value in (("ids", batch.row_ids), ("labels", batch.labels), ("target", batch.p_target),
                           ("reference", batch.p_reference), ("check", batch.check), ("c9", batch.columns["C9"])):
            out[key].append(value)
    return {key: np.concatenate(value) for key, value in out.items()}


def traced(call) -> float:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    call()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def main() -> None:
    from auditing.audit import CheckRows
    from auditing.game.config import GameConfig
    from auditing.game.sweep_reduce import BinSpec
    from auditing.slices import count_slices, parse_slicing
    from pipelines.scoring.day_slices import SliceSteps, played_game
    from pipelines.scoring.scoring_batches import GameSpec

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", required=True, help="comma-separated data roots (bench_scaling.beam_day)")
    args = parser.parse_args()
    game = GameConfig(repetitions=20)
    slicings = tuple(parse_slicing(s) for s in SLICINGS)
    print("| rows | in memory (peak traced, per row) | batch by batch (peak traced, per row) |")
    print("|---|---|---|")
    for root in (Path(r) for r in args.roots.split(",")):
        rows_held = held(root)
        a, c = ~rows_held["check"], rows_held["check"]

        def in_memory(a=a, c=c, h=rows_held):
            return count_slices(h["target"][a], h["reference"][a], h["labels"][a], h["ids"][a], game, slicings,
                                columns={"C9": h["c9"][a]},
                                check=CheckRows(h["target"][c], h["reference"][c], h["labels"][c], h["ids"][c]),
                                check_columns={"C9": h["c9"][c]}, night=DAY)

        def batch_by_batch(root=root):
            steps = SliceSteps(slicings, GameSpec(played_game(game, DAY), BinSpec(), capacity_check=True))
            while (step := steps.next_step()) is not None:
                accumulator = step[1]()
                for batch in day_batches(root):
                    accumulator.add(batch)
                steps.take(step[0], accumulator)
            return steps.counts()

        batch_by_batch()  # compiled once before measuring
        rows = int(rows_held["ids"].size)
        first, second = traced(in_memory), traced(batch_by_batch)
        del rows_held
        print(f"| {rows:,} | {first / 2**20:.1f} MiB ({first / rows:.0f} B) | {second / 2**20:.1f} MiB "
              f"({second / rows:.0f} B) |", flush=True)


if __name__ == "__main__":
    main()
