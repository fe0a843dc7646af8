"""The per-batch pieces of the Beam scoring job (pipelines/beam_scoring.py), as plain functions without Beam.

A batch flows through these steps (each a pure function of its inputs, so any runner may split, retry or
move batches between workers without changing a count):

1. `read_tasks` / `read_batches`: the partition's Parquet row groups, read as validated Arrow batches. Rows
   without a ``row_id`` cannot key the game's randomness; they are kept here and counted in step 2. With
   ``audit_rows: training`` only the rows whose labels entered training are kept (`select_rows`,
   ``pipelines.audit_rows``), before inference.
2. `scored_batch`: attaches both models' class probabilities; rows without ``row_id`` and rows whose
   probabilities the model cannot have produced (NaN, outside [0, 1], not summing to 1) are counted in
   `ScoredBatch.issues` and left out of the game, never dropped silently.
3. `Pass1Accumulator.add_batch`: plays every repetition with the compiled game (`auditing.game_kernel`,
   bit-identical to `auditing.game.play_repetition`) and adds the batch to per-slot histograms of |score| bins
   (`auditing.sweep_reduce`). A slot is one sweep to count: a repetition over all rows, or, for the ``split``
   strategy, one half of repetition 0 (`auditing.audit._split_halves`). Accumulators merge by addition. The
   Beam job plays it on a background thread (``background=True``) so that it overlaps the next batch's
   single-threaded reading, frame conversion and CatBoost Pool construction.
4. `make_plan`: from the merged histograms, the grid of each slot and the bins its grid points cut.
Row ids must be unique in the day (they key the randomness; the in-process audit refuses duplicates): the job
checks it without gathering them, by hash bucket (`row_id_buckets`, `duplicate_row_ids`).

5. `boundary_rows`: replays the game only for rows that can land in a cut bin and returns those rows.
6. `finish_counts`: completes each slot's counts with `auditing.sweep_reduce.exact_counts`, and
   `sweep_counts` builds the `SweepCounts` that `auditing.audit.audit_from_counts` turns into the result.

Step 5 avoids replaying the whole game: for a k-class model a row's released label is one of k classes, so its
score in any repetition is one of k values, computed once per batch with the configured score function
(`auditing.game_kernel.game_tables`, the same numbers the kernel bins in step 3). Rows none of whose k
candidate bins is cut in a slot cannot be boundary rows of it and are skipped; the rows kept are replayed by
the same kernel, and only their real bins decide. Exactness never depends on the filter.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditing.audit import AuditConfig, _half_grid, _split_halves
from auditing.errors import LabelDPInputError
from auditing.game import (
    SUM_TOLERANCE,
    GameRows,
    as_class_probabilities,
    certain_rows,
    play_repetition,
    secret_bits_and_released,
)
from auditing.game_kernel import GameTables, SlotKeys, game_tables, slot_histograms, slot_keys
from auditing.game_kernel import boundary_rows as kernel_boundary_rows
from auditing.keyed_random import mix64
from auditing.risk import PriorHistogram
from auditing.scores import resolve_score
from auditing.sweep import SweepCounts
from auditing.sweep_reduce import (
    BinSpec,
    Boundaries,
    boundary_bins,
    cut_bin_mask,
    exact_counts,
)
from pipelines import schema
from pipelines.layout import partition_dir

INPUT_COLUMNS = [schema.ROW_ID, schema.LABEL, *schema.FEATURE_COLUMNS]
ISSUE_KEYS = ("rows_read", "rows_scored", "rows_without_row_id", "rows_bad_target_probabilities",
              "rows_bad_reference_probabilities")
# Filter margin in bins around each cut bin (step 5): a one-ulp difference can move a score across one edge.
FILTER_MARGIN = 1


# ------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class ReadTask:
    """One Parquet row group of the partition: the unit of parallel reading."""

    path: str
    row_group: int
    rows: int

    @property
    def name(self) -> str:
        return f"{Path(self.path).stem}-rg{self.row_group:05d}"


def partition_files(root: str | os.PathLike, date) -> list[Path]:
    """The partition's ``part-*.parquet`` files in name order; a clear error when there are none."""
    directory = partition_dir(root, date)
    if not directory.is_dir():
        raise LabelDPInputError(f"no partition at {directory} (data root {root}); create it with `labeldp-audit "
                                f"data synth` or `labeldp-audit data ingest-criteo`, or pass the right --data-root")
    files = sorted(directory.glob(schema.PART_GLOB))
    if not files:
        raise LabelDPInputError(f"{directory}: the partition directory holds no {schema.PART_GLOB} files")
    return files


