"""A Beam RunInference `ModelHandler` for the positive control's RR-label oracle (`pipelines.controls`).

Shaped like `pipelines.catboost_handler.CatBoostModelHandler` (keyword-only batching arguments, as Beam's own
handlers take them): it loads the "model" (``oracle.json``: eps_c, seed, classes) once per worker process and
predicts a batch. Its example type is the Arrow table of the batch's ``row_id`` and ``label`` columns (the oracle answers from a row's own label, which is the point of a
control whose leakage is known); the prediction is `auditing.controls.rr_oracle_probabilities`, an
(rows x classes) float64 array, deterministic in (seed, row_id).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from auditing.controls import check_control_epsilon, rr_oracle_probabilities
from auditing.errors import LabelDPInputError
from auditing.names import require_date
from pipelines import registry, schema


@dataclass(frozen=True)
class RROracle:
    epsilon: float
    seed: int
    num_classes: int

    def predict_proba(self, table: pa.Table) -> np.ndarray:
        ids = table.column(schema.ROW_ID).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        labels = table.column(schema.LABEL).to_numpy(zero_copy_only=False).astype(np.int64)
        return rr_oracle_probabilities(ids, labels, self.epsilon, self.seed, self.num_classes)


def load_oracle(root, name: str, date: dt.date) -> RROracle:
    path = registry.model_path(root, name, date)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return RROracle(check_control_epsilon(record["epsilon"], f"{path}: epsilon"), int(record["seed"]),
                        int(record["num_classes"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabelDPInputError(f"{path}: not a readable RR-label oracle ({exc})") from None


class RROracleModelHandler(ModelHandler[pa.Table, PredictionResult, Any]):
    """Loads ``models/<model_name>/date=<model_date>/oracle.json`` and answers (row_id, label) tables."""

    def __init__(self, data_root: str, model_name: str, model_date: dt.date, *, min_batch_size: int | None = None,
                 max_batch_size: int | None = None, max_batch_duration_secs: int | None = None,
                 max_batch_weight: int | None = None, element_size_fn: Callable[[Any], int] | None = None,
                 large_model: bool = False, model_copies: int | None = None, **kwargs):
        """
        Args:
            data_root: the data root holding ``models/``.
            model_name: the registry name of the oracle.
            model_date: its date (a ``datetime.date``; a string raises ``TypeError``).
            min_batch_size, max_batch_size, max_batch_duration_secs, max_batch_weight, element_size_fn: how
                RunInference batches the tables (``BatchElements``); unset ones keep Beam's defaults. The
                scoring job runs the handler ``with_no_batching()`` on its own batches.
            large_model, model_copies: Beam's model sharing across processes (``ModelHandler``).
            kwargs: passed to ``ModelHandler`` (``env_vars``).
        """
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max_batch_size,
                         max_batch_duration_secs=max_batch_duration_secs, max_batch_weight=max_batch_weight,
                         element_size_fn=element_size_fn, large_model=large_model, model_copies=model_copies,
                         **kwargs)
        self._data_root, self._model_name = str(data_root), model_name
        self._model_date = require_date(model_date, "model_date")

    def __repr__(self) -> str:
        return f"RROracleModelHandler({self._model_name}@{self._model_date})"

    def load_model(self) -> RROracle:
        return load_oracle(self._data_root, self._model_name, self._model_date)

    def run_inference(self, batch: Sequence[pa.Table], model: RROracle, inference_args: dict | None = None
                      ) -> Iterable[PredictionResult]:
        return [PredictionResult(table, model.predict_proba(table), model_id=f"{self._model_name}@{self._model_date}")
                for table in batch]

    def get_num_bytes(self, batch: Sequence[pa.Table]) -> int:
        return int(sum(table.nbytes for table in batch))

    def get_metrics_namespace(self) -> str:
        return "RROracleRunInference"


__all__ = ["RROracle", "RROracleModelHandler", "load_oracle"]
