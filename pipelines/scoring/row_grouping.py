"""The night's row groups: which rows of day D may enter the game and the capacity check (the rule and the
diagnostic are `auditing.game.row_groups`; the argument is docs/soundness.md section 9).

A group key is a 64-bit hash of a row's values in one relation's columns: the whole feature vector (unless the
dataset declares feature-identical rows independent, ``feature_rows: independent``) and each declared group
column (``groups``: a user, a device, a session). A row of day D is kept only when, in every relation, no other
row shares its key among the rows whose labels the night's inputs used: every row of day D (the targets'
training rows, the reference's correction and the check rows all lie there) and the reference's training rows
on the reference's own day. Keys and features only decide it, never labels.

`night_exclusion` computes it once per night; the Beam job drops the excluded rows from the audited and the
check rows (`ScoringRequest.excluded_rows`), and every result records how many of its rows were left out and
why, with the label-agreement diagnostic of the day's groups.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from auditing.game.row_groups import (
    FEATURE_ROWS_GROUPED,
    LabelAgreement,
    RowGroups,
    describe_rule,
    in_sorted,
    label_agreement,
    singleton_mask,
)
from labeldp.errors import LabelDPInputError
from labeldp.progress import Progress, no_progress
from pipelines.data import schema
from pipelines.data.categories import used_categories
from pipelines.data.dataset_spec import DatasetSpec, dataset_of
from pipelines.data.layout import partition_dir
from pipelines.data.tabular_values import is_text
from pipelines.models.handle import ModelHandle, resolve_model


def relations(dataset: DatasetSpec) -> list[tuple[str, ...]]:
    """The grouping relations of a dataset: its feature vector (unless declared independent), then each declared
    group column."""
    out = [tuple(dataset.features)] if dataset.feature_rows == FEATURE_ROWS_GROUPED else []
    return out + [(name,) for name in dataset.groups]


def group_keys(table: pa.Table, columns_per_relation: list[tuple[str, ...]],
               null_columns: frozenset[str] = frozenset()) -> list[np.ndarray]:
    """One uint64 key per row and relation: pandas' stable hash of the row's values in the relation's columns (a
    missing value is a value like any other; dictionary columns hash by their text).

    A row's key depends on its values only, except that pandas converts an integer column holding a null to
    floats (5 hashes as 5.0): ``null_columns`` names the columns that hold a null somewhere in the rows whose keys
    are compared, so that a slice of them without a null hashes as the whole would (`_day_keys`). A float zero
    hashes as 0.0 whatever its sign."""
    out = []
    for columns in columns_per_relation:
        frame = pd.DataFrame({name: _as_pandas(table.column(name), name in null_columns) for name in columns})
        out.append(pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64))
    return out


def _as_pandas(column: pa.ChunkedArray, has_nulls: bool):
    """A column as pandas hashes it after ``to_pandas().astype("object")``, without making a Python object per
    value for numbers: pandas hashes an object column through its distinct values (factorize, then hash each
    distinct object by its text, a null as the largest uint64), so a numeric column is factorized natively and
    only its distinct values become the same Python objects; a text column likewise (`_text_categories`)."""
    if is_text(column.type.value_type if pa.types.is_dictionary(column.type) else column.type):
        return _text_categories(column)
    if pa.types.is_integer(column.type) and (has_nulls or column.null_count):
        column = column.cast(pa.float64(), safe=False)  # what to_pandas does to an integer column with a null
    if pa.types.is_floating(column.type):
        # pandas hashes a float by the bits of the first equal value it meets, so -0.0 and 0.0 would get keys
        # that depend on which comes first in the slice: hash every zero as 0.0
        column = pc.add(column.cast(pa.float64()), pa.scalar(0.0, pa.float64()))
    elif pa.types.is_integer(column.type):
        column = column.cast(pa.uint64() if pa.types.is_unsigned_integer(column.type) else pa.int64())
    else:
        return column.to_pandas().astype("object")
    codes, uniques = pd.factorize(column.to_numpy())
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques.astype(object), dtype=object))


def _text_categories(column: pa.ChunkedArray) -> pd.Categorical:
    """A text column (plain or dictionary-encoded) as the categorical pandas hashes an object column through: the
    distinct values as Python strings and a code per row (-1 for a null), without a Python object per row
    (`pipelines.data.categories.used_categories`). A dictionary with a repeated or a null value is decoded
    and encoded again first."""
    if pa.types.is_dictionary(column.type):
        try:
            codes, categories = used_categories(column)
            clean = not pd.isna(categories).any() and pd.Index(categories, dtype=object).is_unique
        except pa.ArrowInvalid:  # chunks whose dictionaries hold a null do not unify
            clean = False
        if clean:
            return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))
        column = column.cast(column.type.value_type)
    codes, categories = used_categories(column)
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))


@dataclass(frozen=True)
class GroupExclusion:
    """The rows of day D left out for sharing a group (sorted row ids), and the rule. ``with_inputs``: those
    alone on day D but sharing a key with a row of another day whose label an input used (the reference's
    training rows). Picklable for Beam workers; ``mask`` is True for the rows that may be used."""

    rule: str
    columns: tuple[str, ...]
    excluded: np.ndarray  # int64, sorted
    with_inputs: np.ndarray  # int64, sorted, a subset of excluded
    agreement: LabelAgreement = field(default_factory=lambda: LabelAgreement(0, None, None))
    note: str | None = None

    def mask(self, row_ids) -> np.ndarray:
        ids = np.asarray(row_ids, dtype=np.int64)
        return ~in_sorted(ids.view(np.uint64), self.excluded.view(np.uint64))

    def record(self, audited, check=None) -> RowGroups:
        """The result's `RowGroups` for an audit whose audited rows are ``audited`` and check rows ``check``
        (selections with ``mask``; None: every row)."""
        def count(selection, ids):
            return int(ids.size if selection is None else selection.mask(ids).sum())

        with_inputs = count(audited, self.with_inputs)
        total = count(audited, self.excluded)
        return RowGroups(rule=self.rule + (f" ({self.note})" if self.note else ""), columns=self.columns,
                         rows_excluded=total, excluded_with_day=total - with_inputs, excluded_with_inputs=with_inputs,
                         check_rows_excluded=0 if check is None else count(check, self.excluded),
                         agreement_pairs=self.agreement.pairs, agreement_observed=self.agreement.observed,
                         agreement_expected=self.agreement.expected)

    def describe(self) -> dict:
        digest = hashlib.sha256(np.ascontiguousarray(self.excluded, dtype="<i8").tobytes()).hexdigest()
        return {"rule": self.rule, "columns": list(self.columns), "rows_excluded": int(self.excluded.size),
                "with_inputs": int(self.with_inputs.size), "note": self.note, "fingerprint": f"sha256:{digest}"}


@dataclass(frozen=True)
class ExcludingSelection:
    """A row selection (audited or check rows; None: every row) without the excluded rows."""

    inner: object
    exclusion: GroupExclusion

    @property
    def rows(self) -> int | None:
        """The rows left: the inner selection's recorded rows minus its excluded ones (None when not recorded)."""
        inner = getattr(self.inner, "rows", None)
        if inner is None:
            return None
        return int(inner - self.inner.mask(self.exclusion.excluded).sum())

    def mask(self, row_ids) -> np.ndarray:
        keep = self.exclusion.mask(row_ids)
        return keep if self.inner is None else keep & self.inner.mask(row_ids)

    def describe(self) -> dict:
        inner = {} if self.inner is None else self.inner.describe()
        return {**inner, "excluded_for_groups": self.exclusion.describe()}