def _open(path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: not a readable Parquet file ({exc})") from None


def partition_schema(files: list[Path]) -> pa.Schema:
    """The Arrow schema of the partition from the files' footers (no data read).

    Every file must hold ``row_id`` and ``label``; the feature columns are checked against each model with
    `pipelines.registry.check_features`. Files whose column sets differ are reported by name.
    """
    first = None
    for path in files:
        file_schema = _open(path).schema_arrow
        missing = [name for name in (schema.ROW_ID, schema.LABEL) if name not in file_schema.names]
        if missing:
            raise LabelDPInputError(f"{path}: missing column(s) {missing}")
        if first is None:
            first = (path, file_schema)
        elif set(file_schema.names) != set(first[1].names):
            raise LabelDPInputError(f"{path} has columns {sorted(file_schema.names)} but {first[0]} has "
                                    f"{sorted(first[1].names)}; a partition's files share one schema")
    return first[1]


def read_tasks(files: list[Path]) -> list[ReadTask]:
    """One task per non-empty row group, from the Parquet footers."""
    tasks = []
    for path in files:
        metadata = _open(path).metadata
        for index in range(metadata.num_row_groups):
            rows = metadata.row_group(index).num_rows
            if rows:
                tasks.append(ReadTask(str(path), index, rows))
    if not tasks:
        raise LabelDPInputError(f"{files[0].parent}: the partition is empty (0 rows)")
    return tasks


def validate_batch(batch: pa.RecordBatch | pa.Table, source: str) -> pa.Table:
    """``row_id`` (int64; nulls allowed here, counted later) followed by the validated label and features."""
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    row_id = table.column(schema.ROW_ID)
    if pa.types.is_null(row_id.type):
        row_id = pa.chunked_array([pa.nulls(len(row_id), pa.int64())])
    elif not pa.types.is_integer(row_id.type):
        raise LabelDPInputError(f"{source}: column 'row_id' has type {row_id.type}, expected an integer type")
    else:
        try:
            row_id = row_id.cast(pa.int64(), safe=True)
        except (pa.ArrowInvalid, OverflowError):
            raise LabelDPInputError(f"{source}: column 'row_id' holds values that do not fit in int64") from None
    rest = [schema.LABEL, *schema.FEATURE_COLUMNS]
    validated = schema.validate_table(table.select(rest), source, columns=rest)
    return validated.add_column(0, pa.field(schema.ROW_ID, pa.int64()), row_id)


def select_rows(table: pa.Table, selection) -> pa.Table:
    """The rows of ``table`` to audit (``pipelines.audit_rows.RowSelection``; None keeps every row). Rows
    without a row_id are kept so that step 2 counts them (they can be neither selected nor excluded)."""
    if selection is None or table.num_rows == 0:
        return table
    row_id = table.column(schema.ROW_ID)
    valid = row_id.is_valid().to_numpy(zero_copy_only=False) if row_id.null_count else None
    ids = row_id.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    keep = selection.mask(ids)
    if valid is not None:
        keep |= ~valid
    return table if keep.all() else table.filter(pa.array(keep))


def read_batches(task: ReadTask, batch_size: int, selection=None) -> Iterator[tuple[str, pa.Table]]:
    """(batch id, validated table) for each batch of at most ``batch_size`` rows of the task's row group,
    restricted to the audited rows (``selection``, see `select_rows`); empty batches are skipped."""
    parquet = _open(task.path)
    source = f"{task.path} (row group {task.row_group})"
    try:
        batches = parquet.iter_batches(batch_size=int(batch_size), row_groups=[task.row_group],
                                       columns=INPUT_COLUMNS)
        for index, batch in enumerate(batches):
            if batch.num_rows:
                table = select_rows(validate_batch(batch, source), selection)
                if table.num_rows:
                    yield f"{task.name}-b{index:05d}", table
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{source}: corrupt Parquet data ({exc})") from None


# ------------------------------------------------------------------------------------------ scored batches


@dataclass
class ScoredBatch:
    """The rows of one batch that enter the game, with both models' class probabilities."""

    batch_id: str
    row_ids: np.ndarray  # int64, unique
    labels: np.ndarray  # int64
    p_target: np.ndarray  # (n, k) float64
    p_reference: np.ndarray  # (n, k) float64
    issues: dict = field(default_factory=dict)

    def take(self, index: np.ndarray) -> ScoredBatch:
        return ScoredBatch(self.batch_id, self.row_ids[index], self.labels[index], self.p_target[index],
                           self.p_reference[index], {})

    @property
    def rows(self) -> int:
        return int(self.row_ids.size)


def _as_matrix(values, n: int, who: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = np.column_stack([1.0 - arr, arr])
    if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] < 2:
        raise LabelDPInputError(f"the {who} model returned probabilities of shape {arr.shape}; expected ({n}, k>=2)")
    return arr


def _bad_probability_rows(p: np.ndarray) -> np.ndarray:
    """Rows no probabilistic classifier outputs: NaN/inf, outside [0, 1], or not summing to 1 (same tolerance
    as `auditing.game.as_class_probabilities`)."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(p).all(axis=1) | (p < 0.0).any(axis=1) | (p > 1.0).any(axis=1)
        bad |= ~(np.abs(p.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    return bad


def scored_batch(batch_id: str, table: pa.Table, p_target, p_reference) -> ScoredBatch:
    """Keeps the rows that can enter the game and counts the others (never a silent drop)."""
    n = table.num_rows
    target = _as_matrix(p_target, n, "target")
    reference = _as_matrix(p_reference, n, "reference")
    if target.shape[1] != reference.shape[1]:
        raise LabelDPInputError(f"the target model has {target.shape[1]} classes but the reference model has "
                                f"{reference.shape[1]}")
    row_id = table.column(schema.ROW_ID)
    has_id = row_id.is_valid().to_numpy(zero_copy_only=False) if row_id.null_count else np.ones(n, dtype=bool)
    bad_target = _bad_probability_rows(target)
    # A reference certain of a class has an infinite likelihood ratio: no kappa covers it (auditing.game).
    bad_reference = _bad_probability_rows(reference) | certain_rows(reference)
    keep = has_id & ~bad_target & ~bad_reference
    labels = table.column(schema.LABEL).to_numpy().astype(np.int64)
    if labels.size and int(labels.max()) >= target.shape[1]:
        raise LabelDPInputError(f"batch {batch_id}: labels go up to {int(labels.max())} but the models have "
                                f"{target.shape[1]} classes")
    index = np.flatnonzero(keep)
    ids = row_id.to_numpy(zero_copy_only=False)[index].astype(np.int64)
    issues = {"rows_read": n, "rows_scored": int(index.size), "rows_without_row_id": int(n - has_id.sum()),
              "rows_bad_target_probabilities": int(bad_target.sum()),
              "rows_bad_reference_probabilities": int(bad_reference.sum())}
    return ScoredBatch(batch_id, ids, labels[index],
                       as_class_probabilities(target[index], "p_target") if index.size else target[:0],
                       as_class_probabilities(reference[index], "p_reference") if index.size else reference[:0],
                       issues)


def row_id_buckets(batch: ScoredBatch, buckets: int) -> Iterator[tuple[int, np.ndarray]]:
    """(bucket, the batch's row ids in it), bucket = hash(row_id) mod buckets: equal ids meet in one bucket,
    so duplicates across the whole partition are found one bucket at a time (`duplicate_row_ids`)."""
    if batch.rows == 0:
        return
    bucket = (mix64(batch.row_ids.view(np.uint64)) % np.uint64(buckets)).astype(np.int16 if buckets <= 1 << 15 else np.int64)
    order = np.argsort(bucket, kind="stable")  # a radix sort on 16-bit keys
    edges = np.searchsorted(bucket[order], np.arange(buckets + 1))
    for b in range(buckets):
        if edges[b + 1] > edges[b]:
            yield b, batch.row_ids[order[edges[b]:edges[b + 1]]]


def duplicate_row_ids(chunks) -> tuple[int, int | None]:
    """(how many rows repeat an earlier row's id, one such id) over all chunks of a bucket."""
    ids = np.sort(np.concatenate(list(chunks)))
    repeats = ids[1:][ids[1:] == ids[:-1]]
    return int(repeats.size), (int(repeats[0]) if repeats.size else None)


def predictions_table(batch: ScoredBatch) -> pa.Table:
    """A scored batch as an Arrow table (row_id, label, p_target_j, p_reference_j), for the two-stage plan."""
    k = batch.p_target.shape[1]
    columns = {schema.ROW_ID: batch.row_ids, schema.LABEL: batch.labels}
    columns.update({f"p_target_{j}": batch.p_target[:, j] for j in range(k)})
    columns.update({f"p_reference_{j}": batch.p_reference[:, j] for j in range(k)})
    metadata = {f"issue.{key}": str(value) for key, value in batch.issues.items()}
    metadata["batch_id"] = batch.batch_id
    return pa.table(columns).replace_schema_metadata(metadata)


def batch_from_predictions(table: pa.Table) -> ScoredBatch:
    """Inverse of `predictions_table`."""
    metadata = {key.decode(): value.decode() for key, value in (table.schema.metadata or {}).items()}
    k = sum(1 for name in table.column_names if name.startswith("p_target_"))
    stack = lambda prefix: np.column_stack([table.column(f"{prefix}{j}").to_numpy() for j in range(k)])  # noqa: E731
    issues = {key[len("issue."):]: int(value) for key, value in metadata.items() if key.startswith("issue.")}
    return ScoredBatch(metadata.get("batch_id", ""), table.column(schema.ROW_ID).to_numpy().astype(np.int64),
                       table.column(schema.LABEL).to_numpy().astype(np.int64), stack("p_target_"),
                       stack("p_reference_"), issues)


# ------------------------------------------------------------------------------------------ the game


@dataclass(frozen=True)
class Slot:
    """One sweep to count: repetition `repetition` over all rows (half None), or one half of it (split)."""

    repetition: int
    half: int | None = None  # 0: the selection half, 1: the bound half


@dataclass(frozen=True)
class GameSpec:
    """The audit configuration plus the binning used to reduce it."""

    config: AuditConfig
    bins: BinSpec = field(default_factory=BinSpec)

    @property
    def slots(self) -> list[Slot]:
        slots = [Slot(r) for r in range(self.config.repetitions)]
        if self.config.strategy == "split":
            slots += [Slot(0, 0), Slot(0, 1)]
        return slots

    def score(self):
        return resolve_score(self.config.score, self.config.score_power)

    def play(self, batch: ScoredBatch, repetition: int) -> GameRows:
        return play_repetition(batch.p_target, batch.p_reference, batch.labels, batch.row_ids,
                               seed=self.config.seed, repetition=repetition, score=self.score())

    def halves(self, row_ids: np.ndarray) -> np.ndarray:
        """True for rows of the selection half (the split strategy's fixed, keyed partition)."""
        return _split_halves(row_ids, self.config.seed)

    @cached_property
    def keys(self) -> SlotKeys:
        """The slots' key words for the compiled game (`auditing.game_kernel`), in `slots` order."""
        return slot_keys(self.config.seed, [(slot.repetition, slot.half) for slot in self.slots])

    def tables(self, batch: ScoredBatch) -> GameTables:
        """The batch's per-(row, class) score bins for the compiled game, computed once for all repetitions."""
        selection = self.halves(batch.row_ids) if self.config.strategy == "split" else None
        return game_tables(batch.p_target, batch.p_reference, batch.labels, batch.row_ids, score=self.config.score,
                           power=self.config.score_power, bins=self.bins, selection=selection)


def empty_issues() -> dict:
    return dict.fromkeys(ISSUE_KEYS, 0)


# Pass-1 kernels run here when an accumulator plays in the background (`Pass1Accumulator.add_batch`): one thread
# per process, so kernels of several accumulators run one after another, never over each other.
_GAME_THREAD = None
_GAME_THREAD_LOCK = threading.Lock()
# The background kernel plays a batch in chunks of this many rows, so that what is left when the accumulator is
# read can be played at once on every core (`Pass1Accumulator.settle`).
BACKGROUND_CHUNK_ROWS = 65_536
# Chunks whose kernel may be pending per accumulator: bounds the memory held for them (each keeps its batch).
MAX_PENDING_CHUNKS = 12
# Threads of a background kernel: one core, the main thread keeps the other(s).
BACKGROUND_THREADS = 1


def _game_thread() -> ThreadPoolExecutor:
    """The process's pass-1 thread. A forked child does not inherit the parent's thread (its executor would take
    work and never run it), so the executor is made again in a new process."""
    global _GAME_THREAD
    with _GAME_THREAD_LOCK:
        if _GAME_THREAD is None or _GAME_THREAD[0] != os.getpid():
            _GAME_THREAD = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="labeldp-pass1"))
        return _GAME_THREAD[1]


@dataclass
class Pass1Accumulator:
    """Per-slot histograms (rows, correct guesses per |score| bin) and the issue counters; merges by addition.

    The arrays are allocated on first use, so empty accumulators (Beam creates many) cost nothing.

    ``add_batch(..., background=True)`` returns as soon as the batch's tables are built and runs the game kernel
    on a background thread (the kernel releases the GIL), so that the single-threaded Python work of the next
    batch (reading, frame conversion, CatBoost Pool construction) overlaps it. Every reader of the histograms
    (`settle`, `merge`, `save`, pickling) first waits for the pending kernels and re-raises their errors; the
    histograms are integer sums, so the result does not depend on when or in which order the kernels ran.
    """

    rows: np.ndarray | None = None  # (slots, bins) int64
    correct: np.ndarray | None = None
    issues: dict = field(default_factory=empty_issues)
    batches: int = 0
    # issue 8: counts of the reference's probabilities of the audited rows in auditing.risk.PriorHistogram's
    # fixed buckets (claim-free; integer counts, so any batching or merge order gives the same histogram).
    priors: np.ndarray | None = None
    prior_kind: str = "class1"
    _pending: list = field(default_factory=list, repr=False, compare=False)

    def _add_priors(self, batch: ScoredBatch) -> None:
        histogram = PriorHistogram.from_reference(batch.p_reference)
        self.prior_kind = histogram.kind
        self.priors = histogram.counts if self.priors is None else self.priors + histogram.counts

    def prior_histogram(self) -> dict:
        """The merged histogram as AuditResult.prior_histogram (empty when no row was audited)."""
        if self.priors is None:
            return {}
        return PriorHistogram(self.priors, self.prior_kind).to_dict()

    def _allocate(self, spec: GameSpec) -> None:
        if self.rows is None:
            shape = (len(spec.slots), spec.bins.num_bins)
            self.rows = np.zeros(shape, dtype=np.int64)
            self.correct = np.zeros(shape, dtype=np.int64)

    def add_batch(self, batch: ScoredBatch, spec: GameSpec, background: bool = False) -> Pass1Accumulator:
        for key, value in batch.issues.items():
            self.issues[key] = self.issues.get(key, 0) + int(value)
        self.batches += 1
        if batch.rows == 0:
            return self
        self._add_priors(batch)
        self._allocate(spec)
        # Every slot at once, compiled (auditing.game_kernel): the same histograms as bin_index + bincount of
        # play_repetition's scores and correct guesses per slot, without per-repetition arrays. The tables are
        # built here, so that bad input raises at its batch, whichever thread plays it.
        tables = spec.tables(batch)
        if not background:
            slot_histograms(tables, spec.keys, self.rows, self.correct)
            return self
        for start in range(0, tables.rows, BACKGROUND_CHUNK_ROWS):
            while len(self._pending) >= MAX_PENDING_CHUNKS:
                self._pending.pop(0)[0].result()
            chunk = tables.slice(start, min(start + BACKGROUND_CHUNK_ROWS, tables.rows))
            future = _game_thread().submit(slot_histograms, chunk, spec.keys, self.rows, self.correct,
                                           BACKGROUND_THREADS)
            self._pending.append((future, chunk, spec.keys))
        return self

    def settle(self) -> Pass1Accumulator:
        """Waits for this accumulator's kernels (re-raising their errors). Chunks the background thread has not
        started are taken back and played here on every core, after the started ones finished (two kernels
        never add into the same histograms at once)."""
        pending, self._pending = self._pending, []
        taken_back = [item for item in reversed(pending) if item[0].cancel()]
        for future, _, _ in pending:
            if not future.cancelled():
                future.result()
        for _, chunk, keys in reversed(taken_back):
            slot_histograms(chunk, keys, self.rows, self.correct)
        return self

    def merge(self, other: Pass1Accumulator) -> Pass1Accumulator:
        self.settle()
        other.settle()
        for key, value in other.issues.items():
            self.issues[key] = self.issues.get(key, 0) + int(value)
        self.batches += other.batches
        if other.priors is not None:
            self.prior_kind = other.prior_kind
            self.priors = other.priors.copy() if self.priors is None else self.priors + other.priors
        if other.rows is not None:
            if self.rows is None:
                self.rows, self.correct = other.rows.copy(), other.correct.copy()
            else:
                self.rows += other.rows
                self.correct += other.correct
        return self

    def __getstate__(self) -> dict:
        self.settle()
        state = dict(self.__dict__)
        state["_pending"] = []
        return state

    def save(self, path) -> None:
        self.settle()
        arrays = {"batches": np.array(self.batches),
                  "issue_keys": np.array(list(self.issues)), "issue_values": np.array(list(self.issues.values()))}
        if self.rows is not None:
            arrays.update(rows=self.rows, correct=self.correct)
        if self.priors is not None:
            arrays.update(priors=self.priors, prior_kind=np.array(self.prior_kind))
        np.savez(path, **arrays)

    @classmethod
    def load(cls, path) -> Pass1Accumulator:
        with np.load(path) as data:
            issues = {str(k): int(v) for k, v in zip(data["issue_keys"], data["issue_values"], strict=True)}
            rows = data["rows"] if "rows" in data else None
            correct = data["correct"] if "correct" in data else None
            priors = data["priors"] if "priors" in data else None
            kind = str(data["prior_kind"]) if "prior_kind" in data else "class1"
            return cls(rows=rows, correct=correct, issues=issues, batches=int(data["batches"]), priors=priors,
                       prior_kind=kind)


# ------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class SweepPlan:
    """What pass 2 needs: each slot's grid and boundaries, and which bins' rows to bring back."""

    m: int  # rows per repetition (the audited examples)
    slot_rows: tuple  # rows counted in each slot
    grids: tuple  # one int64 grid per slot
    boundaries: tuple  # one `Boundaries` per slot
    exact_masks: np.ndarray  # (slots, bins) bool: the cut bins of each slot
    filter_masks: np.ndarray  # (repetitions, bins) bool: cut bins of a repetition's slots, widened by the margin
    union_filter: np.ndarray  # (bins,) bool: any repetition's filter
    issues: dict

    @property
    def boundary_rows(self) -> int:
        return int(sum(b.boundary_rows() for b in self.boundaries))

    def repetitions_with_cuts(self) -> np.ndarray:
        return np.flatnonzero(self.filter_masks.any(axis=1))


def make_plan(accumulator: Pass1Accumulator, spec: GameSpec) -> SweepPlan:
    """Grids and boundaries from the merged pass-1 histograms. Raises when nothing can be audited."""
    issues = dict(accumulator.issues)
    if accumulator.rows is None or int(accumulator.rows[0].sum()) == 0:
        raise LabelDPInputError(
            f"no rows to audit: {issues.get('rows_read', 0)} row(s) read, {issues.get('rows_without_row_id', 0)} "
            f"without row_id, {issues.get('rows_bad_target_probabilities', 0)} with bad target probabilities, "
            f"{issues.get('rows_bad_reference_probabilities', 0)} with bad reference probabilities")
    config = spec.config
    totals = accumulator.rows.sum(axis=1)
    m = int(totals[0])
    if np.any(totals[: config.repetitions] != m) or m != issues.get("rows_scored", m):
        raise RuntimeError(f"pass 1 is inconsistent: rows per repetition {sorted(set(totals.tolist()))}, rows "
                           f"scored {issues.get('rows_scored')} (batches lost or counted twice)")
    num_bins = spec.bins.num_bins
    grids, bounds = [], []
    full_grid = config.grid_for(m)  # every whole-repetition slot has the same m, hence the same grid
    for index, slot in enumerate(spec.slots):
        rows_in_slot = int(totals[index])
        if slot.half is None:
            grid = full_grid
        else:
            if rows_in_slot == 0:
                raise LabelDPInputError("the split strategy needs at least 2 rows (one half is empty)")
            grid = _half_grid(config, rows_in_slot)
        grids.append(grid)
        bounds.append(boundary_bins(accumulator.rows[index], accumulator.correct[index], grid))
    exact = np.stack([cut_bin_mask(b, num_bins) for b in bounds])
    widened = np.stack([cut_bin_mask(b, num_bins, margin=FILTER_MARGIN) for b in bounds])
    filters = widened[: config.repetitions].copy()
    for index, slot in enumerate(spec.slots[config.repetitions:], start=config.repetitions):
        filters[slot.repetition] |= widened[index]
    return SweepPlan(m=m, slot_rows=tuple(int(t) for t in totals), grids=tuple(grids), boundaries=tuple(bounds),
                     exact_masks=exact, filter_masks=filters, union_filter=filters.any(axis=0), issues=issues)


# ------------------------------------------------------------------------------------------ pass 2


@dataclass
class BoundaryChunk:
    """Rows of one batch that fall in a slot's cut bins: what `exact_counts` needs."""

    bins: np.ndarray
    abs_scores: np.ndarray
    row_ids: np.ndarray
    correct: np.ndarray


def _concat(chunks: list[BoundaryChunk]) -> BoundaryChunk:
    if not chunks:
        return BoundaryChunk(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool))
    return BoundaryChunk(*(np.concatenate([getattr(c, name) for c in chunks])
                           for name in ("bins", "abs_scores", "row_ids", "correct")))


