"""A Beam RunInference `ModelHandler` for the registry's CatBoost models (Beam ships none for CatBoost).

Shaped like Beam's own handlers (``apache_beam.ml.inference.sklearn_inference`` and ``xgboost_inference``):
it only loads a model and predicts a batch; batching (the keyword-only ``min_batch_size``,
``max_batch_size``, ... arguments, handed to ``BatchElements`` through ``batch_elements_kwargs``), sharing the
loaded model between the threads of a worker process (RunInference's shared handle: one load per process) and
inference metrics come from the framework.

- Example type: a ``pandas.DataFrame`` of the model's features as built by
  `pipelines.models.catboost_frames.catboost_frame` from the partition's Arrow batch (the job builds it once per
  batch and runs both models on it; the CatBoost Pool is shared too, `pipelines.models.catboost_frames.catboost_pool`).
- Prediction: the (rows x classes) float64 array of ``predict_proba``.
- ``thread_count`` is CatBoost's per-call thread count: set it to cores / worker processes so that workers
  do not oversubscribe the machine.
- The model is the resolved handle's file, read through ``pipelines.models.registry.load_model`` (so a
  noise-corrected LP-1ST-NC model predicts corrected probabilities); workers must see that path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from apache_beam.ml.inference.base import PredictionResult

from pipelines.models.catboost_frames import catboost_pool
from pipelines.models.formats.base import ModelFile
from pipelines.models.formats.registry_handler import RegistryModelHandler


class CatBoostModelHandler(RegistryModelHandler):
    """Loads a resolved CatBoost model once per worker process and predicts feature frames."""

    def __init__(self, model: ModelFile, *, thread_count: int = 1, **kwargs):
        """``thread_count``: CatBoost's threads per ``predict_proba`` call; the rest as
        `pipelines.models.formats.registry_handler.RegistryModelHandler` (the model, Beam's batching and sharing arguments)."""
        super().__init__(model, **kwargs)
        self._thread_count = int(thread_count)

    def __repr__(self) -> str:
        return f"CatBoostModelHandler({self.model_id}, thread_count={self._thread_count})"

    def load_model(self):
        from pipelines.models.registry import load_model

        return load_model(self._model)

    def run_inference(self, batch: Sequence[pd.DataFrame], model, inference_args: dict | None = None
                      ) -> Iterable[PredictionResult]:
        extra = dict(inference_args or {})
        names = list(model.feature_names_)
        results = []
        for frame in batch:
            if list(frame.columns) != names:  # a model reading some of the dataset's features, in its own order
                frame = frame[names]
            probabilities = model.predict_proba(catboost_pool(frame, model), thread_count=self._thread_count,
                                                **extra)
            results.append(PredictionResult(frame, np.asarray(probabilities, dtype=np.float64),
                                            model_id=self.model_id))
        return results

    def get_num_bytes(self, batch: Sequence[pd.DataFrame]) -> int:
        # The base class pickles the batch to measure it; the frame knows its size.
        return int(sum(frame.memory_usage(index=False, deep=False).sum() for frame in batch))

    def get_metrics_namespace(self) -> str:
        return "CatBoostRunInference"


__all__ = ["CatBoostModelHandler"]
