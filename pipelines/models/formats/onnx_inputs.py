"""Which dataset columns feed which input of an ONNX graph: read from the graph's inputs and the dataset spec, or
from a mapping file given at registration, checked, and recorded in the model's metadata
(`pipelines.models.metadata.OnnxInput`). docs/model_registry.md ("ONNX") is the user's side of it.

Every graph input is fed by one or more dataset columns, in order, as one element type
(`pipelines.models.formats.onnx_elements`: string, float, double or int64):

- an input named after a dataset feature is fed by that column; its shape is ``[rows]`` or ``[rows, 1]``
  (skl2onnx's ``StringTensorType([None, 1])`` per column of a ColumnTransformer, an embedding model's int64 ids);
- a graph with a single input named after no column, a float or double ``[rows, F]`` matrix, is fed the
  dataset's numeric features in the spec's order (the numeric-only export of CatBoost, scikit-learn or LightGBM);
- the mapping file names the columns of any input, in order (``{"input": ["f1", "f2", "device"]}``, or
  ``{"input": "device"}`` for one column): a float ``[rows, K]`` matrix of numeric features and integer-coded
  categoricals (LightGBM and XGBoost with native categorical splits, through onnxmltools), or graph names that
  differ from the dataset's. Inputs it does not name are matched as above.

An input no column feeds, of a type no column can feed (or a numeric column fed to a string input), of another
shape than its columns make, or with a fixed number of rows is refused, one line naming the input, its type and
shape, and the columns on offer. No onnxruntime here: the graph's declared types only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from labeldp.errors import LabelDPInputError, mention
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.data.layout import read_json_object
from pipelines.models.formats.onnx_elements import ONNX_ELEMENTS, OnnxElement, element_for
from pipelines.models.metadata import CATEGORICAL, NUMERIC, OnnxInput

MAPPING_FIELD = "onnx_inputs"  # the registration's field naming the mapping file


@dataclass(frozen=True)
class GraphInput:
    """A graph input as declared: its name, element type (None: a type no column feeds), the type's text, and
    its dimensions (an int for a fixed size, a name or None for a free one; ``dims`` None: no shape declared)."""

    name: str
    element: OnnxElement | None
    type_text: str
    dims: tuple[int | str | None, ...] | None

    @property
    def shape_text(self) -> str:
        if self.dims is None:
            return "no declared shape"
        return "[" + ", ".join("None" if not isinstance(dim, int) else str(dim) for dim in self.dims) + "]"

    def describe(self) -> str:
        return f"{self.name!r} ({self.type_text}, {self.shape_text})"


def graph_inputs_of(model) -> list[GraphInput]:
    """The graph's real inputs (not the initializers older exporters list as inputs), as declared."""
    from pipelines.models.formats.onnx_session import graph_inputs

    out = []
    for item in graph_inputs(model):
        tensor = item.type.tensor_type if item.type.WhichOneof("value") == "tensor_type" else None
        if tensor is None:
            out.append(GraphInput(item.name, None, _type_text(item.type), None))
            continue
        element = element_for(tensor.elem_type)
        dims = None
        if tensor.HasField("shape"):
            dims = tuple(dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None)
                         for dim in tensor.shape.dim)
        out.append(GraphInput(item.name, element, element.name if element else _elem_text(tensor.elem_type), dims))
    return out


def _elem_text(elem_type: int) -> str:
    import onnx

    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"element type {elem_type}"


def _type_text(value_type) -> str:
    import onnx

    return onnx.helper.printable_type(value_type) or "an untyped value"


def _offer(dataset: DatasetSpec) -> str:
    return (f"dataset {dataset.name!r} ({dataset.describe()}) offers the numeric columns {list(dataset.numeric)} and "
            f"the categorical columns {list(dataset.categorical)}")


def read_mapping(path: str | os.PathLike, names: list[str], dataset: DatasetSpec, model_path: Path
                 ) -> dict[str, tuple[str, ...]]:
    """The mapping file: a JSON object from graph input names to a column name or a list of them, in order.
    LabelDPInputError naming the file and the input for a name the graph lacks, a column the dataset lacks as a
    feature, or a malformed entry."""
    path = Path(path)
    data = read_json_object(path)
    if not data:
        raise LabelDPInputError(f"{path}: the mapping names no graph input; give {{\"input\": [\"column\", ...]}}")
    features = set(dataset.features)
    out = {}
    for name, value in data.items():
        if name not in names:
            raise LabelDPInputError(f"{path}: names graph input {name!r}, which {model_path} does not have (its "
                                    f"inputs: {names})")
        columns = [value] if isinstance(value, str) else value
        if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
            raise LabelDPInputError(f"{path}: graph input {name!r} must map to a column name or a non-empty list of "
                                    f"column names; got {value!r}")
        missing = [column for column in columns if column not in features]
        if missing:
            raise LabelDPInputError(f"{path}: graph input {name!r} is fed by column(s) {missing}, which are not "
                                    f"features of the dataset; {_offer(dataset)}")
        out[name] = tuple(columns)
    return out


