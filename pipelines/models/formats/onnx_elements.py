"""How a dataset column's stored values become the values of one element type of an ONNX graph input (the types
a registered graph may read: `ONNX_ELEMENTS`). Values reach the graph exactly as the partition stores them:

- ``string``: a categorical column's text, as stored (`pipelines.data.dataset_spec`: integers were stored as their
  decimal text at ingest); a missing value is the empty string, as CatBoost reads it
  (`pipelines.data.categories.MISSING_CATEGORY`). A numeric column cannot feed a string input.
- ``float`` / ``double``: a numeric column as float32 / float64, NaN for a missing value; a categorical column as
  integer codes: every value must be an integer in its stored text form (`INTEGER_TEXT`), non-negative (LightGBM
  reads a negative category as missing) and at most 2^24 (float32) or 2^53 (float64), the largest integers
  those types hold exactly next to their neighbours; NaN for a missing value.
- ``int64``: a categorical column's integer codes (negative ones too), or a numeric column's whole values; a
  missing value has no int64 form and is refused.

The stored text form of an integer is fixed (`INTEGER_TEXT`): decimal digits, ``-`` for a negative number, no
``+``, no leading zero, no ``.0``. "-12" is the integer -12; "-12.0", "007" or "+3" are other categories (as
text they differ from "-12", "7" and "3"), so read as numbers they are refused rather than silently merged.

Every refusal is one `LabelDPInputError` naming the column, the graph input, the value, how many rows hold it
and one row key. No onnx or onnxruntime here: the element types are ONNX's ``TensorProto`` numbers.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeldp.choices import Choices
from labeldp.errors import LabelDPInputError
from pipelines.data.categories import MISSING_CATEGORY, used_categories
from pipelines.models.metadata import CATEGORICAL, NUMERIC

# An integer's stored text: "0", or an optional "-" and digits without a leading zero.
INTEGER_TEXT = r"^(0|-?[1-9][0-9]*)$"
INTEGER_TEXT_HELP = "decimal digits, '-' for a negative number, without '+', leading zeros or '.0'"

# onnx.TensorProto's element type numbers
ONNX_FLOAT, ONNX_INT64, ONNX_STRING, ONNX_DOUBLE = 1, 7, 8, 11


class Feeding:
    """Where values are being fed, for the messages: ``where`` (the model or file), the graph ``input`` and its
    element type, and the batch's row keys (``row_ids``, None when unknown)."""

    def __init__(self, where: str, input_name: str, element: str, row_ids: np.ndarray | None = None):
        self.where, self.input, self.element, self.row_ids = where, input_name, element, row_ids

    def refuse(self, column: str, problem: str, rows: np.ndarray, fix: str) -> LabelDPInputError:
        """One line: the column, what is wrong with its values in ``rows`` (a boolean mask), how many rows and one
        row key, and the fix."""
        count = int(rows.sum())
        first = int(np.flatnonzero(rows)[0]) if count else None
        key = (f", e.g. row key {int(self.row_ids[first])}"
               if first is not None and self.row_ids is not None and first < len(self.row_ids) else "")
        return LabelDPInputError(f"{self.where}: column {column!r}, fed to graph input {self.input!r} "
                                 f"({self.element}): {problem} ({count} row(s){key}); {fix}")


def _float64(column: pa.ChunkedArray) -> np.ndarray:
    return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)


def integer_codes(column: pa.ChunkedArray, name: str, feeding: Feeding) -> tuple[np.ndarray, np.ndarray]:
    """(int64 code per row, missing mask) of a categorical column whose values are integers in their stored text
    form; the first value in any other form is refused, naming it."""
    codes, categories = used_categories(column)
    missing = codes < 0
    if not categories.size:
        return np.zeros(codes.size, dtype=np.int64), missing
    text = pa.array(categories, pa.string())
    canonical = pc.match_substring_regex(text, INTEGER_TEXT).to_numpy(zero_copy_only=False)
    parsed = np.zeros(categories.size, dtype=np.int64)
    if canonical.all():
        try:
            parsed = pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, OverflowError):  # digits beyond int64
            canonical = np.array([len(value) < 19 or _fits_int64(value) for value in categories.tolist()])
    if not canonical.all():
        bad = int(np.flatnonzero(~canonical)[0])
        raise feeding.refuse(name, f"the value {categories[bad]!r} is not an int64 integer in its stored text "
                                   f"form ({INTEGER_TEXT_HELP})", codes == bad,
                             "a numeric graph input reads this column as integer codes: re-code the column as "
                             "such integers before ingest, or export the graph with a string input")
    values = np.where(missing, 0, parsed[np.where(missing, 0, codes)])
    return values, missing


