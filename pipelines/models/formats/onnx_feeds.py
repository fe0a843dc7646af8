"""A batch of the day's rows as the named inputs of a registered ONNX graph, and what to say when the graph fails
on them.

The batch is the scoring job's Arrow table of typed columns (``row_id`` and the features, as the partition
stores them); `input_feeds` builds one array per graph input from the columns its recorded `OnnxInput` names,
in order, converted by the input's element type (`pipelines.models.formats.onnx_elements`): ``[rows]`` for a
rank-1 input, ``[rows, columns]`` otherwise. A value the element type cannot take is refused there, naming the
column and the value.

`run_graph` runs the graph on them. When onnxruntime fails on the batch (an embedding id out of range, an
unknown category under a strict OneHotEncoder), the error names the column and the value: first by the
vocabularies the graph declares (`pipelines.models.formats.onnx_vocabulary`), else by running halves of the
batch down to one failing row, whose values it names. Either is a `LabelDPInputError`: the night stops with
exit 2 on a model that cannot score the day's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import INTERNAL_ROW_ID
from pipelines.models.formats.onnx_elements import ONNX_ELEMENTS, Feeding
from pipelines.models.formats.onnx_vocabulary import Vocabulary
from pipelines.models.metadata import CATEGORICAL, NUMERIC, OnnxInput


def column_kind(column: pa.ChunkedArray) -> str:
    """A validated feature column's kind, from its stored type: text (dictionary-encoded) is categorical."""
    type_ = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    return CATEGORICAL if pa.types.is_string(type_) or pa.types.is_large_string(type_) else NUMERIC


def _row_ids(table: pa.Table) -> np.ndarray | None:
    if INTERNAL_ROW_ID not in table.column_names:
        return None
    return table.column(INTERNAL_ROW_ID).fill_null(-1).to_numpy(zero_copy_only=False)


def input_feeds(inputs: Sequence[OnnxInput], table: pa.Table, where: str) -> dict[str, np.ndarray]:
    """Graph input name -> its array for the rows of ``table`` (module docstring)."""
    rows, row_ids = table.num_rows, _row_ids(table)
    feeds = {}
    for item in inputs:
        element = ONNX_ELEMENTS.get(item.type)
        feeding = Feeding(where, item.name, element.name, row_ids)
        columns = [element.values(table.column(name), name, column_kind(table.column(name)), feeding)
                   for name in item.columns]
        if item.rank == 1:
            feeds[item.name] = columns[0]
        elif len(columns) == 1:
            feeds[item.name] = columns[0].reshape(rows, 1)
        else:
            matrix = np.empty((rows, len(columns)), dtype=element.dtype)
            for index, values in enumerate(columns):
                matrix[:, index] = values
            feeds[item.name] = matrix
    return feeds


def one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text[:limit] + ("..." if len(text) > limit else "")


def run_graph(session, output: str, inputs: Sequence[OnnxInput], table: pa.Table, where: str,
              strict: Mapping[str, Vocabulary] | None = None) -> np.ndarray:
    """The (rows x classes) float64 value of ``output`` on the rows of ``table``; LabelDPInputError naming the
    column and the value when the graph fails on them (``strict``: the vocabularies that fail on an unknown
    value, by graph input)."""
    feeds = input_feeds(inputs, table, where)
    try:
        result = session.run([output], feeds)[0]
    except Exception as exc:  # onnxruntime's Fail / InvalidArgument / RuntimeException
        raise graph_failure(session, output, inputs, feeds, table, exc, where, strict or {}) from None
    return np.asarray(result, dtype=np.float64)


def _fails(session, output: str, feeds: dict[str, np.ndarray], start: int, stop: int) -> bool:
    try:
        session.run([output], {name: array[start:stop] for name, array in feeds.items()})
    except Exception:
        return True
    return False


def failing_row(session, output: str, feeds: dict[str, np.ndarray], rows: int) -> int | None:
    """One row the graph fails on by itself, found by running halves of the batch; None when no half fails
    alone."""
    start, stop = 0, rows
    while stop - start > 1:
        middle = (start + stop) // 2
        if _fails(session, output, feeds, start, middle):
            stop = middle
        elif _fails(session, output, feeds, middle, stop):
            start = middle
        else:
            return None
    return start if rows and _fails(session, output, feeds, start, start + 1) else None


def _value(table: pa.Table, column: str, row: int):
    return table.column(column)[row].as_py()


def _row_key(table: pa.Table, row: int) -> str:
    ids = _row_ids(table)
    return "" if ids is None else f"row key {int(ids[row])}, "


def graph_failure(session, output: str, inputs: Sequence[OnnxInput], feeds: dict[str, np.ndarray], table: pa.Table,
                  exc: BaseException, where: str, strict: Mapping[str, Vocabulary]) -> LabelDPInputError:
    """The one-line error for a graph that failed on a batch: the column and the value when they can be found."""
    said = one_line(exc)
    for item in inputs:
        vocabulary = strict.get(item.name)
        if vocabulary is None or len(item.columns) != 1:
            continue
        bad = vocabulary.fails(feeds[item.name])
        if bad.any():
            row, column = int(np.flatnonzero(bad)[0]), item.columns[0]
            return LabelDPInputError(
                f"{where}: the graph fails on column {column!r} value {_value(table, column, row)!r} ({_row_key(table, row)}"
                f"{int(bad.sum())} row(s) of the batch), which graph input {item.name!r} does not know "
                f"({vocabulary.describe()}): a model that cannot score the day's rows cannot be audited on them; "
                f"register one that maps unknown values to a known id (onnxruntime: {said})")
    row = failing_row(session, output, feeds, table.num_rows)
    if row is not None:
        columns = list(dict.fromkeys(name for item in inputs for name in item.columns))
        values = ", ".join(f"{name}={_value(table, name, row)!r}" for name in columns)
        return LabelDPInputError(f"{where}: the graph fails on the row ({_row_key(table, row)}{values}): "
                                 f"onnxruntime: {said}")
    return LabelDPInputError(f"{where}: the graph fails on a batch of {table.num_rows} rows, though on no row "
                             f"alone: onnxruntime: {said}")


__all__ = ["column_kind", "failing_row", "graph_failure", "input_feeds", "one_line", "run_graph"]
