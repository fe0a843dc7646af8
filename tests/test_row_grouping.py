"""The night's row groups (pipelines/scoring/row_grouping.py) computed from the partition streamed in batches
equal those of the whole partition read at once, whatever the batch size."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from auditing.game.row_groups import singleton_mask
from pipelines.data import schema, synth
from pipelines.data.dataset_spec import dataset_of
from pipelines.scoring import row_grouping

DAY = dt.date(2026, 10, 2)


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
    streamed_ids, streamed_keys = row_grouping._day_keys(root, DAY, dataset, rels)
    np.testing.assert_array_equal(streamed_ids, ids)
    for streamed, whole in zip(streamed_keys, keys, strict=True):
        np.testing.assert_array_equal(streamed, whole)

    seen = {}
    monkeypatch.setattr(row_grouping, "_reference_keys", lambda *args: ([], "no reference rows here"))
    monkeypatch.setattr(row_grouping, "_agreement",
                        lambda root, rows, keys, dataset, reference: seen.setdefault("rows", rows)
                        and row_grouping.LabelAgreement(0, None, None))
    exclusion = row_grouping.night_exclusion(root, DAY, reference=None)
    alone = singleton_mask(keys)
    np.testing.assert_array_equal(exclusion.excluded, np.sort(ids[~alone]))
    assert exclusion.excluded.size == 400  # each copy and its original
    # the diagnostic gets the grouped rows, every column, as the whole table holds them
    assert seen["rows"].equals(table.take(pa.array(np.flatnonzero(~alone))))


def test_an_integer_column_with_a_null_hashes_as_floats_in_every_slice(day_with_twins):
    dataset = dataset_of(day_with_twins, DAY)
    columns = row_grouping._columns(dataset, row_grouping.relations(dataset))
    nulls = row_grouping._null_columns(day_with_twins, DAY, dataset, columns)
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
