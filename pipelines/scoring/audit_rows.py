"""Which rows of day D an audit plays the game on (the ``audit_rows`` setting).

The paper's game (Alg. 2) is about the labels the mechanism released into training: a row whose label never
reached the model (the test split, PATE's student rows) cannot leak it, and auditing it only dilutes the
attacker's best guesses. ``audit_rows``:

- ``training`` (default): the rows whose labels entered training, read from the target's registry metadata
  (``training_rows``). Three records exist:

  - the split scheme (no ``kind``; written by ``pipelines.training.train.register``): the scheme as used (hash, salt,
    buckets), the splits whose labels were read (train, plus validation whenever its privatized labels chose the
    best iteration or otherwise fed the procedure) and the row ids of those splits whose labels were never read.
    Nothing is recomputed differently: the split comes from the recorded parameters through
    ``pipelines.data.splits.split_of`` (`RowSelection`);
  - ``{"kind": "keys", "file": ..., "rows": N}`` (a registered outside model): the row keys whose labels
    trained it, one sorted int64 column ``row_id`` in a Parquet file of the model's directory
    (`KeysSelection`; read in batches into a `pipelines.data.id_sets.IdSet`, a bitmap over the keys' range when
    they are dense, so a day's training keys take about a bit a row rather than 8 bytes a key);
  - ``{"kind": "all", "rows": N}`` (a registered model trained on every row of the day): every row
    (`AllRowsSelection`).

  A model registered before this record existed cannot be audited this way (clear error: re-train it, or audit
  every row).
- ``all``: every row of the partition (what audits did before ``audit_rows`` existed).

A selection is a small picklable object with ``model``, ``rows`` (how many rows training read, None when not
recorded), ``mask(row_ids)`` and ``describe()``: the Beam job sends it to its workers and drops the other rows
of each batch before inference, so the in-process audit and the Beam job see the same rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditing.game.config import AUDIT_ROWS
from labeldp import hints
from labeldp.errors import LabelDPInputError, mention
from pipelines.data import splits
from pipelines.data.id_sets import IdSet, IdSetBuilder
from pipelines.models.metadata import ABSENT, ModelMetadata, TrainingRows, or_none

_SPLIT_CODES = {name: code for code, name in splits.SPLIT_NAMES.items()}
KEYS = "keys"
ALL = "all"
KEY_COLUMN = "row_id"  # the one column of a training-keys file
KEY_BATCH_ROWS = 1 << 20  # keys read at a time from a training-keys file (8 MiB of int64)


@dataclass(frozen=True)
class RowSelection:
    """The audited rows of one model's day: rows whose split is in ``split_codes`` and whose id is not in
    ``unread_row_ids`` (sorted), the split computed with the recorded scheme."""

    model: str
    date: str
    salt: int
    buckets: int
    train_buckets: int
    validation_buckets: int
    split_codes: tuple[int, ...]
    unread_row_ids: np.ndarray  # int64, sorted
    rows: int | None  # how many rows training read (None when not recorded)

    def mask(self, row_ids: np.ndarray) -> np.ndarray:
        """True for the rows to audit (row ids must be integers)."""
        ids = np.asarray(row_ids, dtype=np.int64)
        split = splits.split_of(ids, salt=self.salt, buckets=self.buckets, train_buckets=self.train_buckets,
                                validation_buckets=self.validation_buckets)
        keep = np.isin(split, self.split_codes)
        if self.unread_row_ids.size:
            keep &= ~np.isin(ids, self.unread_row_ids, assume_unique=False)
        return keep

    def describe(self) -> dict:
        """The selection as recorded in an audit result (splits read, unread rows, rows training read)."""
        names = [splits.SPLIT_NAMES[c] for c in self.split_codes]
        return {"audit_rows": "training", "label_splits": names, "unread_rows": int(self.unread_row_ids.size),
                "training_rows": self.rows}


@dataclass(frozen=True)
class KeysSelection:
    """The audited rows of a registered model whose record lists its training keys: the rows whose key is in
    ``keys`` (read from ``file``; an `IdSet`, a bitmap for dense keys, so its memory follows the keys' range rather
    than 8 bytes a key)."""

    model: str
    date: str
    file: str  # the keys file (messages and describe)
    keys: IdSet
    rows: int | None

    def mask(self, row_ids: np.ndarray) -> np.ndarray:
        """True for the rows to audit: those whose key is one of the training keys."""
        return self.keys.contains(np.asarray(row_ids, dtype=np.int64))

    def describe(self) -> dict:
        return {"audit_rows": "training", "training_rows_kind": KEYS, "label_splits": None,
                "unread_rows": 0, "training_rows": self.rows, "training_keys_file": Path(self.file).name}


@dataclass(frozen=True)
class AllRowsSelection:
    """A registered model trained on every row of its day: every row is audited (and none is held out)."""

    model: str
    date: str
    rows: int | None

    def mask(self, row_ids: np.ndarray) -> np.ndarray:
        return np.ones(np.asarray(row_ids).shape, dtype=bool)

    def describe(self) -> dict:
        return {"audit_rows": "training", "training_rows_kind": ALL, "label_splits": None, "unread_rows": 0,
                "training_rows": self.rows, "note": "the model's training read every row's label: every row is "
                                                    "audited"}


def check_audit_rows(value: str, name: str = "audit_rows") -> str:
    """``value`` if it is one of ``auditing.audit.AUDIT_ROWS``, else LabelDPInputError naming ``name``."""
    if value not in AUDIT_ROWS:
        raise LabelDPInputError(f"{name} must be one of {list(AUDIT_ROWS)}; got {value!r}")
    return value


def record_kind(metadata: ModelMetadata) -> str | None:
    """``"keys"``, ``"all"``, or None for the split-scheme record (or no record) of a model's metadata."""
    record = metadata.training_rows
    return or_none(record.kind) if isinstance(record, TrainingRows) else None


