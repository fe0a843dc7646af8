"""Step 1 of the scoring job (`pipelines.scoring.scoring_batches` describes all the steps): a day's partition read as
validated Arrow batches, one Parquet row group per task.

The columns come from the partition's dataset spec (`pipelines.data.dataset_spec`): its row key, label and features
(carried columns are not read); each batch leaves here with the pipeline names ``row_id`` and ``label``
(`DatasetSpec.to_internal`) and the features under their own names.

Rows without a ``row_id`` cannot key the game's randomness; they are kept here and counted when the batch is
scored (`pipelines.scoring.scored_batch.scored_batch`). With ``audit_rows: training`` only the rows whose labels entered
training are kept (`select_rows`, ``pipelines.scoring.audit_rows``), before inference. No Beam: the Beam job
(`pipelines.scoring.beam_scoring`) wraps `read_batches` in a DoFn, and the input checks
(`pipelines.scoring.beam_request.check_inputs`) read the footers of the day handle's files
(`pipelines.data.day.Day`) through `partition_schema`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.dataset_spec import DatasetSpec, criteo
from pipelines.scoring.background import background_thread

INPUT_COLUMNS = [schema.ROW_ID, schema.LABEL, *schema.FEATURE_COLUMNS]  # the Criteo spec's (`input_columns`)


def input_columns(dataset: DatasetSpec) -> list[str]:
    """The stored columns the job reads: row key, label and features (not the carried columns)."""
    return [dataset.row_key, dataset.label, *dataset.features]


@dataclass(frozen=True)
class ReadTask:
    """One Parquet row group of the partition: the unit of parallel reading. ``ahead``: the task an in-process
    runner reads next (`chain_tasks`; its own ``ahead`` is None, so a task pickles flat), which `ReadAhead` starts
    reading while this one is scored."""

    path: str
    row_group: int
    rows: int
    ahead: ReadTask | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.path, self.row_group

    @property
    def name(self) -> str:
        return f"{Path(self.path).stem}-rg{self.row_group:05d}"


def _open(path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: not a readable Parquet file ({exc})") from None


def partition_schema(files: list[Path], dataset: DatasetSpec | None = None) -> pa.Schema:
    """The Arrow schema of the partition from the files' footers (no data read).

    Every file must hold the spec's row key and label (Criteo: ``row_id``, ``label``); the feature columns are
    checked against each model with `pipelines.models.registry.check_features`. Files whose column sets differ are
    reported by name.
    """
    dataset = dataset or criteo()
    first = None
    for path in files:
        file_schema = _open(path).schema_arrow
        missing = [name for name in (dataset.row_key, dataset.label) if name not in file_schema.names]
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


def chain_tasks(tasks: list[ReadTask]) -> list[ReadTask]:
    """The tasks, each naming the one after it as ``ahead`` (for `ReadAhead` on an in-process runner)."""
    chained = [replace(task, ahead=replace(following, ahead=None)) for task, following in itertools.pairwise(tasks)]
    return chained + tasks[-1:]


def validate_batch(batch: pa.RecordBatch | pa.Table, source: str, dataset: DatasetSpec | None = None) -> pa.Table:
    """``row_id`` (the row key as int64; nulls allowed here, counted later) followed by the validated ``label``
    and features, under the pipeline names."""
    dataset = dataset or criteo()
    key = dataset.row_key
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    row_id = table.column(key)
    if pa.types.is_null(row_id.type):
        row_id = pa.chunked_array([pa.nulls(len(row_id), pa.int64())])
    elif not pa.types.is_integer(row_id.type):
        raise LabelDPInputError(f"{source}: column {key!r} has type {row_id.type}, expected an integer type")
    else:
        try:
            row_id = row_id.cast(pa.int64(), safe=True)
        except (pa.ArrowInvalid, OverflowError):
            raise LabelDPInputError(f"{source}: column {key!r} holds values that do not fit in int64") from None
    rest = [dataset.label, *dataset.features]
    validated = schema.validate_table(table.select(rest), source, columns=rest, dataset=dataset)
    return dataset.to_internal(validated.add_column(0, pa.field(key, pa.int64()), row_id))


def select_rows(table: pa.Table, selection, check_rows=None) -> pa.Table:
    """The rows of ``table`` to audit (``pipelines.scoring.audit_rows.RowSelection``; None keeps every row), plus the
    capacity check's rows (``check_rows``, a selection with ``mask``; None: none). Rows without a row_id are kept
    so that step 2 counts them (they can be neither selected nor excluded)."""
    if (selection is None and check_rows is None) or table.num_rows == 0:
        return table
    row_id = table.column(schema.ROW_ID)
    valid = row_id.is_valid().to_numpy(zero_copy_only=False) if row_id.null_count else None
    ids = row_id.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    keep = selection.mask(ids) if selection is not None else np.ones(ids.shape, dtype=bool)
    if check_rows is not None:
        keep |= check_rows.mask(ids)
    if valid is not None:
        keep |= ~valid
    return table if keep.all() else table.filter(pa.array(keep))


def read_batches(task: ReadTask, batch_size: int, selection=None,
                 dataset: DatasetSpec | None = None, check_rows=None,
                 slice_columns: tuple[str, ...] = ()) -> Iterator[tuple[str, pa.Table]]:
    """(batch id, validated table with pipeline names) for each batch of at most ``batch_size`` rows of the
    task's row group, restricted to the audited rows (``selection``) and the check rows (``check_rows``, see
    `select_rows`); empty batches are skipped. ``slice_columns``: feature or carry columns the declared slices
    read, joined to each batch as ``slice_column(name)`` (`with_slice_columns`)."""
    dataset = dataset or criteo()
    parquet = _open(task.path)
    source = f"{task.path} (row group {task.row_group})"
    read = input_columns(dataset)
    read += [name for name in slice_columns if name not in read]
    try:
        batches = parquet.iter_batches(batch_size=int(batch_size), row_groups=[task.row_group], columns=read)
        for index, batch in enumerate(batches):
            if batch.num_rows:
                table = validate_batch(batch, source, dataset)
                if slice_columns:
                    table = with_slice_columns(table, batch, slice_columns, source, dataset)
                table = select_rows(table, selection, check_rows)
                if table.num_rows:
                    yield f"{task.name}-b{index:05d}", table
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{source}: corrupt Parquet data ({exc})") from None


SLICE_PREFIX = "slice:"  # a batch's column a declared slice reads, joined under this prefix


def slice_column(name: str) -> str:
    """The name under which a batch carries the slicing column ``name`` through the job."""
    return SLICE_PREFIX + name


def with_slice_columns(table: pa.Table, batch: pa.RecordBatch, names: Sequence[str], source: str,
                       dataset: DatasetSpec) -> pa.Table:
    """``table`` (a validated batch) with the slicing columns ``names`` of the same stored rows appended under
    `slice_column` names, validated as stored and a dictionary column decoded to its values."""
    raw = pa.Table.from_batches([batch]).select(list(names))
    checked = schema.validate_table(raw, source, columns=list(names), dataset=dataset)
    for name in names:
        column = checked.column(name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        table = table.append_column(slice_column(name), column)
    return table


# ------------------------------------------------------------------------------------------ reading ahead

def _next_batch(task: ReadTask, batches: Iterator, read) -> tuple[ReadTask, Iterator, tuple[str, pa.Table] | None]:
    """The stream's next batch from ``batches`` (the batches of ``task``) on: (the task it belongs to, that task's
    batch iterator, the batch), moving on to ``task.ahead`` when ``task`` has no batch left; the batch is None at
    the end of the chain."""
    while True:
        batch = next(batches, None)
        if batch is not None or task.ahead is None:
            return task, batches, batch
        task = task.ahead
        batches = read(task)


class ReadAhead:
    """Reads one batch ahead of the scoring on a background thread: while a batch is scored (the CatBoost frame
    and Pool are single-threaded), the next one is read and validated (Arrow decodes without the GIL), and after
    a row group's last batch the first batch of the row group the runner takes next (`ReadTask.ahead`, set by
    `chain_tasks` for in-process runners). At most one batch is held ahead. The batches and their order are
    those of `read_batches`, so the job's output is unchanged; a read error is raised when its batch is due (or,
    for the next row group's first batch, at the end of the current one: the message names the file either
    way)."""

    def __init__(self, read):
        self._read = read  # ReadTask -> iterator of (batch id, table)
        self._pending: tuple[tuple[str, int], Future] | None = None  # the next task's first batch

    def start(self, task: ReadTask) -> None:
        """Starts reading ``task``'s first batch now (`batches` of that task takes it)."""
        self._pending = (task.key, background_thread("read").submit(_next_batch, task, self._read(task), self._read))

    def batches(self, task: ReadTask) -> Iterator[tuple[str, pa.Table]]:
        pending, self._pending = self._pending, None
        if pending is not None and pending[0] == task.key:
            future = pending[1]
        else:  # nothing read ahead for this task (the first, or a runner that took another order)
            future = background_thread("read").submit(_next_batch, task, self._read(task), self._read)
        while True:
            owner, batches, batch = future.result()
            if batch is None:
                return
            if owner.key != task.key:  # this task is done: the batch is the next task's first
                self._pending = (owner.key, future)
                return
            future = background_thread("read").submit(_next_batch, task, batches, self._read)
            yield batch


__all__ = [
    "INPUT_COLUMNS",
    "ReadAhead",
    "ReadTask",
    "chain_tasks",
    "input_columns",
    "partition_schema",
    "read_batches",
    "read_tasks",
    "select_rows",
    "slice_column",
    "validate_batch",
    "with_slice_columns",
]
