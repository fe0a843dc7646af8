"""The night's row groups (pipelines/scoring/row_grouping.py) computed from the partition streamed in batches and
spilled to disk by key equal those of the whole partition read at once, whatever the batch size and the number of
buckets."""

from __future__ import annotations

import datetime as dt
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from auditing.game.row_groups import label_agreement, singleton_mask
from labeldp.errors import LabelDPInputError
from pipelines.data import key_buckets, schema, synth
from pipelines.data.dataset_spec import DatasetSpec, dataset_of
from pipelines.data.day import listed_day
from pipelines.data.splits import splitmix64
from pipelines.scoring import row_grouping

DAY = dt.date(2026, 10, 2)
BEFORE = DAY - dt.timedelta(days=1)


@pytest.fixture(scope="module")
def day_with_twins(tmp_path_factory):
    """3,000 rows plus 200 copies of the first rows (same features, a new row key) at the end; I1 has no null
    except in 100 rows near the end, so most batches of I1 hold no null while the partition does."""
    root = tmp_path_factory.mktemp("grouping")
    day = synth.generate_day(DAY, rows=3000).table
    i1 = np.arange(day.num_rows, dtype=np.int64) % 97
    nulls = np.zeros(day.num_rows, dtype=bool)
    nulls[2500:2600] = True
    day = day.set_column(day.schema.get_field_index("I1"), day.schema.field("I1"), pa.array(i1, mask=nulls))
    copies = day.slice(0, 200)
    index = copies.schema.get_field_index(schema.ROW_ID)
    ids = copies.column(schema.ROW_ID).to_numpy() + 10_000_000
    copies = copies.set_column(index, copies.schema.field(index), pa.array(ids))
    schema.write_partition(root, DAY, pa.concat_tables([day, copies]), rows_per_file=1300, source="twins")
    return root


def _keys_as_before(table: pa.Table, rels) -> list[np.ndarray]:
    """The keys as the night computed them before streaming: each relation's columns of the whole table, as
    pandas objects."""
    out = []
    for columns in rels:
        frame = pd.DataFrame({name: table.column(name).to_pandas().astype("object") for name in columns})
        out.append(pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64))
    return out


def _whole_partition(root):
    """The night's keys as computed before streaming: the whole partition in one table."""
    dataset = dataset_of(root, DAY)
    table = schema.read_partition(root, DAY, dataset=dataset)
    ids = table.column(schema.ROW_ID).to_numpy().astype(np.int64)
    return table, ids, _keys_as_before(table, row_grouping.relations(dataset))


@pytest.mark.parametrize("batch_rows", [row_grouping.KEY_BATCH_ROWS, 500, 333])
def test_streamed_keys_and_exclusion_equal_the_whole_partitions(day_with_twins, monkeypatch, batch_rows):
    root = day_with_twins
    table, ids, keys = _whole_partition(root)
    monkeypatch.setattr(row_grouping, "KEY_BATCH_ROWS", batch_rows)
    dataset = dataset_of(root, DAY)
    rels = row_grouping.relations(dataset)
    streamed_ids, streamed_keys = row_grouping._day_keys(listed_day(root, DAY), dataset, rels)
    np.testing.assert_array_equal(streamed_ids, ids)
    for streamed, whole in zip(streamed_keys, keys, strict=True):
        np.testing.assert_array_equal(streamed, whole)

    seen = []
    monkeypatch.setattr(row_grouping, "_reference_rows", lambda *args: (None, "no reference rows here"))
    monkeypatch.setattr(row_grouping, "_predicted", lambda rows, dataset, reference: seen.append(rows)
                        or _predicted(rows, dataset, reference))
    exclusion = row_grouping.night_exclusion(listed_day(root, DAY), reference=None)
    alone = singleton_mask(keys)
    np.testing.assert_array_equal(exclusion.excluded, np.sort(ids[~alone]))
    assert exclusion.excluded.size == 400  # each copy and its original
    # the diagnostic gets the grouped rows, every column, as the whole table holds them
    grouped = table.take(pa.array(np.flatnonzero(~alone)))
    assert pa.concat_tables(seen).to_pydict() == grouped.to_pydict()
    assert pa.concat_tables(seen).schema == grouped.schema


