"""Ingest of any tabular click log (CSV, TSV or Parquet files) into one day's partition under a dataset spec.

`ingest_table_files` reads one or more files, in the order given, into ``partitions/date=D/`` of the data
root, with the columns and types of a `pipelines.data.dataset_spec.DatasetSpec`:

- CSV/TSV, plain or gzip (gzip recognised by its magic bytes; a ``.gz`` name that is not gzip is refused),
  delimiter from the name (``.csv`` -> ``,``, ``.tsv`` -> tab, before any ``.gz``) unless given. With a header
  row the columns are found by name; without one the file's columns are the spec's ``columns`` in order.
  Read by Arrow's streaming CSV reader with every column typed as text (so ``007`` in a categorical stays
  ``007`` and a bad number is a bad line, not a failed block), then converted here.
- Parquet (``.parquet``): read by row batches; typed columns are cast (integers to a categorical become their
  decimal text), text columns are parsed like CSV fields. A pandas index stored as a column (named in the
  file's pandas metadata, e.g. ``__index_level_0__`` of a filtered frame) is not a column of the log and is
  ignored, unless the spec names it.

Streaming: memory holds a few blocks and ``batch_rows`` rows, plus 8 bytes a row for the row-key uniqueness
check. The converted rows are cut into batches of exactly ``batch_rows`` rows whatever the input's blocks,
so the same rows give byte-identical partitions from CSV, gzip TSV or Parquet, from one file or several.

Bad lines, as in the Criteo ingest: a line with the wrong number of fields, an empty line, a missing or
non-integer row key, a label that is not an integer in ``0..classes-1`` (a whole float such as ``1.0``, the
usual CSV export of a 0/1 column, is that integer), a numeric value that is not a finite number (an integer for
an ``int64`` spec; an empty cell, nan/null/na/none in any case or a NaN is missing), a categorical that is not
8 hex digits (``hex8`` specs). They are counted by reason and skipped up to ``max_bad_lines`` (over all files;
default 0); one more stops the ingest with the count and the first bad line's file and line number (Parquet:
row number), and nothing is written.

Refused outright: an empty (0-byte) file, a spec column missing from a file, columns the spec does not name
(unless ``drop_extra_columns``), a column type that cannot hold its role, duplicate row keys within or across
files, no rows at all, a day whose rows all have one label (`pipelines.data.schema.write_partition`). The partition
is published atomically with its ``_dataset.json`` and ``_provenance.json`` (the counts of the returned dict);
a failure writes nothing.
"""

from __future__ import annotations

import bisect
import collections
import csv
import datetime as dt
import gzip
import os
import shlex
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError, mention
from labeldp.names import require_date
from pipelines.data import schema
from pipelines.data.dataset_spec import DatasetSpec, load_spec
from pipelines.data.layout import refuse_empty_file
from pipelines.data.tabular_values import convert_columns, is_text, plain_array

__all__ = ["DEFAULT_BATCH_ROWS", "DEFAULT_BLOCK_BYTES", "ingest_table_files", "input_format"]

DEFAULT_BATCH_ROWS = 1 << 17
DEFAULT_BLOCK_BYTES = 8 << 20
_EXAMPLES = 5  # how many bad lines the report lists
_GZIP_MAGIC = b"\x1f\x8b"
_SUFFIX_DELIMITERS = {".csv": ",", ".tsv": "\t"}
_DELIMITERS = (",", "\t", ";", "|")  # the ones a header read as one column is tried at, for the hint
# Label words a binary log may hold instead of 0/1 (lower case); the ingest takes integers only, and says so.
_LABEL_WORDS = frozenset({"yes", "no", "y", "n", "true", "false", "t", "f", "clicked", "click", "not clicked",
                          "positive", "negative", "pos", "neg"})


@dataclass
class _Input:
    """One input file: its format and the columns to read."""

    path: Path
    kind: str  # "csv" | "tsv" | "delimited" | "parquet"
    delimiter: str | None
    compression: str  # "gzip" | "none" (Parquet: its own)
    header: bool
    names: list[str]  # the file's columns, in file order
    dropped: list[str]
    counts: dict = field(default_factory=lambda: {"rows_read": 0, "bad_lines": 0, "rows_kept": 0})


