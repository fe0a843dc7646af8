"""Which rows of day D an audit plays the game on (the ``audit_rows`` setting).

The paper's game (Alg. 2) is about the labels the mechanism released into training: a row whose label never
reached the model (the test split, PATE's student rows) cannot leak it, and auditing it only dilutes the
attacker's best guesses. ``audit_rows``:

- ``training`` (default): the rows whose labels entered training, read from the target's registry metadata
  (``training_rows``, written by ``pipelines.training.register``): the split scheme as used (hash, salt,
  buckets), the splits whose labels were read (train, plus validation whenever its privatized labels chose the
  best iteration or otherwise fed the procedure) and the row ids of those splits whose labels were never read.
  Nothing is recomputed differently: the split comes from the recorded parameters through
  ``pipelines.splits.split_of``. A model registered before this record existed cannot be audited this way
  (clear error: re-train it, or audit every row).
- ``all``: every row of the partition (what audits did before ``audit_rows`` existed).

``RowSelection`` is a small picklable object: the Beam job sends it to its workers and drops the other rows
of each batch before inference, so the in-process audit and the Beam job see the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditing.audit import AUDIT_ROWS
from auditing.errors import LabelDPInputError
from pipelines import splits

_SPLIT_CODES = {name: code for code, name in splits.SPLIT_NAMES.items()}


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


def check_audit_rows(value: str, name: str = "audit_rows") -> str:
    """``value`` if it is one of ``auditing.audit.AUDIT_ROWS``, else LabelDPInputError naming ``name``."""
    if value not in AUDIT_ROWS:
        raise LabelDPInputError(f"{name} must be one of {list(AUDIT_ROWS)}; got {value!r}")
    return value


def training_rows(metadata: dict) -> RowSelection:
    """The ``RowSelection`` of a target from its registry metadata; a clear error naming the model and what to
    do when the metadata has no (or a malformed) ``training_rows`` record."""
    model, date = metadata.get("model_name", "?"), metadata.get("date", "?")
    record = metadata.get("training_rows")
    if not isinstance(record, dict):
        raise LabelDPInputError(
            f"model {model!r} of {date}: its registry metadata has no training_rows record (registered before "
            f"audit_rows existed), so the rows whose labels entered training are unknown; re-train it "
            f"(`labeldp-audit train --date {date} --model-name {model} ...`, or delete models/{model}/date={date} "
            f"and let the nightly flow re-train it) or audit every row with audit_rows 'all' (--audit-rows all)")
    try:
        scheme = record["split"]
        if scheme.get("hash") != "splitmix64":
            raise ValueError(f"unknown split hash {scheme.get('hash')!r}")
        codes = tuple(sorted(_SPLIT_CODES[name] for name in record["label_splits"]))
        if not codes or len(set(codes)) != len(codes):
            raise ValueError(f"label_splits {record['label_splits']!r}")
        unread = np.sort(np.asarray(record.get("unread_row_ids") or [], dtype=np.int64))
        selection = RowSelection(
            model=str(model), date=str(date), salt=int(str(scheme["salt"]), 16), buckets=int(scheme["buckets"]),
            train_buckets=int(scheme["train_buckets"]), validation_buckets=int(scheme["validation_buckets"]),
            split_codes=codes, unread_row_ids=unread,
            rows=None if record.get("rows") is None else int(record["rows"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LabelDPInputError(f"model {model!r} of {date}: malformed training_rows record in its registry "
                                f"metadata ({exc}); re-train it") from None
    if not (selection.buckets >= 1 and 0 <= selection.train_buckets
            and selection.train_buckets + selection.validation_buckets <= selection.buckets):
        raise LabelDPInputError(f"model {model!r} of {date}: training_rows.split has inconsistent bucket counts "
                                f"{scheme!r}; re-train it")
    return selection


def row_selection(audit_rows: str, metadata: dict) -> RowSelection | None:
    """None for ``all``; the target's training rows for ``training`` (LabelDPInputError as `training_rows`, or
    for an unknown ``audit_rows``)."""
    check_audit_rows(audit_rows)
    return None if audit_rows == "all" else training_rows(metadata)
