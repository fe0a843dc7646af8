"""The daily partition's schema, and the one validation every reader and writer goes through.

The columns of a partition come from its dataset spec (`pipelines.data.dataset_spec`: which column is the row key,
the label, the numeric and categorical features, the carried columns, and their stored types). Every function
here takes ``dataset=`` (a `DatasetSpec`); readers default to the spec the partition was written with
(`pipelines.data.dataset_spec.dataset_of`), writers and ``validate_table`` to the built-in Criteo spec.

A Criteo partition (``partitions/date=YYYY-MM-DD/part-*.parquet``, see ``pipelines.data.layout``) has exactly these
columns, in this order (``PARTITION_SCHEMA``):

- ``row_id``: int64, not null, unique within the day;
- ``label``: int8, not null, in ``{0, ..., num_classes - 1}`` (clicks: 0/1);
- ``I1``..``I13``: nullable int64 counts. int64 rather than int32 so that ingesting real click logs can never
  overflow; Parquet's encodings make the extra width nearly free on disk;
- ``C1``..``C26``: nullable ``dictionary<int32, string>``, each value 8 lowercase hex digits (the hashed
  categoricals of the Criteo logs); null = missing.

``validate_table`` is the single gate: it returns a table with exactly the spec's schema, casting the types that
cast without loss (any integer width for ``row_id``/``label``/``I*`` when the values fit, plain or large
strings and other dictionary index widths for ``C*``; for other specs also integers to float64 numeric columns
and integers to categorical text), and otherwise raises ``LabelDPInputError`` naming the
source (file or directory), the column, what is wrong and how many rows are bad. ``read_partition``,
``iter_partition_batches`` and ``write_partition`` all call it; ``write_partition`` publishes through
``layout.atomic_directory``, so a failed write leaves nothing in the partition area.

The oracle area (``oracle/date=D/``, synthetic data only) holds ``row_id`` and the true ``p_click`` per row;
``write_oracle``/``read_oracle`` own it. Training must never read it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from labeldp import hints
from labeldp.errors import LabelDPInputError, mention
from labeldp.files import pending_swap
from pipelines.data import key_buckets
from pipelines.data.column_checks import CATEGORICAL_TYPE as CATEGORICAL_TYPE  # re-exported
from pipelines.data.column_checks import (
    CATEGORICAL_WIDTH,
    CRITEO_HINT,
    cast_categorical,
    cast_float,
    cast_integer,
    cast_text,
    check_columns,
    check_labels,
    check_row_ids_unique,
    fail,
    repeated_row_ids,
    row_id_repeats,
)
from pipelines.data.dataset_spec import DatasetSpec, criteo, dataset_of, is_default, write_dataset_record
from pipelines.data.layout import (
    PART_GLOB,
    atomic_directories,
    atomic_directory,
    oracle_dir,
    partition_listing,
    partition_record,
    refuse_empty_file,
)

# The Criteo spec's columns (infra/datasets/criteo.json), the names the synthetic generator and the Criteo
# ingest write.
ROW_ID = criteo().row_key
LABEL = criteo().label
NUMERIC_COLUMNS = list(criteo().numeric)
CATEGORICAL_COLUMNS = list(criteo().categorical)
FEATURE_COLUMNS = NUMERIC_COLUMNS + CATEGORICAL_COLUMNS
ALL_COLUMNS = [ROW_ID, LABEL, *FEATURE_COLUMNS]

NUMERIC_TYPE = pa.int64()

PARTITION_SCHEMA = criteo().partition_schema()

P_CLICK = "p_click"
ORACLE_SCHEMA = pa.schema([pa.field(ROW_ID, pa.int64(), nullable=False),
                           pa.field(P_CLICK, pa.float64(), nullable=False)])

PROVENANCE_FILE = "_provenance.json"
# The partitions of the day that a write replaced (`replaced_partitions`): kept in the partition's directory, so
# that a verdict of an earlier partition reads "inputs replaced since" (its partition_fingerprint is listed).
REPLACED_FILE = "_replaced.json"
ORACLE_FILE = "p_click.parquet"  # in oracle/date=D/
DEFAULT_ROWS_PER_FILE = 500_000
PARQUET_COMPRESSION = "zstd"

_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def hex_strings(values: np.ndarray) -> pa.StringArray:
    """The 8-lowercase-hex-digit strings of uint32 ``values`` (e.g. 0x0a1b2c3d -> "0a1b2c3d").

    Built from one byte buffer (no Python string per value), for making categorical dictionaries fast.
    """
    values = np.asarray(values, dtype=np.uint32)
    shifts = np.arange(4 * (CATEGORICAL_WIDTH - 1), -4, -4, dtype=np.uint32)
    digits = _HEX_DIGITS[(values[:, None] >> shifts) & np.uint32(0xF)]
    offsets = np.arange(0, CATEGORICAL_WIDTH * len(values) + 1, CATEGORICAL_WIDTH, dtype=np.int32)
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(digits.tobytes()))


def _validate(table: pa.Table | pa.RecordBatch, source: object, num_classes: int | None,
              columns: Sequence[str] | None, require_rows: bool, check_unique: bool,
              dataset: DatasetSpec | None = None) -> pa.Table:
    dataset = dataset or criteo()
    num_classes = dataset.classes if num_classes is None else num_classes
    if isinstance(num_classes, bool) or int(num_classes) != num_classes or num_classes < 2 or num_classes > 127:
        raise LabelDPInputError(f"num_classes must be a whole number in 2..127; got {num_classes!r}")
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise LabelDPInputError(f"{source}: expected a pyarrow Table or RecordBatch, got {type(table).__name__}")
    every = list(dataset.columns)
    if columns is None:
        expected = every
    else:
        unknown = [name for name in columns if name not in every]
        if unknown:
            known = CRITEO_HINT if every == ALL_COLUMNS else ", ".join(every)
            raise LabelDPInputError(f"columns: {unknown} are not partition columns (known: {known})")
        wanted = set(columns)
        expected = [name for name in every if name in wanted]
    check_columns(table, expected, source, dataset)
    if require_rows and table.num_rows == 0:
        raise fail(source, "the partition is empty (0 rows)")

    numeric, carry = set(dataset.numeric), set(dataset.carry)
    hex8 = dataset.categorical_format == "hex8"
    arrays = []
    for name in expected:
        column = table.column(name)
        if name == dataset.row_key:
            column = cast_integer(column, pa.int64(), name, source)
            if column.null_count:
                raise fail(source, f"column {name!r}: {column.null_count} row(s) are null")
        elif name == dataset.label:
            column = check_labels(column, int(num_classes), source, name)
        elif name in numeric:
            column = (cast_integer(column, NUMERIC_TYPE, name, source) if dataset.numeric_type == "int64"
                      else cast_float(column, name, source))
        elif name in carry:
            column = cast_text(column, name, source)
        else:
            column = cast_categorical(column, name, source, hex8)
        arrays.append(column)
    stored = dataset.partition_schema()
    schema = pa.schema([stored.field(name) for name in expected])
    out = pa.Table.from_arrays(arrays, schema=schema)
    if check_unique and dataset.row_key in expected and out.num_rows > 1:
        check_row_ids_unique(out.column(dataset.row_key).to_numpy(), source, dataset.row_key)
    return out


def validate_table(table: pa.Table | pa.RecordBatch, source: object, num_classes: int | None = None,
                   columns: Sequence[str] | None = None, dataset: DatasetSpec | None = None) -> pa.Table:
    """Returns ``table`` with exactly the partition schema of ``dataset`` (default Criteo, ``PARTITION_SCHEMA``),
    or its ``columns`` subset, in schema order. ``num_classes`` defaults to the spec's ``classes``.

    ``source`` (a file or directory path, or a short description) starts every error message.

    Raises ``LabelDPInputError`` for: missing, extra or duplicated columns; a column whose type cannot be cast
    without loss (floats or strings in an integer column, non-strings in a categorical one); integer values
    that do not fit; categorical values that are not 8 lowercase hex digits (a ``hex8`` spec); null or
    out-of-range labels (outside ``0..num_classes-1``); null or duplicated row keys; an empty table. Each
    message names the column and counts the bad rows.
    """
    return _validate(table, source, num_classes, columns, require_rows=True, check_unique=True, dataset=dataset)


# --------------------------------------------------------------------------------------------- reading


class DayFiles(Protocol):
    """What the readers take of a day's handle (`pipelines.data.day.Day`, which imports this module, hence a
    protocol here): its partition's directory, its ``part-*.parquet`` files in name order and its dataset spec."""

    @property
    def directory(self) -> Path: ...

    @property
    def files(self) -> tuple[Path, ...]: ...

    @property
    def dataset(self) -> DatasetSpec: ...


