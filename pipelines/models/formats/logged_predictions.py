"""A registered table of logged predictions in memory, without Beam (`pipelines.models.formats.predictions`
reads and checks it; `pipelines.models.formats.predictions_handler` serves it to the Beam job).

`LoggedPredictions` holds sorted int64 row keys and their (rows x classes) float64 probabilities; a row id the
table has no prediction for gets a row of NaN, which the scoring job counts as "without a prediction": never
dropped silently, never invented.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError
from pipelines.data.schema import open_parquet
from pipelines.models import registry
from pipelines.models.formats.base import ModelFile, missing_prediction
from pipelines.models.metadata import ABSENT

PROBABILITY_PREFIX = "prob_"


def probability_columns(classes: int) -> list[str]:
    """``prob_0 .. prob_{classes-1}``."""
    return [f"{PROBABILITY_PREFIX}{k}" for k in range(classes)]


def probability_matrix(table: pa.Table, columns: Sequence[str], classes: int) -> np.ndarray:
    """The (rows x classes) float64 probabilities held by ``columns`` of ``table`` (null -> NaN). A single
    ``prob_1`` column of a 2-class table means [1 - p, p]."""
    values = [table.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False) for name in columns]
    if len(values) == 1 and classes == 2:
        return np.column_stack([1.0 - values[0], values[0]])
    return np.column_stack(values).astype(np.float64, copy=False)


@dataclass(frozen=True, eq=False)
class LoggedPredictions:
    """Sorted unique int64 row keys and their (rows x classes) float64 probabilities."""

    keys: np.ndarray
    probabilities: np.ndarray

    @classmethod
    def from_arrays(cls, keys: np.ndarray, probabilities: np.ndarray) -> LoggedPredictions:
        keys = np.asarray(keys, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], np.asarray(probabilities, dtype=np.float64)[order])

    @property
    def classes(self) -> int:
        return int(self.probabilities.shape[1])

    def predict_proba(self, row_ids: np.ndarray) -> np.ndarray:
        """(len(row_ids) x classes) probabilities; NaN rows for ids without a logged prediction."""
        row_ids = np.asarray(row_ids, dtype=np.int64)
        out = missing_prediction(row_ids.size, self.classes)
        if not self.keys.size or not row_ids.size:
            return out
        index = np.searchsorted(self.keys, row_ids)
        index[index == self.keys.size] = 0
        found = self.keys[index] == row_ids
        out[found] = self.probabilities[index[found]]
        return out


def load_predictions(model: ModelFile) -> LoggedPredictions:
    """The registered table of a resolved model (the columns its registration recorded)."""
    metadata, path = model.meta, model.artifact
    if not metadata.predictions or metadata.classes is ABSENT:
        raise LabelDPInputError(f"{path.parent / registry.METADATA_FILE}: lacks the predictions record "
                                f"(key_column, probability_columns, classes); register the table again")
    key, columns = metadata.predictions.key_column, list(metadata.predictions.probability_columns)
    classes = metadata.classes
    parquet = open_parquet(path)
    try:
        table = parquet.read(columns=[key, *columns])
    except (pa.ArrowException, OSError, KeyError) as exc:
        raise LabelDPInputError(f"{path}: cannot read the columns {[key, *columns]} ({exc})") from None
    keys = table.column(key).cast(pa.int64()).to_numpy(zero_copy_only=False)
    return LoggedPredictions.from_arrays(keys, probability_matrix(table, columns, classes))


__all__ = ["PROBABILITY_PREFIX", "LoggedPredictions", "load_predictions", "probability_columns", "probability_matrix"]