def boundary_rows(batch: ScoredBatch, spec: GameSpec, plan: SweepPlan) -> Iterator[tuple[int, BoundaryChunk]]:
    """(slot index, chunk) for every slot with rows of this batch in its cut bins."""
    if batch.rows == 0 or plan.repetitions_with_cuts().size == 0:
        return
    # Compiled (auditing.game_kernel.boundary_rows): a row's bin in any repetition is one of its k per-class
    # bins, so only rows with a cut candidate bin are replayed, and only their real bins decide.
    found = kernel_boundary_rows(spec.tables(batch), spec.keys, plan.exact_masks)
    for index in np.flatnonzero(np.diff(found.offsets)):
        yield int(index), BoundaryChunk(*found.of(int(index)))


def finish_counts(plan: SweepPlan, slot: int, chunks: list[BoundaryChunk]) -> np.ndarray:
    """The slot's exact counts (correct guesses at each grid point) from all its boundary chunks."""
    rows = _concat(list(chunks))
    return exact_counts(plan.boundaries[slot], rows.bins, rows.abs_scores, rows.row_ids, rows.correct)


def sweep_counts(plan: SweepPlan, spec: GameSpec, counts: dict[int, np.ndarray]):
    """(SweepCounts over the repetitions, the split halves' SweepCounts or None) from per-slot counts.

    Slots missing from `counts` must have no cut bins (their counts follow from the histogram alone)."""
    full = {}
    for index, bounds in enumerate(plan.boundaries):
        if index in counts:
            full[index] = np.asarray(counts[index], dtype=np.int64)
        elif bounds.cut_bins().size:
            raise RuntimeError(f"slot {index} ({spec.slots[index]}) has cut bins but pass 2 returned no counts "
                               f"for it (rows lost between the passes)")
        else:
            full[index] = finish_counts(plan, index, [])
    reps = spec.config.repetitions
    grid = plan.grids[0]
    counts_all = SweepCounts(m=plan.m, guesses=np.broadcast_to(grid, (reps, grid.size)).copy(),
                             correct=np.stack([full[r] for r in range(reps)]))
    split = None
    if spec.config.strategy == "split":
        split = tuple(SweepCounts(m=plan.slot_rows[i], guesses=plan.grids[i][None, :], correct=full[i][None, :])
                      for i in (reps, reps + 1))
    return counts_all, split


