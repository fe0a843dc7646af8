"""Converts a Criteo click-log TSV file into a daily partition (``pipelines.schema``).

Input format (the public Criteo Kaggle / 1TB click logs): one example per line, 40 tab-separated fields:
``label`` (0 or 1), ``I1``..``I13`` (integers, possibly negative), ``C1``..``C26`` (8 lowercase hex digits); an
empty field is missing. No header, no quoting; ``\\n`` or ``\\r\\n`` line ends. Plain or gzip (recognised by
its magic bytes, not by the file name; multi-member gzip works).

Guarantees:

- Streaming: the file is read in blocks of ``block_bytes`` (default 32 MiB), parsed by Arrow's CSV reader (or,
  for a block with a bad line, by a vectorized numpy parser that names it), so memory is bounded by a few
  blocks, plus the sample when sampling (~264 bytes a kept row, held for up to 1.25 N rows plus the N kept
  at a compaction: about 1.1 GB peak for the paper's N = 1M) or 8 bytes a row for the ``row_id`` uniqueness
  check when not sampling. It does not grow with the file otherwise (benchmarks/results/synth.md).
- ``row_id`` is the line's number in the file, counting from 1, so a row can always be traced back to its
  line, and plain and gzip copies of a file give identical partitions.
- Sampling (``sample_rows=N``): keeps the N lines with the smallest ``splitmix64(line number XOR salt(seed))``
  ("bottom-k" hashing). That is a uniform random sample without replacement, exactly N rows (or all lines if
  fewer), a function of (file content, N, seed) only, computed in one pass without holding the file in memory.
  The sample is written in line order.
- Bad lines (wrong number of fields, a label other than 0/1, a non-integer ``I``, a ``C`` that is not 8
  lowercase hex digits): by default the first block holding one raises ``LabelDPInputError`` naming the file,
  the first bad line's number, the column and how many bad lines were seen; with ``skip_bad_lines=True`` they
  are skipped and counted by reason in the returned ``IngestReport`` (and the partition's
  ``_provenance.json``).
- Nothing is written unless the whole file was read successfully: the partition is published through
  ``layout.atomic_directory``.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditing.errors import LabelDPInputError
from auditing.names import require_date
from pipelines import schema
from pipelines.splits import splitmix64

FIELDS = 1 + len(schema.NUMERIC_COLUMNS) + len(schema.CATEGORICAL_COLUMNS)  # 40
DEFAULT_BLOCK_BYTES = 32 << 20
MAX_LINE_BYTES = 1 << 20  # a "line" longer than this is not a Criteo line; refuse rather than buffer it
MAX_INT_DIGITS = 18  # every 18-digit integer fits in int64
_GZIP_MAGIC = b"\x1f\x8b"
_EXAMPLES = 5  # how many bad line numbers a report lists

_NIBBLE = np.full(256, 255, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16, dtype=np.uint8)


def _pack_nibbles(nibbles: np.ndarray) -> np.ndarray:
    """(n, 8) hex digit values (0..15, most significant first) -> n uint32 values."""
    high_low = (nibbles[:, 0::2] << np.uint8(4)) | nibbles[:, 1::2]  # (n, 4) bytes, most significant first
    return np.ascontiguousarray(high_low).view(">u4").ravel().astype(np.uint32)


@dataclass
class IngestReport:
    """What an ingest did: counts of lines read, kept, skipped (by reason) and where the partition went."""

    source: str
    date: str
    partition: str = ""
    compression: str = "none"
    lines_read: int = 0
    rows_written: int = 0
    sample_rows: int | None = None
    seed: int = 0
    skipped_lines: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    first_skipped_lines: list[int] = field(default_factory=list)
    bytes_read: int = 0
    seconds: float = 0.0

    def as_provenance(self) -> dict:
        record = asdict(self)
        record.pop("seconds")  # keep _provenance.json identical between identical runs
        record.pop("partition")
        return {"source": "criteo-tsv", **{k: v for k, v in record.items() if k != "source"},
                "file": self.source}


# ------------------------------------------------------------------------------------------ reading


def _open(path: Path) -> tuple[pa.NativeFile, str]:
    if not path.is_file():
        raise LabelDPInputError(f"{path}: no such file (expected a Criteo TSV file, plain or gzip)")
    with open(path, "rb") as handle:
        magic = handle.read(2)
    compression = "gzip" if magic == _GZIP_MAGIC else None
    try:
        return pa.input_stream(str(path), compression=compression), compression or "none"
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: cannot open ({exc})") from None


def _blocks(stream: pa.NativeFile, path: Path, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Yields (complete lines ending in '\\n', bytes read so far); the last line gets a '\\n' if it lacks one.

    Each block is the carried-over partial line plus the next ``block_bytes`` of *decompressed* input, cut
    at its last newline, whatever sizes the stream returns, so plain and gzip copies are cut identically.
    """
    carry = b""
    total = 0
    eof = False
    while not eof:
        pieces = [carry]
        have = len(carry)
        target = len(carry) + block_bytes  # always block_bytes of new input: cuts do not depend on read sizes
        while have < target:
            try:
                chunk = stream.read(target - have)
            except (pa.ArrowException, OSError) as exc:
                raise LabelDPInputError(f"{path}: read failed after {total + have - len(carry)} bytes ({exc}); "
                                        f"a truncated or corrupt gzip file?") from None
            if not chunk:
                eof = True
                break
            pieces.append(chunk)
            have += len(chunk)
        data = b"".join(pieces)
        total += len(data) - len(carry)
        if eof:
            if data:
                yield (data if data.endswith(b"\n") else data + b"\n"), total
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > MAX_LINE_BYTES:
                raise LabelDPInputError(f"{path}: a line longer than {MAX_LINE_BYTES} bytes near byte {total}; "
                                        f"this does not look like a Criteo TSV file")
            carry = data
            continue
        carry = data[cut + 1:]
        yield data[:cut + 1], total