def missing_partition(root: str | os.PathLike, date: dt.date, dataset: DatasetSpec | None = None) -> LabelDPInputError:
    """The error for a day without a partition, with the way to make one that fits its dataset (default
    Criteo): a day of another dataset's log is ingested with that dataset's spec, a Criteo day from its TSV
    (or synthesized: the synthetic world is Criteo-like)."""
    day = date.isoformat()
    if dataset is None or is_default(dataset):
        how = (f"ingest the day's Criteo TSV with {hints.INGEST_CRITEO_DAY.line(date=day)} (a synthetic day: "
               f"{hints.SYNTHESIZE_DAY.line(date=day)})")
    else:
        how = (f"ingest the day's log of dataset {dataset.name!r} with {hints.INGEST_DAY.line(date=day)} (SPEC: "
               f"its spec file)")
    return LabelDPInputError(f"no partition at {partition_listing(root, date).directory} (data root {Path(root)}); "
                             f"{how}, or pass the right {mention('data_root')}", field="data_root")


def open_parquet(path: Path) -> pq.ParquetFile:
    """Opens one Parquet file (metadata only); LabelDPInputError naming ``path`` if it is empty or not readable
    Parquet."""
    refuse_empty_file(path)
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: not a readable Parquet file ({exc})") from None


def pandas_index_columns(parquet: pq.ParquetFile) -> set[str]:
    """The columns a pandas DataFrame's index was stored in, as its ``pandas`` metadata names them
    (``index_columns``: ``__index_level_0__`` for the index of a filtered frame, or the index's own name). A
    file written otherwise, or a frame with a plain range index, has none."""
    try:
        metadata = parquet.schema_arrow.pandas_metadata or {}
    except (TypeError, ValueError):  # metadata that is not JSON: not pandas'
        return set()
    columns = metadata.get("index_columns") if isinstance(metadata, dict) else None
    return {name for name in columns or [] if isinstance(name, str)}


