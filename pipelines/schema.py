"""The daily partition's schema, and the one validation every reader and writer goes through.

A partition (``partitions/date=YYYY-MM-DD/part-*.parquet``, see ``pipelines.layout``) has exactly these
columns, in this order (``PARTITION_SCHEMA``):

- ``row_id``: int64, not null, unique within the day;
- ``label``: int8, not null, in ``{0, ..., num_classes - 1}`` (clicks: 0/1);
- ``I1``..``I13``: nullable int64 counts. int64 rather than int32 so that ingesting real click logs can never
  overflow; Parquet's encodings make the extra width nearly free on disk;
- ``C1``..``C26``: nullable ``dictionary<int32, string>``, each value 8 lowercase hex digits (the hashed
  categoricals of the Criteo logs); null = missing.

``validate_table`` is the single gate: it returns a table with exactly this schema, casting the types that
cast without loss (any integer width for ``row_id``/``label``/``I*`` when the values fit, plain or large
strings and other dictionary index widths for ``C*``), and otherwise raises ``LabelDPInputError`` naming the
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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from auditing.errors import LabelDPInputError
from pipelines.layout import atomic_directory, oracle_dir, partition_dir

ROW_ID = "row_id"
LABEL = "label"
NUMERIC_COLUMNS = [f"I{i}" for i in range(1, 14)]
CATEGORICAL_COLUMNS = [f"C{i}" for i in range(1, 27)]
FEATURE_COLUMNS = NUMERIC_COLUMNS + CATEGORICAL_COLUMNS
ALL_COLUMNS = [ROW_ID, LABEL, *FEATURE_COLUMNS]

NUMERIC_TYPE = pa.int64()
CATEGORICAL_TYPE = pa.dictionary(pa.int32(), pa.string())
CATEGORICAL_WIDTH = 8  # hex digits of a hashed categorical value

PARTITION_SCHEMA = pa.schema(
    [pa.field(ROW_ID, pa.int64(), nullable=False), pa.field(LABEL, pa.int8(), nullable=False)]
    + [pa.field(name, NUMERIC_TYPE) for name in NUMERIC_COLUMNS]
    + [pa.field(name, CATEGORICAL_TYPE) for name in CATEGORICAL_COLUMNS]
)

P_CLICK = "p_click"
ORACLE_SCHEMA = pa.schema([pa.field(ROW_ID, pa.int64(), nullable=False),
                           pa.field(P_CLICK, pa.float64(), nullable=False)])

PART_GLOB = "part-*.parquet"
PROVENANCE_FILE = "_provenance.json"
DEFAULT_ROWS_PER_FILE = 500_000
PARQUET_COMPRESSION = "zstd"

_HEX_RE = f"^[0-9a-f]{{{CATEGORICAL_WIDTH}}}$"


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


# --------------------------------------------------------------------------------------------- validation


def _fail(source: object, message: str) -> LabelDPInputError:
    return LabelDPInputError(f"{source}: {message}")


def _check_columns(table: pa.Table, expected: Sequence[str], source: object) -> None:
    present = list(table.column_names)
    missing = [name for name in expected if name not in present]
    extra = [name for name in present if name not in expected]
    duplicated = sorted({name for name in present if present.count(name) > 1})
    problems = []
    if missing:
        problems.append(f"missing column(s) {missing}")
    if extra:
        problems.append(f"unexpected column(s) {extra}")
    if duplicated:
        problems.append(f"duplicated column name(s) {duplicated}")
    if problems:
        if list(expected) == ALL_COLUMNS:
            hint = "; a partition has exactly the columns row_id, label, I1..I13, C1..C26"
        else:
            hint = f"; expected exactly {list(expected)}"
        raise _fail(source, "; ".join(problems) + hint)


def _is_integer(type_: pa.DataType) -> bool:
    return pa.types.is_integer(type_)


def _cast_integer(column: pa.ChunkedArray, target: pa.DataType, name: str, source: object) -> pa.ChunkedArray:
    """Casts an integer (or all-null) column to ``target``, counting the rows whose values do not fit."""
    type_ = column.type
    if pa.types.is_null(type_):
        return pa.chunked_array([pa.nulls(len(chunk), target) for chunk in column.chunks], type=target)
    if not _is_integer(type_):
        raise _fail(source, f"column {name!r} has type {type_}, expected an integer type ({target}); "
                    f"{len(column) - column.null_count} non-null rows are affected")
    if type_ == target:
        return column
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, OverflowError):
        info = np.iinfo(target.to_pandas_dtype())
        src = np.iinfo(type_.to_pandas_dtype())
        # Compare in the column's own type (bounds clipped to it), so that no value is rounded.
        low = pa.scalar(max(int(info.min), int(src.min)), type_)
        high = pa.scalar(min(int(info.max), int(src.max)), type_)
        bad = pc.sum(pc.or_(pc.less(column, low), pc.greater(column, high))).as_py() or 0
        raise _fail(source, f"column {name!r}: {bad} row(s) do not fit in {target} "
                    f"(range {info.min}..{info.max})") from None


def _cast_categorical(column: pa.ChunkedArray, name: str, source: object) -> pa.ChunkedArray:
    """Casts strings / other dictionaries to ``dictionary<int32, string>``; checks the 8-hex format."""
    type_ = column.type
    if pa.types.is_null(type_):
        return pa.chunked_array([pa.nulls(len(chunk), CATEGORICAL_TYPE) for chunk in column.chunks],
                                type=CATEGORICAL_TYPE)
    value_type = type_.value_type if pa.types.is_dictionary(type_) else type_
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        raise _fail(source, f"column {name!r} has type {type_}, expected strings of {CATEGORICAL_WIDTH} hex "
                    f"digits (dictionary<int32, string>); {len(column) - column.null_count} non-null rows "
                    f"are affected")
    if pa.types.is_dictionary(type_):
        if type_ != CATEGORICAL_TYPE:
            column = column.cast(CATEGORICAL_TYPE)
    else:
        column = pc.dictionary_encode(column.cast(pa.string()))
        if column.type != CATEGORICAL_TYPE:
            column = column.cast(CATEGORICAL_TYPE)
    # Check the format on each chunk's dictionary (small), then count the rows pointing at bad entries.
    bad_rows = 0
    example = None
    for chunk in column.chunks:
        ok = pc.match_substring_regex(chunk.dictionary, _HEX_RE).fill_null(True)  # a null entry is a null
        if pc.all(ok).as_py() is False:
            bad_positions = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
            indices = chunk.indices.to_numpy(zero_copy_only=False)
            valid = chunk.is_valid().to_numpy(zero_copy_only=False)
            hits = np.isin(indices, bad_positions) & valid
            bad_rows += int(hits.sum())
            if example is None and hits.any():
                example = chunk.dictionary[int(indices[np.flatnonzero(hits)[0]])].as_py()
    if bad_rows:
        raise _fail(source, f"column {name!r}: {bad_rows} row(s) are not {CATEGORICAL_WIDTH} lowercase hex "
                    f"digits (e.g. {example!r})")
    return column


def _check_labels(column: pa.ChunkedArray, num_classes: int, source: object) -> pa.ChunkedArray:
    if not _is_integer(column.type):
        raise _fail(source, f"column 'label' has type {column.type}, expected an integer type (int8) with "
                    f"values in 0..{num_classes - 1}")
    if column.null_count:
        raise _fail(source, f"column 'label': {column.null_count} row(s) are null; every row needs a label")
    out_of_range = pc.sum(pc.or_(pc.less(column, 0), pc.greater_equal(column, num_classes))).as_py() or 0
    if out_of_range:
        seen = pc.unique(column).to_pylist()
        bad_values = sorted(v for v in seen if not 0 <= v < num_classes)[:5]
        raise _fail(source, f"column 'label': {out_of_range} row(s) have labels outside the {num_classes} "
                    f"classes 0..{num_classes - 1} (e.g. {bad_values})")
    return column.cast(pa.int8())


def _check_row_ids_unique(row_ids: np.ndarray, source: object) -> None:
    ordered = np.sort(row_ids, kind="stable")
    repeats = ordered[1:] == ordered[:-1]
    if repeats.any():
        dup_values = np.unique(ordered[1:][repeats])
        extra_rows = int(repeats.sum())
        raise _fail(source, f"column 'row_id': {extra_rows} row(s) repeat an earlier row_id "
                    f"({len(dup_values)} distinct duplicated value(s), e.g. {int(dup_values[0])}); "
                    f"row_id must be unique within a day")


def _validate(table: pa.Table | pa.RecordBatch, source: object, num_classes: int,
              columns: Sequence[str] | None, require_rows: bool, check_unique: bool) -> pa.Table:
    if isinstance(num_classes, bool) or int(num_classes) != num_classes or num_classes < 2 or num_classes > 127:
        raise LabelDPInputError(f"num_classes must be a whole number in 2..127; got {num_classes!r}")
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise LabelDPInputError(f"{source}: expected a pyarrow Table or RecordBatch, got {type(table).__name__}")
    if columns is None:
        expected = list(ALL_COLUMNS)
    else:
        unknown = [name for name in columns if name not in ALL_COLUMNS]
        if unknown:
            raise LabelDPInputError(f"columns: {unknown} are not partition columns (known: row_id, label, "
                                    f"I1..I13, C1..C26)")
        wanted = set(columns)
        expected = [name for name in ALL_COLUMNS if name in wanted]
    _check_columns(table, expected, source)
    if require_rows and table.num_rows == 0:
        raise _fail(source, "the partition is empty (0 rows)")

    arrays = []
    for name in expected:
        column = table.column(name)
        if name == ROW_ID:
            column = _cast_integer(column, pa.int64(), name, source)
            if column.null_count:
                raise _fail(source, f"column 'row_id': {column.null_count} row(s) are null")
        elif name == LABEL:
            column = _check_labels(column, int(num_classes), source)
        elif name in NUMERIC_COLUMNS:
            column = _cast_integer(column, NUMERIC_TYPE, name, source)
        else:
            column = _cast_categorical(column, name, source)
        arrays.append(column)
    schema = pa.schema([PARTITION_SCHEMA.field(name) for name in expected])
    out = pa.Table.from_arrays(arrays, schema=schema)
    if check_unique and ROW_ID in expected and out.num_rows > 1:
        _check_row_ids_unique(out.column(ROW_ID).to_numpy(), source)
    return out


def validate_table(table: pa.Table | pa.RecordBatch, source: object, num_classes: int = 2,
                   columns: Sequence[str] | None = None) -> pa.Table:
    """Returns ``table`` with exactly ``PARTITION_SCHEMA`` (or its ``columns`` subset, in schema order).

    ``source`` (a file or directory path, or a short description) starts every error message.

    Raises ``LabelDPInputError`` for: missing, extra or duplicated columns; a column whose type cannot be cast
    without loss (floats or strings in an integer column, non-strings in a categorical one); integer values
    that do not fit; categorical values that are not 8 lowercase hex digits; null or out-of-range labels
    (outside ``0..num_classes-1``); null or duplicated ``row_id``; an empty table. Each message names the
    column and counts the bad rows.
    """
    return _validate(table, source, num_classes, columns, require_rows=True, check_unique=True)


# --------------------------------------------------------------------------------------------- reading


def _partition_files(root: str | os.PathLike, date: dt.date) -> tuple[Path, list[Path]]:
    directory = partition_dir(root, date)
    if not directory.is_dir():
        raise LabelDPInputError(
            f"no partition at {directory} (data root {Path(root)}); create it with `labeldp-audit data synth` "
            f"or `labeldp-audit data ingest-criteo`, or pass the right --data-root"
        )
    files = sorted(directory.glob(PART_GLOB))
    if not files:
        raise LabelDPInputError(f"{directory}: the partition directory holds no {PART_GLOB} files")
    return directory, files


def open_parquet(path: Path) -> pq.ParquetFile:
    """Opens one Parquet file (metadata only); LabelDPInputError naming ``path`` if it is not readable Parquet."""
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: not a readable Parquet file ({exc})") from None


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


def read_partition(root: str | os.PathLike, date: dt.date, columns: Sequence[str] | None = None,
                   num_classes: int = 2) -> pa.Table:
    """Reads and validates the whole partition of ``date`` (all ``part-*.parquet`` files, in name order).

    Each file is validated on its own (errors name the file), then ``row_id`` uniqueness is checked across
    the files. With ``columns`` only those columns are read and validated (uniqueness only if ``row_id`` is
    among them). A missing partition names the path it looked at; a corrupt file names the file.
    """
    directory, files = _partition_files(root, date)
    tables = []
    for path in files:
        table = _read_file(path, columns)
        tables.append(_validate(table, path, num_classes, columns, require_rows=False, check_unique=True))
    out = pa.concat_tables(tables)
    if out.num_rows == 0:
        raise _fail(directory, "the partition is empty (0 rows)")
    if len(files) > 1 and ROW_ID in out.column_names:
        _check_row_ids_unique(out.column(ROW_ID).to_numpy(), directory)
    return out


def iter_partition_batches(root: str | os.PathLike, date: dt.date, batch_size: int,
                           columns: Sequence[str] | None = None, num_classes: int = 2,
                           check_unique: bool = True) -> Iterator[pa.RecordBatch]:
    """Streams the partition of ``date`` as validated ``RecordBatch``es of at most ``batch_size`` rows.

    Memory is bounded by one batch plus, when ``check_unique`` (default) and ``row_id`` is read, the
    ``row_id`` column of the day (8 bytes a row), which is read and checked for duplicates before the first
    batch is yielded. Every batch is validated (errors name the file). An empty partition raises before
    anything is yielded.
    """
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise LabelDPInputError(f"batch_size must be a whole number >= 1; got {batch_size!r}")
    directory, files = _partition_files(root, date)
    parquets = [(path, open_parquet(path)) for path in files]
    total = sum(parquet.metadata.num_rows for _path, parquet in parquets)
    if total == 0:
        raise _fail(directory, "the partition is empty (0 rows)")
    reads_row_id = columns is None or ROW_ID in columns
    if check_unique and reads_row_id:
        row_ids = [_read_file(path, [ROW_ID]).column(ROW_ID) for path in files]
        all_ids = pa.chunked_array([chunk for column in row_ids for chunk in column.chunks], type=None)
        all_ids = _cast_integer(all_ids, pa.int64(), ROW_ID, directory)
        _check_row_ids_unique(all_ids.to_numpy(), directory)
    for path, parquet in parquets:
        try:
            batches = parquet.iter_batches(batch_size=int(batch_size),
                                           columns=list(columns) if columns is not None else None)
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                table = _validate(batch, path, num_classes, columns, require_rows=False, check_unique=False)
                yield from table.to_batches()
        except (pa.ArrowException, OSError) as exc:
            raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None


def partition_fingerprint(root: str | os.PathLike, date: dt.date) -> str:
    """A stable identity of the partition's bytes: ``sha256:<hex>`` over each ``part-*.parquet`` file's name,
    size and content, in name order.

    The same files give the same fingerprint on any machine; any change to any byte changes it. It reads every
    byte of the partition (cost: benchmarks/results/notes_from_code.md). Rewriting identical data with the same
    pyarrow version gives identical bytes (hence the same fingerprint); a different pyarrow version may not.
    """
    _directory, files = _partition_files(root, date)
    digest = hashlib.sha256()
    for path in files:
        size = path.stat().st_size
        digest.update(f"{path.name}\0{size}\0".encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return "sha256:" + digest.hexdigest()


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
                    rows_per_file: int = DEFAULT_ROWS_PER_FILE, num_classes: int = 2,
                    source: object = None, provenance: dict | Callable[[], dict] | None = None) -> Path:
    """Validates and writes the partition of ``date``; returns its directory.

    Accepts one Table/RecordBatch or an iterable of them (streamed: memory holds one batch plus 8 bytes a row
    for the ``row_id`` uniqueness check). Files are ``part-00000.parquet``, ``part-00001.parquet``, ... with at
    most ``rows_per_file`` rows each, zstd-compressed. Everything is written through ``atomic_directory``:
    if validation fails anywhere (bad batch, duplicated ``row_id`` across batches, no rows at all), nothing
    appears in the partition area and an existing partition of that day is left as it was; on success an
    existing partition of that day is replaced as a whole. ``source`` names the input in error messages.

    ``provenance`` (a JSON-able dict, or a function returning one, called after all batches were consumed so
    a streaming source can report its counts) is written beside the data as ``_provenance.json`` (sorted
    keys; not covered by ``partition_fingerprint``, not read by ``read_partition``).
    """
    if isinstance(rows_per_file, bool) or int(rows_per_file) != rows_per_file or rows_per_file < 1:
        raise LabelDPInputError(f"rows_per_file must be a whole number >= 1; got {rows_per_file!r}")
    rows_per_file = int(rows_per_file)
    final = partition_dir(root, date)
    label = source if source is not None else f"partition {final.name}"
    with atomic_directory(final) as tmp:
        writer: pq.ParquetWriter | None = None
        rows_in_file = 0
        file_index = 0
        row_ids: list[np.ndarray] = []
        total = 0
        try:
            for piece in _as_batches(table_or_batches):
                if piece.num_rows == 0:
                    continue
                table = _validate(piece, label, num_classes, None, require_rows=False, check_unique=False)
                row_ids.append(table.column(ROW_ID).to_numpy())
                total += table.num_rows
                offset = 0
                while offset < table.num_rows:
                    if writer is None:
                        writer = pq.ParquetWriter(tmp / f"part-{file_index:05d}.parquet", PARTITION_SCHEMA,
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
            raise _fail(label, "the partition is empty (0 rows); nothing was written")
        _check_row_ids_unique(np.concatenate(row_ids), label)
        if provenance is not None:
            record = provenance() if callable(provenance) else provenance
            text = json.dumps(record, sort_keys=True, indent=2, default=str) + "\n"
            (tmp / PROVENANCE_FILE).write_text(text, encoding="utf-8")
    return final


def read_provenance(root: str | os.PathLike, date: dt.date) -> dict | None:
    """The ``_provenance.json`` written with the partition of ``date`` (generator seed, ingest counts), if any."""
    path = partition_dir(root, date) / PROVENANCE_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------- oracle


def write_oracle(root: str | os.PathLike, date: dt.date, table: pa.Table) -> Path:
    """Writes ``oracle/date=D/p_click.parquet`` (``row_id``, ``p_click`` in [0, 1]) atomically; returns the dir.

    Synthetic data only. Training must never read this area.
    """
    _check_columns(table, ORACLE_SCHEMA.names, "oracle table")
    table = table.select(ORACLE_SCHEMA.names).cast(ORACLE_SCHEMA)
    p = table.column(P_CLICK).to_numpy()
    bad = int(np.count_nonzero(~((p >= 0.0) & (p <= 1.0))))
    if bad:
        raise LabelDPInputError(f"oracle table: column 'p_click': {bad} row(s) are outside [0, 1]")
    final = oracle_dir(root, date)
    with atomic_directory(final) as tmp:
        pq.write_table(table, tmp / "p_click.parquet", compression=PARQUET_COMPRESSION)
    return final


def read_oracle(root: str | os.PathLike, date: dt.date) -> pa.Table:
    """Reads the oracle (``row_id``, ``p_click``) of ``date``; for audits and tests, never for training."""
    directory = oracle_dir(root, date)
    path = directory / "p_click.parquet"
    if not path.is_file():
        raise LabelDPInputError(f"no oracle at {path}; only synthetic partitions (`labeldp-audit data synth`) "
                                f"have one")
    parquet = open_parquet(path)
    try:
        table = parquet.read()
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None
    _check_columns(table, ORACLE_SCHEMA.names, path)
    return table.cast(ORACLE_SCHEMA)
