"""Peak traced allocation (tracemalloc) of counting a day's slices against rows, both ways:

- ``in memory``: `auditing.slices.count_slices` on the day's rows held at once (what `audit-scores --slice` does);
- ``batch by batch``: `pipelines.scoring.day_slices.day_slice_counts` on per-batch slice-row files like those the
  scoring job writes (here from the partition's row groups with seeded random probabilities in place of the
  models', batches of 65,536 rows), with the slicings' columns read per row group: what `score` and the nightly do.

Synthetic days made by benchmarks/bench_scaling.py's ``beam_day`` (``--roots``), three slicings (17 slices), R = 20:

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache PYTHONPATH=$PWD .venv/bin/python benchmarks/slice_count_memory.py \\
        --roots /tmp/slicemem/rows-100000,/tmp/slicemem/rows-200000,/tmp/slicemem/rows-400000
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

SLICINGS = ("column:C9:top=5", "prior-deciles", "shown-label")
DAY = dt.date(2024, 5, 2)
BATCH = 65_536


def write_slice_rows(root: Path, out: Path):
    """Per-batch slice-row files for the day (random probabilities, every 10th row a check row); returns the
    partition's read tasks and the arrays held at once (for the in-memory count)."""
    from pipelines.data.dataset_spec import dataset_of
    from pipelines.scoring.day_slices import slice_rows_table
    from pipelines.scoring.partition_batches import partition_files, read_tasks
    from pipelines.scoring.scored_batch import ScoredBatch

    dataset = dataset_of(root, DAY)
    tasks = read_tasks(partition_files(root, DAY, dataset))
    rng = np.random.default_rng(0)
    held = {"ids": [], "labels": [], "target": [], "reference": [], "check": [], "c9": []}
    for task in tasks:
        table = pq.ParquetFile(task.path).read_row_group(task.row_group, columns=[dataset.row_key, "label", "C9"])
        ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
        labels = table.column("label").to_numpy().astype(np.int64)
        c9 = table.column("C9")
        c9 = c9.cast(c9.type.value_type).to_numpy(zero_copy_only=False) if hasattr(c9.type, "value_type") else \
            c9.to_numpy(zero_copy_only=False)
        for index, start in enumerate(range(0, ids.size, BATCH)):
            part = slice(start, start + BATCH)
            n = ids[part].size
            p_reference = rng.uniform(0.02, 0.3, n)
            p_target = np.clip(p_reference + rng.normal(0, 0.05, n), 0.01, 0.99)
            check = ids[part] % 10 == 0
            batch = ScoredBatch(f"{task.name}-b{index:05d}", ids[part], labels[part],
                                np.column_stack([1 - p_target, p_target]),
                                np.column_stack([1 - p_reference, p_reference]), {}, check)
            pq.write_table(slice_rows_table(batch), out / f"part-{batch.batch_id}.parquet")
            for key, value in (("ids", ids[part]), ("labels", labels[part]), ("target", batch.p_target),
                               ("reference", batch.p_reference), ("check", check), ("c9", c9[part])):
                held[key].append(value)
    return dataset, tasks, {key: np.concatenate(value) for key, value in held.items()}


def traced(call) -> float:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    call()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def main() -> None:
    from auditing.audit import CheckRows
    from auditing.config import GameConfig
    from auditing.game.sweep_reduce import BinSpec
    from auditing.slices import count_slices, parse_slicing
    from pipelines.scoring.day_slices import day_slice_counts

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", required=True, help="comma-separated data roots (bench_scaling.beam_day)")
    args = parser.parse_args()
    game = GameConfig(repetitions=20)
    slicings = tuple(parse_slicing(s) for s in SLICINGS)
    print("| rows | in memory (peak traced, per row) | batch by batch (peak traced, per row) |")
    print("|---|---|---|")
    for root in (Path(r) for r in args.roots.split(",")):
        with tempfile.TemporaryDirectory() as work:
            dataset, tasks, held = write_slice_rows(root, Path(work))
            a, c = ~held["check"], held["check"]

            def in_memory(a=a, c=c, held=held):
                count_slices(held["target"][a], held["reference"][a], held["labels"][a], held["ids"][a], game,
                             slicings, columns={"C9": held["c9"][a]},
                             check=CheckRows(held["target"][c], held["reference"][c], held["labels"][c],
                                             held["ids"][c]), check_columns={"C9": held["c9"][c]}, night=DAY)

            def batch_by_batch(work=work, dataset=dataset, tasks=tasks, root=root):
                day_slice_counts(Path(work), root, DAY, dataset, game, slicings, night=DAY, tasks=tasks,
                                 batch_size=BATCH, bins=BinSpec(), capacity_check=True)

            batch_by_batch()  # compiled once before measuring
            rows = int(held["ids"].size)
            first, second = traced(in_memory), traced(batch_by_batch)
            print(f"| {rows:,} | {first / 2**20:.1f} MiB ({first / rows:.0f} B) | {second / 2**20:.1f} MiB "
                  f"({second / rows:.0f} B) |", flush=True)


if __name__ == "__main__":
    main()