def test_an_integer_column_with_a_null_hashes_as_floats_in_every_slice(day_with_twins):
    dataset = dataset_of(day_with_twins, DAY)
    columns = row_grouping._columns(dataset, row_grouping.relations(dataset))
    nulls = row_grouping._null_columns(listed_day(day_with_twins, DAY), columns)
    assert "I1" in nulls and schema.ROW_ID not in nulls
    table = pa.table({"I1": pa.array([5, 7], pa.int64())})
    as_ints = row_grouping.group_keys(table, [("I1",)])[0]
    as_floats = row_grouping.group_keys(table, [("I1",)], frozenset({"I1"}))[0]
    with_null = row_grouping.group_keys(pa.table({"I1": pa.array([5, 7, None], pa.int64())}), [("I1",)])[0]
    np.testing.assert_array_equal(as_floats, with_null[:2])
    assert not np.array_equal(as_ints, as_floats)


def test_a_float_zero_hashes_the_same_whatever_its_sign_and_whichever_comes_first():
    first = row_grouping.group_keys(pa.table({"x": pa.array([-0.0, 0.0, 1.5])}), [("x",)])[0]
    second = row_grouping.group_keys(pa.table({"x": pa.array([0.0, -0.0, 1.5])}), [("x",)])[0]
    np.testing.assert_array_equal(first, second)
    assert first[0] == first[1] != first[2]


def test_a_dictionary_with_repeated_or_null_values_keys_as_its_decoded_values():
    """Arrow allows a dictionary to repeat a value or hold a null: such a column keys as the plain column of the
    same values (the keys depend on the values only)."""
    odd = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0, None, 3], pa.int32()),
                                         pa.array(["a", "a", None, "b"]))
    plain = odd.dictionary_decode()
    for column in (odd, pa.chunked_array([odd.slice(0, 3), odd.slice(3)])):
        keys = row_grouping.group_keys(pa.table({"c": column}), [("c",)])[0]
        np.testing.assert_array_equal(keys, row_grouping.group_keys(pa.table({"c": plain}), [("c",)])[0])
        assert keys[0] == keys[1] == keys[3] and keys[2] == keys[4] != keys[5]


def test_keys_equal_pandas_objects_hashed_for_every_column_type():
    table = pa.table({
        "i64": pa.array([5, -7, 5, 2**62], pa.int64()),
        "i32": pa.array([-1, 3, -1, 0], pa.int32()),
        "u64": pa.array([2**63 + 1, 1, 2**63 + 1, 0], pa.uint64()),
        "i_null": pa.array([5, None, 5, 1], pa.int64()),
        "f64": pa.array([1.5, float("nan"), None, 2.0]),
        "f32": pa.array([0.1, 1.5, 0.1, -3.0], pa.float32()),
        "text": pa.array(["a", None, "a", "b"]),
        "dict": pa.array(["x", "y", None, "x"]).dictionary_encode(),
        "flag": pa.array([True, None, True, False]),
        "empty": pa.array(["", None, "é", ""]),
        "large": pa.array(["a", "ü", None, "a"], pa.large_string()),
        # chunks with their own dictionaries, unused and null-free entries included
        "chunked": pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([0, None]), pa.array(["q", "unused"])),
                                     pa.DictionaryArray.from_arrays(pa.array([1, 0]), pa.array(["r", "q"]))]),
    })
    rels = [(name,) for name in table.column_names] + [tuple(table.column_names)]
    for new, before in zip(row_grouping.group_keys(table, rels), _keys_as_before(table, rels), strict=True):
        np.testing.assert_array_equal(new, before)


# ------------------------------------------------------------------ spilled by key: the same result as in memory
class _Training:
    """The reference's training rows: those whose id is not a multiple of 3."""

    def mask(self, row_ids):
        return np.asarray(row_ids, dtype=np.int64) % 3 != 0