def _columns(dataset: DatasetSpec, rels: list[tuple[str, ...]]) -> list[str]:
    seen = dict.fromkeys(name for relation in rels for name in relation)
    return [dataset.row_key, *seen]


# Rows per batch when the night's keys are computed: the partition is streamed, never held whole (at 4e6 rows
# the whole table with its pandas copies took 5.4 GB; benchmarks/results/memory.md).
KEY_BATCH_ROWS = 262_144


def _null_columns(root, date: dt.date, dataset: DatasetSpec, columns: list[str]) -> frozenset[str]:
    """The ``columns`` holding a null in the partition, from the files' footer statistics (a column chunk
    without a null count is read to count them)."""
    from pipelines.scoring.partition_batches import partition_files

    found = set()
    for path in partition_files(root, date, dataset):
        parquet = schema.open_parquet(path)
        metadata = parquet.metadata
        for group in range(metadata.num_row_groups):
            chunks = metadata.row_group(group)
            for index in range(chunks.num_columns):
                name = chunks.column(index).path_in_schema
                if name not in columns or name in found:
                    continue
                statistics = chunks.column(index).statistics
                if statistics is not None and statistics.has_null_count:
                    nulls = statistics.null_count
                else:
                    try:
                        nulls = parquet.read_row_group(group, columns=[name]).column(name).null_count
                    except (pa.ArrowException, OSError) as exc:
                        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None
                if nulls:
                    found.add(name)
    return frozenset(found)


def _day_keys(root, date: dt.date, dataset: DatasetSpec, rels, selection=None) -> tuple[np.ndarray, list]:
    """(row ids, one key array per relation) of the partition's rows that ``selection`` keeps (None: every row),
    in the partition's order, streamed in batches of `KEY_BATCH_ROWS` rows (8 bytes a row per relation and for the
    ids are held, not the table)."""
    columns = _columns(dataset, rels)
    nulls = _null_columns(root, date, dataset, columns)
    ids, keys = [], [[] for _ in rels]
    for batch in schema.iter_partition_batches(root, date, KEY_BATCH_ROWS, columns=columns, dataset=dataset):
        table = pa.Table.from_batches([batch])
        batch_ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
        keep = None if selection is None else selection.mask(batch_ids)
        for out, found in zip(keys, group_keys(table, rels, nulls), strict=True):
            out.append(found if keep is None else found[keep])
        ids.append(batch_ids if keep is None else batch_ids[keep])
    return np.concatenate(ids), [np.concatenate(found) for found in keys]


