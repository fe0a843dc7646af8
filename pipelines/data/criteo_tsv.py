"""Reading and parsing a Criteo click-log TSV file block by block (used by `pipelines.data.criteo_ingest`).

The format is described in `pipelines.data.criteo_ingest`. `open_tsv` opens a plain or gzip file (by its magic
bytes); `tsv_blocks` cuts the decompressed stream into blocks of whole lines, the same cuts whatever sizes the
stream returns. A block is parsed by Arrow's CSV reader (`read_block_fast`) when every line is well formed,
else by a vectorized numpy parser (`parse_block`) that names each bad line and why. Both give the same
`ParsedRows`: ``row_id`` = the line number in the file, counting from 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.layout import refuse_empty_file

__all__ = ["FIELDS", "MAX_INT_DIGITS", "MAX_LINE_BYTES", "BlockParse", "ParsedRows", "open_tsv", "parse_block",
           "read_block_fast", "tsv_blocks"]

FIELDS = 1 + len(schema.NUMERIC_COLUMNS) + len(schema.CATEGORICAL_COLUMNS)  # 40
MAX_LINE_BYTES = 1 << 20  # a "line" longer than this is not a Criteo line; refuse rather than buffer it
MAX_INT_DIGITS = 18  # every 18-digit integer fits in int64
_GZIP_MAGIC = b"\x1f\x8b"

_NIBBLE = np.full(256, 255, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16, dtype=np.uint8)


def _pack_nibbles(nibbles: np.ndarray) -> np.ndarray:
    """(n, 8) hex digit values (0..15, most significant first) -> n uint32 values."""
    high_low = (nibbles[:, 0::2] << np.uint8(4)) | nibbles[:, 1::2]  # (n, 4) bytes, most significant first
    return np.ascontiguousarray(high_low).view(">u4").ravel().astype(np.uint32)


# ------------------------------------------------------------------------------------------ reading


def open_tsv(path: Path) -> tuple[pa.NativeFile, str]:
    """(input stream, "gzip" or "none") for ``path``, gzip recognised by its magic bytes; LabelDPInputError
    naming the path if it is not a readable file."""
    if not path.is_file():
        raise LabelDPInputError(f"{path}: no such file (expected a Criteo TSV file, plain or gzip)")
    refuse_empty_file(path)
    with open(path, "rb") as handle:
        magic = handle.read(2)
    compression = "gzip" if magic == _GZIP_MAGIC else None
    try:
        return pa.input_stream(str(path), compression=compression), compression or "none"
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: cannot open ({exc})") from None


def tsv_blocks(stream: pa.NativeFile, path: Path, block_bytes: int) -> Iterator[tuple[bytes, int]]:
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
class ParsedRows:
    """Parsed rows in compact numpy form: ints with validity masks, categoricals as uint32 with masks."""

    row_id: np.ndarray  # int64 line numbers
    label: np.ndarray  # int8
    ints: np.ndarray  # (13, n) int64: column-major, so a column is contiguous (zero-copy into Arrow)
    int_valid: np.ndarray  # (13, n) bool
    cats: np.ndarray  # (26, n) uint32
    cat_valid: np.ndarray  # (26, n) bool

    def __len__(self) -> int:
        return len(self.row_id)

    def take(self, index: np.ndarray) -> ParsedRows:
        return ParsedRows(self.row_id[index], self.label[index], self.ints[:, index], self.int_valid[:, index],
                     self.cats[:, index], self.cat_valid[:, index])

    @staticmethod
    def empty(n: int) -> ParsedRows:
        n_int, n_cat = len(schema.NUMERIC_COLUMNS), len(schema.CATEGORICAL_COLUMNS)
        return ParsedRows(np.zeros(n, np.int64), np.zeros(n, np.int8), np.zeros((n_int, n), np.int64),
                     np.zeros((n_int, n), bool), np.zeros((n_cat, n), np.uint32), np.zeros((n_cat, n), bool))

    def put(self, at: np.ndarray, other: ParsedRows, index: np.ndarray) -> None:
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
class BlockParse:
    """What `parse_block` found in one block: the good rows and the bad lines with their reasons."""

    rows: ParsedRows
    bad_lines: np.ndarray  # line numbers of bad lines in this block (sorted)
    bad_reasons: np.ndarray  # one reason string per bad line


def parse_block(data: bytes, first_line: int) -> BlockParse:
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
    rows = ParsedRows(line_numbers[good_index[keep]], label[keep].astype(np.int8), ints[:, keep],
                 int_valid[:, keep], cats[:, keep], cat_valid[:, keep])
    bad_mask = reasons != ""
    return BlockParse(rows, line_numbers[bad_mask], reasons[bad_mask])


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


def read_block_fast(data: bytes, first_line: int, n_lines: int) -> ParsedRows | None:
    """Parses a block with Arrow's CSV reader when every line is well formed; None if anything is off (a
    wrong field count, a bad integer, label or hex value): then the numpy parser, which names the bad lines,
    takes the block."""
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv

    try:
        table = pa_csv.read_csv(
            pa.py_buffer(data),
            # 4 MiB parse blocks, for speed (benchmarks/results/notes_from_code.md) and parallel parsing.
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
    return ParsedRows(row_id, label.to_numpy().astype(np.int8), ints, int_valid, cats, cat_valid)