def _predicted(table, dataset, reference):
    """Stands for the reference's predictions: labels as read, a probability from the row id."""
    ids = table.column(dataset.row_key).to_numpy().astype(np.int64)
    return (table.column(dataset.label).to_numpy().astype(np.int64),
            0.02 + 0.96 * ((ids * 2654435761) % 1000) / 1000)


def _with_new_ids(table: pa.Table, key: str, start: int) -> pa.Table:
    index = table.schema.get_field_index(key)
    ids = np.arange(start, start + table.num_rows, dtype=np.int64)
    return table.set_column(index, table.schema.field(index), pa.array(ids))


@pytest.fixture(scope="module")
def criteo_days(tmp_path_factory):
    """The day before (the reference's): 2,000 synthetic rows. Day D: 2,500 rows (I1 with nulls in 100 of them,
    so that most batches hold none), then copies with new ids of 150 of its own rows, of 40 rows of the day
    before and of 30 of its own rows with a null in I1."""
    root = tmp_path_factory.mktemp("criteo-days")
    synth.write_synthetic_day(root, BEFORE, rows=2000, rows_per_file=700)
    before = schema.read_partition(root, BEFORE)
    day = synth.generate_day(DAY, rows=2500).table
    i1 = np.arange(day.num_rows, dtype=np.int64) % 97
    nulls = np.zeros(day.num_rows, dtype=bool)
    nulls[2000:2100] = True
    day = day.set_column(day.schema.get_field_index("I1"), day.schema.field("I1"), pa.array(i1, mask=nulls))
    parts = [day, _with_new_ids(day.slice(0, 150), schema.ROW_ID, 10**9), _with_new_ids(
        before.slice(0, 40), schema.ROW_ID, 2 * 10**9), _with_new_ids(day.slice(2000, 30), schema.ROW_ID, 3 * 10**9)]
    schema.write_partition(root, DAY, pa.concat_tables(parts), rows_per_file=900, source="criteo days")
    return root


SPEC = DatasetSpec(name="grouped-clicks", label="clicked", classes=2, row_key="impression_id",
                   numeric=("price", "zero"), categorical=("country",), carry=("user", "device"),
                   numeric_type="float64", groups=("user", "device"), source="test spec")


