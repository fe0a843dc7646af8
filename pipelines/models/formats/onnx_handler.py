"""Running a registered ONNX model: Beam's own ONNX handler, told which output holds the class probabilities.

Beam ships the ONNX runner (``apache_beam.ml.inference.onnx_inference.OnnxModelHandlerNumpy``); this module only
configures it for the registry (`pipelines.models.formats.onnx`):

- the example is one batch's typed columns (an Arrow table: ``row_id`` and the features, as the partition stores
  them); `probability_inference` (the handler's ``inference_fn``) feeds them as a dict of the graph's named
  inputs, by the columns the registration recorded for each (`pipelines.models.metadata.OnnxInput`,
  `pipelines.models.formats.onnx_feeds`), in ONE ``session.run`` per example, and returns its (rows x classes)
  float64 probability output; Beam pairs each example with that array (``PredictionResult.inference``);
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
from collections.abc import Mapping, Sequence

import onnxruntime as ort
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.onnx_inference import OnnxModelHandlerNumpy

from pipelines.models.formats.onnx_session import PROVIDERS, make_session, probability_inference
from pipelines.models.formats.onnx_vocabulary import Vocabulary
from pipelines.models.metadata import OnnxInput


class OnnxProbabilityHandler(OnnxModelHandlerNumpy):
    """Beam's ``OnnxModelHandlerNumpy`` on the registry's file, returning the probability output per example.

    Only the session is built differently (`make_session`: the thread count, and the graph up to ``output``);
    running, batching, model sharing and metrics are Beam's.
    """

    def __init__(self, model_uri: str, output: str, inputs: Sequence[OnnxInput], *, model_id: str = "",
                 strict: Mapping[str, Vocabulary] | None = None, thread_count: int = 1, **kwargs):
        """
        Args:
            model_uri: the registered ``model.onnx`` (workers must see the path).
            output: the name of the (rows x classes) float probability tensor (from the registration).
            inputs: the graph's inputs and the columns feeding each (from the registration).
            model_id: how errors name the model (``name@date``).
            strict: the vocabularies that fail the graph on an unknown value, by input (to name the value).
            thread_count: onnxruntime's intra-op threads per worker.
            kwargs: Beam's batching and sharing arguments (``min_batch_size``, ``large_model``, ...).
        """
        where = f"model {model_id or model_uri}"
        super().__init__(str(model_uri), providers=list(PROVIDERS),
                         inference_fn=functools.partial(probability_inference, output=output, inputs=tuple(inputs),
                                                        where=where, strict=dict(strict or {})), **kwargs)
        self.model_file = str(model_uri)
        self.output = output
        self.inputs = tuple(inputs)
        self.thread_count = max(1, int(thread_count))

    def __repr__(self) -> str:
        return (f"OnnxProbabilityHandler({self.model_file}, inputs={[item.name for item in self.inputs]}, "
                f"output={self.output!r}, thread_count={self.thread_count})")

    def load_model(self) -> ort.InferenceSession:
        handle = FileSystems.open(self.model_file, "rb")
        try:
            data = handle.read()
        finally:
            handle.close()
        return make_session(data, self.output, self.thread_count)

    def get_num_bytes(self, batch: Sequence[pa.Table]) -> int:
        return int(sum(table.nbytes for table in batch))


__all__ = ["OnnxProbabilityHandler"]
