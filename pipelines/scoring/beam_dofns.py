"""The DoFns and CombineFns of the Beam scoring job (`pipelines.scoring.beam_scoring`), the functions it maps over
elements between them, and the work directory its one sink writes and its driver reads back.

Each is a thin wrapper around a plain function of `pipelines.scoring.partition_batches`, `pipelines.scoring.scored_batch` or
`pipelines.scoring.scoring_batches`; they are module-level classes, so a runner pickles them by reference.

Work directory (``_work/`` under the output being written): ``pass1.npz`` (the merged pass-1 accumulator),
``duplicates/bucket-*.json`` (row-id uniqueness per hash bucket), ``expected.npz`` (with ``expected_curve``),
``slots/slot-*.npz`` (each slot's exact counts) and ``slices/<step>.pkl`` (a slice step's merged accumulator,
`SliceStepFn`), each written atomically by `WriteResults`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import sys
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditing.game.expected import expected_histogram
from auditing.game.sweep import rank_key
from labeldp import faults
from labeldp.errors import LabelDPInputError
from labeldp.progress import Countdown
from pipelines.data import schema
from pipelines.data.dataset_spec import INTERNAL_LABEL, INTERNAL_ROW_ID
from pipelines.scoring.beam_coders import BatchCoder
from pipelines.scoring.grouped_files import (
    GROUP_ROWS,
    key_order,
    key_rows,
    merge_sorted,
    read_groups,
    save_atomically,
    write_grouped,
)
from pipelines.scoring.partition_batches import SLICE_PREFIX, ReadAhead, ReadTask, read_batches
from pipelines.scoring.scored_batch import (
    ScoredBatch,
    batch_from_predictions,
    duplicate_row_ids,
    row_id_bucket_of,
    scored_batch,
)
from pipelines.scoring.scoring_batches import (
    BoundaryChunk,
    GameSpec,
    Pass1Accumulator,
    SweepPlan,
    boundary_batch,
    boundary_rows,
    count_ranked,
    finish_counts,
    make_plan,
    ranked_order,
    ranked_slots,
    scored_rows_table,
)

# ------------------------------------------------------------------------------------------ the allocator

_ALLOCATOR_TUNED = False
_M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
_MMAP_THRESHOLD_BYTES = 32 << 20


def _tune_allocator() -> None:
    """Once per process: undo the side effect of a fixed MALLOC_TRIM_THRESHOLD_ (Dask workers) on numpy's
    large temporaries (`pipelines.scoring.beam_scoring`'s docstring, workaround 4). A no-op elsewhere."""
    global _ALLOCATOR_TUNED
    if _ALLOCATOR_TUNED:
        return
    _ALLOCATOR_TUNED = True
    if (not sys.platform.startswith("linux") or "MALLOC_TRIM_THRESHOLD_" not in os.environ
            or "MALLOC_MMAP_THRESHOLD_" in os.environ):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)


# ------------------------------------------------------------------------------------------ DoFns


# Reads started by the driver before its in-process pipeline runs (`ReadBatches.prefetch`), by job key.
_PREFETCHED: dict[str, ReadAhead] = {}
_PREFETCHED_LOCK = threading.Lock()


class ReadBatches(beam.DoFn):
    """A row group -> (batch id, validated Arrow table with pipeline names) per batch: the audited rows and the
    capacity check's rows. ``read_ahead`` (in-process runners, whose tasks are chained by
    `pipelines.scoring.partition_batches.chain_tasks`): the next batch is read on a background thread while this
    one is scored (`pipelines.scoring.partition_batches.ReadAhead`). ``job``: the key under which `prefetch` may
    have started the first read."""

    def __init__(self, batch_size: int, selection=None, dataset=None, check_rows=None, read_ahead: bool = False,
                 job: str | None = None, slice_columns: tuple[str, ...] = ()):
        self._batch_size, self._selection, self._dataset = batch_size, selection, dataset
        self._check_rows, self._read_ahead, self._job = check_rows, read_ahead, job
        self._slice_columns = tuple(slice_columns)
        self._ahead = None

    def prefetch(self, task: ReadTask) -> None:
        """In-process runners: starts reading ``task``'s first batch now, on the read-ahead thread, so that the
        read overlaps the building and start of the pipeline; the pipeline's copy of this DoFn (same ``job``)
        takes it up. The batches are those it would read itself. `drop_prefetched` forgets an unused one."""
        if not (self._read_ahead and self._job):
            raise ValueError("prefetch needs read_ahead and a job key")
        ahead = ReadAhead(self._read)
        ahead.start(task)
        with _PREFETCHED_LOCK:
            _PREFETCHED[self._job] = ahead

    def _read(self, task: ReadTask):
        return read_batches(task, self._batch_size, self._selection, self._dataset, self._check_rows,
                            self._slice_columns)

    def process(self, task: ReadTask):
        _tune_allocator()
        if not self._read_ahead:
            yield from self._read(task)
            return
        if self._ahead is None:
            with _PREFETCHED_LOCK:
                self._ahead = _PREFETCHED.pop(self._job, None) if self._job else None
            self._ahead = self._ahead or ReadAhead(self._read)
        yield from self._ahead.batches(task)

    def __getstate__(self):
        return {**self.__dict__, "_ahead": None}  # a pending read belongs to this process


