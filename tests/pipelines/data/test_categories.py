"""pipelines.data.categories.compact_dictionaries: only used entries stay; values, nulls and chunks unchanged."""

import numpy as np
import pyarrow as pa

from pipelines.data.categories import compact_dictionaries


def _dict_chunk(indices, dictionary):
    return pa.DictionaryArray.from_arrays(pa.array(indices, type=pa.int32()), pa.array(dictionary))


def test_unused_entries_dropped_values_kept():
    big = [f"v{i}" for i in range(1000)]
    column = pa.chunked_array([_dict_chunk([5, None, 999, 5], big), _dict_chunk([0, 1], ["a", "b"])])
    table = pa.table({"c": column, "n": pa.chunked_array([[1, 2, 3, 4], [5, 6]])})
    out = compact_dictionaries(table)
    assert out.schema == table.schema
    assert out.column("c").num_chunks == 2
    assert [len(chunk.dictionary) for chunk in out.column("c").chunks] == [2, 2]
    assert out.column("c").to_pylist() == ["v5", None, "v999", "v5", "a", "b"]
    assert out.column("n").to_pylist() == [1, 2, 3, 4, 5, 6]
    assert out.nbytes < table.nbytes / 5


def test_all_null_chunk_and_empty_table():
    column = pa.chunked_array([_dict_chunk([None, None], ["x", "y"])])
    out = compact_dictionaries(pa.table({"c": column}))
    assert out.column("c").to_pylist() == [None, None]
    assert len(out.column("c").chunks[0].dictionary) == 0
    empty = pa.table({"c": pa.chunked_array([], type=pa.dictionary(pa.int32(), pa.string()))})
    assert compact_dictionaries(empty).num_rows == 0


def test_rows_taken_from_a_batch_keep_only_their_entries():
    words = pa.array([f"w{i}" for i in range(1000)])
    table = pa.table({"c": pa.DictionaryArray.from_arrays(pa.array([5, 7, None, 5] * 50, pa.int32()), words),
                      "x": pa.array(np.arange(200.0))}).take(pa.array([0, 1, 2, 3, 4]))
    compact = compact_dictionaries(table)
    assert compact.schema == table.schema and compact.to_pydict() == table.to_pydict()
    assert len(compact.column("c").chunk(0).dictionary) == 2 < len(table.column("c").chunk(0).dictionary)
