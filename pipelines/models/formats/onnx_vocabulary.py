"""The vocabularies an ONNX graph declares for its inputs, and the values outside them.

A graph input fed by one categorical column often goes straight into an operator that lists the values it knows
(possibly through Identity, Reshape, Squeeze, Unsqueeze, Flatten or a numeric Cast):

- ``OneHotEncoder`` (ai.onnx.ml; skl2onnx's OneHotEncoder): ``cats_strings`` / ``cats_int64s``; an unknown value
  is all zeros, or an error with ``zeros=0``;
- ``LabelEncoder`` (skl2onnx's OrdinalEncoder) and ``CategoryMapper``: their keys; an unknown value gets the
  default;
- ``Gather`` of an embedding table (an initializer; PyTorch's ``nn.Embedding``): the ids 0..rows-1; an id
  outside fails the graph.

Registration reports, of the probe's rows, the share outside each declared vocabulary
(`pipelines.models.metadata.VocabularyShare`); when the graph fails on a batch, the values a strict vocabulary
(one that fails on an unknown value) does not know name the column and the value in the error
(`pipelines.models.formats.onnx_feeds`). A graph that declares none (a tree ensemble's splits) has no share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_PASS_THROUGH = frozenset({"Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Cast"})
_ML = ("ai.onnx.ml",)


@dataclass(frozen=True)
class Vocabulary:
    """The values a graph knows for one of its inputs: a set of strings or integers, or the ids 0..size-1 of an
    embedding table (``embedding``); ``strict``: an unknown value fails the graph."""

    input: str
    operator: str
    size: int
    strict: bool
    strings: frozenset[str] | None = None
    integers: frozenset[int] | None = None
    embedding: bool = False

    def outside(self, values: np.ndarray) -> np.ndarray:
        """A mask of the ``values`` (as fed to the input) the vocabulary does not hold."""
        flat = np.asarray(values).reshape(-1)
        if self.strings is not None:
            known = self.strings
            return np.fromiter((value not in known for value in flat.tolist()), dtype=bool, count=flat.size)
        numbers = _numbers(flat)
        whole = np.isfinite(numbers) & (numbers == np.round(numbers))
        if self.embedding:
            return ~whole | (numbers < 0) | (numbers >= self.size)
        known = np.fromiter(self.integers or (), dtype=np.int64)
        return ~whole | ~np.isin(np.where(whole, numbers, 0).astype(np.int64), known)

    def fails(self, values: np.ndarray) -> np.ndarray:
        """A mask of the ``values`` the graph fails on (an embedding also takes -size..-1, from the end)."""
        if not self.strict:
            return np.zeros(np.asarray(values).size, dtype=bool)
        if self.embedding:
            numbers = _numbers(np.asarray(values).reshape(-1))
            return ~np.isfinite(numbers) | (numbers < -self.size) | (numbers >= self.size)
        return self.outside(values)

    def describe(self) -> str:
        what = "embedding ids 0.." + str(self.size - 1) if self.embedding else f"{self.size} values"
        return f"{self.operator}: {what}"


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _numbers(flat: np.ndarray) -> np.ndarray:
    """Values as float64 (text that is no number, fed through a Cast, as NaN: outside any integer vocabulary)."""
    if flat.dtype != object:
        return flat.astype(np.float64, copy=False)
    return np.fromiter((_number(value) for value in flat.tolist()), dtype=np.float64, count=flat.size)


def _attribute(node, name: str):
    import onnx

    for attribute in node.attribute:
        if attribute.name == name:
            return onnx.helper.get_attribute_value(attribute)
    return None


def _declared(node, tensor: str, initializers: dict) -> Vocabulary | None:
    """The vocabulary ``node`` declares for its input ``tensor``, or None."""
    import onnx.numpy_helper

    op, domain = node.op_type, node.domain or ""
    if op == "Gather" and domain == "" and len(node.input) == 2 and node.input[1] == tensor:
        table = initializers.get(node.input[0])
        axis = int(_attribute(node, "axis") or 0)
        if table is None or not table.dims:
            return None
        return Vocabulary(tensor, op, int(table.dims[axis]), strict=True, embedding=True)
    if domain not in _ML or not node.input or node.input[0] != tensor:
        return None
    if op in ("OneHotEncoder", "LabelEncoder", "CategoryMapper"):
        prefix = "cats" if op != "LabelEncoder" else "keys"
        strings, integers = _attribute(node, f"{prefix}_strings"), _attribute(node, f"{prefix}_int64s")
        if op == "LabelEncoder" and not strings and not integers and _attribute(node, "keys_tensor") is not None:
            values = onnx.numpy_helper.to_array(_attribute(node, "keys_tensor")).reshape(-1)
            strings = [v for v in values.tolist() if isinstance(v, str | bytes)] or None
            integers = [int(v) for v in values.tolist() if isinstance(v, int)] or None
        strict = op == "OneHotEncoder" and _attribute(node, "zeros") == 0
        if strings:
            known = frozenset(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in strings)
            return Vocabulary(tensor, op, len(known), strict, strings=known)
        if integers:
            known_ints = frozenset(int(v) for v in integers)
            return Vocabulary(tensor, op, len(known_ints), strict, integers=known_ints)
    return None


def declared_vocabularies(model, names: list[str] | None = None) -> dict[str, Vocabulary]:
    """Graph input name -> the vocabulary the graph declares for it (the first operator that declares one on the
    input's path through pass-through operators), for ``names`` (default: every input)."""
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    wanted = names if names is not None else [item.name for item in graph.input if item.name not in initializers]
    out = {}
    for name in wanted:
        reach = {name}
        for node in graph.node:  # nodes are in topological order
            for tensor in list(node.input):
                if tensor not in reach:
                    continue
                found = _declared(node, tensor, initializers)
                if found is not None:
                    out[name] = Vocabulary(name, found.operator, found.size, found.strict, found.strings,
                                           found.integers, found.embedding)
                    break
                if node.op_type in _PASS_THROUGH and node.input[0] == tensor:
                    reach.update(node.output)
            if name in out:
                break
    return out


__all__ = ["Vocabulary", "declared_vocabularies"]