def _grouped_table(seed: int, rows: int, first_id: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    price = np.round(rng.lognormal(3.0, 1.0, rows), 1)
    price[rng.random(rows) < 0.1] = np.nan
    zero = rng.choice(np.array([0.0, -0.0, 1.0, 2.5]), rows)
    country = pa.array(rng.choice(np.array(["fr", "jp", "br", "ke"]), rows).tolist(), mask=rng.random(rows) < 0.05)
    ids = np.arange(first_id, first_id + rows, dtype=np.int64)
    user = np.where(rng.random(rows) < 0.06, rng.integers(0, 60, rows), ids + 10**6)  # some users share
    device = pa.array([f"d{v}" for v in rng.integers(0, 8 * rows, rows)], mask=rng.random(rows) < 0.02)
    return pa.table({"impression_id": ids, "clicked": (rng.random(rows) < 0.3).astype(np.int8), "price": price,
                     "zero": zero, "country": country, "user": [f"u{v}" for v in user], "device": device})


@pytest.fixture(scope="module")
def grouped_days(tmp_path_factory):
    """Three relations (the feature vector, user, device): the day before, 1,500 rows; day D, 1,800 rows, then
    copies with new ids of 60 of its own rows with each float zero's sign flipped, and of 40 rows of the day
    before. Users and devices repeat within each day and across the two."""
    root = tmp_path_factory.mktemp("grouped-days")
    before, day = _grouped_table(1, 1500, 0), _grouped_table(2, 1800, 5000)
    schema.write_partition(root, BEFORE, before, rows_per_file=600, dataset=SPEC)
    flipped = day.slice(0, 60)
    flipped = flipped.set_column(flipped.schema.get_field_index("zero"), "zero",
                                 pa.array(-flipped.column("zero").to_numpy()))
    parts = [day, _with_new_ids(flipped, "impression_id", 10**9), _with_new_ids(before.slice(0, 40), "impression_id",
                                                                                2 * 10**9)]
    schema.write_partition(root, DAY, pa.concat_tables(parts), rows_per_file=700, dataset=SPEC)
    return root


TRAINING = _Training()


def _as_before(root, date=DAY, selection=TRAINING) -> row_grouping.GroupExclusion:
    """The night's result computed as before the spill: every row's keys in memory, `singleton_mask` over the
    whole arrays, the diagnostic over the grouped rows with their keys."""
    dataset = dataset_of(root, date)
    rels = row_grouping.relations(dataset)
    columns = row_grouping._columns(dataset, rels)
    nulls = row_grouping._null_columns(listed_day(root, date), columns)
    if selection is not None:  # one set of null columns for both days
        nulls |= row_grouping._null_columns(listed_day(root, BEFORE), columns)
    ids, keys = row_grouping._day_keys(listed_day(root, date), dataset, rels, nulls=nulls)
    others = row_grouping._day_keys(listed_day(root, BEFORE), dataset, rels, selection, nulls)[1] if selection is not None else []
    alone_today = singleton_mask(keys)
    alone = singleton_mask(keys, others) if others else alone_today
    grouped = np.flatnonzero(~alone_today)
    rows = schema.read_partition(root, date, dataset=dataset).take(pa.array(grouped))
    agreement = label_agreement([k[grouped] for k in keys], *_predicted(rows, dataset, None))
    columns = tuple(name for relation in rels if len(relation) == 1 for name in relation)
    return row_grouping.GroupExclusion(row_grouping.describe_rule(dataset.feature_rows, dataset.groups), columns,
                                       np.sort(ids[~alone]), np.sort(ids[alone_today & ~alone]), agreement)


@pytest.fixture
def night(monkeypatch, tmp_path):
    """night_exclusion with the reference's training rows `_Training` of the day before, `_predicted` for its
    probabilities and its spill under tmp_path; returns (result, progress lines)."""
    monkeypatch.setattr(row_grouping, "_predicted", _predicted)
    monkeypatch.setattr(row_grouping, "SPILL_PARENT", str(tmp_path))
    monkeypatch.setattr(key_buckets, "_FLUSH_ROWS", 500)  # several flushes per spill

    def run(root, reference=(BEFORE, TRAINING), note=None):
        monkeypatch.setattr(row_grouping, "_reference_rows", lambda *args: (reference, note))
        lines = []
        result = row_grouping.night_exclusion(listed_day(root, DAY), reference=None, progress=lines.append)
        assert list(tmp_path.iterdir()) == []  # the spill is gone
        return result, lines
    return run


@pytest.mark.parametrize(("bucket_rows", "batch_rows"), [(row_grouping.GROUP_BUCKET_ROWS, 262_144), (200, 500),
                                                        (97, 333)])
@pytest.mark.parametrize("days", ["criteo_days", "grouped_days"])
def test_spilled_by_key_equals_the_whole_arrays(request, night, monkeypatch, days, bucket_rows, batch_rows):
    root = request.getfixturevalue(days)
    monkeypatch.setattr(row_grouping, "GROUP_BUCKET_ROWS", bucket_rows)
    monkeypatch.setattr(row_grouping, "KEY_BATCH_ROWS", batch_rows)
    result, lines = night(root)
    expected = _as_before(root)
    np.testing.assert_array_equal(result.excluded, expected.excluded)
    np.testing.assert_array_equal(result.with_inputs, expected.with_inputs)
    assert result.excluded.dtype == result.with_inputs.dtype == np.int64
    assert result.agreement == expected.agreement and result.note is None
    assert result.describe() == expected.describe() and result.rule == expected.rule
    # the cases are there: rows grouped within the day, rows alone today but sharing with the reference's rows
    assert result.agreement.pairs > 50 and result.with_inputs.size >= 10
    assert result.excluded.size > result.with_inputs.size + 100
    spilled = [line for line in lines if "buckets" in line]
    assert bool(spilled) == (bucket_rows < 1000)  # progress now and then on a day of several buckets
    assert len(lines) < 60


def test_the_zeros_sign_and_the_int_nulls_are_grouped_as_values(criteo_days, grouped_days, night, monkeypatch):
    monkeypatch.setattr(row_grouping, "GROUP_BUCKET_ROWS", 100)
    # the copies whose zeros changed sign are grouped with their originals (the feature vector is the same)
    result, _ = night(grouped_days)
    ids = np.arange(5000, 5060)
    assert row_grouping.in_sorted(ids.view(np.uint64), result.excluded.view(np.uint64)).all()
    # the copies of rows with a null I1 are grouped with them although no other batch holds a null
    monkeypatch.setattr(row_grouping, "KEY_BATCH_ROWS", 100)
    result, _ = night(criteo_days)
    copies = np.arange(3 * 10**9, 3 * 10**9 + 30)
    assert row_grouping.in_sorted(copies.view(np.uint64), result.excluded.view(np.uint64)).all()


def test_a_copy_of_a_reference_row_is_found_when_only_the_reference_day_has_a_null_in_its_column(
        tmp_path_factory, night, monkeypatch):
    """I2 holds a null on the day before only: keys of both days are computed with the same null columns, so the
    copies on day D of the reference's training rows are found (with their own day's null columns they hashed 5
    as 5 on D and as 5.0 on the day before, and none was)."""
    root = tmp_path_factory.mktemp("null-on-one-day")
    before = synth.generate_day(BEFORE, rows=1000).table
    index = before.schema.get_field_index("I2")
    nulls = np.zeros(before.num_rows, dtype=bool)
    nulls[500:510] = True
    values = before.column("I2").to_numpy()
    before = before.set_column(index, before.schema.field(index), pa.array(values, mask=nulls))
    schema.write_partition(root, BEFORE, before, rows_per_file=400, source="before")
    day = synth.generate_day(DAY, rows=1200).table
    copies = _with_new_ids(before.slice(0, 60), schema.ROW_ID, 2 * 10**9)
    schema.write_partition(root, DAY, pa.concat_tables([day, copies]), rows_per_file=500, source="day")
    assert schema.read_partition(root, DAY).column("I2").null_count == 0
    monkeypatch.setattr(row_grouping, "GROUP_BUCKET_ROWS", 300)
    result, _ = night(root)
    copied = np.arange(2 * 10**9, 2 * 10**9 + 60)
    trained = copied[np.arange(60) % 3 != 0]  # `_Training`: the rows of the day before whose id is not a multiple of 3
    assert trained.size == 40
    np.testing.assert_array_equal(np.intersect1d(result.with_inputs, copied), trained)
    np.testing.assert_array_equal(np.intersect1d(result.excluded, copied), trained)


def test_without_the_reference_rows_the_note_says_why(criteo_days, night, monkeypatch):
    monkeypatch.setattr(row_grouping, "GROUP_BUCKET_ROWS", 300)
    result, _ = night(criteo_days, reference=None, note="no reference rows here")
    expected = _as_before(criteo_days, selection=None)
    assert result.with_inputs.size == 0 and result.note == "no reference rows here"
    np.testing.assert_array_equal(result.excluded, expected.excluded)
    assert result.agreement == expected.agreement


def test_the_agreement_is_exact_up_to_the_cap_then_over_a_sample_of_whole_groups(grouped_days, night,
                                                                                   monkeypatch):
    expected = _as_before(grouped_days)
    dataset = dataset_of(grouped_days, DAY)
    _ids, keys = row_grouping._day_keys(listed_day(grouped_days, DAY), dataset, row_grouping.relations(dataset))
    grouped = ~singleton_mask(keys)
    monkeypatch.setattr(row_grouping, "AGREEMENT_MAX_ROWS", int(grouped.sum()))
    assert night(grouped_days)[0].agreement == expected.agreement
    cap = int(grouped.sum()) // 3
    monkeypatch.setattr(row_grouping, "AGREEMENT_MAX_ROWS", cap)
    results = []
    for bucket_rows in (row_grouping.GROUP_BUCKET_ROWS, 150, 31):
        monkeypatch.setattr(row_grouping, "GROUP_BUCKET_ROWS", bucket_rows)
        results.append(night(grouped_days)[0])
    first = results[0]
    for other in results[1:]:  # the sample is the same whatever the buckets
        assert other.agreement == first.agreement and other.note == first.note
    np.testing.assert_array_equal(first.excluded, expected.excluded)
    assert "sample" in first.note and f"of its {grouped.sum():,} grouped rows" in first.note
    level = int(first.note.split("1/")[1].split(" ")[0]).bit_length() - 1
    assert level >= 1

    # the sample, computed here: per relation, its groups whose hash is below 2**32 >> level
    table = schema.read_partition(grouped_days, DAY, dataset=dataset)
    labels, p = _predicted(table, dataset, None)

    def sampled(level):
        inside = []
        for relation in keys:
            hashes = splitmix64(relation ^ row_grouping._SAMPLE_SALT) >> np.uint64(32)
            inside.append(~singleton_mask([relation]) & (hashes < np.uint64((1 << 32) >> level)))
        return inside

    inside = sampled(level)
    assert sum(int(m.sum()) for m in inside) <= cap < sum(int(m.sum()) for m in sampled(level - 1))
    parts = [label_agreement([relation[m]], labels[m], p[m]) for relation, m in zip(keys, inside, strict=True)]
    pairs = sum(part.pairs for part in parts)
    assert first.agreement.pairs == pairs > 0
    assert first.agreement.observed == pytest.approx(sum(part.observed * part.pairs for part in parts if part.pairs)
                                                     / pairs, rel=1e-12)
    assert first.agreement.expected == pytest.approx(sum(part.expected * part.pairs for part in parts if part.pairs)
                                                     / pairs, rel=1e-12)
    record = first.record(None)
    assert "sample" in record.rule


def test_a_repeated_row_id_is_refused_as_the_partition_read_refuses_it(criteo_days, night, monkeypatch, tmp_path):
    root = tmp_path / "repeated"
    shutil.copytree(criteo_days, root)
    files = sorted((root / "partitions" / f"date={DAY.isoformat()}").glob("part-*.parquet"))
    shutil.copy(files[0], files[0].with_name("part-99999.parquet"))  # its rows twice
    with pytest.raises(LabelDPInputError) as before:
        next(schema.iter_partition_batches(listed_day(root, DAY), 100))
    monkeypatch.setattr(row_grouping, "GROUP_BUCKET_ROWS", 200)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr(row_grouping, "SPILL_PARENT", str(spill))
    monkeypatch.setattr(row_grouping, "_reference_rows", lambda *args: (None, None))
    with pytest.raises(LabelDPInputError) as now:
        row_grouping.night_exclusion(listed_day(root, DAY), reference=None)
    assert str(now.value) == str(before.value) and "repeat an earlier" in str(now.value)
    assert list(spill.iterdir()) == []  # removed after the error too


def test_the_sample_does_not_depend_on_the_order_groups_come_in():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**63, 3000).astype(np.uint64)
    sizes = rng.integers(2, 6, keys.size)
    rows = np.repeat(keys, sizes)
    positions = np.arange(rows.size, dtype=np.int64)
    chosen = set()
    for chunks, order_seed in ((1, 0), (7, 1), (40, 2)):
        order = np.random.default_rng(order_seed).permutation(keys.size)
        sample = row_grouping._Sample(2, 2000)
        for part in np.array_split(order, chunks):
            picked = np.isin(rows, keys[part])
            sample.add(0, rows[picked], positions[picked])
            sample.add(1, rows[picked][::-1].copy(), positions[picked][::-1].copy())
        level, members = sample.choose(1500)
        chosen.add((level, tuple(members[0].tolist()), tuple(members[1].tolist())))
        assert sum(m.size for m in members) <= 1500
    assert len(chosen) == 1
