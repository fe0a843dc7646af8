"""Logged predictions ``predictions.parquet``: a model's class probabilities for the rows of one day, when the
model itself cannot be handed over.

The table holds the dataset's row key (or ``row_id``) and ``prob_0 .. prob_{K-1}`` (for K = 2 a single ``prob_1``
column is accepted and means [1 - p, p]); other columns are ignored. It must be the day-D model's batch scores of
the day it is registered for (``predictions_for``), not serving logs of an older model. `inspect` checks it row by
row before anything is copied: keys integer, non-null and unique; every probability finite and in [0, 1]; a full
vector summing to 1 within 1e-6. The handler (`pipelines.models.formats.predictions_handler.PredictionsModelHandler`) joins a
batch's row ids with the table; a row without a prediction gets NaN and is counted by the scoring job.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError
from pipelines.data.column_checks import cast_integer, check_row_ids_unique
from pipelines.data.dataset_spec import INTERNAL_ROW_ID, DatasetSpec
from pipelines.data.schema import open_parquet
from pipelines.models.formats.base import (
    MODEL_FORMATS,
    ModelFile,
    ModelFormat,
    Offer,
    check_probability_matrix,
)

SUM_TOLERANCE = 1e-6
_PROBABILITY_RE = re.compile(r"^prob_(\d+)$")


def key_column(names: list[str], dataset: DatasetSpec, path: Path) -> str:
    """The row-key column of a table offered for ``dataset``: the spec's row key, else ``row_id``."""
    for name in (dataset.row_key, INTERNAL_ROW_ID):
        if name in names:
            return name
    expected = dataset.row_key if dataset.row_key == INTERNAL_ROW_ID else f"{dataset.row_key} (or {INTERNAL_ROW_ID})"
    raise LabelDPInputError(f"{path}: no row-key column {expected}; the table has the columns {names}")


def _probability_columns(names: list[str], dataset: DatasetSpec, path: Path) -> list[str]:
    from pipelines.models.formats.logged_predictions import probability_columns

    classes = dataset.classes
    present = sorted(int(m.group(1)) for m in map(_PROBABILITY_RE.match, names) if m)
    beyond = [f"prob_{k}" for k in present if k >= classes]
    if beyond:
        raise LabelDPInputError(f"{path}: column(s) {beyond} but dataset {dataset.name!r} ({dataset.describe()}) has "
                                f"{classes} classes (prob_0..prob_{classes - 1})")
    full = probability_columns(classes)
    if all(name in names for name in full):
        return full
    if classes == 2 and "prob_1" in names and "prob_0" not in names:
        return ["prob_1"]
    missing = [name for name in full if name not in names]
    single = "; for 2 classes prob_1 alone is accepted" if classes == 2 else ""
    raise LabelDPInputError(f"{path}: missing probability column(s) {missing}: a predictions table holds the row key "
                            f"and prob_0..prob_{classes - 1}{single}")


def _bad_rows(path: Path, keys: np.ndarray, rows: np.ndarray, what: str, detail) -> None:
    if rows.any():
        first = int(np.flatnonzero(rows)[0])
        raise LabelDPInputError(f"{path}: {int(rows.sum())} row(s) {what} (e.g. row key {int(keys[first])}: "
                                f"{detail(first)})")


def read_predictions_table(path: Path, dataset: DatasetSpec) -> tuple[str, list[str], np.ndarray, np.ndarray]:
    """Reads and checks a predictions table: (key column, probability columns, int64 keys, (rows x classes)
    probabilities). LabelDPInputError naming the file, the column and how many rows are bad."""
    from pipelines.models.formats.logged_predictions import probability_matrix

    parquet = open_parquet(path)
    names = list(parquet.schema_arrow.names)
    key = key_column(names, dataset, path)
    columns = _probability_columns(names, dataset, path)
    try:
        table = parquet.read(columns=[key, *columns])
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None
    if table.num_rows == 0:
        raise LabelDPInputError(f"{path}: the table holds no rows")
    ids = cast_integer(table.column(key), pa.int64(), key, path)
    if ids.null_count:
        raise LabelDPInputError(f"{path}: column {key!r}: {ids.null_count} row(s) are null; every row needs its key")
    keys = ids.to_numpy()
    check_row_ids_unique(keys, path, key)
    for name in columns:
        type_ = table.column(name).type
        if not (pa.types.is_floating(type_) or pa.types.is_integer(type_) or pa.types.is_null(type_)):
            raise LabelDPInputError(f"{path}: column {name!r} has type {type_}; expected probabilities (float)")
    p = probability_matrix(table, columns, dataset.classes)
    _bad_rows(path, keys, ~((p >= 0.0) & (p <= 1.0)).all(axis=1),
              "have a probability that is missing, not finite or outside [0, 1]",
              lambda i: {name: table.column(name)[i].as_py() for name in columns})
    if len(columns) > 1:
        sums = p.sum(axis=1)
        _bad_rows(path, keys, np.abs(sums - 1.0) > SUM_TOLERANCE,
                  f"have probabilities that do not sum to 1 (within {SUM_TOLERANCE:g})", lambda i: f"sum {sums[i]!r}")
    return key, columns, keys, p


@MODEL_FORMATS.register
class PredictionsFormat(ModelFormat):
    name = "predictions"
    description = "a Parquet table of logged class probabilities per row key (row key, prob_0..prob_{K-1})"
    file_name = "predictions.parquet"
    # The artifact answers for the rows of one day only (recorded as ``predictions_for`` at registration).
    scores_one_day: ClassVar[bool] = True

    def inspect(self, path: Path, dataset: DatasetSpec, offer: Offer | None = None) -> dict:
        key, columns, keys, _p = read_predictions_table(Path(path), dataset)
        return {"feature_schema": [], "classes": dataset.classes, "rows": int(keys.size),
                "predictions": {"key_column": key, "probability_columns": columns}}

    def prepare(self, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        return np.asarray(table.column(INTERNAL_ROW_ID).to_numpy(zero_copy_only=False), dtype=np.int64)

    def handler(self, model: ModelFile, dataset: DatasetSpec, *, thread_count: int = 1):
        from pipelines.models.formats.predictions_handler import PredictionsModelHandler

        return PredictionsModelHandler(model)

    def predict(self, model: ModelFile, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        from pipelines.models.formats.logged_predictions import load_predictions

        result = load_predictions(model).predict_proba(self.prepare(table, dataset))
        return check_probability_matrix(result, table.num_rows, f"model {model.name!r}")

    def check_reference_coverage(self, model: ModelFile, row_ids: np.ndarray) -> None:
        from pipelines.models.formats.logged_predictions import load_predictions

        name, date = model.name, model.date
        keys = load_predictions(model).keys
        missing = np.setdiff1d(np.asarray(row_ids, dtype=np.int64), keys, assume_unique=False)
        if missing.size:
            raise LabelDPInputError(
                f"the reference {name!r} of {date.isoformat()} is a predictions table without predictions for "
                f"{missing.size} of the {np.asarray(row_ids).size} rows it is asked to score (e.g. row key "
                f"{int(missing[0])}): a reference table must hold the D-1 model's predictions for all of day D's "
                f"rows, held-out rows included")