# ------------------------------------------------------------------------------------------ parsing


@dataclass
class _Rows:
    """Parsed rows in compact numpy form: ints with validity masks, categoricals as uint32 with masks."""

    row_id: np.ndarray  # int64 line numbers
    label: np.ndarray  # int8
    ints: np.ndarray  # (13, n) int64: column-major, so a column is contiguous (zero-copy into Arrow)
    int_valid: np.ndarray  # (13, n) bool
    cats: np.ndarray  # (26, n) uint32
    cat_valid: np.ndarray  # (26, n) bool

    def __len__(self) -> int:
        return len(self.row_id)

    def take(self, index: np.ndarray) -> _Rows:
        return _Rows(self.row_id[index], self.label[index], self.ints[:, index], self.int_valid[:, index],
                     self.cats[:, index], self.cat_valid[:, index])

    @staticmethod
    def empty(n: int) -> _Rows:
        n_int, n_cat = len(schema.NUMERIC_COLUMNS), len(schema.CATEGORICAL_COLUMNS)
        return _Rows(np.zeros(n, np.int64), np.zeros(n, np.int8), np.zeros((n_int, n), np.int64),
                     np.zeros((n_int, n), bool), np.zeros((n_cat, n), np.uint32), np.zeros((n_cat, n), bool))

    def put(self, at: np.ndarray, other: _Rows, index: np.ndarray) -> None:
        """self[at] = other[index], field by field (no temporary copy of the whole of ``other``)."""
        self.row_id[at] = other.row_id[index]
        self.label[at] = other.label[index]
        self.ints[:, at] = other.ints[:, index]
        self.int_valid[:, at] = other.int_valid[:, index]
        self.cats[:, at] = other.cats[:, index]
        self.cat_valid[:, at] = other.cat_valid[:, index]

    def to_table(self) -> pa.Table:
        """An Arrow table in PARTITION_SCHEMA (dictionaries in order of first appearance)."""
        import pyarrow.compute as pc

        columns = [pa.array(self.row_id, type=pa.int64()), pa.array(self.label, type=pa.int8())]
        for j in range(self.ints.shape[0]):
            valid = self.int_valid[j]
            columns.append(pa.array(self.ints[j], type=pa.int64(), mask=None if valid.all() else ~valid))
        for j in range(self.cats.shape[0]):
            valid = self.cat_valid[j]
            # Hash-based encoding (dictionary in order of first appearance): deterministic, and O(n).
            encoded = pc.dictionary_encode(pa.array(self.cats[j], type=pa.uint32(),
                                                    mask=None if valid.all() else ~valid))
            dictionary = schema.hex_strings(encoded.dictionary.to_numpy())
            columns.append(pa.DictionaryArray.from_arrays(encoded.indices, dictionary))
        return pa.Table.from_arrays(columns, schema=schema.PARTITION_SCHEMA)