class PassProgress(beam.DoFn):
    """A pass's live progress on stderr: rows done, rows per second and the time left (`labeldp.progress.Countdown`),
    on the driver's console on FnApiRunner, in the worker logs elsewhere; ``enabled``: the driver's `live()`.
    ``read``: count the rows each batch was read from (pass 1: the day's rows), else the batch's own rows."""

    def __init__(self, label: str, total_rows: int, enabled: bool, read: bool = True):
        self._label, self._total, self._enabled, self._read = label, total_rows, enabled, read

    def setup(self):
        self._rows = 0
        self._countdown = Countdown(self._print, self._label, self._total, "rows", interval=5.0, rate=True,
                                    final=True, enabled=self._enabled)

    @staticmethod
    def _print(text: str) -> None:
        print(f"[score pid {os.getpid()}] {text}", file=sys.stderr, flush=True)

    def process(self, batch: ScoredBatch):
        faults.point("scoring")  # inert unless a crash test asks (labeldp.faults)
        if self._enabled:
            self._rows += batch.issues.rows_read if self._read and batch.issues is not None else batch.rows
            self._countdown(self._rows)
        yield batch


def _merge_pass1(accumulators):
    """Folds pass-1 accumulators into the first one (histograms add)."""
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for other in accumulators:
        merged.merge(other)
    return merged


class Pass1CombineFn(beam.CombineFn):
    """Plays every repetition on each batch and adds it to the per-slot |score|-bin histograms."""

    def __init__(self, spec: GameSpec):
        self._spec = spec

    def create_accumulator(self):
        return Pass1Accumulator()

    def add_input(self, accumulator, batch):
        _tune_allocator()
        # The kernel plays in the background while this thread goes on with the next batch's reading,
        # frame and Pool (single-threaded Python); every reader of the accumulator waits for it.
        return accumulator.add_batch(batch, self._spec, background=True)

    def compact(self, accumulator):
        return accumulator.settle()

    def merge_accumulators(self, accumulators):
        return _merge_pass1(accumulators)

    def extract_output(self, accumulator):
        return accumulator.settle()

    def get_accumulator_coder(self):
        return BatchCoder()


class SliceStepFn(beam.CombineFn):
    """One step of the day's slices (`pipelines.scoring.day_slices`: the statistics, each slice's pass 1 or pass 2)
    folded over scored batches: ``make`` builds an empty accumulator (``add``, ``merge``), whose merges are
    order-independent, so any runner's tree of merges gives the same result."""

    def __init__(self, make):
        self._make = make

    def create_accumulator(self):
        return self._make()

    def add_input(self, accumulator, batch):
        _tune_allocator()
        return accumulator.add(batch)

    def merge_accumulators(self, accumulators):
        accumulators = iter(accumulators)
        merged = next(accumulators)
        for other in accumulators:
            merged = merged.merge(other)
        return merged

    def extract_output(self, accumulator):
        return accumulator

    def get_accumulator_coder(self):
        return BatchCoder()


class MergePass1Fn(beam.CombineFn):
    """Merges the per-shard pass-1 accumulators into one."""

    def create_accumulator(self):
        return Pass1Accumulator()

    def add_input(self, accumulator, other):
        return accumulator.merge(other)

    def merge_accumulators(self, accumulators):
        return _merge_pass1(accumulators)

    def extract_output(self, accumulator):
        return accumulator

    def get_accumulator_coder(self):
        return BatchCoder()