def _read_file(path: Path, columns: Sequence[str] | None) -> pa.Table:
    parquet = open_parquet(path)
    if columns is not None:
        present = set(parquet.schema_arrow.names)
        missing = [name for name in columns if name not in present]
        if missing:
            raise LabelDPInputError(f"{path}: missing column(s) {missing}")
    try:
        return parquet.read(columns=list(columns) if columns is not None else None)
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None


def _partition_files(root: str | os.PathLike, date: dt.date,
                     dataset: DatasetSpec | None = None) -> tuple[Path, list[Path]]:
    """The directory and ``part-*.parquet`` files of day ``date``'s partition, for the readers of a day named by
    its date (`read_partition`, `partition_fingerprint`): the error of `missing_partition` (saying how to make a
    day of ``dataset``) when there is none, naming the directory when it holds no files."""
    listing = partition_listing(root, date)
    if not listing.exists:
        raise missing_partition(root, date, dataset)
    if not listing.files:
        raise LabelDPInputError(f"{listing.directory}: the partition directory holds no {PART_GLOB} files")
    return listing.directory, list(listing.files)


def read_partition(root: str | os.PathLike, date: dt.date, columns: Sequence[str] | None = None,
                   num_classes: int | None = None, dataset: DatasetSpec | None = None) -> pa.Table:
    """`read_day` of day ``date``'s partition under ``root``, for a caller without the day's handle (users: it is
    `pipelines.read_partition`; the data commands; a model registered by its address): its files are listed here,
    once. A missing partition names the path it looked at. A caller with a `pipelines.data.day.Day` calls
    `read_day`. (The handle's module imports this one, so the files are listed here rather than through it.)"""
    directory, files = _partition_files(root, date, dataset)
    return _read_files(files, directory, dataset or dataset_of(root, date), columns, num_classes)


def read_day(day: DayFiles, columns: Sequence[str] | None = None, num_classes: int | None = None,
             dataset: DatasetSpec | None = None) -> pa.Table:
    """Reads and validates ``day``'s whole partition (its ``part-*.parquet`` files, in name order).

    Each file is validated on its own (errors name the file), then ``row_id`` uniqueness is checked across
    the files. With ``columns`` only those columns are read and validated (uniqueness only if ``row_id`` is
    among them). A corrupt file names the file. Columns carry their stored names (``dataset``, default the
    day's own spec).
    """
    return _read_files(day.files, day.directory, dataset or day.dataset, columns, num_classes)