def input_format(path: str | os.PathLike, delimiter: str | None = None) -> tuple[str, str | None, str]:
    """(kind, delimiter, compression) of ``path``: Parquet by its ``.parquet`` suffix; otherwise delimited text,
    gzip by its magic bytes, the delimiter given or from ``.csv``/``.tsv`` (before a ``.gz``)."""
    path = Path(path)
    if not path.is_file():
        raise LabelDPInputError(f"{path}: no such file")
    refuse_empty_file(path)
    suffixes = [suffix.lower() for suffix in path.suffixes]
    if suffixes[-1:] == [".parquet"]:
        return "parquet", None, "none"
    try:
        with open(path, "rb") as handle:
            magic = handle.read(2)
    except OSError as exc:
        raise LabelDPInputError(f"{path}: cannot read ({exc})") from None
    gzipped = suffixes[-1:] == [".gz"]
    if gzipped and magic != _GZIP_MAGIC:
        raise LabelDPInputError(f"{path}: the name ends in .gz but the file is not gzip data")
    compression = "gzip" if magic == _GZIP_MAGIC else "none"
    suffix = (suffixes[:-1] if gzipped else suffixes)[-1:]
    kind = {",": "csv", "\t": "tsv"}.get(delimiter or "", "delimited")
    if delimiter is None:
        if not suffix or suffix[0] not in _SUFFIX_DELIMITERS:
            raise LabelDPInputError(f"{path}: cannot tell the format from the name (expected .csv, .tsv, their .gz, "
                                    f"or .parquet); pass the delimiter ({mention('delimiter')})", field="delimiter")
        delimiter = _SUFFIX_DELIMITERS[suffix[0]]
        kind = suffix[0][1:]
    if len(delimiter) != 1 or delimiter in "\"\r\n":
        raise LabelDPInputError(f"delimiter must be one character other than a quote or a line end; got "
                                f"{delimiter!r}")
    return kind, delimiter, compression


def _header(path: Path, compression: str, delimiter: str) -> list[str]:
    opener = gzip.open if compression == "gzip" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            row = next(csv.reader(handle, delimiter=delimiter), None)
    except (OSError, UnicodeDecodeError, EOFError, csv.Error) as exc:
        raise LabelDPInputError(f"{path}: cannot read the header row ({exc})") from None
    if not row:
        raise LabelDPInputError(f"{path}: the file is empty or its first line is blank (expected a header row)")
    return row


def _inspect(path: Path, spec: DatasetSpec, header: bool, delimiter: str | None, drop_extra: bool) -> _Input:
    """Checks a file's columns against the spec before anything is read (missing / extra / duplicated)."""
    kind, delimiter, compression = input_format(path, delimiter)
    if kind == "parquet":  # a pandas index is not a column of the log, unless the spec names it
        parquet = schema.open_parquet(path)
        index = schema.pandas_index_columns(parquet) - set(spec.columns)
        names, header = [name for name in parquet.schema_arrow.names if name not in index], True
    elif header:
        names = _header(path, compression, delimiter)
    else:
        names = list(spec.columns)
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise LabelDPInputError(f"{path}: column name(s) {repeated} appear more than once")
    missing = [name for name in spec.columns if name not in names]
    if missing:
        other = _other_delimiter(names, delimiter, spec) if kind != "parquet" else None
        if other is not None:  # a comma-separated file named .tsv: its header reads as one column
            hint, field = (f"; its header reads as one column, and split at {other!r} it names the spec's "
                           f"columns: pass {mention('delimiter')} {_delimiter_arg(other)}"), "delimiter"
        elif kind != "parquet":
            hint, field = f"; a file without a header row needs {mention('no_header')}", "no_header"
        else:
            hint, field = "", None
        raise LabelDPInputError(f"{path}: column(s) {missing} of dataset {spec.name!r} ({spec.describe()}) are "
                                f"missing; the file has {_shown(names)}{hint}", field=field)
    extra = [name for name in names if name not in spec.columns]
    if extra and not drop_extra:
        raise LabelDPInputError(f"{path}: {len(extra)} column(s) {_shown(extra)} are not in dataset {spec.name!r} "
                                f"({spec.describe()}); name them in the spec (as carry to keep them without "
                                f"feeding a model) or drop them with {mention('drop_extra_columns')}",
                                field="drop_extra_columns")
    return _Input(path, kind, delimiter, compression, header, names, extra)


