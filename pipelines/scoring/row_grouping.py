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
from pipelines.data.dataset_spec import DatasetSpec, dataset_of
from pipelines.data.layout import partition_dir
from pipelines.models.handle import ModelHandle, resolve_model


def relations(dataset: DatasetSpec) -> list[tuple[str, ...]]:
    """The grouping relations of a dataset: its feature vector (unless declared independent), then each declared
    group column."""
    out = [tuple(dataset.features)] if dataset.feature_rows == FEATURE_ROWS_GROUPED else []
    return out + [(name,) for name in dataset.groups]


def group_keys(table: pa.Table, columns_per_relation: list[tuple[str, ...]]) -> list[np.ndarray]:
    """One uint64 key per row and relation: pandas' stable hash of the row's values in the relation's columns (a
    missing value is a value like any other; dictionary columns hash by their text)."""
    out = []
    for columns in columns_per_relation:
        frame = pd.DataFrame({name: table.column(name).to_pandas().astype("object") for name in columns})
        out.append(pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64))
    return out


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


def _reference_keys(root, reference: ModelHandle, rels, dataset: DatasetSpec) -> tuple[list, str | None]:
    """The reference's training rows' keys on its own day, or ([], why not)."""
    from pipelines.scoring.audit_rows import training_rows

    metadata, day = reference.metadata, reference.date
    if metadata.get("recalibration"):  # the recalibrated reference: its source's training rows count
        source = metadata["recalibration"]["source_reference"]
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
    table = schema.read_partition(root, day, columns=_columns(dataset, rels), dataset=dataset)
    ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
    keep = selection.mask(ids)
    return [k[keep] for k in group_keys(table, rels)], None


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
    table = schema.read_partition(root, date, dataset=dataset)
    ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
    keys = group_keys(table, rels)
    others, note = _reference_keys(root, reference, rels, dataset)
    alone_today = singleton_mask(keys)
    alone = singleton_mask(keys, others) if others else alone_today
    excluded = np.sort(ids[~alone])
    with_inputs = np.sort(ids[alone_today & ~alone])
    agreement = LabelAgreement(0, None, None)
    grouped = np.flatnonzero(~alone_today)
    if grouped.size:
        agreement = _agreement(root, table.take(pa.array(grouped)), [k[grouped] for k in keys], dataset,
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