def _recorded_rows(record: TrainingRows) -> int | None:
    """The recorded row count (None when not recorded; reading `TrainingRows` checked it is a count)."""
    return or_none(record.rows)


def _key_batches(parquet, path: Path) -> Iterator[tuple[int, np.ndarray | None]]:
    """The keys file's column batch by batch: its null count, and its values as int64 when it has no null;
    LabelDPInputError when the data cannot be read."""
    try:
        # One reader a row group: a reader over the whole file keeps memory for every row group it has read.
        for group in range(parquet.num_row_groups):
            for batch in parquet.iter_batches(batch_size=KEY_BATCH_ROWS, row_groups=[group], columns=[KEY_COLUMN]):
                column = batch.column(0)
                yield column.null_count, (None if column.null_count
                                          else column.to_numpy().astype(np.int64, copy=False))
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None


def read_training_keys(path: Path, where: str, fingerprint: str | None = None) -> IdSet:
    """The keys of a training-keys file (one column ``row_id``, sorted and unique integers) as an `IdSet`;
    LabelDPInputError naming the file when it is missing, unreadable, differs from the recorded ``fingerprint``,
    or is not such a list.

    The file is read once, a batch at a time (never whole): each batch is checked and added to the set
    (`pipelines.data.id_sets.IdSetBuilder`)."""
    from pipelines.data.layout import file_fingerprint
    from pipelines.data.schema import open_parquet

    if not path.is_file():
        raise LabelDPInputError(f"{where}: its training keys file {path} is missing; register the model again")
    if fingerprint is not None and file_fingerprint(path) != fingerprint:
        raise LabelDPInputError(f"{where}: its training keys file {path} changed since registration (fingerprint "
                                f"differs from the metadata's); register the model again")
    parquet = open_parquet(path)
    if parquet.schema_arrow.names != [KEY_COLUMN] or not pa.types.is_integer(parquet.schema_arrow.field(0).type):
        raise LabelDPInputError(f"{path}: a training keys file holds one integer column {KEY_COLUMN!r}; found "
                                f"{parquet.schema_arrow}")
    rows = nulls = unsorted = 0
    last = None
    builder = IdSetBuilder()
    for null_count, keys in _key_batches(parquet, path):
        nulls += null_count
        if nulls:  # a null is the error; the rest of the file is read only to count them (and find corrupt data)
            continue
        if keys.size:
            # compared, not subtracted: a difference of two int64 keys can overflow
            unsorted += int(np.count_nonzero(keys[1:] <= keys[:-1])) + int(last is not None and keys[0] <= last)
            last = int(keys[-1])
            if not unsorted:  # once a key is out of order, the file is only read on to count them
                builder.add(keys)
        rows += keys.size
    if nulls:
        raise LabelDPInputError(f"{path}: column {KEY_COLUMN!r}: {nulls} row(s) are null")
    if unsorted:
        raise LabelDPInputError(f"{path}: column {KEY_COLUMN!r} must be sorted and unique; {unsorted} of "
                                f"{rows} row(s) are not greater than the one before")
    return builder.build()


