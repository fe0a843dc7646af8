"""A partition's column checks (pipelines/data/column_checks.py), one column at a time: each cast is lossless or
refuses naming the source, the column, what is wrong and how many rows; the whole partition's validation, which
runs them, is tested in test_schema.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.data.column_checks import (
    CATEGORICAL_TYPE,
    cast_categorical,
    cast_integer,
    check_columns,
    check_labels,
    row_id_repeats,
)


def _column(values, type_=None):
    return pa.chunked_array([pa.array(values, type=type_)])


def test_columns_must_be_exactly_the_expected_ones_naming_each_problem():
    check_columns(pa.table({"a": [1], "b": [2]}), ["a", "b"], "part.parquet")
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3])], names=["a", "c", "c"])
    with pytest.raises(LabelDPInputError) as raised:
        check_columns(table, ["a", "b"], "part.parquet")
    assert str(raised.value) == ("part.parquet: missing column(s) ['b']; unexpected column(s) ['c', 'c']; duplicated "
                                 "column name(s) ['c']; expected exactly ['a', 'b']")


def test_an_integer_cast_counts_the_rows_that_do_not_fit():
    assert cast_integer(_column([1, -5], pa.int64()), pa.int32(), "I1", "src").type == pa.int32()
    assert cast_integer(_column([None, None]), pa.int32(), "I1", "src").null_count == 2
    with pytest.raises(LabelDPInputError, match=r"^src: column 'I1': 2 row\(s\) do not fit in int8 \(range -128\.\.127\)$"):
        cast_integer(_column([1, 300, -129, None], pa.int64()), pa.int8(), "I1", "src")
    with pytest.raises(LabelDPInputError, match=r"^src: column 'I1' has type double, expected an integer type .*; "
                                                r"1 non-null rows are affected$"):
        cast_integer(_column([1.5, None]), pa.int32(), "I1", "src")


def test_a_categorical_is_a_dictionary_of_8_hex_digits_unless_told_otherwise():
    out = cast_categorical(_column(["0a1b2c3d", None, "0a1b2c3d"]), "C1", "src")
    assert out.type == CATEGORICAL_TYPE and out.to_pylist() == ["0a1b2c3d", None, "0a1b2c3d"]
    with pytest.raises(LabelDPInputError, match=r"^src: column 'C1': 2 row\(s\) are not 8 lowercase hex digits "
                                                r"\(e\.g\. 'ABCDEF01'\)$"):
        cast_categorical(_column(["0a1b2c3d", "ABCDEF01", "xyz", None]), "C1", "src")
    assert cast_categorical(_column([7, 12]), "country", "src", hex8=False).to_pylist() == ["7", "12"]


def test_labels_are_int8_class_ids_and_every_row_has_one():
    assert check_labels(_column([0, 1, 1], pa.int64()), 2, "src").type == pa.int8()
    with pytest.raises(LabelDPInputError, match=r"^src: column 'label': 1 row\(s\) are null; every row needs a label$"):
        check_labels(_column([0, None], pa.int64()), 2, "src")
    with pytest.raises(LabelDPInputError, match=r"^src: column 'label': 3 row\(s\) have labels outside the 2 classes "
                                                r"0\.\.1 \(e\.g\. \[-1, 2\]\)$"):
        check_labels(_column([0, 2, -1, 2], pa.int64()), 2, "src")


def test_row_id_repeats_counts_extra_rows_distinct_values_and_the_smallest():
    assert row_id_repeats(np.array([3, 1, 2])) == (0, 0, None)
    assert row_id_repeats(np.array([5, -7, 5, 9, -7, 5])) == (3, 2, -7)
