"""Running a registered ONNX model: Beam's own ONNX handler, told which output holds the class probabilities.

Beam ships the ONNX runner (``apache_beam.ml.inference.onnx_inference.OnnxModelHandlerNumpy``); this module only
configures it for the registry (`pipelines.models.formats.onnx`):

- the example is one batch's (rows x features) float32 matrix, so `probability_inference` (the handler's
  ``inference_fn``) runs each example in ONE ``session.run`` and returns its (rows x classes) float64
  probability output; Beam pairs each example with that array (``PredictionResult.inference``);
- the session runs on the CPU provider with ``thread_count`` intra-op threads and one inter-op thread, set when
  the model is loaded (``onnxruntime.SessionOptions`` cannot be pickled, so it cannot travel in the handler);
- when the probabilities are the input of a ZipMap (CatBoost's ONNX export always ends in one; it turns the
  matrix into a list of per-row dictionaries), the session is built on the part of the graph that computes the
  matrix (`probability_graph`). The registered file itself is stored unchanged.

The session and the batch inference are `pipelines.models.formats.onnx_session`'s (no Beam there), which the format's
in-process ``predict`` and its registration probe use too.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import onnxruntime as ort
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.onnx_inference import OnnxModelHandlerNumpy

from pipelines.models.formats.onnx_session import PROVIDERS, make_session, probability_inference


class OnnxProbabilityHandler(OnnxModelHandlerNumpy):
    """Beam's ``OnnxModelHandlerNumpy`` on the registry's file, returning the probability output per example.

    Only the session is built differently (`make_session`: the thread count, and the graph up to ``output``);
    running, batching, model sharing and metrics are Beam's.
    """

    def __init__(self, model_uri: str, output: str, *, thread_count: int = 1, **kwargs):
        """
        Args:
            model_uri: the registered ``model.onnx`` (workers must see the path).
            output: the name of the (rows x classes) float probability tensor (from the registration).
            thread_count: onnxruntime's intra-op threads per worker.
            kwargs: Beam's batching and sharing arguments (``min_batch_size``, ``large_model``, ...).
        """
        super().__init__(str(model_uri), providers=list(PROVIDERS),
                         inference_fn=functools.partial(probability_inference, output=output), **kwargs)
        self.model_file = str(model_uri)
        self.output = output
        self.thread_count = max(1, int(thread_count))

    def __repr__(self) -> str:
        return f"OnnxProbabilityHandler({self.model_file}, output={self.output!r}, thread_count={self.thread_count})"

    def load_model(self) -> ort.InferenceSession:
        handle = FileSystems.open(self.model_file, "rb")
        try:
            data = handle.read()
        finally:
            handle.close()
        return make_session(data, self.output, self.thread_count)

    def get_num_bytes(self, batch: Sequence[np.ndarray]) -> int:
        return int(sum(np.asarray(matrix).nbytes for matrix in batch))


__all__ = ["OnnxProbabilityHandler"]