def _other_delimiter(names: list[str], delimiter: str | None, spec: DatasetSpec) -> str | None:
    """The delimiter a header read as one column was written with (``names``: that one column), when split
    at it the header names the spec's row key and label; else None."""
    if len(names) != 1:
        return None
    for other in _DELIMITERS:
        parts = [part.strip().strip('"') for part in names[0].split(other)]
        if other != delimiter and {spec.row_key, spec.label} <= set(parts):
            return other
    return None


def _delimiter_arg(delimiter: str) -> str:
    """A delimiter as the command line takes it (``tab`` for a tab)."""
    return "tab" if delimiter == "\t" else shlex.quote(delimiter)


def _shown(names: list[str], limit: int = 20) -> str:
    return repr(names) if len(names) <= limit else repr(names[:limit])[:-1] + f", ... ({len(names)} in all)]"


# ------------------------------------------------------------------------------------------ bad lines


class _BadLines:
    """Counts bad lines by reason over all files, keeps the first few, and stops beyond the cap."""

    def __init__(self, cap: int, inputs: list[_Input], spec: DatasetSpec):
        self.cap, self.inputs, self.spec = cap, inputs, spec
        self.total = 0
        self.by_reason: dict[str, int] = {}
        self.examples: list[tuple[int, int, str]] = []  # (file index, line or row number, reason), sorted
        self.label_words: set[str] = set()  # bad labels written as words (yes / no), for the hint

    def count(self, index: int, reason: str, number: int | None, times: int = 1) -> None:
        self.total += times
        self.inputs[index].counts["bad_lines"] += times
        self.by_reason[reason] = self.by_reason.get(reason, 0) + times
        if number is not None:
            self.example(index, number, reason)

    def example(self, index: int, number: int, reason: str) -> None:
        item = (index, int(number), reason)
        if len(self.examples) < _EXAMPLES or item < self.examples[-1]:
            bisect.insort(self.examples, item)
            del self.examples[_EXAMPLES:]

    def convert(self, table: pa.Table, index: int, number: Callable[[int], int]) -> tuple[pa.Table, np.ndarray]:
        """`convert_columns` of one batch of file ``index``, counting its bad rows (``number``: position -> line)."""
        converted, wrong, reasons, reason = convert_columns(table, self.spec, self.inputs[index].path)
        self._note_label_words(table, reasons, reason)
        hits = np.flatnonzero(wrong)
        for position in hits[:_EXAMPLES]:
            self.example(index, number(int(position)), reasons[reason[position]])
        for code, times in enumerate(np.bincount(reason[hits], minlength=len(reasons))):
            if times:
                self.count(index, reasons[code], None, int(times))
        return converted, wrong

    def _note_label_words(self, table: pa.Table, reasons: list[str], reason: np.ndarray) -> None:
        """Remembers the words (yes, no, true, ...) among a batch's bad labels: the refusal then says to write
        them as integers."""
        wanted = f"{self.spec.label} is not an integer in 0..{self.spec.classes - 1}"
        column = plain_array(table.column(self.spec.label))
        if wanted not in reasons or not is_text(column.type):
            return
        rows = np.flatnonzero(reason == reasons.index(wanted))[:1000]
        values = {str(value).strip().lower() for value in column.take(pa.array(rows)).to_pylist() if value}
        self.label_words |= values & _LABEL_WORDS

    def listed(self) -> list[dict]:
        return [{"file": str(self.inputs[i].path), ("row" if self.inputs[i].kind == "parquet" else "line"): n,
                 "reason": r} for i, n, r in self.examples]

    def check(self) -> None:
        if self.total <= self.cap:
            return
        index, number, reason = self.examples[0]
        where = "row" if self.inputs[index].kind == "parquet" else "line"
        summary = ", ".join(f"{count} {text}" for text, count in sorted(self.by_reason.items()))
        read = sum(item.counts["rows_read"] for item in self.inputs)
        hint = ""
        if not self.inputs[index].header and reason.startswith("wrong number of fields"):
            hint = (f"; without a header row a line holds the {len(self.spec.columns)} columns of dataset "
                    f"{self.spec.name!r} ({self.spec.describe()}) in order: {_shown(list(self.spec.columns))}")
        if self.label_words:
            hint += (f"; the labels are written as words ({', '.join(sorted(self.label_words))}): write them as "
                     f"the integers 0..{self.spec.classes - 1} before ingesting (a click log: 1 for yes or true, 0 "
                     f"for no or false)")
        raise LabelDPInputError(
            f"{self.inputs[index].path}: {where} {number}: {reason}; {self.total} bad line(s) among the first "
            f"{read} read ({summary}), more than the {self.cap} allowed ({mention('max_bad_lines')}); stopped "
            f"there, nothing was written{hint}", field="max_bad_lines")