def _read_files(files: Sequence[Path], directory: Path, dataset: DatasetSpec, columns: Sequence[str] | None,
                num_classes: int | None) -> pa.Table:
    tables = []
    for path in files:
        table = _read_file(path, columns)
        tables.append(_validate(table, path, num_classes, columns, require_rows=False, check_unique=True,
                                dataset=dataset))
    out = pa.concat_tables(tables)
    if out.num_rows == 0:
        raise fail(directory, "the partition is empty (0 rows)")
    if len(files) > 1 and dataset.row_key in out.column_names:
        check_row_ids_unique(out.column(dataset.row_key).to_numpy(), directory, dataset.row_key)
    return out


UNIQUE_CHECK_BATCH_ROWS = 1 << 20  # row ids a batch of the uniqueness check reads (8 MB)


def _row_id_batches(files: list[Path], key: str) -> Iterator[np.ndarray]:
    """The partition's row ids, file by file in batches, as int64 arrays. Every value goes through `cast_integer`
    (errors name the file); nulls are left out, the batches' own validation counts them."""
    for path in files:
        parquet = open_parquet(path)
        if key not in parquet.schema_arrow.names:
            raise LabelDPInputError(f"{path}: missing column(s) {[key]}")
        try:
            for batch in parquet.iter_batches(batch_size=UNIQUE_CHECK_BATCH_ROWS, columns=[key]):
                column = cast_integer(pa.chunked_array([batch.column(0)]), pa.int64(), key, path)
                if column.null_count:
                    column = column.drop_null()
                yield column.to_numpy()
        except (pa.ArrowException, OSError) as exc:
            raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None


def _check_unique_row_ids(files: list[Path], key: str, directory, rows: int) -> None:
    """Raises `repeated_row_ids` naming ``directory`` when a row id of the partition repeats. Memory does not grow
    with the day: ids strictly increasing in file order (logs are written in id order) are unique, which one pass
    with the last id sees; otherwise the ids are spilled by hash bucket and each bucket is checked on its own
    (`_check_unique_by_buckets`)."""
    last = None
    for ids in _row_id_batches(files, key):
        if ids.size == 0:
            continue
        if (last is not None and ids[0] <= last) or not np.all(ids[1:] > ids[:-1]):
            _check_unique_by_buckets(files, key, directory, rows)
            return
        last = ids[-1]


def _check_unique_by_buckets(files: list[Path], key: str, directory, rows: int) -> None:
    """The check for ids in any order: every id of the day spilled to disk by its hash (equal ids meet in one
    bucket), then each bucket sorted; the error counts the whole day, as `check_row_ids_unique` would."""
    extra_rows = distinct = 0
    example = None
    buckets = key_buckets.buckets_for(rows, key_buckets.BUCKET_ROWS)
    with key_buckets.KeyBuckets(buckets, {"row_id": np.int64}) as spill:
        for ids in _row_id_batches(files, key):
            spill.add(row_id=ids)
        for bucket in spill:
            extra, values, smallest = row_id_repeats(bucket["row_id"])
            if extra:
                extra_rows += extra
                distinct += values
                example = smallest if example is None else min(example, smallest)
    if extra_rows:
        raise repeated_row_ids(directory, key, extra_rows, distinct, example)


def iter_partition_batches(day: DayFiles, batch_size: int, columns: Sequence[str] | None = None,
                           num_classes: int | None = None, check_unique: bool = True,
                           dataset: DatasetSpec | None = None) -> Iterator[pa.RecordBatch]:
    """Streams ``day``'s partition as validated ``RecordBatch``es of at most ``batch_size`` rows.

    When ``check_unique`` (default) and ``row_id`` is read, the day's row ids are read and checked for duplicates
    before the first batch is yielded (`_check_unique_row_ids`: one more pass over the ids, and when they are not
    in increasing order, a spill of them to disk by hash bucket). Memory is bounded by one batch, or one bucket of
    ids, whatever the day's rows. Every batch is validated (errors name the file). An empty partition raises
    before anything is yielded.
    """
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise LabelDPInputError(f"batch_size must be a whole number >= 1; got {batch_size!r}")
    directory, files = day.directory, list(day.files)
    dataset = dataset or day.dataset
    key = dataset.row_key
    # Each file is opened again when it is read, and let go after: an open reader keeps its last row group's
    # buffers (the dictionaries), which added up over a day's files.
    total = sum(open_parquet(path).metadata.num_rows for path in files)
    if total == 0:
        raise fail(directory, "the partition is empty (0 rows)")
    reads_row_id = columns is None or key in columns
    if check_unique and reads_row_id:
        _check_unique_row_ids(files, key, directory, total)
    for path in files:
        parquet = open_parquet(path)
        try:
            batches = parquet.iter_batches(batch_size=int(batch_size),
                                           columns=list(columns) if columns is not None else None)
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                table = _validate(batch, path, num_classes, columns, require_rows=False, check_unique=False,
                                  dataset=dataset)
                yield from table.to_batches()
        except (pa.ArrowException, OSError) as exc:
            raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None


