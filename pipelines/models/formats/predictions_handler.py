"""A Beam RunInference `ModelHandler` for a registered table of logged predictions (`pipelines.models.formats.
predictions_format`).

The "model" is the table itself, loaded once per worker process (RunInference's shared handle) as a sorted
int64 key array and a (rows x classes) float64 probability matrix (`LoggedPredictions`). The example is a
batch's row ids (int64); the prediction looks each id up with ``searchsorted``. A row id the table has no
prediction for gets a row of NaN (`pipelines.models.formats.logged_predictions.LoggedPredictions`, which holds the table and
answers without Beam), which the scoring job counts as "without a prediction": never dropped silently, never
invented.

A `pipelines.models.formats.registry_handler.RegistryModelHandler` (the resolved model, Beam's keyword-only batching arguments).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from apache_beam.ml.inference.base import PredictionResult

from pipelines.models.formats.logged_predictions import LoggedPredictions, load_predictions
from pipelines.models.formats.registry_handler import RegistryModelHandler


class PredictionsModelHandler(RegistryModelHandler):
    """Loads a resolved model's ``predictions.parquet`` and answers arrays of row ids."""

    def load_model(self) -> LoggedPredictions:
        return load_predictions(self._model)

    def run_inference(self, batch: Sequence[np.ndarray], model: LoggedPredictions,
                      inference_args: dict | None = None) -> Iterable[PredictionResult]:
        return [PredictionResult(ids, model.predict_proba(ids), model_id=self.model_id)
                for ids in batch]

    def get_num_bytes(self, batch: Sequence[np.ndarray]) -> int:
        return int(sum(np.asarray(ids).nbytes for ids in batch))

    def get_metrics_namespace(self) -> str:
        return "LoggedPredictionsRunInference"


__all__ = ["PredictionsModelHandler"]
