"""The value conversion of the tabular ingest (`pipelines.data.tabular_ingest`): a batch's raw columns (text from
CSV, any type from Parquet) to the partition's types under a dataset spec, with every row that cannot be
converted marked bad and the reason named (the ingest counts, caps and reports them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeldp.errors import LabelDPInputError
from pipelines.data.column_checks import cast_text
from pipelines.data.dataset_spec import DatasetSpec

INT_RE = r"^-?[0-9]+$"  # Arrow's own cast also takes "0x1f": a row key must not
FLOAT_RE = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"  # no nan/inf
MISSING_RE = r"^(nan|null|na|none)$"  # a feature's missing value, besides an empty cell
HEX8_RE = "^[0-9a-f]{8}$"
WHOLE_FLOAT_LIMIT = 2.0**53  # floats beyond this are not exact integers


def plain_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


def true_mask(array: pa.Array) -> np.ndarray:
    return np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def is_text(type_: pa.DataType) -> bool:
    return pa.types.is_string(type_) or pa.types.is_large_string(type_)


def parsenumbers(text: pa.Array, target: pa.DataType, pattern: str) -> tuple[pa.Array, np.ndarray]:
    """Text -> ``target`` numbers; (values with null where missing or bad, bad mask). Fast path: one cast."""
    integer = pa.types.is_integer(target)
    try:
        values = pc.cast(text, target)
        if integer and pc.any(pc.match_substring(text, "x", ignore_case=True)).as_py():
            raise pa.ArrowInvalid("hex")
        bad = np.zeros(len(text), dtype=bool)
    except pa.ArrowInvalid:
        bad = true_mask(pc.invert(pc.match_substring_regex(text, pattern)))
        text = pc.if_else(pa.array(bad), pa.scalar(None, text.type), text)
        try:
            values = pc.cast(text, target)
        except pa.ArrowInvalid:  # valid syntax Arrow still refuses (an integer beyond int64): look at each
            refused = [v for v in pc.unique(text).drop_null().to_pylist() if not fits(v, target)]
            hit = true_mask(pc.is_in(text, pa.array(refused, text.type)))
            bad |= hit
            values = pc.cast(pc.if_else(pa.array(hit), pa.scalar(None, text.type), text), target)
    if not integer:
        bad |= true_mask(pc.invert(pc.is_finite(values)))
    return values, bad


def fits(value: str, target: pa.DataType) -> bool:
    if pa.types.is_integer(target):
        return -(2**63) <= int(value) < 2**63
    try:
        pc.cast(pa.array([value]), target)
    except pa.ArrowInvalid:
        return False
    return True


def whole_numbers(values: pa.Array) -> np.ndarray:
    """The mask of the float ``values`` that are whole numbers an int64 holds exactly (nulls: False)."""
    floats = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(floats) & (np.floor(floats) == floats) & (np.abs(floats) <= WHOLE_FLOAT_LIMIT)


def numbers(array: pa.Array, target: pa.DataType, name: str, source: Path,
             strict: bool = False, whole_floats: bool = False) -> tuple[pa.Array, np.ndarray]:
    """A column as ``target`` (int64 or float64): (values, bad mask); a type that cannot hold numbers raises.
    ``strict`` (the row key, the label): integers, their text or booleans only, never floats; with
    ``whole_floats`` (the label) also floats that are whole numbers, as text (``1.0``, the usual CSV export of a
    0/1 column) or typed, and any other float is a bad row."""
    type_ = array.type
    if pa.types.is_null(type_):
        return pa.nulls(len(array), target), np.zeros(len(array), dtype=bool)
    if is_text(type_):
        if not strict:  # a feature's missing value may be written as NaN, null, NA or None (any case)
            array = pc.if_else(pc.match_substring_regex(array, MISSING_RE, ignore_case=True), None, array)
        values, bad = parsenumbers(array, target, INT_RE if pa.types.is_integer(target) else FLOAT_RE)
        if whole_floats and bad.any():
            floats, _ = parsenumbers(array, pa.float64(), FLOAT_RE)
            rescued = bad & whole_numbers(floats)
            values = pc.if_else(pa.array(rescued), pc.cast(floats, target, safe=False), values)
            bad &= ~rescued
        return values, bad
    if pa.types.is_boolean(type_) and strict:  # a 0/1 label stored as booleans
        return array.cast(pa.int64()), np.zeros(len(array), dtype=bool)
    if pa.types.is_integer(type_):
        if target == pa.float64():
            return array.cast(pa.float64()), np.zeros(len(array), dtype=bool)
        bad = true_mask(pc.greater(array, pa.scalar(2**63 - 1, pa.uint64()))) if type_ == pa.uint64() else None
        if bad is None:
            return array.cast(pa.int64()), np.zeros(len(array), dtype=bool)
        return pc.if_else(pa.array(bad), pa.scalar(None, type_), array).cast(pa.int64()), bad
    if pa.types.is_floating(type_):
        values = array.cast(pa.float64())
        if not strict:  # NaN in a feature is a missing value; only infinities are bad
            values = pc.if_else(pc.is_nan(values), pa.scalar(None, pa.float64()), values)
        bad = true_mask(pc.invert(pc.is_finite(values)))
        if target == pa.float64():
            return pc.if_else(pa.array(bad), pa.scalar(None, pa.float64()), values), bad
        if not strict:  # e.g. a pandas integer column with missing values, stored as double
            bad |= true_mask(pc.or_(pc.not_equal(pc.floor(values), values),
                                pc.greater(pc.abs(values), WHOLE_FLOAT_LIMIT)))
            return pc.if_else(pa.array(bad), pa.scalar(None, pa.float64()), values).cast(pa.int64()), bad
        if whole_floats:  # a 0/1 label written by a tool that keeps every number as a double
            bad = ~true_mask(values.is_null()) & ~whole_numbers(values)
            return pc.if_else(pa.array(bad), pa.scalar(None, pa.float64()), values).cast(pa.int64()), bad
    raise LabelDPInputError(f"{source}: column {name!r} has type {type_}, which cannot hold "
                            f"{'integers' if target == pa.int64() else 'numbers'}")


def convert_columns(table: pa.Table, spec: DatasetSpec, source: Path) -> tuple[pa.Table, np.ndarray, list[str], np.ndarray]:
    """Raw columns (text from CSV, any type from Parquet) -> the partition's types, categoricals as plain
    text. Returns (table of all rows, bad-row mask, reason names, reason index per row)."""
    n = table.num_rows
    bad = np.zeros(n, dtype=bool)
    reason = np.full(n, -1, dtype=np.int32)
    names: list[str] = []

    def mark(mask: np.ndarray, text: str) -> None:
        new = mask & ~bad
        if new.any():
            reason[new] = len(names)
            names.append(text)
            bad[new] = True

    columns = {name: plain_array(table.column(name)) for name in spec.columns}
    if n:
        mark(np.logical_and.reduce([true_mask(c.is_null()) for c in columns.values()]), "empty line")
    key, wrong = numbers(columns[spec.row_key], pa.int64(), spec.row_key, source, strict=True)
    mark(true_mask(columns[spec.row_key].is_null()), f"{spec.row_key} is missing")
    mark(wrong, f"{spec.row_key} is not an integer")
    label, wrong = numbers(columns[spec.label], pa.int64(), spec.label, source, strict=True, whole_floats=True)
    out_of_range = pc.or_(pc.less(label, 0), pc.greater_equal(label, spec.classes))
    mark(true_mask(columns[spec.label].is_null()), f"{spec.label} is missing")
    mark(wrong | true_mask(out_of_range), f"{spec.label} is not an integer in 0..{spec.classes - 1}")
    arrays = [key, pc.if_else(pa.array(bad), pa.scalar(0, pa.int64()), label.fill_null(0)).cast(pa.int8())]
    target = pa.int64() if spec.numeric_type == "int64" else pa.float64()
    for name in spec.numeric:
        values, wrong = numbers(columns[name], target, name, source)
        mark(wrong, f"{name} is not {'an integer' if target == pa.int64() else 'a finite number'}")
        arrays.append(values)
    for name in spec.categorical:
        column = columns[name]
        if pa.types.is_integer(column.type) or pa.types.is_null(column.type) or is_text(column.type):
            column = column.cast(pa.string())
        else:
            raise LabelDPInputError(f"{source}: column {name!r} has type {column.type}; a categorical holds text "
                                    f"or integers")
        if spec.categorical_format == "hex8":
            mark(true_mask(pc.invert(pc.match_substring_regex(column, HEX8_RE))),
                 f"{name} is not 8 lowercase hex digits")
        arrays.append(column)
    arrays += [cast_text(pa.chunked_array([columns[name]]), name, source).combine_chunks() for name in spec.carry]
    return pa.Table.from_arrays(arrays, names=list(spec.columns)), bad, names, reason


__all__ = ["convert_columns", "is_text", "numbers", "plain_array", "true_mask"]