class ExpectedHistogramFn(beam.CombineFn):
    """The game's expected |score| histogram (`auditing.verdict.controls.expected_histogram`), added over batches."""

    def __init__(self, spec: GameSpec):
        self._spec = spec

    def create_accumulator(self):
        return None

    def add_input(self, accumulator, batch):
        if batch.rows == 0:
            return accumulator
        rows, hits = expected_histogram(batch.p_target, batch.p_reference, batch.labels, self._spec.score(),
                                        self._spec.bins)
        return (rows, hits) if accumulator is None else (accumulator[0] + rows, accumulator[1] + hits)

    def merge_accumulators(self, accumulators):
        merged = None
        for acc in accumulators:
            if acc is not None:
                merged = acc if merged is None else (merged[0] + acc[0], merged[1] + acc[1])
        return merged

    def extract_output(self, accumulator):
        return accumulator


class _PlanUser(beam.DoFn):
    """A DoFn that needs the sweep plan: given (two-stage), or made once from the pass-1 side input."""

    def __init__(self, spec: GameSpec, plan: SweepPlan | None = None):
        self._spec, self._plan = spec, plan
        self._cached = None

    def plan_for(self, pass1) -> SweepPlan:
        if self._plan is not None:
            return self._plan
        if self._cached is None or self._cached[0] is not pass1:
            self._cached = (pass1, make_plan(pass1, self._spec))
        return self._cached[1]


class BoundaryRows(_PlanUser):
    """Pass 2: (slot, rows of this batch in the slot's cut bins)."""

    def process(self, batch: ScoredBatch, pass1=None):
        _tune_allocator()
        if batch.rows:  # a batch of check rows only has no audited row to bring back
            yield from boundary_rows(batch, self._spec, self.plan_for(pass1))


class ExactCounts(_PlanUser):
    """(slot, chunks) -> ("counts", slot, exact counts, boundary rows)."""

    def process(self, element, pass1=None):
        slot, chunks = element
        chunks = list(chunks)
        counts = finish_counts(self.plan_for(pass1), slot, chunks)
        yield ("counts", int(slot), counts, int(sum(chunk.bins.size for chunk in chunks)))


# What a job on an in-process runner hands to its driver, by the job's work directory: the audited batches, which the
# driver replays for pass 2 (`pipelines.scoring.scoring_batches.count_batches`) instead of two more Beam stages, a
# shuffle of the boundary rows and a file per slot (the side-input plan held the batches in the runner's buffers
# anyway), and pass 1's merged accumulator, without its file round trip.
@dataclass
class _Holding:
    """What a running job has handed over so far: its batches by id, pass 1's accumulator once merged."""

    batches: dict = field(default_factory=dict)
    pass1: Pass1Accumulator | None = None


_HELD: dict[str, _Holding] = {}
_HELD_LOCK = threading.Lock()


@dataclass
class Held:
    """A job's held outputs (`take_held`): its audited batches in batch-id order, pass 1's merged accumulator
    (empty when no batch reached pass 1)."""

    batches: list = field(default_factory=list)
    pass1: Pass1Accumulator = field(default_factory=Pass1Accumulator)


class HoldBatches(beam.DoFn):
    """In-process runners only: keeps each audited batch for pass 2 in the driver, by batch id (a retried bundle
    replaces its own batches); with slices declared, each whole scored batch (its check rows and slicing columns
    too), whose slices the driver folds with the job's slice accumulators. Outputs nothing."""

    def __init__(self, key: str):
        self._key = key

    def process(self, batch: ScoredBatch):
        if batch.rows:
            with _HELD_LOCK:
                _HELD.setdefault(self._key, _Holding()).batches[batch.batch_id] = batch
        return ()


class HoldPass1(beam.DoFn):
    """In-process runners only: keeps pass 1's merged accumulator for the driver. Outputs nothing."""

    def __init__(self, key: str):
        self._key = key

    def process(self, accumulator: Pass1Accumulator):
        with _HELD_LOCK:
            _HELD.setdefault(self._key, _Holding()).pass1 = accumulator.settle()
        return ()