def _rows_at(root, date: dt.date, dataset: DatasetSpec, positions: np.ndarray) -> pa.Table:
    """The partition's rows at ``positions`` (sorted, in the partition's order), every column, streamed."""
    parts, start = [], 0
    for batch in schema.iter_partition_batches(root, date, KEY_BATCH_ROWS, dataset=dataset, check_unique=False):
        end = start + batch.num_rows
        lo, hi = np.searchsorted(positions, [start, end])
        if hi > lo:
            parts.append(pa.Table.from_batches([batch]).take(pa.array(positions[lo:hi] - start)))
        start = end
    return pa.concat_tables(parts)


def _reference_keys(root, reference: ModelHandle, rels, dataset: DatasetSpec) -> tuple[list, str | None]:
    """The reference's training rows' keys on its own day, or ([], why not)."""
    from pipelines.scoring.audit_rows import training_rows

    metadata, day = reference.meta, reference.date
    if metadata.recalibration:  # the recalibrated reference: its source's training rows count
        source = metadata.recalibration["source_reference"]  # the recalibration's own record
        try:
            source_model = reference.source or resolve_model(root, source["name"],
                                                             dt.date.fromisoformat(source["date"]))
        except LabelDPInputError as exc:
            return [], f"the reference's training rows were not read: {exc}"
        return _reference_keys(root, source_model, rels, dataset)
    if not partition_dir(root, day).is_dir():
        return [], f"the reference's day {day.isoformat()} has no partition here: its training rows were not read"
    if dataset_of(root, day).fingerprint() != dataset.fingerprint():
        return [], f"the reference's day {day.isoformat()} is another dataset: its rows were not compared"
    try:
        selection = training_rows(metadata, reference.directory)
    except LabelDPInputError as exc:
        return [], f"the reference's training rows are not recorded ({exc}): not compared"
    _ids, keys = _day_keys(root, day, dataset, rels, selection)
    return keys, None


def night_exclusion(root: str | os.PathLike, date: dt.date, reference: ModelHandle,
                    diagnostic_reference: ModelHandle | None = None,
                    progress: Progress = no_progress) -> GroupExclusion:
    """The night's `GroupExclusion` (module docstring). ``reference``: the D-1 reference whose training rows
    count; ``diagnostic_reference``: the model whose probabilities the label-agreement diagnostic compares with
    (the night's reference; default ``reference``)."""
    dataset = dataset_of(root, date)
    rels = relations(dataset)
    columns = tuple(dict.fromkeys(name for relation in rels for name in relation if len(relation) == 1))
    rule = describe_rule(dataset.feature_rows, dataset.groups)
    if not rels:
        return GroupExclusion(rule, columns, np.zeros(0, np.int64), np.zeros(0, np.int64))
    ids, keys = _day_keys(root, date, dataset, rels)
    others, note = _reference_keys(root, reference, rels, dataset)
    alone_today = singleton_mask(keys)
    alone = singleton_mask(keys, others) if others else alone_today
    excluded = np.sort(ids[~alone])
    with_inputs = np.sort(ids[alone_today & ~alone])
    agreement = LabelAgreement(0, None, None)
    grouped = np.flatnonzero(~alone_today)
    if grouped.size:
        agreement = _agreement(root, _rows_at(root, date, dataset, grouped), [k[grouped] for k in keys], dataset,
                               diagnostic_reference or reference)
    progress(f"row groups ({rule}): {excluded.size} of {ids.size} rows left out ({with_inputs.size} for sharing a "
             f"group with the reference's training rows)"
             + (f"; label agreement in groups {agreement.observed:.3f} vs {agreement.expected:.3f} for independent "
                f"labels over {agreement.pairs} pair(s)" if agreement.pairs else ""))
    return GroupExclusion(rule, columns, excluded, with_inputs, agreement, note)


def _agreement(root, table: pa.Table, keys: list[np.ndarray], dataset: DatasetSpec,
               reference: ModelHandle) -> LabelAgreement:
    """The diagnostic over the day's grouped rows, with the reference's probabilities on them."""
    internal = dataset.to_internal(table)
    p_reference = reference.format.predict(reference, internal, dataset)
    labels = internal.column("label").to_numpy().astype(np.int64)
    return label_agreement(keys, labels, p_reference)


__all__ = ["ExcludingSelection", "GroupExclusion", "group_keys", "night_exclusion", "relations"]