def _keys_selection(record: TrainingRows, model: str, date: str, model_directory, where: str) -> KeysSelection:
    name = or_none(record.file)
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise LabelDPInputError(f"{where}: training_rows.file must be a plain file name; got {name!r}")
    if model_directory is None:
        raise LabelDPInputError(f"{where}: its training rows are listed in {name}; the model's directory is needed "
                                f"to read them")
    path = Path(os.fspath(model_directory)) / name
    rows = _recorded_rows(record)
    keys = read_training_keys(path, where, or_none(record.fingerprint))
    if rows is not None and rows != keys.size:
        raise LabelDPInputError(f"{where}: training_rows.rows is {rows} but {path} lists {keys.size} keys")
    return KeysSelection(model=model, date=date, file=str(path), keys=keys, rows=keys.size)


def training_rows(metadata: ModelMetadata, model_directory: str | os.PathLike | None = None):
    """The selection (`RowSelection`, `KeysSelection` or `AllRowsSelection`) of a target from its registry
    metadata; ``model_directory`` (``models/<name>/date=D``) is where a keys record's file is read. A clear
    error naming the model and what to do when the metadata has no (or a malformed) ``training_rows`` record,
    or its keys file is missing or unreadable."""
    model, date = metadata.model_name, metadata.date.isoformat()
    where = f"model {model!r} of {date}"
    record = metadata.training_rows
    if not isinstance(record, TrainingRows):
        raise LabelDPInputError(
            f"{where}: its registry metadata has no training_rows record (registered before "
            f"audit_rows existed), so the rows whose labels entered training are unknown; re-train it "
            f"({hints.TRAIN_MODEL.line(name=model, date=date)}, or delete models/{model}/date={date} and let the "
            f"nightly flow re-train it) or audit every row ({mention('audit_rows')} all; in a plan: "
            "audit.audit_rows 'all')", field="audit_rows")
    if record.kind == KEYS:
        return _keys_selection(record, model, date, model_directory, where)
    if record.kind == ALL:
        return AllRowsSelection(model=model, date=date, rows=_recorded_rows(record))
    return _split_selection(record, model, date, where)  # reading TrainingRows admits no other kind


def _split_selection(record: TrainingRows, model: str, date: str, where: str) -> RowSelection:
    try:
        scheme = record.split
        if scheme is ABSENT:
            raise KeyError("split")
        if scheme.get("hash") != "splitmix64":  # the split scheme's own JSON object, read here
            raise ValueError(f"unknown split hash {scheme.get('hash')!r}")
        if record.label_splits is ABSENT:
            raise KeyError("label_splits")
        codes = tuple(sorted(_SPLIT_CODES[name] for name in record.label_splits))
        if not codes or len(set(codes)) != len(codes):
            raise ValueError(f"label_splits {list(record.label_splits)!r}")
        unread = np.sort(np.asarray(record.unread_row_ids or [], dtype=np.int64))
        selection = RowSelection(
            model=model, date=date, salt=int(str(scheme["salt"]), 16), buckets=int(scheme["buckets"]),
            train_buckets=int(scheme["train_buckets"]), validation_buckets=int(scheme["validation_buckets"]),
            split_codes=codes, unread_row_ids=unread, rows=_recorded_rows(record))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LabelDPInputError(f"{where}: malformed training_rows record in its registry "
                                f"metadata ({exc}); re-train it") from None
    if not (selection.buckets >= 1 and 0 <= selection.train_buckets
            and selection.train_buckets + selection.validation_buckets <= selection.buckets):
        raise LabelDPInputError(f"{where}: training_rows.split has inconsistent bucket counts "
                                f"{scheme!r}; re-train it")
    return selection


def row_selection(audit_rows: str, metadata: ModelMetadata, model_directory: str | os.PathLike | None = None):
    """None for ``all``; the target's training rows for ``training`` (`training_rows`; LabelDPInputError as
    there, or for an unknown ``audit_rows``)."""
    check_audit_rows(audit_rows)
    return None if audit_rows == "all" else training_rows(metadata, model_directory)