def _fits_int64(value: str) -> bool:
    return -(2 ** 63) <= int(value) < 2 ** 63


class OnnxElement:
    """One element type of a graph input: which column kinds it reads and how (frozen, stateless)."""

    name: ClassVar[str]
    onnx_type: ClassVar[int]
    dtype: ClassVar[type]
    kinds: ClassVar[tuple[str, ...]]  # the column kinds it can read

    def values(self, column: pa.ChunkedArray, name: str, kind: str, feeding: Feeding) -> np.ndarray:
        """The column's values for this element type, one per row (1-D)."""
        raise NotImplementedError


ONNX_ELEMENTS: Choices[OnnxElement] = Choices("ONNX input type")


@ONNX_ELEMENTS.register
class StringElement(OnnxElement):
    name = "string"
    onnx_type = ONNX_STRING
    dtype = object
    kinds = (CATEGORICAL,)

    def values(self, column, name, kind, feeding):
        codes, categories = used_categories(column)
        return np.append(categories, MISSING_CATEGORY).astype(object)[codes]  # code -1 (missing) is the last


class _FloatElement(OnnxElement):
    kinds = (NUMERIC, CATEGORICAL)
    exact_limit: ClassVar[int]  # the largest integer code this type holds exactly
    limit_text: ClassVar[str]

    def values(self, column, name, kind, feeding):
        if kind == NUMERIC:
            return _float64(column).astype(self.dtype, copy=False)
        codes, missing = integer_codes(column, name, feeding)
        for bad, problem in ((codes < 0, "negative codes"), (codes > self.exact_limit, f"codes above "
                                                                                     f"{self.limit_text}")):
            bad &= ~missing
            if bad.any():
                value = int(codes[np.flatnonzero(bad)[0]])
                raise feeding.refuse(name, f"{problem} (e.g. {value}), which a {self.name} input cannot take as "
                                           f"a category", bad,
                                     f"categories fed as {self.name} are integer codes in [0, {self.limit_text}]: "
                                     f"re-code the column (e.g. each category's rank in the training data) before "
                                     f"ingest, as the model was trained on")
        out = codes.astype(self.dtype)
        out[missing] = np.nan
        return out


@ONNX_ELEMENTS.register
class FloatElement(_FloatElement):
    name = "float"
    onnx_type = ONNX_FLOAT
    dtype = np.float32
    exact_limit = 2 ** 24
    limit_text = "2^24 = 16777216"


@ONNX_ELEMENTS.register
class DoubleElement(_FloatElement):
    name = "double"
    onnx_type = ONNX_DOUBLE
    dtype = np.float64
    exact_limit = 2 ** 53
    limit_text = "2^53"


@ONNX_ELEMENTS.register
class Int64Element(OnnxElement):
    name = "int64"
    onnx_type = ONNX_INT64
    dtype = np.int64
    kinds = (NUMERIC, CATEGORICAL)

    def values(self, column, name, kind, feeding):
        fix = "an int64 input has no missing value: fill the column at ingest (e.g. with a reserved id)"
        if kind == CATEGORICAL:
            codes, missing = integer_codes(column, name, feeding)
            if missing.any():
                raise feeding.refuse(name, "missing values", missing, fix)
            return codes
        missing = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else np.zeros(len(column),
                                                                                                     dtype=bool)
        if pa.types.is_integer(column.type):
            if missing.any():
                raise feeding.refuse(name, "missing values", missing, fix)
            return pc.cast(column, pa.int64()).to_numpy(zero_copy_only=False)
        values = _float64(column)
        missing |= np.isnan(values)
        if missing.any():
            raise feeding.refuse(name, "missing values", missing, fix)
        whole = np.isfinite(values) & (np.abs(values) <= 2 ** 53) & (values == np.round(values))
        if not whole.all():
            raise feeding.refuse(name, f"the value {float(values[np.flatnonzero(~whole)[0]])!r} is not a whole "
                                       f"number", ~whole, "an int64 input reads whole numbers only")
        return values.astype(np.int64)


def element_for(onnx_type: int) -> OnnxElement | None:
    """The registered element type with this ``TensorProto`` number, or None (a type no column can feed)."""
    return next((item for item in ONNX_ELEMENTS if item.onnx_type == onnx_type), None)


__all__ = ["INTEGER_TEXT", "INTEGER_TEXT_HELP", "ONNX_ELEMENTS", "Feeding", "OnnxElement", "element_for",
           "integer_codes"]
