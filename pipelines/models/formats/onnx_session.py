"""Registered ONNX models in onnxruntime, without Beam: the session (CPU, the graph up to the probability output)
and the batch inference (the batch's typed columns fed as the graph's named inputs,
`pipelines.models.formats.onnx_feeds`). The format's registration probe and in-process ``predict``
(`pipelines.models.formats.onnx`) and the Beam handler (`pipelines.models.formats.onnx_handler`) all run these, so the three
paths run the same graph the same way.

When the probabilities are the input of a ZipMap (CatBoost's ONNX export always ends in one; it turns the
matrix into a list of per-row dictionaries), the session is built on the part of the graph that computes the
matrix (`probability_graph`). The registered file itself is stored unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort
import pyarrow as pa

from pipelines.models.formats.onnx_feeds import run_graph
from pipelines.models.formats.onnx_vocabulary import Vocabulary
from pipelines.models.metadata import OnnxInput

PROVIDERS = ("CPUExecutionProvider",)


def graph_inputs(model: onnx.ModelProto) -> list:
    """The graph's real inputs (older exporters also list the initializers as inputs)."""
    constants = {tensor.name for tensor in model.graph.initializer}
    return [item for item in model.graph.input if item.name not in constants]


def probability_graph(model: onnx.ModelProto, output: str) -> onnx.ModelProto:
    """``model`` itself when ``output`` is one of its outputs; else the part of it computing ``output`` from the
    inputs (an internal tensor, e.g. the matrix a ZipMap reformats), with ``output`` as its only output."""
    if output in {item.name for item in model.graph.output}:
        return model
    names = [item.name for item in graph_inputs(model)]
    return onnx.utils.Extractor(model).extract_model(names, [output])


def make_session(model_bytes: bytes, output: str, thread_count: int = 1) -> ort.InferenceSession:
    """An onnxruntime session (CPU) that can fetch ``output``."""
    model = probability_graph(onnx.load_model_from_string(model_bytes), output)
    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, int(thread_count))
    options.inter_op_num_threads = 1
    # onnxruntime's own log lines (a failed node, an unused initializer) would go to stderr beside the one line
    # that names the column and value (`pipelines.models.formats.onnx_feeds`); only fatal ones are kept
    options.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), sess_options=options, providers=list(PROVIDERS))


def probability_inference(session: ort.InferenceSession, batch: Sequence[pa.Table],
                          inference_args: dict[str, Any] | None = None, *, output: str,
                          inputs: Sequence[OnnxInput], where: str,
                          strict: Mapping[str, Vocabulary] | None = None) -> list[np.ndarray]:
    """The handler's ``inference_fn``: one ``session.run`` per example (a batch's typed columns, fed as a dict
    of the graph's named ``inputs``), returning the (rows x classes) float64 value of ``output`` for each.
    ``where`` names the model in errors; ``strict``: the vocabularies that fail the graph on an unknown value
    (`pipelines.models.formats.onnx_feeds.run_graph`). ``inference_args`` are not used (Beam passes them)."""
    return [run_graph(session, output, inputs, table, where, strict) for table in batch]


__all__ = ["PROVIDERS", "graph_inputs", "make_session", "probability_graph", "probability_inference"]
