"""The column checks of a partition's validation (`pipelines.data.schema.validate_table` runs them): each casts one
Arrow column to its stored type without loss or raises LabelDPInputError naming the source, the column, what is
wrong and how many rows are affected.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeldp.errors import LabelDPInputError

CATEGORICAL_TYPE = pa.dictionary(pa.int32(), pa.string())
CATEGORICAL_WIDTH = 8  # hex digits of a hashed categorical value
_HEX_RE = f"^[0-9a-f]{{{CATEGORICAL_WIDTH}}}$"
CRITEO_HINT = "row_id, label, I1..I13, C1..C26"


def fail(source: object, message: str) -> LabelDPInputError:
    return LabelDPInputError(f"{source}: {message}")


def check_columns(table: pa.Table, expected: Sequence[str], source: object,
                   dataset=None) -> None:
    present = list(table.column_names)
    missing = [name for name in expected if name not in present]
    extra = [name for name in present if name not in expected]
    duplicated = sorted({name for name in present if present.count(name) > 1})
    problems = []
    if missing:
        problems.append(f"missing column(s) {missing}")
    if extra:
        problems.append(f"unexpected column(s) {extra}")
    if duplicated:
        problems.append(f"duplicated column name(s) {duplicated}")
    if problems:
        if dataset is not None and dataset.name == "criteo" and list(expected) == list(dataset.columns):
            hint = f"; a partition has exactly the columns {CRITEO_HINT}"
        elif dataset is not None and list(expected) == list(dataset.columns):
            hint = f"; dataset {dataset.name!r} ({dataset.describe()}) has exactly the columns {list(expected)}"
        else:
            hint = f"; expected exactly {list(expected)}"
        raise fail(source, "; ".join(problems) + hint)


def is_integer(type_: pa.DataType) -> bool:
    return pa.types.is_integer(type_)


def cast_integer(column: pa.ChunkedArray, target: pa.DataType, name: str, source: object) -> pa.ChunkedArray:
    """Casts an integer (or all-null) column to ``target``, counting the rows whose values do not fit."""
    type_ = column.type
    if pa.types.is_null(type_):
        return pa.chunked_array([pa.nulls(len(chunk), target) for chunk in column.chunks], type=target)
    if not is_integer(type_):
        raise fail(source, f"column {name!r} has type {type_}, expected an integer type ({target}); "
                    f"{len(column) - column.null_count} non-null rows are affected")
    if type_ == target:
        return column
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, OverflowError):
        info = np.iinfo(target.to_pandas_dtype())
        src = np.iinfo(type_.to_pandas_dtype())
        # Compare in the column's own type (bounds clipped to it), so that no value is rounded.
        low = pa.scalar(max(int(info.min), int(src.min)), type_)
        high = pa.scalar(min(int(info.max), int(src.max)), type_)
        bad = pc.sum(pc.or_(pc.less(column, low), pc.greater(column, high))).as_py() or 0
        raise fail(source, f"column {name!r}: {bad} row(s) do not fit in {target} "
                    f"(range {info.min}..{info.max})") from None


def cast_float(column: pa.ChunkedArray, name: str, source: object) -> pa.ChunkedArray:
    """Casts an integer, float or all-null column to float64 (a float64 ``numeric_type``)."""
    type_ = column.type
    if pa.types.is_null(type_):
        return pa.chunked_array([pa.nulls(len(chunk), pa.float64()) for chunk in column.chunks], type=pa.float64())
    if not (is_integer(type_) or pa.types.is_floating(type_)):
        raise fail(source, f"column {name!r} has type {type_}, expected numbers (integer or float); "
                    f"{len(column) - column.null_count} non-null rows are affected")
    return column if type_ == pa.float64() else column.cast(pa.float64())


def cast_text(column: pa.ChunkedArray, name: str, source: object) -> pa.ChunkedArray:
    """A carried column as text (numbers, booleans, dates and strings alike)."""
    type_ = column.type
    if pa.types.is_dictionary(type_):
        column = column.cast(type_.value_type)
    try:
        return column.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise fail(source, f"column {name!r} has type {type_}, which cannot be carried as text") from None


def cast_categorical(column: pa.ChunkedArray, name: str, source: object, hex8: bool = True) -> pa.ChunkedArray:
    """Casts strings / other dictionaries to ``dictionary<int32, string>`` (and, unless ``hex8``, integers to
    their decimal text); with ``hex8`` checks the 8-hex format."""
    type_ = column.type
    if pa.types.is_null(type_):
        return pa.chunked_array([pa.nulls(len(chunk), CATEGORICAL_TYPE) for chunk in column.chunks],
                                type=CATEGORICAL_TYPE)
    value_type = type_.value_type if pa.types.is_dictionary(type_) else type_
    if not hex8 and is_integer(value_type):
        column = column.cast(value_type).cast(pa.string()) if pa.types.is_dictionary(type_) else column.cast(pa.string())
        type_ = value_type = pa.string()
    if not hex8 and not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        raise fail(source, f"column {name!r} has type {type_}, expected strings or integers (a categorical "
                    f"feature); {len(column) - column.null_count} non-null rows are affected")
    if not (pa.types.is_string(value_type) or pa.types.is_large_string(value_type)):
        raise fail(source, f"column {name!r} has type {type_}, expected strings of {CATEGORICAL_WIDTH} hex "
                    f"digits (dictionary<int32, string>); {len(column) - column.null_count} non-null rows "
                    f"are affected")
    if pa.types.is_dictionary(type_):
        if type_ != CATEGORICAL_TYPE:
            column = column.cast(CATEGORICAL_TYPE)
    else:
        column = pc.dictionary_encode(column.cast(pa.string()))
        if column.type != CATEGORICAL_TYPE:
            column = column.cast(CATEGORICAL_TYPE)
    if not hex8:
        return column
    # Check the format on each chunk's dictionary (small), then count the rows pointing at bad entries.
    bad_rows = 0
    example = None
    for chunk in column.chunks:
        ok = pc.match_substring_regex(chunk.dictionary, _HEX_RE).fill_null(True)  # a null entry is a null
        if pc.all(ok).as_py() is False:
            bad_positions = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
            indices = chunk.indices.to_numpy(zero_copy_only=False)
            valid = chunk.is_valid().to_numpy(zero_copy_only=False)
            hits = np.isin(indices, bad_positions) & valid
            bad_rows += int(hits.sum())
            if example is None and hits.any():
                example = chunk.dictionary[int(indices[np.flatnonzero(hits)[0]])].as_py()
    if bad_rows:
        raise fail(source, f"column {name!r}: {bad_rows} row(s) are not {CATEGORICAL_WIDTH} lowercase hex "
                    f"digits (e.g. {example!r})")
    return column


def check_labels(column: pa.ChunkedArray, num_classes: int, source: object, name: str = "label") -> pa.ChunkedArray:
    if not is_integer(column.type):
        raise fail(source, f"column {name!r} has type {column.type}, expected an integer type (int8) for the label "
                    f"with values in 0..{num_classes - 1}")
    if column.null_count:
        raise fail(source, f"column {name!r}: {column.null_count} row(s) are null; every row needs a label")
    out_of_range = pc.sum(pc.or_(pc.less(column, 0), pc.greater_equal(column, num_classes))).as_py() or 0
    if out_of_range:
        seen = pc.unique(column).to_pylist()
        bad_values = sorted(v for v in seen if not 0 <= v < num_classes)[:5]
        raise fail(source, f"column {name!r}: {out_of_range} row(s) have labels outside the {num_classes} "
                    f"classes 0..{num_classes - 1} (e.g. {bad_values})")
    return column.cast(pa.int8())


def row_id_repeats(row_ids: np.ndarray) -> tuple[int, int, int | None]:
    """(rows that repeat an earlier value, distinct repeated values, the smallest of them or None) of ``row_ids``."""
    ordered = np.sort(row_ids)  # equal values end up adjacent whatever the sort's kind
    repeats = ordered[1:] == ordered[:-1]
    if not repeats.any():
        return 0, 0, None
    dup_values = np.unique(ordered[1:][repeats])
    return int(repeats.sum()), len(dup_values), int(dup_values[0])


def repeated_row_ids(source: object, name: str, extra_rows: int, distinct: int, example: int) -> LabelDPInputError:
    """The error for a row key that repeats: ``extra_rows`` rows repeat one of ``distinct`` values (``example``
    the smallest)."""
    return fail(source, f"column {name!r}: {extra_rows} row(s) repeat an earlier {name} "
                        f"({distinct} distinct duplicated value(s), e.g. {example}); {name} must be unique within a day")


def check_row_ids_unique(row_ids: np.ndarray, source: object, name: str = "row_id") -> None:
    extra_rows, distinct, example = row_id_repeats(row_ids)
    if extra_rows:
        raise repeated_row_ids(source, name, extra_rows, distinct, example)