def _parse_ints(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decimal integers in buf[start:end] (optional leading '-'); returns (values, valid, bad)."""
    length = end - start
    empty = length == 0
    last = len(buf) - 1
    negative = ~empty & (buf[np.minimum(start, last)] == ord("-"))
    digits_start = start + negative
    digits = length - negative
    bad = ~empty & ((digits <= 0) | (digits > MAX_INT_DIGITS))
    values = np.zeros(len(start), dtype=np.int64)
    longest = int(digits[~bad & ~empty].max()) if np.any(~bad & ~empty) else 0
    for k in range(longest):
        active = (k < digits) & ~bad
        digit = buf[np.minimum(digits_start + k, last)].astype(np.int64) - ord("0")
        bad |= active & ((digit < 0) | (digit > 9))
        values = np.where(active, values * 10 + digit, values)
    values = np.where(negative, -values, values)
    valid = ~empty & ~bad
    return np.where(valid, values, 0), valid, bad


def _parse_hex(words: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """8-lowercase-hex-digit fields; ``words`` is an unaligned uint64 view of the block at every offset."""
    length = end - start
    empty = length == 0
    bad = ~empty & (length != schema.CATEGORICAL_WIDTH)
    values = np.zeros(len(start), dtype=np.uint32)
    full = np.flatnonzero(~empty & ~bad)
    if len(full):
        raw = words[start[full]].astype("<u8").view(np.uint8).reshape(-1, 8)  # the 8 characters, in order
        nibbles = _NIBBLE[raw]
        not_hex = (nibbles == 255).any(axis=1)
        bad[full[not_hex]] = True
        values[full] = _pack_nibbles(np.where(not_hex[:, None], 0, nibbles).astype(np.uint8))
    valid = ~empty & ~bad
    return values, valid, bad


@dataclass
class _Parsed:
    rows: _Rows
    bad_lines: np.ndarray  # line numbers of bad lines in this block (sorted)
    bad_reasons: np.ndarray  # one reason string per bad line


def _parse_block(data: bytes, first_line: int) -> _Parsed:
    """Parses complete lines; line ``i`` of the block (0-based) is line ``first_line + i`` of the file."""
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == ord("\n"))
    n_lines = len(newlines)
    line_start = np.empty(n_lines, dtype=np.int64)
    line_start[0] = 0
    line_start[1:] = newlines[:-1] + 1
    line_end = newlines.astype(np.int64)
    crlf = (line_end > line_start) & (buf[np.maximum(line_end - 1, 0)] == ord("\r"))
    line_end[crlf] -= 1
    tabs = np.flatnonzero(buf == ord("\t"))
    n_tabs = np.add.reduceat((buf == ord("\t")).astype(np.int32), line_start)
    good = n_tabs == FIELDS - 1
    reasons = np.full(n_lines, "", dtype=object)
    for count in np.unique(n_tabs[~good]):
        reasons[~good & (n_tabs == count)] = f"wrong number of fields ({count + 1} instead of {FIELDS})"

    good_index = np.flatnonzero(good)
    field_tabs = tabs[np.repeat(good, n_tabs)].reshape(-1, FIELDS - 1).astype(np.int64)  # tabs are in line order
    starts = np.empty((len(good_index), FIELDS), dtype=np.int64)
    ends = np.empty((len(good_index), FIELDS), dtype=np.int64)
    starts[:, 0] = line_start[good_index]
    starts[:, 1:] = field_tabs + 1
    ends[:, :-1] = field_tabs
    ends[:, -1] = line_end[good_index]

    n = len(good_index)
    row_bad = np.zeros(n, dtype=bool)
    row_reason = np.full(n, "", dtype=object)

    def mark(bad: np.ndarray, reason: str) -> None:
        new = bad & ~row_bad
        row_reason[new] = reason
        row_bad[:] |= bad

    label, label_valid, _ = _parse_ints(buf, starts[:, 0], ends[:, 0])
    mark(~label_valid | ((label != 0) & (label != 1)), "label is not 0 or 1")
    n_int = len(schema.NUMERIC_COLUMNS)
    ints = np.zeros((n_int, n), dtype=np.int64)
    int_valid = np.zeros((n_int, n), dtype=bool)
    for j, name in enumerate(schema.NUMERIC_COLUMNS):
        values, valid, bad = _parse_ints(buf, starts[:, 1 + j], ends[:, 1 + j])
        ints[j], int_valid[j] = values, valid
        mark(bad, f"{name} is not an integer")
    n_cat = len(schema.CATEGORICAL_COLUMNS)
    cats = np.zeros((n_cat, n), dtype=np.uint32)
    cat_valid = np.zeros((n_cat, n), dtype=bool)
    padded = np.concatenate([buf, np.zeros(8, dtype=np.uint8)])  # so an 8-byte read never runs off the end
    words = np.ndarray(shape=(len(buf),), dtype="<u8", buffer=padded, offset=0, strides=(1,))
    for j, name in enumerate(schema.CATEGORICAL_COLUMNS):
        k = 1 + n_int + j
        values, valid, bad = _parse_hex(words, starts[:, k], ends[:, k])
        cats[j], cat_valid[j] = values, valid
        mark(bad, f"{name} is not 8 lowercase hex digits")

    reasons[good_index[row_bad]] = row_reason[row_bad]
    line_numbers = first_line + np.arange(n_lines, dtype=np.int64)
    keep = ~row_bad
    rows = _Rows(line_numbers[good_index[keep]], label[keep].astype(np.int8), ints[:, keep],
                 int_valid[:, keep], cats[:, keep], cat_valid[:, keep])
    bad_mask = reasons != ""
    return _Parsed(rows, line_numbers[bad_mask], reasons[bad_mask])


_TSV_NAMES = [schema.LABEL, *schema.FEATURE_COLUMNS]
_TSV_TYPES = {schema.LABEL: pa.int8(), **{name: schema.NUMERIC_TYPE for name in schema.NUMERIC_COLUMNS},
              **{name: pa.string() for name in schema.CATEGORICAL_COLUMNS}}


def _hex_column(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray] | None:
    """(uint32 values, validity) of a string column whose values are all 8 lowercase hex digits or null
    (the CSV reader turns empty fields into nulls); None if any value is not."""
    array = column.combine_chunks()
    n = len(array)
    _validity, offsets_buf, data_buf = array.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[array.offset:array.offset + n + 1]
    lengths = np.diff(offsets)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if not np.array_equal(lengths, np.where(valid, schema.CATEGORICAL_WIDTH, 0)):
        return None
    values = np.zeros(n, dtype=np.uint32)
    if offsets[-1] > offsets[0]:
        data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]:offsets[-1]]
        nibbles = _NIBBLE[data.reshape(-1, schema.CATEGORICAL_WIDTH)]  # valid values are contiguous 8-byte runs
        if (nibbles == 255).any():
            return None
        values[valid] = _pack_nibbles(nibbles)
    return values, valid


def _read_block_fast(data: bytes, first_line: int, n_lines: int) -> _Rows | None:
    """Parses a block with Arrow's CSV reader when every line is well formed; None if anything is off (a
    wrong field count, a bad integer, label or hex value): then the numpy parser, which names the bad lines,
    takes the block."""
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv

    try:
        table = pa_csv.read_csv(
            pa.py_buffer(data),
            # 4 MiB parse blocks: faster than one big block even on one thread (cache), and parallel on more.
            read_options=pa_csv.ReadOptions(column_names=_TSV_NAMES, use_threads=True, block_size=4 << 20),
            parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False,
                                              escape_char=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types=_TSV_TYPES, null_values=[""],
                                                  strings_can_be_null=True, quoted_strings_can_be_null=True),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows != n_lines:
        return None
    label = table.column(schema.LABEL)
    if label.null_count or not pc.all(pc.is_in(label, pa.array([0, 1], pa.int8()))).as_py():
        return None
    ints = np.zeros((len(schema.NUMERIC_COLUMNS), n_lines), dtype=np.int64)
    int_valid = np.zeros(ints.shape, dtype=bool)
    for j, name in enumerate(schema.NUMERIC_COLUMNS):
        column = table.column(name)
        ints[j] = pc.fill_null(column, 0).to_numpy()
        int_valid[j] = column.is_valid().to_numpy()
    cats = np.zeros((len(schema.CATEGORICAL_COLUMNS), n_lines), dtype=np.uint32)
    cat_valid = np.zeros(cats.shape, dtype=bool)
    for j, name in enumerate(schema.CATEGORICAL_COLUMNS):
        parsed = _hex_column(table.column(name))
        if parsed is None:
            return None
        cats[j], cat_valid[j] = parsed
    row_id = np.arange(first_line, first_line + n_lines, dtype=np.int64)
    return _Rows(row_id, label.to_numpy().astype(np.int8), ints, int_valid, cats, cat_valid)


# ------------------------------------------------------------------------------------------ sampling


class _BottomK:
    """Keeps the ``k`` rows with the smallest keys seen so far, in O(k + block) memory."""

    def __init__(self, k: int, seed: int):
        self.k = k
        salt = np.random.SeedSequence([seed, 0x435249544552]).generate_state(1, np.uint64)[0]  # "CRITEO"
        self.salt = np.uint64(salt)
        self.threshold = np.uint64(np.iinfo(np.uint64).max)
        self.parts: list[_Rows] = []
        self.keys: list[np.ndarray] = []
        self.size = 0

    def add(self, rows: _Rows) -> None:
        keys = splitmix64(rows.row_id.view(np.uint64) ^ self.salt)
        keep = np.flatnonzero(keys <= self.threshold) if self.size >= self.k else np.arange(len(rows))
        if len(keep) == 0:
            return
        self.parts.append(rows.take(keep))
        self.keys.append(keys[keep])
        self.size += len(keep)
        if self.size > self.k + max(self.k // 4, 1):
            self._compact()

    def _compact(self) -> None:
        """Keeps the k smallest keys. Selects on the keys alone, then copies the chosen rows part by part into
        one new block, freeing each part once copied: peak memory is the parts plus the k kept rows."""
        keys = np.concatenate(self.keys)
        if len(keys) > self.k:
            # Keys are distinct (splitmix64 is a bijection and line numbers are distinct): the set is unique.
            chosen = np.sort(np.argpartition(keys, self.k - 1)[: self.k])
        else:
            chosen = np.arange(len(keys))
        kept = _Rows.empty(len(chosen))
        bounds = np.cumsum([0] + [len(part) for part in self.parts])
        for i, part in enumerate(self.parts):
            lo, hi = np.searchsorted(chosen, [bounds[i], bounds[i + 1]])
            kept.put(np.arange(lo, hi), part, chosen[lo:hi] - bounds[i])
            self.parts[i] = None  # free it now
        kept_keys = keys[chosen]
        if len(kept_keys) >= self.k:
            self.threshold = kept_keys.max()
        self.parts, self.keys, self.size = [kept], [kept_keys], len(kept_keys)

    def result(self) -> _Rows | None:
        if not self.parts:
            return None
        self._compact()
        rows = self.parts[0]
        # Parts are appended in line order and compaction keeps their order, so the sample is in line order.
        if len(rows) > 1 and np.any(np.diff(rows.row_id) <= 0):  # defensive; not expected
            rows = rows.take(np.argsort(rows.row_id, kind="stable"))
        self.parts, self.keys = [], []
        return rows


# ------------------------------------------------------------------------------------------ the job


def _bad_line_error(path: Path, parsed: _Parsed, lines_so_far: int) -> LabelDPInputError:
    reasons, counts = np.unique(parsed.bad_reasons.astype(str), return_counts=True)
    summary = ", ".join(f"{count} {reason}" for reason, count in zip(reasons, counts, strict=True))
    first = int(parsed.bad_lines[0])
    examples = ", ".join(str(int(x)) for x in parsed.bad_lines[:_EXAMPLES])
    return LabelDPInputError(
        f"{path}: line {first}: {parsed.bad_reasons[0]} (expected {FIELDS} tab-separated fields: label 0/1, "
        f"I1..I13 integers, C1..C26 8 lowercase hex digits, empty = missing); {len(parsed.bad_lines)} bad "
        f"line(s) among the first {lines_so_far} lines ({summary}; lines {examples}); stopped there, nothing "
        f"was written. Pass --skip-bad-lines to skip such lines and report them"
    )


def ingest_criteo(path: str | os.PathLike, root: str | os.PathLike, date: dt.date,
                  sample_rows: int | None = None, seed: int = 0, skip_bad_lines: bool = False,
                  block_bytes: int = DEFAULT_BLOCK_BYTES, rows_per_file: int = schema.DEFAULT_ROWS_PER_FILE,
                  progress: Callable[[IngestReport], None] | None = None) -> IngestReport:
    """Converts the Criteo TSV file ``path`` into ``partitions/date=D/`` under ``root``; see the module doc.

    ``sample_rows``: keep a deterministic uniform sample of that many lines (seeded by ``seed``), else all.
    ``progress`` is called after each block with the report so far. Returns the final report; raises
    ``LabelDPInputError`` (and writes nothing) on bad input.
    """
    path = Path(path)
    date = require_date(date)
    if sample_rows is not None and (isinstance(sample_rows, bool) or int(sample_rows) != sample_rows
                                    or sample_rows < 1):
        raise LabelDPInputError(f"--sample-rows must be a whole number >= 1; got {sample_rows!r}")
    if isinstance(seed, bool) or int(seed) != seed or not 0 <= seed < 2**63:
        raise LabelDPInputError(f"--seed must be a whole number in 0..2^63-1; got {seed!r}")
    if int(block_bytes) < 1024:
        raise LabelDPInputError(f"block_bytes must be >= 1024; got {block_bytes!r}")
    started = time.perf_counter()
    stream, compression = _open(path)
    report = IngestReport(source=str(path), date=date.isoformat(), compression=compression,
                          sample_rows=None if sample_rows is None else int(sample_rows), seed=int(seed))
    skipped: dict[str, int] = {}

    def parsed_blocks() -> Iterator[_Rows]:
        next_line = 1
        for data, bytes_read in _blocks(stream, path, int(block_bytes)):
            n_lines = data.count(b"\n")
            rows = _read_block_fast(data, next_line, n_lines)
            if rows is None:  # some line is bad: the numpy parser finds which, and why
                parsed = _parse_block(data, next_line)
                if len(parsed.bad_lines):
                    if not skip_bad_lines:
                        raise _bad_line_error(path, parsed, report.lines_read + n_lines)
                    for reason in parsed.bad_reasons:
                        skipped[reason] = skipped.get(reason, 0) + 1
                    report.skipped_lines += len(parsed.bad_lines)
                    room = _EXAMPLES - len(report.first_skipped_lines)
                    report.first_skipped_lines.extend(int(x) for x in parsed.bad_lines[:max(room, 0)])
                    report.skipped_by_reason = dict(sorted(skipped.items()))
                rows = parsed.rows
            next_line += n_lines
            report.lines_read += n_lines
            report.bytes_read = bytes_read
            if progress is not None:
                progress(report)
            if len(rows):
                yield rows

    def finish() -> dict:
        return report.as_provenance()

    try:
        if sample_rows is None:
            def tables() -> Iterator[pa.Table]:
                for rows in parsed_blocks():
                    report.rows_written += len(rows)
                    yield rows.to_table()

            directory = schema.write_partition(root, date, tables(), rows_per_file=rows_per_file,
                                               source=path, provenance=finish)
        else:
            sampler = _BottomK(int(sample_rows), int(seed))
            for rows in parsed_blocks():
                sampler.add(rows)
            sample = sampler.result()
            if sample is None:
                raise LabelDPInputError(f"{path}: no usable lines ({report.lines_read} read, "
                                        f"{report.skipped_lines} skipped); nothing was written")
            report.rows_written = len(sample)
            directory = schema.write_partition(root, date, sample.to_table(), rows_per_file=rows_per_file,
                                               source=path, provenance=finish)
    finally:
        stream.close()
    report.partition = str(directory)
    report.seconds = time.perf_counter() - started
    return report


def write_criteo_tsv(table: pa.Table, path: str | os.PathLike, compress: bool = False) -> Path:
    """Writes a partition table (``PARTITION_SCHEMA``) in the Criteo TSV format, in row order, without
    ``row_id`` (plain, or gzip with ``compress``). For tests and benchmarks: ingesting the result gives the same
    rows, with ``row_id`` replaced by line numbers."""
    import pyarrow.csv as pa_csv

    table = schema.validate_table(table, "write_criteo_tsv")
    columns = [table.column(schema.LABEL)] + [table.column(name) for name in schema.FEATURE_COLUMNS]
    columns = [column.cast(pa.string()) if pa.types.is_dictionary(column.type) else column for column in columns]
    out = pa.Table.from_arrays(columns, names=[schema.LABEL, *schema.FEATURE_COLUMNS])
    path = Path(path)
    options = pa_csv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    with pa.output_stream(str(path), compression="gzip" if compress else None) as sink:
        pa_csv.write_csv(out, sink, write_options=options)
    return path