SAMPLE_BATCH_ROWS = 262_144  # rows a batch of `read_keyed_sample`'s passes


def read_keyed_sample(day: DayFiles, dataset: DatasetSpec, max_rows: int,
                      among: Callable[[np.ndarray], np.ndarray] | None = None,
                      positions: bool = False) -> tuple[pa.Table, int, int]:
    """(rows, rows of the day, rows ``among`` selects): ``day``'s rows that ``among(row_ids)`` selects (all rows
    without it), at most ``max_rows`` of them by the keyed sample (`pipelines.data.splits.keyed_sample`: it depends
    on the row ids only), in the partition's order with the dataset's internal column names. Streamed in two
    passes, the row ids alone (a running bottom-``max_rows``, `pipelines.data.splits.KeyedSampler`), then the rows
    kept: memory holds ``max_rows`` ids and rows, not the day's ids. The rows kept from a batch keep only the
    dictionary entries they use (`categories.compact_dictionaries`; the values, and so CatBoost's frames, are the
    same). Below the cap the rows are every selected row. ``among`` is called on each batch's row ids. With
    ``positions``, a column ``row_position`` holds each row's place in the day (0-based, in the partition's order)."""
    from auditing.game.row_groups import in_sorted
    from pipelines.data.categories import compact_dictionaries
    from pipelines.data.splits import KeyedSampler

    key = dataset.row_key
    sampler = KeyedSampler(max_rows)
    day_rows = 0
    for batch in iter_partition_batches(day, SAMPLE_BATCH_ROWS, columns=[key], dataset=dataset):
        ids = batch.column(key).to_numpy(zero_copy_only=False).astype(np.int64)
        day_rows += ids.size
        sampler.add(ids if among is None else ids[among(ids)])
    # sorted as uint64 (`in_sorted`'s order): a negative id sorts after the others
    keep_ids = np.sort(sampler.chosen().astype(np.uint64))
    parts = []
    offset = 0
    for batch in iter_partition_batches(day, SAMPLE_BATCH_ROWS, dataset=dataset, check_unique=False):
        table = dataset.to_internal(pa.Table.from_batches([batch]))
        rows = np.flatnonzero(in_sorted(table.column("row_id").to_numpy().astype(np.uint64), keep_ids))
        if rows.size or not parts:
            part = compact_dictionaries(table.take(pa.array(rows)))
            if positions:
                part = part.append_column("row_position", pa.array(offset + rows, type=pa.int64()))
            parts.append(part)
        offset += table.num_rows
    return pa.concat_tables(parts), day_rows, sampler.rows


CHECK_BATCH_ROWS = 1 << 20  # rows of the key and label columns `check_keys_and_labels` reads at a time


def check_keys_and_labels(day: DayFiles) -> None:
    """``day``'s row keys and labels, streamed: every batch validated (nulls, types, label range; errors name the
    file), the keys unique across the day (`iter_partition_batches`' bounded check) and the labels not all one
    value (`check_labels_vary`). Memory holds one batch of two columns, not the day."""
    dataset = day.dataset
    labels, rows = [], 0
    for batch in iter_partition_batches(day, CHECK_BATCH_ROWS, columns=[dataset.row_key, dataset.label],
                                        dataset=dataset):
        labels.append(pc.unique(batch.column(dataset.label)))
        rows += batch.num_rows
    check_labels_vary(pa.chunked_array(labels), day.directory, dataset.label, rows=rows)


def check_labels_vary(labels: pa.ChunkedArray | pa.Array, source: object, name: str = LABEL,
                      rows: int | None = None) -> None:
    """Raises ``LabelDPInputError`` naming ``source`` when every row has the same label: the audit compares
    guesses with labels, and on such a day there is nothing to audit (nor can a model learn anything).
    ``labels``: the day's labels, or only their distinct values with the day's ``rows``."""
    values = pc.unique(labels).drop_null()
    if len(values) < 2:
        seen = "no labels" if len(values) == 0 else f"the label {values[0].as_py()}"
        raise fail(source, f"column {name!r}: all {len(labels) if rows is None else rows} row(s) have {seen}; "
                           f"nothing to audit (the labels must take at least two values)")


