"""Small ONNX classifiers built with onnx's own helper, for the tests of the ONNX input mapping: any set of graph
inputs (string, float, double, int64; [rows], [rows, 1] or [rows, K]), each turned into one float signal per row,
summed, and returned as the (rows x 2) probabilities [1 - sigmoid, sigmoid] under the output "probabilities".

- a string input goes through a LabelEncoder (ai.onnx.ml) from its vocabulary to per-value weights (unknown: 0),
  or a OneHotEncoder with ``zeros=0`` (``strict``) that fails on an unknown value;
- an int64 input with ``embedding=N`` is looked up in an N-row embedding table (Gather, as PyTorch's
  ``nn.Embedding`` exports): an id outside 0..N-1 fails the graph, as in PyTorch;
- a numeric input is cast to float, NaN counted as 0, and its columns summed with a weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TYPES = {"string": TensorProto.STRING, "float": TensorProto.FLOAT, "double": TensorProto.DOUBLE,
         "int64": TensorProto.INT64, "int32": TensorProto.INT32, "bool": TensorProto.BOOL}


@dataclass
class Input:
    name: str
    type: str
    dims: list  # e.g. [None, 1]; None = a free dimension
    vocabulary: list[str] = field(default_factory=list)  # string inputs
    weights: np.ndarray | None = None  # per vocabulary value / embedding row
    embedding: int = 0  # int64 inputs: an embedding table of this many rows
    strict: bool = False  # string inputs: a OneHotEncoder that fails on an unknown value
    weight: float = 0.3  # numeric inputs


def build(inputs: list[Input], *, opset: int = 17, batch: str = "batch") -> onnx.ModelProto:
    nodes, initializers, signals = [], [], []

    def const(name, array):
        initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    const("minus_one_one", np.array([-1, 1], dtype=np.int64))
    const("axis1", np.array([1], dtype=np.int64))
    const("zero", np.array(0.0, dtype=np.float32))
    for item in inputs:
        n = item.name
        width = item.dims[1] if len(item.dims) == 2 and isinstance(item.dims[1], int) else 1
        if item.type == "string":
            weights = item.weights if item.weights is not None else np.linspace(-1, 1, len(item.vocabulary))
            if item.strict:
                nodes.append(helper.make_node("OneHotEncoder", [n], [f"{n}_hot"], domain="ai.onnx.ml",
                                              cats_strings=item.vocabulary, zeros=0))
                nodes.append(helper.make_node("MatMul", [f"{n}_hot", const(f"{n}_w", weights.astype(np.float32)
                                                                            .reshape(-1, 1))], [f"{n}_m"]))
                value = f"{n}_m"
            else:
                nodes.append(helper.make_node("LabelEncoder", [n], [f"{n}_v"], domain="ai.onnx.ml",
                                              keys_strings=item.vocabulary,
                                              values_floats=[float(w) for w in weights], default_float=0.0))
                value = f"{n}_v"
        elif item.embedding:
            table = (item.weights if item.weights is not None else np.linspace(-1, 1, item.embedding)).astype(
                np.float32).reshape(-1, 1)
            nodes.append(helper.make_node("Gather", [const(f"{n}_table", table), n], [f"{n}_e"], axis=0))
            value = f"{n}_e"
        else:
            nodes.append(helper.make_node("Cast", [n], [f"{n}_f"], to=TensorProto.FLOAT))
            nodes.append(helper.make_node("IsNaN", [f"{n}_f"], [f"{n}_nan"]))
            nodes.append(helper.make_node("Where", [f"{n}_nan", "zero", f"{n}_f"], [f"{n}_z"]))
            nodes.append(helper.make_node("Mul", [f"{n}_z", const(f"{n}_w", np.array(item.weight, np.float32))],
                                          [f"{n}_s"]))
            value = f"{n}_s"
        nodes.append(helper.make_node("Reshape", [value, "minus_one_one" if width == 1 else
                                                  const(f"{n}_shape", np.array([-1, width], np.int64))],
                                      [f"{n}_r"]))
        nodes.append(helper.make_node("ReduceSum", [f"{n}_r", "axis1"], [f"{n}_sig"], keepdims=1))
        signals.append(f"{n}_sig")
    nodes.append(helper.make_node("Sum", signals, ["logit"]))
    nodes.append(helper.make_node("Sigmoid", ["logit"], ["p1"]))
    nodes.append(helper.make_node("Sub", [const("one", np.array(1.0, np.float32)), "p1"], ["p0"]))
    nodes.append(helper.make_node("Concat", ["p0", "p1"], ["probabilities"], axis=1))
    graph_inputs = [helper.make_tensor_value_info(item.name, TYPES[item.type],
                                                  [batch if d is None else d for d in item.dims]) for item in inputs]
    output = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [batch, 2])
    graph = helper.make_graph(nodes, "test_classifier", graph_inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def save(model: onnx.ModelProto, path) -> str:
    onnx.save_model(model, str(path))
    return str(path)


__all__ = ["Input", "build", "save"]