def drop_prefetched(job: str) -> None:
    """Forgets a read `ReadBatches.prefetch` started for ``job`` that no DoFn took up (a failed or finished job)."""
    with _PREFETCHED_LOCK:
        _PREFETCHED.pop(job, None)


def take_held(key: str) -> Held:
    """What `HoldBatches` and `HoldPass1` kept under ``key``, forgotten here."""
    with _HELD_LOCK:
        found = _HELD.pop(key, None) or _Holding()
    return Held([found.batches[batch_id] for batch_id in sorted(found.batches)], found.pass1 or Pass1Accumulator())


class WriteBoundaryRows(beam.DoFn):
    """A scored batch -> its boundary rows (pass 2, with the plan as an argument) in one grouped file under
    ``directory`` (`pipelines.scoring.grouped_files`): the two-stage plan on an in-process runner counts each slot
    from these files after the pipeline (`count_slots_from_files`), a group of slots in memory at a time,
    instead of a group-by-key that holds every boundary row of the day.

    ``ranked_only``: the two-stage plan on several workers (its work directory is shared storage already). Only the
    slots too large to rank in memory (`scoring_batches.ranked_slots`) go to the file; the others are output as
    (slot, rows) for the group-by-slot and `ExactCounts`, as before."""

    def __init__(self, directory: str, spec: GameSpec, plan: SweepPlan, max_rows: int | None = None,
                 ranked_only: bool = False):
        self._directory, self._spec, self._plan, self._ranked_only = directory, spec, plan, ranked_only
        self._ranked = ranked_slots(plan, GROUP_ROWS if max_rows is None else max_rows)

    def process(self, batch: ScoredBatch):
        _tune_allocator()
        found = boundary_batch(batch, self._spec, self._plan)
        if found is None or found.offsets[-1] == 0:
            return
        sizes = np.diff(found.offsets)
        written = np.ones(sizes.size, bool)
        if self._ranked_only:
            written[:] = False
            written[self._ranked] = True
        kept = np.where(written, sizes, 0)
        if kept.any():
            order = ranked_order(found, self._ranked)  # keeps each slot's rows in the slot's range
            if not written.all():  # the written slots' ranges alone
                picked = np.concatenate([np.arange(found.offsets[slot], found.offsets[slot + 1])
                                         for slot in np.flatnonzero(kept)])
                order = picked if order is None else order[picked]
            write_grouped(self._directory, batch.batch_id, np.concatenate(([0], np.cumsum(kept))),
                          {"bins": found.bins, "abs_scores": found.abs_scores, "row_ids": found.row_ids,
                           "correct": found.correct}, order=order)
        if not self._ranked_only:
            yield ("file", self._directory, int(found.offsets[-1]))
            return
        for slot in np.flatnonzero(sizes * ~written).tolist():
            yield slot, BoundaryChunk(*found.of(slot))


def count_slots_from_files(directory: Path, work_dir: Path, plan, max_rows: int | None = None) -> None:
    """`ExactCounts` for the slots `WriteBoundaryRows` (with the same ``max_rows``) wrote, their counts written
    where `WriteResults` writes them: a group of slots at a time, and a slot with more than ``max_rows``
    boundary rows as a stream merged from its batches' ranked rows (`grouped_files.merge_sorted`), so memory
    stays about ``max_rows`` rows whatever the slot's size."""
    sink = WriteResults(str(work_dir))
    max_rows = GROUP_ROWS if max_rows is None else max_rows
    ranked = ranked_slots(plan, max_rows)
    present = np.flatnonzero(key_rows(directory))
    for slot, rows in read_groups(directory, max_rows, keys=set(present.tolist()) - set(ranked.tolist())):
        chunk = BoundaryChunk(rows["bins"], rows["abs_scores"], rows["row_ids"], rows["correct"])
        sink.process(("counts", slot, finish_counts(plan, slot, [chunk]), int(chunk.bins.size)))
    for slot in np.intersect1d(ranked, present).tolist():
        chunks = (BoundaryChunk(rows["bins"], rows["abs_scores"], rows["row_ids"], rows["correct"])
                  for rows in merge_sorted(directory, slot, _rank_key_of))
        # count_ranked checks that the rows received are the cut bins' rows the plan counted, no more, no fewer
        sink.process(("counts", slot, count_ranked(plan, slot, chunks), plan.boundaries[slot].boundary_rows()))


