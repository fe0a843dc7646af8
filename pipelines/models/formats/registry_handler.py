"""The base of the scoring job's Beam RunInference handlers for a registered model (`pipelines.models.formats.registry`):
which model (a resolved `pipelines.models.handle.ModelHandle`: its file and metadata) and Beam's keyword-only
batching and sharing arguments, shaped like
Beam's own handlers (``apache_beam.ml.inference.sklearn_inference``). A subclass loads the model
(``load_model``) and predicts a batch (``run_inference``); batching, sharing the loaded model between the
threads of a worker process and metrics come from the framework.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apache_beam.ml.inference.base import ModelHandler

from pipelines.models.formats.base import ModelFile


class RegistryModelHandler(ModelHandler):
    """A handler of one resolved model (workers must see its ``artifact`` path)."""

    def __init__(self, model: ModelFile, *, min_batch_size: int | None = None,
                 max_batch_size: int | None = None, max_batch_duration_secs: int | None = None,
                 max_batch_weight: int | None = None, element_size_fn: Callable[[Any], int] | None = None,
                 large_model: bool = False, model_copies: int | None = None, **kwargs):
        """
        Args:
            model: the resolved model (`pipelines.models.handle.resolve_model`): its file is loaded, its metadata read.
            min_batch_size, max_batch_size, max_batch_duration_secs, max_batch_weight, element_size_fn: how
                RunInference batches the examples (``BatchElements``); unset ones keep Beam's defaults. The
                scoring job builds its own batches and runs the handler ``with_no_batching()``.
            large_model, model_copies: Beam's model sharing across processes (``ModelHandler``).
            kwargs: passed to ``ModelHandler`` (``env_vars``).
        """
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max_batch_size,
                         max_batch_duration_secs=max_batch_duration_secs, max_batch_weight=max_batch_weight,
                         element_size_fn=element_size_fn, large_model=large_model, model_copies=model_copies,
                         **kwargs)
        self._model = model

    @property
    def model_id(self) -> str:
        """``name@date``, as the predictions' ``model_id``."""
        return f"{self._model.name}@{self._model.date}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id})"


__all__ = ["RegistryModelHandler"]