def partition_fingerprint(root: str | os.PathLike, date: dt.date) -> str:
    """A stable identity of day ``date``'s partition's bytes: ``sha256:<hex>`` over each ``part-*.parquet`` file's
    name, size and content, in name order (`files_fingerprint`), for a caller without the day's handle (its files
    listed here, once); a caller with a `pipelines.data.day.Day` reads ``day.fingerprint``.

    The same files give the same fingerprint on any machine; any change to any byte changes it. It reads every
    byte of the partition (cost: benchmarks/results/notes_from_code.md). Rewriting identical data with the same
    pyarrow version gives identical bytes (hence the same fingerprint); a different pyarrow version may not.
    """
    _directory, files = _partition_files(root, date)
    return files_fingerprint(files)


def files_fingerprint(files: Sequence[Path]) -> str:
    """`partition_fingerprint` of these files (in name order: a partition's ``part-*.parquet``)."""
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.name):
        size = path.stat().st_size
        digest.update(f"{path.name}\0{size}\0".encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def refuse_existing_partition(root: str | os.PathLike, date: dt.date, replace: bool) -> None:
    """LabelDPInputError (field ``replace``) when day ``date`` already has a partition and ``replace`` is False: a
    day is never replaced silently (a mistyped date would destroy another day's data)."""
    directory = partition_listing(root, date).directory
    if replace or not directory.exists():
        return
    raise LabelDPInputError(
        f"the partition of {date.isoformat()} already exists at {directory}; pass {mention('replace')} to replace it "
        "(its verdicts stay in the warehouse, marked 'inputs replaced since'), or give another date",
        field="replace")


def _replaced_record(root: str | os.PathLike, date: dt.date) -> dict:
    try:
        record = json.loads(partition_record(root, date, REPLACED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def replaced_partitions(root: str | os.PathLike, date: dt.date) -> list[dict]:
    """The partitions of day ``date`` that writes replaced, oldest first: dicts of ``fingerprint`` (the replaced
    partition's), ``rows`` and ``replaced_at`` (UTC, ISO-8601); empty when the day was never replaced (or has no
    partition). An unreadable record is read as none."""
    entries = _replaced_record(root, date).get("replaced")
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("fingerprint"), str)] \
        if isinstance(entries, list) else []


def replaced_since(root: str | os.PathLike, date: dt.date, fingerprint: str | None) -> str | None:
    """When the partition ``fingerprint`` of day ``date`` was last replaced by another (UTC, ISO-8601), None when it
    is the day's partition now or was never replaced: a verdict judged on it then reads "inputs replaced since".
    Reads the day's small record (`REPLACED_FILE`), never the partition's bytes."""
    record = _replaced_record(root, date)
    if not fingerprint or fingerprint == record.get("current"):
        return None
    times = [e.get("replaced_at") for e in replaced_partitions(root, date) if e["fingerprint"] == fingerprint]
    return str(times[-1]) if times else None


def _replacement_record(root: str | os.PathLike, date: dt.date) -> tuple[str, int, list[dict]] | None:
    """(fingerprint, rows, earlier replacements) of the day's partition before a write replaces it; None when there
    is none, or nothing readable to fingerprint."""
    files = partition_listing(root, date).files
    if not files:
        return None
    try:
        rows = sum(open_parquet(path).metadata.num_rows for path in files)
    except LabelDPInputError:
        rows = None
    return files_fingerprint(files), rows, replaced_partitions(root, date)


# --------------------------------------------------------------------------------------------- writing


def _as_batches(table_or_batches: pa.Table | pa.RecordBatch | Iterable) -> Iterator[pa.Table]:
    if isinstance(table_or_batches, pa.Table | pa.RecordBatch):
        yield table_or_batches if isinstance(table_or_batches, pa.Table) else pa.Table.from_batches(
            [table_or_batches])
        return
    for item in table_or_batches:
        if isinstance(item, pa.RecordBatch):
            yield pa.Table.from_batches([item])
        elif isinstance(item, pa.Table):
            yield item
        else:
            raise LabelDPInputError(f"write_partition expects pyarrow Tables or RecordBatches; got "
                                    f"{type(item).__name__}")


def write_partition(root: str | os.PathLike, date: dt.date,
                    table_or_batches: pa.Table | pa.RecordBatch | Iterable,
                    rows_per_file: int = DEFAULT_ROWS_PER_FILE, num_classes: int | None = None,
                    source: object = None, provenance: dict | Callable[[], dict] | None = None,
                    dataset: DatasetSpec | None = None, replace: bool = False,
                    oracle: pa.Table | None = None) -> Path:
    """Validates and writes the partition of ``date``; returns its directory.

    Accepts one Table/RecordBatch or an iterable of them (streamed: memory holds one batch plus 8 bytes a row
    for the ``row_id`` uniqueness check). Files are ``part-00000.parquet``, ``part-00001.parquet``, ... with at
    most ``rows_per_file`` rows each, zstd-compressed. Everything is written through ``atomic_directory``:
    if validation fails anywhere (bad batch, duplicated ``row_id`` across batches, no rows at all), nothing
    appears in the partition area and an existing partition of that day is left as it was; on success an
    existing partition of that day is replaced as a whole. A day whose rows all have one label is refused
    (`check_labels_vary`: the audit would refuse it). ``source`` names the input in error messages.

    ``provenance`` (a JSON-able dict, or a function returning one, called after all batches were consumed so
    a streaming source can report its counts) is written beside the data as ``_provenance.json`` (sorted
    keys; not covered by ``partition_fingerprint``, not read by ``read_partition``).

    ``dataset`` (default Criteo) gives the columns; a spec other than the default is recorded as
    ``_dataset.json`` (`pipelines.data.dataset_spec.write_dataset_record`), which readers then default to.

    An existing partition of the day is refused (`refuse_existing_partition`) unless ``replace``; a replaced
    partition of other bytes is recorded in the new one's ``_replaced.json`` (`replaced_partitions`: its
    fingerprint, rows and when), with the replacements before it.

    ``oracle`` (synthetic days: ``row_id``, ``p_click``, checked as by `write_oracle`) is the day's oracle, published
    with the partition as one pair (`pipelines.data.layout.atomic_directories`, the oracle first): a process killed
    anywhere leaves the old pair, or a journal from which the next command that writes under the data root moves
    the whole new pair in (`labeldp.files.recover_interrupted`); never the new oracle beside the old partition. A
    day written without an oracle over one that had one (a synthetic day replaced by ingested rows) takes the old
    oracle away in the same pair.
    """
    dataset = dataset or criteo()
    oracle = None if oracle is None else _checked_oracle(oracle)
    file_schema = dataset.partition_schema()
    if isinstance(rows_per_file, bool) or int(rows_per_file) != rows_per_file or rows_per_file < 1:
        raise LabelDPInputError(f"rows_per_file must be a whole number >= 1; got {rows_per_file!r}")
    rows_per_file = int(rows_per_file)
    refuse_existing_partition(root, date, replace)
    final = partition_listing(root, date).directory
    previous = _replacement_record(root, date)
    label = source if source is not None else f"partition {final.name}"
    # A day written without an oracle over a synthetic one: the old oracle goes with the old partition (an empty
    # directory takes its place in the same pair), never left beside rows it was not drawn for.
    stale_oracle = oracle is None and (oracle_dir(root, date) / ORACLE_FILE).exists()
    targets = (oracle_dir(root, date), final) if oracle is not None or stale_oracle else (final,)
    with atomic_directories(*targets) as tmps:
        tmp = tmps[-1]
        if oracle is not None:
            pq.write_table(oracle, tmps[0] / ORACLE_FILE, compression=PARQUET_COMPRESSION)
        writer: pq.ParquetWriter | None = None
        rows_in_file = 0
        file_index = 0
        row_ids: list[np.ndarray] = []
        labels: set[int] = set()  # the distinct labels seen (two are enough)
        total = 0
        try:
            for piece in _as_batches(table_or_batches):
                if piece.num_rows == 0:
                    continue
                table = _validate(piece, label, num_classes, None, require_rows=False, check_unique=False,
                                  dataset=dataset)
                row_ids.append(table.column(dataset.row_key).to_numpy())
                if len(labels) < 2:
                    labels.update(pc.unique(table.column(dataset.label)).drop_null().to_pylist())
                total += table.num_rows
                offset = 0
                while offset < table.num_rows:
                    if writer is None:
                        writer = pq.ParquetWriter(tmp / f"part-{file_index:05d}.parquet", file_schema,
                                                  compression=PARQUET_COMPRESSION)
                        rows_in_file = 0
                    take = min(rows_per_file - rows_in_file, table.num_rows - offset)
                    writer.write_table(table.slice(offset, take), row_group_size=take)
                    offset += take
                    rows_in_file += take
                    if rows_in_file >= rows_per_file:
                        writer.close()
                        writer = None
                        file_index += 1
        finally:
            if writer is not None:
                writer.close()
        if total == 0:
            raise fail(label, "the partition is empty (0 rows); nothing was written")
        check_row_ids_unique(np.concatenate(row_ids), label, dataset.row_key)
        check_labels_vary(pa.array(sorted(labels), pa.int64()), label, dataset.label, rows=total)
        write_dataset_record(tmp, dataset)
        if previous is not None:
            fingerprint, old_rows, history = previous
            current = files_fingerprint(sorted(tmp.glob(PART_GLOB)))
            if fingerprint != current:
                history = [*history, {"fingerprint": fingerprint, "rows": old_rows,
                                      "replaced_at": dt.datetime.now(dt.UTC).isoformat()}]
            if history:
                text = json.dumps({"current": current, "replaced": history}, indent=2) + "\n"
                (tmp / REPLACED_FILE).write_text(text, encoding="utf-8")
        if provenance is not None:
            record = provenance() if callable(provenance) else provenance
            text = json.dumps(record, sort_keys=True, indent=2, default=str) + "\n"
            (tmp / PROVENANCE_FILE).write_text(text, encoding="utf-8")
    return final


def read_provenance(root: str | os.PathLike, date: dt.date) -> dict | None:
    """The ``_provenance.json`` written with the partition of ``date`` (generator seed, ingest counts), if any."""
    path = partition_record(root, date, PROVENANCE_FILE)
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------- oracle


def _checked_oracle(table: pa.Table) -> pa.Table:
    """The oracle table with exactly ``ORACLE_SCHEMA``; LabelDPInputError for a missing column or a p_click outside
    [0, 1]."""
    check_columns(table, ORACLE_SCHEMA.names, "oracle table")
    table = table.select(ORACLE_SCHEMA.names).cast(ORACLE_SCHEMA)
    p = table.column(P_CLICK).to_numpy()
    bad = int(np.count_nonzero(~((p >= 0.0) & (p <= 1.0))))
    if bad:
        raise LabelDPInputError(f"oracle table: column 'p_click': {bad} row(s) are outside [0, 1]")
    return table


def write_oracle(root: str | os.PathLike, date: dt.date, table: pa.Table) -> Path:
    """Writes ``oracle/date=D/p_click.parquet`` (``row_id``, ``p_click`` in [0, 1]) atomically; returns the dir.

    Synthetic data only. Training must never read this area. A day's oracle and partition written together (so
    that a kill never leaves one beside the other's predecessor): `write_partition` with ``oracle=``.
    """
    table = _checked_oracle(table)
    final = oracle_dir(root, date)
    with atomic_directory(final) as tmp:
        pq.write_table(table, tmp / ORACLE_FILE, compression=PARQUET_COMPRESSION)
    return final


def read_oracle(root: str | os.PathLike, date: dt.date) -> pa.Table:
    """Reads the oracle (``row_id``, ``p_click``) of ``date``; for audits and tests, never for training.

    Refused (LabelDPInputError) while the day's oracle and partition are being replaced as a pair, or were when a
    kill interrupted it (`labeldp.files.pending_swap`): the oracle could then be the new one beside the old
    partition. Any command that writes under the data root finishes the replacement first."""
    directory = oracle_dir(root, date)
    journal = pending_swap(root, directory)
    if journal is not None:
        raise LabelDPInputError(f"{directory}: the day's oracle and partition are being replaced together, or were "
                                f"when the process was killed ({journal}); any command that writes under the data "
                                "root finishes the replacement first: run one, then read it again", field="data_root")
    path = directory / ORACLE_FILE
    if not path.is_file():
        raise LabelDPInputError(f"no oracle at {path}; only synthetic days ({hints.SYNTHESIZE_DAY.line(date=date)}) "
                                f"have one")
    parquet = open_parquet(path)
    try:
        table = parquet.read()
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None
    check_columns(table, ORACLE_SCHEMA.names, path)
    return table.cast(ORACLE_SCHEMA)