def _rank_key_of(rows: np.ndarray):
    return rank_key(rows["abs_scores"], rows["row_ids"])


class WriteTable(beam.DoFn):
    """Writes one Parquet file per batch (named by the batch id, so a retried batch overwrites itself).
    ``dictionary``: whether Parquet tries dictionary encoding; the work directory's tables of probabilities turn it
    off (distinct doubles gain nothing from it, and trying cost 60% of each write: 150 ms against 55 ms per
    262,144 rows, and the file is 13% larger)."""

    def __init__(self, directory: str, make_table, dictionary: bool = True):
        self._directory, self._make_table, self._dictionary = directory, make_table, dictionary

    def process(self, batch: ScoredBatch):
        path = Path(self._directory) / f"part-{batch.batch_id}.parquet"
        pq.write_table(self._make_table(batch), path, compression=schema.PARQUET_COMPRESSION,
                       use_dictionary=self._dictionary)
        yield ("file", str(path), batch.rows)


class WriteRowIdBuckets(beam.DoFn):
    """Writes a batch's row ids grouped by hash bucket (`row_id_bucket_of`) into one grouped file, for the
    two-stage plan's uniqueness check (`check_row_id_files`): the ids go to disk, not through a group-by-key that
    holds them all."""

    def __init__(self, directory: str, buckets: int):
        self._directory, self._buckets = directory, buckets

    def process(self, batch: ScoredBatch):
        if batch.rows:
            order, offsets = key_order(row_id_bucket_of(batch.row_ids, self._buckets), self._buckets)
            write_grouped(self._directory, batch.batch_id, offsets, {"row_id": batch.row_ids[order]})
        yield ("file", self._directory, batch.rows)


class ReadPredictions(beam.DoFn):
    """A two-stage predictions file -> its `ScoredBatch`."""

    def process(self, path: str):
        yield batch_from_predictions(pq.read_table(path))


class WriteResults(beam.DoFn):
    """The one sink: the pass-1 accumulator and each slot's counts become files in the work directory."""

    def __init__(self, directory: str):
        self._directory = directory

    def process(self, element):
        directory = Path(self._directory)
        if element[0] == "pass1":
            save_atomically(directory / "pass1.npz", element[1].save)
        elif element[0] == "duplicates":
            _, bucket, count, example = element
            save_atomically(directory / "duplicates" / f"bucket-{bucket:04d}.json",
                            lambda handle: handle.write(json.dumps([count, example]).encode()))
        elif element[0] == "expected":
            _, rows, hits = element
            save_atomically(directory / "expected.npz", lambda path: np.savez(path, rows=rows, correct=hits))
        elif element[0] == "slices":  # a slice step's merged accumulator (`read_slice_step`)
            _, step, accumulator = element
            save_atomically(directory / "slices" / f"{step}.pkl",
                            lambda handle: pickle.dump(accumulator, handle, pickle.HIGHEST_PROTOCOL))
        elif element[0] == "counts":
            _, slot, counts, rows = element
            save_atomically(directory / "slots" / f"slot-{slot:06d}.npz",
                            lambda path: np.savez(path, counts=counts, boundary_rows=np.array(rows)))
        # ("file", ...) markers only make the sink depend on the file-writing branches.


class ScoredRows:
    """Picklable callable: the ``--write-scored`` table of a batch."""

    def __init__(self, spec: GameSpec):
        self._spec = spec

    def __call__(self, batch: ScoredBatch) -> pa.Table:
        return scored_rows_table(batch, self._spec)


# ------------------------------------------------------------------------------------------ element functions


class PrepareTarget:
    """(batch id, Arrow batch) -> [((batch id, batch), the target's example)]: the example is built by the
    target's format (`pipelines.models.formats.registry`); the key keeps the batch for the reference (pre-batched for
    with_no_batching)."""

    def __init__(self, model_format, dataset):
        self._format, self._dataset = model_format, dataset

    def __call__(self, element):
        batch_id, table = element
        return [((batch_id, table), self._format.prepare(table, self._dataset))]


