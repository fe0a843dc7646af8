"""A Beam RunInference `ModelHandler` for a registered table of logged predictions (`pipelines.formats.
predictions_format`).

The "model" is the table itself, loaded once per worker process (RunInference's shared handle) as a sorted
int64 key array and a (rows x classes) float64 probability matrix (`LoggedPredictions`). The example is a
batch's row ids (int64); the prediction looks each id up with ``searchsorted``. A row id the table has no
prediction for gets a row of NaN (`pipelines.logged_predictions.LoggedPredictions`, which holds the table and
answers without Beam), which the scoring job counts as "without a prediction": never dropped silently, never
invented.

Shaped like `pipelines.rr_oracle_handler.RROracleModelHandler` (keyword-only batching arguments).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from auditing.names import require_date
from pipelines.logged_predictions import LoggedPredictions, load_predictions


class PredictionsModelHandler(ModelHandler[np.ndarray, PredictionResult, LoggedPredictions]):
    """Loads ``models/<model_name>/date=<model_date>/predictions.parquet`` and answers arrays of row ids."""

    def __init__(self, data_root: str, model_name: str, model_date: dt.date, *, min_batch_size: int | None = None,
                 max_batch_size: int | None = None, max_batch_duration_secs: int | None = None,
                 max_batch_weight: int | None = None, element_size_fn: Callable[[Any], int] | None = None,
                 large_model: bool = False, model_copies: int | None = None, **kwargs):
        """
        Args:
            data_root: the data root holding ``models/`` (workers must see it).
            model_name: the registry name of the table.
            model_date: its model date (a ``datetime.date``; a string raises ``TypeError``).
            min_batch_size, max_batch_size, max_batch_duration_secs, max_batch_weight, element_size_fn: how
                RunInference batches the examples (``BatchElements``); the scoring job runs the handler
                ``with_no_batching()`` on its own batches.
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
        return f"PredictionsModelHandler({self._model_name}@{self._model_date})"

    def load_model(self) -> LoggedPredictions:
        return load_predictions(self._data_root, self._model_name, self._model_date)

    def run_inference(self, batch: Sequence[np.ndarray], model: LoggedPredictions,
                      inference_args: dict | None = None) -> Iterable[PredictionResult]:
        return [PredictionResult(ids, model.predict_proba(ids), model_id=f"{self._model_name}@{self._model_date}")
                for ids in batch]

    def get_num_bytes(self, batch: Sequence[np.ndarray]) -> int:
        return int(sum(np.asarray(ids).nbytes for ids in batch))

    def get_metrics_namespace(self) -> str:
        return "LoggedPredictionsRunInference"


__all__ = ["PredictionsModelHandler"]
