"""The night's row groups: which rows of day D may enter the game and the capacity check (the rule and the
diagnostic are `auditing.game.row_groups`; the argument is docs/soundness.md section 9).

A group key is a 64-bit hash of a row's values in one relation's columns: the whole feature vector (unless the
dataset declares feature-identical rows independent, ``feature_rows: independent``) and each declared group
column (``groups``: a user, a device, a session). A row of day D is kept only when, in every relation, no other
row shares its key among the rows whose labels the night's inputs used: every row of day D (the targets'
training rows, the reference's correction and the check rows all lie there) and the reference's training rows
on the reference's own day. Keys and features only decide it, never labels.

`night_exclusion` computes it once per night, in memory that does not grow with the day (the keys are spilled
to disk by key and compared one bucket at a time); the Beam job drops the excluded rows from the audited and the
check rows (`ScoringRequest.excluded_rows`), and every result records how many of its rows were left out and
why, with the label-agreement diagnostic of the day's groups.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from contextlib import ExitStack
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
    repeated,
)
from labeldp.errors import LabelDPInputError
from labeldp.progress import Progress, no_progress
from pipelines.data import schema
from pipelines.data.categories import compact_dictionaries, used_categories
from pipelines.data.dataset_spec import DatasetSpec, dataset_of
from pipelines.data.day import Day, listed_day
from pipelines.data.key_buckets import KeyBuckets, buckets_for
from pipelines.data.layout import partition_listing
from pipelines.data.splits import splitmix64
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
    label = "excluded_for_groups"  # its key in an audited selection's description (`ExcludingSelection`)

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
    """A row selection (audited or check rows; None: every row) without the rows an exclusion leaves out: a
    `GroupExclusion`, or the reference's correction rows (`pipelines.reference.recalibration.CorrectionRows`). An
    exclusion has ``mask`` (True for the rows that may be used), ``label`` (its key in ``describe``) and
    ``excluded`` (its sorted row ids, or None when it is a keyed rule without a list)."""

    inner: object
    exclusion: object

    @property
    def model(self) -> str | None:
        return getattr(self.inner, "model", None)

    @property
    def rows(self) -> int | None:
        """The rows left: the inner selection's recorded rows minus its excluded ones (None when not recorded, or
        when the exclusion is a keyed rule whose count among the inner rows is known only by reading the day)."""
        inner = getattr(self.inner, "rows", None)
        if inner is None or self.exclusion.excluded is None:
            return None
        return int(inner - self.inner.mask(self.exclusion.excluded).sum())

    def mask(self, row_ids) -> np.ndarray:
        keep = self.exclusion.mask(row_ids)
        return keep if self.inner is None else keep & self.inner.mask(row_ids)

    def describe(self) -> dict:
        inner = {} if self.inner is None else self.inner.describe()
        return {**inner, self.exclusion.label: self.exclusion.describe()}


def _columns(dataset: DatasetSpec, rels: list[tuple[str, ...]]) -> list[str]:
    seen = dict.fromkeys(name for relation in rels for name in relation)
    return [dataset.row_key, *seen]


# Rows per batch when the night's keys are computed: the partition is streamed, never held whole (at 4e6 rows
# the whole table with its pandas copies took 5.4 GB; benchmarks/results/memory.md).
KEY_BATCH_ROWS = 262_144


def _null_columns(day: Day, columns: list[str]) -> frozenset[str]:
    """The ``columns`` holding a null in ``day``'s partition, from the files' footer statistics (a column chunk
    without a null count is read to count them)."""
    found = set()
    for path in day.files:
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


def _day_keys(day: Day, dataset: DatasetSpec, rels, selection=None,
              nulls: frozenset[str] | None = None) -> tuple[np.ndarray, list]:
    """(row ids, one key array per relation) of ``day``'s rows that ``selection`` keeps (None: every row), read
    with ``dataset`` (the night's),
    in the partition's order, streamed in batches of `KEY_BATCH_ROWS` rows (8 bytes a row per relation and for the
    ids are held, not the table); ``nulls``: the null columns of the keys (default: this day's). The night spills
    the keys instead (`night_exclusion`); this in-memory form is what benchmarks/bench_row_groups.py times and the
    tests compare the spilled result with."""
    columns = _columns(dataset, rels)
    if nulls is None:
        nulls = _null_columns(day, columns)
    ids, keys = [], [[] for _ in rels]
    for batch in schema.iter_partition_batches(day, KEY_BATCH_ROWS, columns=columns,
                                               dataset=dataset):
        table = pa.Table.from_batches([batch])
        batch_ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
        keep = None if selection is None else selection.mask(batch_ids)
        for out, found in zip(keys, group_keys(table, rels, nulls), strict=True):
            out.append(found if keep is None else found[keep])
        ids.append(batch_ids if keep is None else batch_ids[keep])
    return np.concatenate(ids), [np.concatenate(found) for found in keys]


def _reference_rows(root, reference: ModelHandle, dataset: DatasetSpec) -> tuple[tuple | None, str | None]:
    """The reference's training rows as (its day, their selection), or (None, why they are not compared)."""
    from pipelines.scoring.audit_rows import training_rows

    metadata, day = reference.meta, reference.date
    if metadata.recalibration:  # the recalibrated reference: its source's training rows count
        source = metadata.recalibration["source_reference"]  # the recalibration's own record
        try:
            source_model = reference.source or resolve_model(root, source["name"],
                                                             dt.date.fromisoformat(source["date"]))
        except LabelDPInputError as exc:
            return None, f"the reference's training rows were not read: {exc}"
        return _reference_rows(root, source_model, dataset)
    if not partition_listing(root, day).exists:
        return None, f"the reference's day {day.isoformat()} has no partition here: its training rows were not read"
    if dataset_of(root, day).fingerprint() != dataset.fingerprint():
        return None, f"the reference's day {day.isoformat()} is another dataset: its rows were not compared"
    try:
        selection = training_rows(metadata, reference.directory)
    except LabelDPInputError as exc:
        return None, f"the reference's training rows are not recorded ({exc}): not compared"
    return (day, selection), None


# Rows per spill bucket (`pipelines.data.key_buckets`), the day's and the reference's together: the night holds
# one bucket of one relation at a time. About what a 1e6-row day and its reference's day make, so that no bucket of
# a larger day costs more to compare than a 1e6-row day's whole comparison.
GROUP_BUCKET_ROWS = 2_000_000
# Where the spill goes (None: the system's temporary directory, $TMPDIR); removed when the night's grouping ends.
SPILL_PARENT: str | None = None
# The label-agreement diagnostic reads its rows back and predicts on them: above this many grouped rows it is
# computed over a sample of whole groups (`_Sample`), so its cost does not grow with the day.
AGREEMENT_MAX_ROWS = 1_000_000
_SAMPLE_SALT = np.uint64(0x6A09E667F3BCC908)  # a group's sampling hash is unrelated to its spill bucket


def _tenths(progress: Progress, total: int, what: Callable[[int], str]) -> Callable[[int], None]:
    """A counter that reports (``what(done)``) each time ``done`` passes another tenth of ``total``."""
    state = {"next": 1}

    def tick(done: int) -> None:
        if total and done * 10 >= state["next"] * total:
            while done * 10 >= state["next"] * total:
                state["next"] += 1
            progress(what(done))
    return tick


def _spill_day(day: Day, dataset: DatasetSpec, rels, spills: list[KeyBuckets], nulls: frozenset[str],
               selection=None, tick=None) -> None:
    """Streams ``day``'s partition (read with ``dataset``, the night's) once in batches of `KEY_BATCH_ROWS` rows:
    for the rows ``selection`` keeps (None: every row), one key per relation to ``spills`` (computed with the null
    columns ``nulls``, `group_keys`), with the row's id and position in the partition's order when the spill has
    those columns."""
    columns = _columns(dataset, rels)
    start = 0
    for batch in schema.iter_partition_batches(day, KEY_BATCH_ROWS, columns=columns,
                                               dataset=dataset):
        table = pa.Table.from_batches([batch])
        batch_ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
        positions = np.arange(start, start + batch_ids.size, dtype=np.int64)
        start += batch_ids.size
        if selection is not None:
            keep = selection.mask(batch_ids)
            if not keep.any():
                continue
            table, batch_ids, positions = table.filter(pa.array(keep)), batch_ids[keep], positions[keep]
        for spill, keys in zip(spills, group_keys(table, rels, nulls), strict=True):
            if "row_id" in spill.columns:
                spill.add(key=keys, row_id=batch_ids, position=positions)
            else:
                spill.add(key=keys)
        if tick is not None:
            tick(start)


class _Sample:
    """The grouped rows' positions, per relation, kept for the label-agreement diagnostic with their group's
    sampling hash (32 bits). A group is kept while its hash is below ``2**32 >> level``; the level goes up while
    more than ``limit`` positions are kept, so what is kept stays bounded. Every group is kept until then, and
    the level `choose` settles on depends on the day's groups only, not on the order they came in: a level is
    left only once the groups seen so far under it hold more than ``limit`` rows."""

    def __init__(self, relations: int, limit: int):
        self.limit, self.level, self.kept = limit, 0, 0
        self.positions = [[] for _ in range(relations)]
        self.hashes = [[] for _ in range(relations)]

    def add(self, relation: int, keys: np.ndarray, positions: np.ndarray) -> None:
        hashes = (splitmix64(keys ^ _SAMPLE_SALT) >> np.uint64(32)).astype(np.uint32)
        keep = _below(hashes, self.level)
        self.positions[relation].append(positions[keep])
        self.hashes[relation].append(hashes[keep])
        self.kept += int(keep.sum())
        while self.kept > self.limit:
            self.level += 1
            self.kept = 0
            for relation in range(len(self.positions)):
                positions, hashes = self._merged(relation)
                keep = _below(hashes, self.level)
                self.positions[relation], self.hashes[relation] = [positions[keep]], [hashes[keep]]
                self.kept += int(keep.sum())

    def _merged(self, relation: int) -> tuple[np.ndarray, np.ndarray]:
        return (np.concatenate(self.positions[relation] or [np.zeros(0, np.int64)]),
                np.concatenate(self.hashes[relation] or [np.zeros(0, np.uint32)]))

    def every(self) -> np.ndarray:
        """The sorted positions of every grouped row (while none was dropped, level 0)."""
        if self.level:
            raise AssertionError("grouped rows were dropped from the sample")
        return np.unique(np.concatenate([self._merged(r)[0] for r in range(len(self.positions))]))

    def choose(self, rows: int) -> tuple[int, list[np.ndarray]]:
        """The lowest level (at least the present one) whose groups hold at most ``rows`` rows (counted once per
        relation), and per relation the sorted positions of the rows of its groups kept at that level."""
        merged = [self._merged(r) for r in range(len(self.positions))]
        level = self.level
        while sum(int(_below(hashes, level).sum()) for _, hashes in merged) > rows:
            level += 1
        return level, [np.sort(positions[_below(hashes, level)]) for positions, hashes in merged]


def _below(hashes: np.ndarray, level: int) -> np.ndarray:
    return hashes.astype(np.uint64) < np.uint64((1 << 32) >> level)


def night_exclusion(day: Day, reference: ModelHandle,
                    diagnostic_reference: ModelHandle | None = None,
                    progress: Progress = no_progress) -> GroupExclusion:
    """The night's `GroupExclusion` (module docstring). ``reference``: the D-1 reference whose training rows
    count; ``diagnostic_reference``: the model whose probabilities the label-agreement diagnostic compares with
    (the night's reference; default ``reference``).

    Memory does not grow with the day: day D, then the reference's training rows on their day, are streamed once
    and each row's key per relation spilled to disk by key (`KeyBuckets`, about `GROUP_BUCKET_ROWS` rows a
    bucket); each bucket is then compared alone, since rows sharing a key share a bucket. What is held is one
    bucket, the rows left out (their ids: the result), and at most `AGREEMENT_MAX_ROWS` grouped rows read back
    for the diagnostic (above that, a sample of whole groups, said in the note). ``day``: the night's handle; the
    reference's training rows are read under its data root."""
    root, date, dataset = day.root, day.date, day.dataset
    rels = relations(dataset)
    columns = tuple(dict.fromkeys(name for relation in rels for name in relation if len(relation) == 1))
    rule = describe_rule(dataset.feature_rows, dataset.groups)
    if not rels:
        return GroupExclusion(rule, columns, np.zeros(0, np.int64), np.zeros(0, np.int64))
    others, note = _reference_rows(root, reference, dataset)
    other_day = None if others is None else listed_day(root, others[0])
    day_rows = day.rows
    other_rows = 0 if other_day is None else other_day.rows
    buckets = buckets_for(day_rows + other_rows, GROUP_BUCKET_ROWS)
    if buckets > 1:
        progress(f"row groups: {day_rows:,} rows of {date.isoformat()}"
                 + (f" and the reference's training rows among {other_rows:,} of {others[0].isoformat()}"
                    if others else "") + f" spilled to disk in {buckets} buckets per relation")
    sample = _Sample(len(rels), len(rels) * AGREEMENT_MAX_ROWS)
    with ExitStack() as stack:
        def spill(columns_: dict) -> KeyBuckets:
            return stack.enter_context(KeyBuckets(buckets, columns_, parent=SPILL_PARENT))

        spilled = [spill({"key": np.uint64, "row_id": np.int64, "position": np.int64}) for _ in rels]
        tick = _tenths(progress, day_rows, lambda done: f"row groups: {done:,} of {day_rows:,} rows of "
                                                        f"{date.isoformat()} read") if buckets > 1 else None
        # One set of null columns for both days: an integer column with a null on one day only would otherwise
        # hash 5 there as 5.0 and 5 on the other, and a copy of a reference training row would not be found.
        read = _columns(dataset, rels)
        nulls = _null_columns(day, read)
        if other_day is not None:
            nulls |= _null_columns(other_day, read)
        _spill_day(day, dataset, rels, spilled, nulls, tick=tick)
        other = [None] * len(rels)
        if others is not None:
            other = [spill({"key": np.uint64}) for _ in rels]
            tick = _tenths(progress, other_rows, lambda done: f"row groups: {done:,} of {other_rows:,} rows of "
                                                              f"{others[0].isoformat()} read") if buckets > 1 else None
            _spill_day(other_day, dataset, rels, other, nulls, selection=others[1], tick=tick)
        pa.default_memory_pool().release_unused()  # the batches' buffers, before the buckets are compared
        grouped, shared = _compare(spilled, other, sample, progress if buckets > 1 else None)
    excluded = np.union1d(grouped, shared)
    with_inputs = np.setdiff1d(shared, grouped, assume_unique=True)
    agreement, sampled = LabelAgreement(0, None, None), None
    diagnostic = diagnostic_reference or reference
    if grouped.size and grouped.size <= AGREEMENT_MAX_ROWS:
        agreement = label_agreement(*_read_back(day, sample.every(), rels, nulls, diagnostic))
    elif grouped.size:
        level, members = sample.choose(AGREEMENT_MAX_ROWS)
        positions = np.unique(np.concatenate(members))
        if positions.size:
            agreement = _sampled_agreement(*_read_back(day, positions, rels, nulls, diagnostic),
                                           positions, members)
        sampled = (f"label agreement over a sample of the day's groups: {positions.size:,} of its {grouped.size:,} "
                   f"grouped rows (the groups whose key hash falls in 1/{2 ** level} of the range; at most "
                   f"{AGREEMENT_MAX_ROWS:,} rows are read back)")
        note = "; ".join(part for part in (note, sampled) if part)
    progress(f"row groups ({rule}): {excluded.size} of {day_rows} rows left out ({with_inputs.size} for sharing a "
             f"group with the reference's training rows)"
             + (f"; label agreement in groups {agreement.observed:.3f} vs {agreement.expected:.3f} for independent "
                f"labels over {agreement.pairs} pair(s)" if agreement.pairs else "")
             + (f" ({sampled})" if sampled else ""))
    return GroupExclusion(rule, columns, excluded, with_inputs, agreement, note)


def _compare(day: list[KeyBuckets], other: list, sample: _Sample, progress) -> tuple[np.ndarray, np.ndarray]:
    """Per relation and bucket, the day's rows sharing their key with another of the day's rows (their positions
    and keys go to ``sample``) or with a row of ``other`` (the reference's training rows; None: none). Returns
    the sorted ids of the rows sharing a key with another of the day's rows in some relation (``grouped``),
    and of those sharing one with the reference's rows (``shared``)."""
    grouped, shared = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for relation, (rows, others) in enumerate(zip(day, other, strict=True)):
        tick = None if progress is None else _tenths(
            progress, rows.buckets, lambda done, r=relation, of=rows.buckets: f"row groups: relation {r + 1} of "
                                                                             f"{len(day)}, {done} of {of} buckets compared")
        parts = iter(others) if others is not None else None
        for index, bucket in enumerate(rows):
            keys = bucket["key"]
            together = in_sorted(keys, repeated(keys))
            if together.any():
                grouped.append(bucket["row_id"][together])
                sample.add(relation, keys[together], bucket["position"][together])
            if parts is not None:
                theirs = next(parts)["key"]
                if theirs.size:
                    with_them = in_sorted(keys, np.unique(theirs))
                    shared.append(bucket["row_id"][with_them])
            if tick is not None:
                tick(index + 1)
    return np.unique(np.concatenate(grouped)), np.unique(np.concatenate(shared))


def _rows_at(day: Day, positions: np.ndarray):
    """``day``'s rows at ``positions`` (sorted, in the partition's order), every column, streamed: one table per
    batch holding some of them."""
    start = 0
    for batch in schema.iter_partition_batches(day, KEY_BATCH_ROWS, dataset=day.dataset,
                                               check_unique=False):
        end = start + batch.num_rows
        lo, hi = np.searchsorted(positions, [start, end])
        if hi > lo:
            yield pa.Table.from_batches([batch]).take(pa.array(positions[lo:hi] - start))
        start = end


def _read_back(day: Day, positions: np.ndarray, rels, nulls: frozenset[str],
               reference: ModelHandle) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """For ``day``'s rows at ``positions`` (sorted), in the partition's order: their keys per relation (computed
    again with the day's null columns, so equal to the spilled ones), labels and the reference's probabilities. The
    rows are read back in batches and predicted in chunks of about `KEY_BATCH_ROWS` rows; only these arrays are
    kept."""
    keys, labels, probabilities = [[] for _ in rels], [], []

    def chunk(parts: list[pa.Table]) -> None:
        table = pa.concat_tables(parts)
        for out, found in zip(keys, group_keys(table, rels, nulls), strict=True):
            out.append(found)
        found_labels, found_probabilities = _predicted(table, day.dataset, reference)
        labels.append(found_labels)
        probabilities.append(found_probabilities)

    pending, rows = [], 0
    for part in _rows_at(day, positions):
        pending.append(compact_dictionaries(part))  # not the batch's whole dictionaries
        rows += part.num_rows
        if rows >= KEY_BATCH_ROWS:
            chunk(pending)
            pending, rows = [], 0
    if pending:
        chunk(pending)
    return [np.concatenate(found) for found in keys], np.concatenate(labels), np.concatenate(probabilities)


def _predicted(table: pa.Table, dataset: DatasetSpec, reference: ModelHandle) -> tuple[np.ndarray, np.ndarray]:
    """The rows' labels and the reference's probabilities on them."""
    internal = dataset.to_internal(table)
    p_reference = reference.format.predict(reference, internal, dataset)
    return internal.column("label").to_numpy().astype(np.int64), np.asarray(p_reference)


def _sampled_agreement(keys: list[np.ndarray], labels: np.ndarray, p_reference: np.ndarray, positions: np.ndarray,
                       members: list[np.ndarray]) -> LabelAgreement:
    """The diagnostic over sampled groups: the rows at ``positions`` (sorted), of which ``members`` holds per
    relation the positions of its sampled groups' rows; each relation counts the pairs of its own groups only."""
    pairs = agree = expected = 0.0
    for relation, rows in zip(keys, members, strict=True):
        inside = np.isin(positions, rows, assume_unique=True)
        part = label_agreement([relation[inside]], labels[inside], p_reference[inside])
        if part.pairs:
            pairs += part.pairs
            agree += part.observed * part.pairs
            expected += part.expected * part.pairs
    if not pairs:
        return LabelAgreement(0, None, None)
    return LabelAgreement(int(pairs), agree / pairs, expected / pairs)


__all__ = ["ExcludingSelection", "GroupExclusion", "group_keys", "night_exclusion", "relations"]