# ------------------------------------------------------------------------------------------ reading


def _csv_tables(inp: _Input, index: int, spec: DatasetSpec, bad: _BadLines, block_bytes: int,
                report: Callable[[_Input, int], None]) -> Iterator[pa.Table]:
    import pyarrow.csv as pa_csv

    pending: collections.deque[int] = collections.deque()  # line numbers of skipped rows not yet passed
    state = {"offset": 1 if inp.header else 0, "rows": 0}  # lines before data row 0 not yielded as rows

    def invalid(row) -> str:
        bad.count(index, f"wrong number of fields ({row.actual_columns} instead of {row.expected_columns})",
                  row.number)
        inp.counts["rows_read"] += 1
        pending.append(row.number)
        return "skip"

    def line_of(data_row: int) -> int:
        """The file line of the ``data_row``-th yielded row (0-based); call with increasing values only."""
        line = state["offset"] + data_row + 1
        while pending and pending[0] <= line:
            pending.popleft()
            state["offset"] += 1
            line += 1
        return line

    raw = stream = None
    try:
        raw = pa.OSFile(str(inp.path), "rb")
        stream = pa.CompressedInputStream(raw, "gzip") if inp.compression == "gzip" else raw
        reader = pa_csv.open_csv(
            stream,
            read_options=pa_csv.ReadOptions(use_threads=False, block_size=block_bytes, column_names=inp.names,
                                            skip_rows=1 if inp.header else 0),
            parse_options=pa_csv.ParseOptions(delimiter=inp.delimiter, ignore_empty_lines=False,
                                              invalid_row_handler=invalid),
            convert_options=pa_csv.ConvertOptions(column_types={name: pa.string() for name in spec.columns},
                                                  include_columns=list(spec.columns), null_values=[""],
                                                  strings_can_be_null=True, quoted_strings_can_be_null=True))
        for batch in reader:
            table, first = pa.Table.from_batches([batch]), state["rows"]
            converted, wrong = bad.convert(table, index, lambda position, first=first: line_of(first + position))
            if table.num_rows:
                line_of(first + table.num_rows - 1)
            state["rows"] += table.num_rows
            inp.counts["rows_read"] += table.num_rows
            report(inp, raw.tell())
            bad.check()
            yield converted.filter(pa.array(~wrong))
        bad.check()  # the last block's skipped lines may have made no batch
    except (pa.ArrowException, OSError) as exc:
        near = state["offset"] + state["rows"]
        raise LabelDPInputError(f"{inp.path}: cannot read it as {inp.kind} text near line {near} ({exc})") from None
    finally:
        for handle in (stream, raw):
            if handle is not None:
                handle.close()


def _parquet_tables(inp: _Input, index: int, spec: DatasetSpec, bad: _BadLines, batch_rows: int,
                    report: Callable[[_Input, int], None]) -> Iterator[pa.Table]:
    parquet = schema.open_parquet(inp.path)
    total = max(parquet.metadata.num_rows, 1)
    size = inp.path.stat().st_size
    try:
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=list(spec.columns)):
            table, first = pa.Table.from_batches([batch]), inp.counts["rows_read"]
            converted, wrong = bad.convert(table, index, lambda at, first=first: first + at + 1)
            inp.counts["rows_read"] += batch.num_rows
            report(inp, int(size * inp.counts["rows_read"] / total))
            bad.check()
            yield converted.filter(pa.array(~wrong))
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{inp.path}: corrupt Parquet data ({exc})") from None


def _rebatch(tables: Iterable[pa.Table], size: int) -> Iterator[pa.Table]:
    """Exactly ``size`` rows a table (the last may be shorter), each one contiguous chunk: the partition's row
    groups depend on the rows only, not on how the input was cut."""
    buffer: list[pa.Table] = []
    have = 0
    for table in tables:
        if table.num_rows == 0:
            continue
        buffer.append(table)
        have += table.num_rows
        while have >= size:
            whole = pa.concat_tables(buffer).combine_chunks()
            yield whole.slice(0, size)
            rest = whole.slice(size)
            buffer, have = ([rest] if rest.num_rows else []), have - size
    if have:
        yield pa.concat_tables(buffer).combine_chunks()


