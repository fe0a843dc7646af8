"""Converts a Criteo click-log TSV file into a daily partition (``pipelines.data.schema``).

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

Reading and parsing the blocks is `pipelines.data.criteo_tsv`; this module runs the job (sampling, bad-line policy,
the report, writing the partition).
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

from labeldp.errors import LabelDPInputError, mention
from labeldp.names import require_date
from pipelines.data import schema
from pipelines.data.criteo_tsv import (
    FIELDS,
    BlockParse,
    ParsedRows,
    open_tsv,
    parse_block,
    read_block_fast,
    tsv_blocks,
)
from pipelines.data.splits import splitmix64

__all__ = ["DEFAULT_BLOCK_BYTES", "IngestReport", "ingest_criteo", "write_criteo_tsv"]

DEFAULT_BLOCK_BYTES = 32 << 20
_EXAMPLES = 5  # how many bad line numbers a report lists


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



# ------------------------------------------------------------------------------------------ sampling


class _BottomK:
    """Keeps the ``k`` rows with the smallest keys seen so far, in O(k + block) memory."""

    def __init__(self, k: int, seed: int):
        self.k = k
        salt = np.random.SeedSequence([seed, 0x435249544552]).generate_state(1, np.uint64)[0]  # "CRITEO"
        self.salt = np.uint64(salt)
        self.threshold = np.uint64(np.iinfo(np.uint64).max)
        self.parts: list[ParsedRows] = []
        self.keys: list[np.ndarray] = []
        self.size = 0

    def add(self, rows: ParsedRows) -> None:
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
        kept = ParsedRows.empty(len(chosen))
        bounds = np.cumsum([0] + [len(part) for part in self.parts])
        for i, part in enumerate(self.parts):
            lo, hi = np.searchsorted(chosen, [bounds[i], bounds[i + 1]])
            kept.put(np.arange(lo, hi), part, chosen[lo:hi] - bounds[i])
            self.parts[i] = None  # free it now
        kept_keys = keys[chosen]
        if len(kept_keys) >= self.k:
            self.threshold = kept_keys.max()
        self.parts, self.keys, self.size = [kept], [kept_keys], len(kept_keys)

    def result(self) -> ParsedRows | None:
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


def _bad_line_error(path: Path, parsed: BlockParse, lines_so_far: int) -> LabelDPInputError:
    reasons, counts = np.unique(parsed.bad_reasons.astype(str), return_counts=True)
    summary = ", ".join(f"{count} {reason}" for reason, count in zip(reasons, counts, strict=True))
    first = int(parsed.bad_lines[0])
    examples = ", ".join(str(int(x)) for x in parsed.bad_lines[:_EXAMPLES])
    return LabelDPInputError(
        f"{path}: line {first}: {parsed.bad_reasons[0]} (expected {FIELDS} tab-separated fields: label 0/1, "
        f"I1..I13 integers, C1..C26 8 lowercase hex digits, empty = missing); {len(parsed.bad_lines)} bad "
        f"line(s) among the first {lines_so_far} lines ({summary}; lines {examples}); stopped there, nothing "
        f"was written. Pass {mention('skip_bad_lines')} to skip such lines and report them", field="skip_bad_lines"
    )


def ingest_criteo(path: str | os.PathLike, root: str | os.PathLike, date: dt.date,
                  sample_rows: int | None = None, seed: int = 0, skip_bad_lines: bool = False,
                  block_bytes: int = DEFAULT_BLOCK_BYTES, rows_per_file: int = schema.DEFAULT_ROWS_PER_FILE,
                  progress: Callable[[IngestReport], None] | None = None, replace: bool = False) -> IngestReport:
    """Converts the Criteo TSV file ``path`` into ``partitions/date=D/`` under ``root``; see the module doc.

    ``sample_rows``: keep a deterministic uniform sample of that many lines (seeded by ``seed``), else all.
    ``progress`` is called after each block with the report so far. An existing day is refused before the file is
    read unless ``replace``. Returns the final report; raises ``LabelDPInputError`` (and writes nothing) on bad
    input.
    """
    path = Path(path)
    date = require_date(date)
    schema.refuse_existing_partition(root, date, replace)
    if sample_rows is not None and (isinstance(sample_rows, bool) or int(sample_rows) != sample_rows
                                    or sample_rows < 1):
        raise LabelDPInputError(f"sample_rows must be a whole number >= 1; got {sample_rows!r}", field="sample_rows")
    if isinstance(seed, bool) or int(seed) != seed or not 0 <= seed < 2**63:
        raise LabelDPInputError(f"seed must be a whole number in 0..2^63-1; got {seed!r}", field="seed")
    if int(block_bytes) < 1024:
        raise LabelDPInputError(f"block_bytes must be >= 1024; got {block_bytes!r}")
    started = time.perf_counter()
    stream, compression = open_tsv(path)
    report = IngestReport(source=str(path), date=date.isoformat(), compression=compression,
                          sample_rows=None if sample_rows is None else int(sample_rows), seed=int(seed))
    skipped: dict[str, int] = {}

    def parsed_blocks() -> Iterator[ParsedRows]:
        next_line = 1
        for data, bytes_read in tsv_blocks(stream, path, int(block_bytes)):
            n_lines = data.count(b"\n")
            rows = read_block_fast(data, next_line, n_lines)
            if rows is None:  # some line is bad: the numpy parser finds which, and why
                parsed = parse_block(data, next_line)
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
                                               source=path, provenance=finish, replace=replace)
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
                                               source=path, provenance=finish, replace=replace)
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
