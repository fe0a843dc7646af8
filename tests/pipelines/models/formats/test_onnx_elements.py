"""The element types of ONNX inputs (pipelines/models/formats/onnx_elements.py): the values a categorical column
feeds as integer, float, double and string codes, and every value refused naming the column and the input."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

from labeldp.errors import LabelDPInputError


def _column(values, dictionary: bool = True) -> pa.ChunkedArray:
    array = pa.array(values, pa.string())
    return pa.chunked_array([array.dictionary_encode() if dictionary else array])


def test_integer_codes_are_the_stored_text_and_nothing_else():
    from pipelines.models.formats.onnx_elements import ONNX_ELEMENTS, Feeding

    int64, flt = ONNX_ELEMENTS.get("int64"), ONNX_ELEMENTS.get("float")
    feeding = Feeding("where", "x", "int64", np.arange(10, 20))
    codes = int64.values(_column(["-12", "0", "7", "9223372036854775807", "-12"]), "c", "categorical", feeding)
    np.testing.assert_array_equal(codes, [-12, 0, 7, 2 ** 63 - 1, -12])
    assert codes.dtype == np.int64
    for text in ("-12.0", "007", "+3", " 3", "-0", "1e3", "9223372036854775808", "x"):
        with pytest.raises(LabelDPInputError, match=rf"^where: column 'c', fed to graph input 'x' \(int64\): the "
                                                    rf"value '{re.escape(text)}' is not an int64 integer in its "
                                                    rf"stored text form .* \(1 row\(s\), e.g. row key 11\)"):
            int64.values(_column(["5", text, "5"]), "c", "categorical", feeding)
    with pytest.raises(LabelDPInputError, match=r"missing values \(1 row\(s\), e.g. row key 12\); an int64 input "
                                                r"has no missing value"):
        int64.values(_column(["5", "6", None]), "c", "categorical", feeding)
    # float codes: missing is NaN; exact up to 2^24, non-negative
    values = flt.values(_column(["3", None, "16777216"], dictionary=False), "c", "categorical", feeding)
    np.testing.assert_array_equal(values[[0, 2]], [3, 2 ** 24])
    assert values.dtype == np.float32 and np.isnan(values[1])
    with pytest.raises(LabelDPInputError, match=r"codes above 2\^24 = 16777216 \(e.g. 16777217\), which a float "
                                                r"input cannot take as a category \(2 row\(s\), e.g. row key 10\)"):
        flt.values(_column(["16777217", "16777217", "1"]), "c", "categorical", feeding)
    with pytest.raises(LabelDPInputError, match=r"negative codes \(e.g. -1\)"):
        flt.values(_column(["1", "-1"]), "c", "categorical", feeding)
    double = ONNX_ELEMENTS.get("double").values(_column(["16777217"]), "c", "categorical", feeding)
    assert double[0] == 16777217.0
    # numeric columns: floats as they are, whole numbers as int64
    np.testing.assert_array_equal(int64.values(pa.chunked_array([pa.array([1.0, -2.0])]), "n", "numeric", feeding),
                                  [1, -2])
    with pytest.raises(LabelDPInputError, match=r"the value 1.5 is not a whole number"):
        int64.values(pa.chunked_array([pa.array([1.0, 1.5])]), "n", "numeric", feeding)
    strings = ONNX_ELEMENTS.get("string").values(_column(["a", None, "b"]), "c", "categorical", feeding)
    assert strings.tolist() == ["a", "", "b"]  # missing: the empty string, as CatBoost reads it
