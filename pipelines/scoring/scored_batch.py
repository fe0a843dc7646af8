"""Step 2 of the scoring job (`pipelines.scoring.scoring_batches` describes all the steps): a batch's rows with both
models' class probabilities, the rows that cannot enter the game counted instead of dropped, and the batch's
two other uses: the row-id uniqueness check by hash bucket and the two-stage plan's Parquet round trip.

Rows without ``row_id`` and rows whose probabilities the model cannot have produced (NaN, outside [0, 1], not
summing to 1) are counted in `ScoredBatch.issues` (a `RowCounts`) and left out of the game, never dropped silently. A row
whose probabilities are all NaN is a row the model has no prediction for (a logged-predictions table without
its key, `pipelines.models.formats.registry`): it is also counted as ``rows_without_target_prediction`` (or reference). Row ids
must be unique in the day (they key the randomness; the in-process audit refuses duplicates): the job checks
it without gathering them, by hash bucket (`row_id_buckets`, `duplicate_row_ids`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa

from auditing.game.keyed_random import mix64
from auditing.game.play import probability_row_checks
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.scoring.grouped_files import key_order
from pipelines.scoring.partition_batches import SLICE_PREFIX


@dataclass(frozen=True)
class RowCounts:
    """The scoring job's row counters: of a batch, or summed over the day (`Pass1Accumulator.issues`, the record's
    ``diagnostics.rows``, written by `labeldp.codec.encode` in this field order). Audited rows read and scored,
    and the audited rows left out of the game and why (a row can be counted under several reasons); the capacity
    check's rows read and scored apart (0 when the job reads none)."""

    rows_read: int = 0
    rows_scored: int = 0
    rows_without_row_id: int = 0
    rows_bad_target_probabilities: int = 0
    rows_bad_reference_probabilities: int = 0
    rows_without_target_prediction: int = 0
    rows_without_reference_prediction: int = 0
    check_rows_read: int = 0
    check_rows_scored: int = 0

    def __add__(self, other: RowCounts) -> RowCounts:
        return RowCounts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


@dataclass
class ScoredBatch:
    """The rows of one batch that enter the game, with both models' class probabilities. ``check``: True for
    the capacity check's rows (never audited; `auditing.verdict.capacity_check`), None when the job reads none."""

    batch_id: str
    row_ids: np.ndarray  # int64, unique
    labels: np.ndarray  # int64
    p_target: np.ndarray  # (n, k) float64
    p_reference: np.ndarray  # (n, k) float64
    issues: RowCounts | None = None  # None: a part of a batch, whose counters stay with the whole batch
    check: np.ndarray | None = None  # bool per row
    columns: dict | None = None  # the declared slices' columns by name (one value per row), None without slices

    def take(self, index: np.ndarray) -> ScoredBatch:
        return ScoredBatch(self.batch_id, self.row_ids[index], self.labels[index], self.p_target[index],
                           self.p_reference[index], None, None if self.check is None else self.check[index],
                           None if self.columns is None else {name: v[index] for name, v in self.columns.items()})

    @property
    def rows(self) -> int:
        return int(self.row_ids.size)

    def audited(self) -> ScoredBatch:
        """The audited rows (every row when the batch has no check rows), with the batch's issue counters."""
        if self.check is None:
            return self
        part = self.take(np.flatnonzero(~self.check))
        return ScoredBatch(part.batch_id, part.row_ids, part.labels, part.p_target, part.p_reference,
                           self.issues, None, part.columns)

    def check_rows(self) -> ScoredBatch | None:
        """The capacity check's rows of the batch (None when the job reads none)."""
        if self.check is None:
            return None
        part = self.take(np.flatnonzero(self.check))
        part.check = None
        return part