# ------------------------------------------------------------------------------------------ the job


def _whole(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise LabelDPInputError(f"{name} must be a whole number >= {minimum}; got {value!r}")
    return int(value)


def ingest_table_files(root: str | os.PathLike, date: dt.date, files: Sequence[str | os.PathLike],
                       dataset: DatasetSpec | str | os.PathLike, *, header: bool = True,
                       delimiter: str | None = None, max_bad_lines: int = 0, drop_extra_columns: bool = False,
                       progress: Callable[[dict], None] | None = None, batch_rows: int = DEFAULT_BATCH_ROWS,
                       block_bytes: int = DEFAULT_BLOCK_BYTES,
                       rows_per_file: int = schema.DEFAULT_ROWS_PER_FILE, replace: bool = False) -> dict:
    """Reads ``files`` (in order) into the partition of ``date`` under ``root`` for ``dataset`` (a spec or the
    path of its JSON file); see the module doc. ``header`` and ``delimiter`` apply to CSV/TSV files.
    ``progress`` is called after each input block with a dict of counts so far. Returns the report (also
    written as ``_provenance.json``, without ``partition`` and ``seconds``); raises ``LabelDPInputError`` and
    writes nothing on bad input, and on an existing day unless ``replace`` (before any file is read)."""
    started = time.perf_counter()
    date = require_date(date)
    schema.refuse_existing_partition(root, date, replace)
    spec = dataset if isinstance(dataset, DatasetSpec) else load_spec(dataset)
    cap = _whole(max_bad_lines, "max_bad_lines", 0)
    batch_rows = _whole(batch_rows, "batch_rows", 1)
    block_bytes = _whole(block_bytes, "block_bytes", 1024)
    paths = [Path(item) for item in files]
    if not paths:
        raise LabelDPInputError("no input files given")
    seen: dict[Path, Path] = {}
    for path in paths:
        if path.resolve() in seen:
            raise LabelDPInputError(f"{path}: given twice (as {seen[path.resolve()]})")
        seen[path.resolve()] = path
    inputs = [_inspect(path, spec, bool(header), delimiter, bool(drop_extra_columns)) for path in paths]
    bad = _BadLines(cap, inputs, spec)
    kept = [0]

    def report(inp: _Input, bytes_read: int) -> None:
        if progress is not None:
            progress({"file": str(inp.path), "file_bytes": inp.path.stat().st_size, "bytes_read": bytes_read,
                      "rows_read": sum(item.counts["rows_read"] for item in inputs), "bad_lines": bad.total})

    def tables() -> Iterator[pa.Table]:
        for index, inp in enumerate(inputs):
            source = (_parquet_tables(inp, index, spec, bad, batch_rows, report) if inp.kind == "parquet"
                      else _csv_tables(inp, index, spec, bad, block_bytes, report))
            for table in source:
                inp.counts["rows_kept"] += table.num_rows
                kept[0] += table.num_rows
                yield table

    def record() -> dict:
        return {
            "source": "tabular", "date": date.isoformat(), "dataset": spec.name,
            "dataset_fingerprint": spec.fingerprint(), "files": [
                {"file": str(inp.path), "format": inp.kind, "compression": inp.compression,
                 "header": inp.header, "delimiter": inp.delimiter, "rows_read": inp.counts["rows_read"],
                 "rows_written": inp.counts["rows_kept"], "bad_lines": inp.counts["bad_lines"],
                 "extra_columns_dropped": inp.dropped} for inp in inputs],
            "rows_read": sum(inp.counts["rows_read"] for inp in inputs), "rows_written": kept[0],
            "bad_lines_skipped": bad.total, "bad_lines_by_reason": dict(sorted(bad.by_reason.items())),
            "first_bad_lines": bad.listed(), "max_bad_lines": cap,
            "extra_columns_dropped": sum(len(inp.dropped) for inp in inputs)}

    label = str(paths[0]) if len(paths) == 1 else f"{len(paths)} files ({', '.join(str(p) for p in paths)})"
    directory = schema.write_partition(root, date, _rebatch(tables(), batch_rows), rows_per_file=rows_per_file,
                                       source=label, provenance=record, dataset=spec, replace=replace)
    return {**record(), "partition": str(directory), "seconds": time.perf_counter() - started}