class AttachTarget:
    """The target's probabilities join the key with the rows the game needs (row_id, label); the reference's
    example is built from the batch by the reference's format (a CatBoost frame is shared with the target's)."""

    def __init__(self, model_format, dataset):
        self._format, self._dataset = model_format, dataset

    def __call__(self, element):
        (batch_id, table), result = element
        sliced = [name for name in table.column_names if name.startswith(SLICE_PREFIX)]  # the slices' columns
        rows = table.select([INTERNAL_ROW_ID, INTERNAL_LABEL, *sliced])
        return [((batch_id, rows, result.inference), self._format.prepare(table, self._dataset))]


class ToScored:
    """Both models' probabilities -> the batch's `ScoredBatch` (`pipelines.scoring.scored_batch.scored_batch`), its
    capacity-check rows flagged (``check_rows``: their selection, or None)."""

    def __init__(self, check_rows=None):
        self._check_rows = check_rows

    def __call__(self, element) -> ScoredBatch:
        (batch_id, rows, p_target), result = element
        return scored_batch(batch_id, rows, p_target, result.inference, self._check_rows)


def audited_part(batch: ScoredBatch) -> ScoredBatch:
    """The batch's audited rows: what every step but pass 1 and the row-id check sees."""
    return batch.audited()


def shard(batch: ScoredBatch, shards: int) -> tuple[int, ScoredBatch]:
    """(shard of the batch id, batch): pass 1 without combiner lifting (Dask) is combined per shard first."""
    return zlib.crc32(batch.batch_id.encode()) % shards, batch


# ------------------------------------------------------------------------------------------ the work directory


def read_slot_counts(work_dir: Path) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    """({slot: exact counts}, {slot: boundary rows received}) as `WriteResults` wrote them."""
    counts, rows = {}, {}
    for path in sorted((work_dir / "slots").glob("slot-*.npz")):
        slot = int(path.stem.split("-")[1])
        with np.load(path) as data:
            counts[slot] = data["counts"]
            rows[slot] = int(data["boundary_rows"])
    return counts, rows


def read_slice_step(work_dir: Path, step: str):
    """A slice step's merged accumulator as `WriteResults` wrote it, or None when no batch reached the step."""
    path = work_dir / "slices" / f"{step}.pkl"
    return pickle.loads(path.read_bytes()) if path.is_file() else None


def check_duplicates(work_dir: Path, partition: Path, key: str = schema.ROW_ID) -> None:
    """Raises `LabelDPInputError` naming the day's ``partition`` directory when the row-id buckets `WriteResults`
    wrote found a repeated row id."""
    total, example = 0, None
    for path in sorted((work_dir / "duplicates").glob("bucket-*.json")):
        count, some = json.loads(path.read_text())
        total += count
        example = example if example is not None else some
    _refuse_duplicates(total, example, partition, key)


def check_row_id_files(directory: Path, partition: Path, key: str = schema.ROW_ID) -> None:
    """`check_duplicates` for ids `WriteRowIdBuckets` wrote: a group of buckets in memory at a time (a bucket is
    1/buckets of the day's ids, 8 bytes each, and their sort)."""
    total, example = 0, None
    for _, rows in read_groups(directory):
        count, some = duplicate_row_ids([rows["row_id"]])
        total += count
        example = example if example is not None else some
    _refuse_duplicates(total, example, partition, key)


def _refuse_duplicates(total: int, example, partition: Path, key: str) -> None:
    if total:
        raise LabelDPInputError(f"{partition}: column {key!r}: {total} duplicate value(s) "
                                f"(e.g. {example}); each row needs its own identity (it keys the game's randomness)")


__all__ = [
    "AttachTarget",
    "BoundaryRows",
    "ExactCounts",
    "ExpectedHistogramFn",
    "Held",
    "HoldBatches",
    "HoldPass1",
    "MergePass1Fn",
    "Pass1CombineFn",
    "PassProgress",
    "PrepareTarget",
    "ReadBatches",
    "ReadPredictions",
    "ScoredRows",
    "SliceStepFn",
    "ToScored",
    "WriteBoundaryRows",
    "WriteResults",
    "WriteRowIdBuckets",
    "WriteTable",
    "audited_part",
    "check_duplicates",
    "check_row_id_files",
    "count_slots_from_files",
    "drop_prefetched",
    "read_slice_step",
    "read_slot_counts",
    "shard",
    "take_held",
]