def scored_rows_table(batch: ScoredBatch, spec: GameSpec) -> pa.Table:
    """row_id plus, per repetition r, the attack score ``score_r``, whether the guess was right
    (``correct_r``), the secret bit ``b_r`` (1: the released label is the counterfactual one drawn from M') and
    the released label ``released_label_r`` (paper Alg. 2): the optional ad-hoc output (``--write-scored``).
    Replays the whole game for the batch."""
    columns = {schema.ROW_ID: pa.array(batch.row_ids)}
    for r in range(spec.config.repetitions):
        game = spec.play(batch, r)
        bit, released = secret_bits_and_released(batch.p_reference, batch.labels, batch.row_ids,
                                                  seed=spec.config.seed, repetition=r)
        columns[f"score_{r}"] = pa.array(game.scores)
        columns[f"correct_{r}"] = pa.array(game.correct)
        columns[f"b_{r}"] = pa.array(bit.astype(np.int8))
        columns[f"released_label_{r}"] = pa.array(released.astype(np.int64))
    return pa.table(columns)


__all__ = [
    "BinSpec",
    "Boundaries",
    "BoundaryChunk",
    "GameSpec",
    "Pass1Accumulator",
    "ReadTask",
    "ScoredBatch",
    "Slot",
    "SweepPlan",
    "batch_from_predictions",
    "boundary_rows",
    "duplicate_row_ids",
    "finish_counts",
    "make_plan",
    "partition_files",
    "partition_schema",
    "predictions_table",
    "read_batches",
    "read_tasks",
    "row_id_buckets",
    "scored_batch",
    "scored_rows_table",
    "sweep_counts",
    "validate_batch",
]