def _kind(dataset: DatasetSpec, column: str) -> str:
    return NUMERIC if column in dataset.numeric else CATEGORICAL


def _binding(item: GraphInput, columns: tuple[str, ...], dataset: DatasetSpec, where: str) -> OnnxInput:
    """The input fed by ``columns``, after checking its type and shape fit them."""
    fed = f"graph input {item.describe()}"
    if item.element is None:
        raise LabelDPInputError(f"{where}: {fed} has a type no column can feed; a graph input is a tensor of "
                                f"{list(ONNX_ELEMENTS.names())}")
    wrong = [f"{column} ({_kind(dataset, column)})" for column in columns
             if _kind(dataset, column) not in item.element.kinds]
    if wrong:
        raise LabelDPInputError(f"{where}: {fed} is fed by column(s) {wrong}; a {item.element.name} input reads "
                                f"{' or '.join(item.element.kinds)} columns only; {_offer(dataset)}")
    dims, width = item.dims, len(columns)
    if dims is None:
        raise LabelDPInputError(f"{where}: {fed} declares no shape; export it as [rows] or [rows, {width}]")
    if len(dims) not in (1, 2) or (len(dims) == 1 and width != 1) or (
            len(dims) == 2 and isinstance(dims[1], int) and dims[1] != width):
        expected = "[rows] or [rows, 1]" if width == 1 else f"[rows, {width}]"
        raise LabelDPInputError(f"{where}: {fed} has the wrong shape for the {width} column(s) {list(columns)} that "
                                f"feed it: expected {expected}")
    if isinstance(dims[0], int):
        raise LabelDPInputError(f"{where}: {fed} has a fixed number of rows ({dims[0]}); export the graph with a "
                                f"free first dimension (e.g. None, or a dynamic axis 'batch')")
    return OnnxInput(item.name, tuple(columns), item.element.name, len(dims))


def match_inputs(model, path: Path, dataset: DatasetSpec, mapping: str | os.PathLike | None = None
                 ) -> tuple[OnnxInput, ...]:
    """The columns feeding each of the graph's inputs (module docstring), checked against the declared types and
    shapes; LabelDPInputError naming the input, its type and shape, and the columns on offer."""
    inputs = graph_inputs_of(model)
    if not inputs:
        raise LabelDPInputError(f"{path}: the graph has no input")
    named = read_mapping(mapping, [item.name for item in inputs], dataset, path) if mapping is not None else {}
    features = set(dataset.features)
    out = []
    for item in inputs:
        if item.name in named:
            out.append(_binding(item, named[item.name], dataset, str(path)))
        elif item.name in features:
            out.append(_binding(item, (item.name,), dataset, str(path)))
        elif (len(inputs) == 1 and dataset.numeric and item.element is not None and item.element.name in
              ("float", "double") and item.dims is not None and len(item.dims) == 2):
            width = item.dims[1]
            if isinstance(width, int) and width != len(dataset.numeric):
                raise LabelDPInputError(f"{path}: graph input {item.describe()} reads {width} features but dataset "
                                        f"{dataset.name!r} ({dataset.describe()}) has {len(dataset.numeric)} numeric "
                                        f"features {list(dataset.numeric)}; name the columns that feed it in a "
                                        f"mapping file ({mention(MAPPING_FIELD)})", field=MAPPING_FIELD)
            out.append(_binding(item, tuple(dataset.numeric), dataset, str(path)))
        else:
            raise LabelDPInputError(f"{path}: graph input {item.describe()} is fed by no column: no dataset column "
                                    f"has its name; {_offer(dataset)}; name the columns that feed it in a mapping "
                                    f"file ({mention(MAPPING_FIELD)})", field=MAPPING_FIELD)
    return tuple(out)


__all__ = ["MAPPING_FIELD", "GraphInput", "graph_inputs_of", "match_inputs", "read_mapping"]