def _as_matrix(values, n: int, who: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = np.column_stack([1.0 - arr, arr])
    if arr.ndim != 2 or arr.shape[0] != n or arr.shape[1] < 2:
        raise LabelDPInputError(f"the {who} model returned probabilities of shape {arr.shape}; expected ({n}, k>=2)")
    return arr


def scored_batch(batch_id: str, table: pa.Table, p_target, p_reference, check_rows=None) -> ScoredBatch:
    """Keeps the rows that can enter the game and counts the others (never a silent drop). ``check_rows``: the
    capacity check's row selection (``mask(row_ids)``); its rows are counted apart (``check_rows_read`` /
    ``check_rows_scored``) and flagged in `ScoredBatch.check`."""
    n = table.num_rows
    target = _as_matrix(p_target, n, "target")
    reference = _as_matrix(p_reference, n, "reference")
    if target.shape[1] != reference.shape[1]:
        raise LabelDPInputError(f"the target model has {target.shape[1]} classes but the reference model has "
                                f"{reference.shape[1]}")
    row_id = table.column(schema.ROW_ID)
    has_id = row_id.is_valid().to_numpy(zero_copy_only=False) if row_id.null_count else np.ones(n, dtype=bool)
    # Rows no classifier outputs (NaN, outside [0, 1], not summing to 1: as_class_probabilities' checks) are left
    # out, so the kept rows pass those checks by construction and are not checked again.
    bad_target, _, empty_target = probability_row_checks(target)
    bad_reference, certain_reference, empty_reference = probability_row_checks(reference)
    # A reference certain of a class has an infinite likelihood ratio: no kappa covers it (auditing.game.play).
    bad_reference |= certain_reference
    keep = has_id & ~bad_target & ~bad_reference
    labels = table.column(schema.LABEL).to_numpy().astype(np.int64)
    if labels.size and int(labels.max()) >= target.shape[1]:
        raise LabelDPInputError(f"batch {batch_id}: labels go up to {int(labels.max())} but the models have "
                                f"{target.shape[1]} classes")
    index = np.flatnonzero(keep)
    all_ids = row_id.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    every = index.size == n  # the usual batch: every row kept, no copy
    ids = all_ids if every else all_ids[index]
    # A row without a row id cannot be a check row: it is counted with the audited rows' issues.
    is_check = (check_rows.mask(all_ids) & has_id) if check_rows is not None else np.zeros(n, dtype=bool)
    audited = ~is_check
    issues = RowCounts(rows_read=int(audited.sum()), rows_scored=int((keep & audited).sum()),
                       rows_without_row_id=int(n - has_id.sum()),
                       rows_bad_target_probabilities=int((bad_target & audited).sum()),
                       rows_bad_reference_probabilities=int((bad_reference & audited).sum()),
                       rows_without_target_prediction=int((empty_target & audited).sum()),
                       rows_without_reference_prediction=int((empty_reference & audited).sum()),
                       check_rows_read=int(is_check.sum()), check_rows_scored=int((keep & is_check).sum()))
    columns = _slice_columns(table)
    if every:  # C-ordered as a gathered copy is
        return ScoredBatch(batch_id, ids, labels, np.ascontiguousarray(target), np.ascontiguousarray(reference),
                           issues, is_check if check_rows is not None else None, columns)
    return ScoredBatch(batch_id, ids, labels[index], target.take(index, axis=0), reference.take(index, axis=0),
                       issues, is_check[index] if check_rows is not None else None,
                       None if columns is None else {name: v[index] for name, v in columns.items()})


def _slice_columns(table: pa.Table) -> dict[str, np.ndarray] | None:
    """The slicing columns a batch carries (`partition_batches.with_slice_columns`) by name, or None."""
    found = {name[len(SLICE_PREFIX):]: np.asarray(table.column(name).to_numpy(zero_copy_only=False))
             for name in table.column_names if name.startswith(SLICE_PREFIX)}
    return found or None


def row_id_bucket_of(row_ids: np.ndarray, buckets: int) -> np.ndarray:
    """Each row id's hash bucket, hash(row_id) mod buckets: equal ids meet in one bucket, so duplicates across the
    whole partition are found one bucket at a time (`duplicate_row_ids`)."""
    return (mix64(row_ids.view(np.uint64)) % np.uint64(buckets)).astype(np.int64)


def row_id_buckets(batch: ScoredBatch, buckets: int) -> Iterator[tuple[int, np.ndarray]]:
    """(bucket, the batch's row ids in it) for every bucket holding some (`row_id_bucket_of`)."""
    if batch.rows == 0:
        return
    order, edges = key_order(row_id_bucket_of(batch.row_ids, buckets), buckets)
    for b in np.flatnonzero(np.diff(edges)).tolist():
        yield b, batch.row_ids[order[edges[b]:edges[b + 1]]]


def duplicate_row_ids(chunks) -> tuple[int, int | None]:
    """(how many rows repeat an earlier row's id, one such id) over all chunks of a bucket."""
    ids = np.sort(np.concatenate(list(chunks)))
    repeats = ids[1:][ids[1:] == ids[:-1]]
    return int(repeats.size), (int(repeats[0]) if repeats.size else None)


CHECK = "check"  # a predictions table's check flag, written when its batch has check rows


def predictions_table(batch: ScoredBatch) -> pa.Table:
    """A scored batch as an Arrow table (row_id, label, p_target_j, p_reference_j), for the two-stage plan; with
    the check flag and the slicing columns (under `SLICE_PREFIX` names) when the batch carries them."""
    k = batch.p_target.shape[1]
    columns = {schema.ROW_ID: batch.row_ids, schema.LABEL: batch.labels}
    columns.update({f"p_target_{j}": batch.p_target[:, j] for j in range(k)})
    columns.update({f"p_reference_{j}": batch.p_reference[:, j] for j in range(k)})
    if batch.check is not None:
        columns[CHECK] = batch.check
    columns.update({SLICE_PREFIX + name: values for name, values in (batch.columns or {}).items()})
    counts = {} if batch.issues is None else encode(batch.issues)
    metadata = {f"issue.{key}": str(value) for key, value in counts.items()}
    metadata["batch_id"] = batch.batch_id
    return pa.table(columns).replace_schema_metadata(metadata)


def batch_from_predictions(table: pa.Table) -> ScoredBatch:
    """Inverse of `predictions_table`."""
    metadata = {key.decode(): value.decode() for key, value in (table.schema.metadata or {}).items()}
    k = sum(1 for name in table.column_names if name.startswith("p_target_"))
    stack = lambda prefix: np.column_stack([table.column(f"{prefix}{j}").to_numpy() for j in range(k)])  # noqa: E731
    counts = {key[len("issue."):]: int(value) for key, value in metadata.items() if key.startswith("issue.")}
    issues = decode(RowCounts, counts) if counts else None
    check = table.column(CHECK).to_numpy(zero_copy_only=False) if CHECK in table.column_names else None
    return ScoredBatch(metadata.get("batch_id", ""), table.column(schema.ROW_ID).to_numpy().astype(np.int64),
                       table.column(schema.LABEL).to_numpy().astype(np.int64), stack("p_target_"),
                       stack("p_reference_"), issues, check, _slice_columns(table))


__all__ = [
    "CHECK",
    "RowCounts",
    "ScoredBatch",
    "batch_from_predictions",
    "duplicate_row_ids",
    "predictions_table",
    "row_id_bucket_of",
    "row_id_buckets",
    "scored_batch",
]
