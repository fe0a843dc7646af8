"""The day as a handle, like the model (`pipelines.models.handle`): a day's partition resolved once a run, by the
preflight or the flow, and passed to what reads it (recalibration, the shift diagnostic, training, the scoring
request), so its files are listed once, its footers checked once and its bytes hashed at most once.

``resolve_day`` checks the partition from its files' footers and its row-key and label columns only (no feature is
read); the fingerprint (every byte of every file, `schema.files_fingerprint`) is computed the first time a reader
asks for it and kept on the handle. A handle describes the files as they were when it was resolved: a run that
replaces the day (``data ingest --replace``) resolves a new one.

The steps of a run and the jobs they call take the handle, not ``(root, date)``: a date is parsed and resolved
once, at the edge (the flow, or a command with `listed_day`), and the handle's ``root`` is the data root its
models and records live under.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from labeldp.errors import LabelDPInputError
from labeldp.names import require_date
from pipelines.data.dataset_spec import DatasetSpec, check_same_dataset, dataset_of
from pipelines.data.layout import partition_dir, partition_listing


class PartitionMissing(LabelDPInputError):
    """The day's partition is absent or holds no rows: a data problem, not bad settings."""


@dataclass(frozen=True)
class Day:
    """One day's partition: its data root, date, ``part-*.parquet`` files (in name order), dataset spec and row
    count; ``fingerprint`` on demand, once. Pickles for Beam workers (the fingerprint too, once computed)."""

    root: Path
    date: dt.date
    files: tuple[Path, ...]
    dataset: DatasetSpec
    rows: int

    @property
    def directory(self) -> Path:
        return partition_dir(self.root, self.date)

    @functools.cached_property
    def fingerprint(self) -> str:
        """``sha256:<hex>`` of the files' names, sizes and bytes (`pipelines.data.schema.files_fingerprint`)."""
        from pipelines.data.schema import files_fingerprint

        return files_fingerprint(self.files)

    def describe(self) -> dict:
        """The partition as the night's records name it: date, rows, fingerprint and dataset."""
        return {"date": self.date.isoformat(), "rows": int(self.rows), "fingerprint": self.fingerprint,
                "dataset": self.dataset.name}


def resolve_day(root: str | Path, date: dt.date, expected: DatasetSpec | None = None, fix: str = "") -> Day:
    """Day ``date``'s partition, checked: `PartitionMissing` when it is absent or empty; LabelDPInputError when it
    was written for another dataset than ``expected`` (``fix`` says what to do), when a file's columns or types do
    not match its dataset spec (naming the file and column), when the row keys repeat or every row has the same
    label. Reads the files' footers and two columns, never the features, and hashes nothing."""
    from pipelines.data import schema

    date = require_date(date)
    listing = partition_listing(root, date)
    directory, files = listing.directory, listing.files
    if not files:
        how = str(schema.missing_partition(root, date, expected))
        raise PartitionMissing(f"partition for {date.isoformat()} is missing: no part-*.parquet under {directory}; "
                               f"{how.split('; ', 1)[1]}")
    footers = [schema.open_parquet(p) for p in files]
    rows = sum(f.metadata.num_rows for f in footers)
    if rows == 0:
        raise PartitionMissing(f"partition for {date.isoformat()} at {directory} is empty")
    dataset = dataset_of(root, date)
    if expected is not None:
        check_same_dataset(expected, dataset, f"the partition of {date.isoformat()} ({directory})", fix)
    for path, footer in zip(files, footers, strict=True):
        check_footer(footer.schema_arrow, path, dataset)
    day = Day(Path(root), date, tuple(files), dataset, int(rows))
    schema.check_keys_and_labels(day)
    return day


def check_footer(footer, path: Path, dataset: DatasetSpec) -> None:
    """A file's columns and their types, from its footer, against its dataset spec: each column goes through
    the cast its role gets in `pipelines.data.schema.validate_table`, on no rows (the values are checked when read)."""
    import pyarrow as pa

    from pipelines.data import column_checks as checks

    checks.check_columns(footer.empty_table(), list(dataset.columns), path, dataset)
    for name in dataset.columns:
        empty = pa.chunked_array([], type=footer.field(name).type)
        try:
            if name == dataset.row_key:
                checks.cast_integer(empty, pa.int64(), name, path)
            elif name == dataset.label:
                checks.check_labels(empty, dataset.classes, path, name)
            elif name in dataset.numeric:
                (checks.cast_integer(empty, pa.int64(), name, path) if dataset.numeric_type == "int64"
                 else checks.cast_float(empty, name, path))
            elif name in dataset.carry:
                checks.cast_text(empty, name, path)
            else:
                checks.cast_categorical(empty, name, path, dataset.categorical_format == "hex8")
        except LabelDPInputError as exc:  # no rows were read: say where the type came from instead of a count
            raise LabelDPInputError(re.sub(r"; 0 non-null rows are affected$", " (from the file's footer)",
                                           str(exc))) from None


class Days:
    """The day handles of one run, by date: each day resolved (unchecked: its files and spec, for a day the run
    only compares with, such as the reference's own) and fingerprinted at most once, whoever asks first."""

    def __init__(self, root: str | Path, resolved: Mapping[dt.date, Day] = ()):
        self.root = Path(root)
        self._days: dict[dt.date, Day] = dict(resolved)

    def __getitem__(self, date: dt.date) -> Day:
        date = require_date(date)
        if date not in self._days:
            self._days[date] = listed_day(self.root, date)
        return self._days[date]


def listed_day(root: str | Path, date: dt.date) -> Day:
    """Day ``date``'s handle from its file listing and footers' row counts, unchecked (`resolve_day` checks; a
    reader validates the rows it reads): `PartitionMissing` saying how to make the day when it has no partition
    (`schema.missing_partition`), or naming the directory when it holds no files."""
    from pipelines.data import schema

    date = require_date(date)
    listing = partition_listing(root, date)
    files = listing.files
    if not listing.exists:
        missing = schema.missing_partition(root, date)
        raise PartitionMissing(missing.template, field=missing.field)
    if not files:
        raise PartitionMissing(f"{listing.directory}: the partition directory holds no {schema.PART_GLOB} files")
    rows = sum(schema.open_parquet(p).metadata.num_rows for p in files)
    return Day(Path(root), date, tuple(files), dataset_of(root, date), int(rows))


__all__ = ["Day", "Days", "PartitionMissing", "check_footer", "listed_day", "resolve_day"]
