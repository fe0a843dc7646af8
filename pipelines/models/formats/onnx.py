"""ONNX ``model.onnx``: a classifier exported from any framework (CatBoost, scikit-learn, LightGBM, XGBoost, ...).

The model reads ONE float tensor, (rows x features), holding the dataset's numeric features in the spec's order
(NaN = missing); categorical features are not fed (export a model trained on the numeric features, or encode the
categories into numeric columns of the dataset). Its class probabilities are a float (rows x classes) output: the
one named like "probabilities" / "probability", or the only float matrix output. A ZipMap over that matrix
(CatBoost's export always adds one; skl2onnx and onnxmltools do by default) is looked through: the model runs
up to the matrix (`pipelines.models.formats.onnx_handler.probability_graph`). An output that is a sequence of maps made some
other way is refused.

`inspect` parses the file (onnx, no code runs), checks the input against the dataset, picks the probability
output, then runs the model once in onnxruntime on a two-row probe to check the output really is a (rows x
classes) probability matrix for the dataset's class count. The runtime is Beam's ONNX handler
(`pipelines.models.formats.onnx_handler.OnnxProbabilityHandler`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.models.formats.base import MODEL_FORMATS, ModelFile, ModelFormat, check_probability_matrix
from pipelines.models.metadata import ModelMetadata

PROBE_ROWS = 2
PROBABILITY_TOLERANCE = 1e-4  # float32 outputs: a row of probabilities sums to 1 within this
EXPORT_HINT = ("export the probability matrix as a tensor (skl2onnx: options={id(model): {'zipmap': False}}; "
               "onnxmltools: zipmap=False)")


def feature_matrix(table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
    """The (rows x numeric features) float32 matrix of a validated batch, in the spec's order, NaN for missing."""
    out = np.empty((table.num_rows, len(dataset.numeric)), dtype=np.float32)
    for index, name in enumerate(dataset.numeric):
        out[:, index] = pc.cast(table.column(name), pa.float64()).to_numpy(zero_copy_only=False)
    return out


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def _read_model(path: Path):
    import onnx

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelDPInputError(f"{path}: cannot read the file ({exc})") from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf's DecodeError and friends: the bytes are not a ModelProto
        raise LabelDPInputError(f"{path}: not an ONNX model ({_one_line(exc)})") from None
    if not model.graph.node or not model.opset_import:
        raise LabelDPInputError(f"{path}: not an ONNX model (no graph to run)")
    if any(tensor.data_location == onnx.TensorProto.EXTERNAL for tensor in model.graph.initializer):
        raise LabelDPInputError(f"{path}: the model keeps tensors in external data files; save it as one file "
                                f"(onnx.save_model(model, path, save_as_external_data=False))")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx.checker.ValidationError and unknown-operator errors
        raise LabelDPInputError(f"{path}: not a valid ONNX model ({_one_line(exc)})") from None
    return data, model


def _type_text(value_type) -> str:
    import onnx

    return onnx.helper.printable_type(value_type) or "an untyped value"


def _check_input(model, path: Path, dataset: DatasetSpec) -> str:
    import onnx

    from pipelines.models.formats.onnx_session import graph_inputs

    width = len(dataset.numeric)
    where = f"dataset {dataset.name!r} ({dataset.describe()})"
    if not width:
        raise LabelDPInputError(f"{path}: {where} has no numeric features; an ONNX model reads the numeric "
                                f"features only")
    inputs = graph_inputs(model)
    if len(inputs) != 1:
        raise LabelDPInputError(f"{path}: the model has {len(inputs)} inputs {[item.name for item in inputs]}; a "
                                f"registered ONNX model reads one float tensor (rows x {width}) of the numeric "
                                f"features of {where}")
    item = inputs[0]
    tensor = item.type.tensor_type if item.type.WhichOneof("value") == "tensor_type" else None
    if tensor is None or tensor.elem_type != onnx.TensorProto.FLOAT:
        raise LabelDPInputError(f"{path}: input {item.name!r} is {_type_text(item.type)}; expected a float tensor "
                                f"(rows x {width})")
    if tensor.HasField("shape"):
        dims = tensor.shape.dim
        if len(dims) != 2:
            raise LabelDPInputError(f"{path}: input {item.name!r} has {len(dims)} dimension(s); expected 2 "
                                    f"(rows x {width} features)")
        if dims[1].HasField("dim_value") and dims[1].dim_value != width:
            raise LabelDPInputError(f"{path}: the model reads {dims[1].dim_value} features but {where} has {width} "
                                    f"numeric features {list(dataset.numeric)}")
    return item.name


def _is_float_matrix(item) -> bool:
    import onnx

    if item.type.WhichOneof("value") != "tensor_type":
        return False
    tensor = item.type.tensor_type
    if tensor.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
        return False
    return not tensor.HasField("shape") or len(tensor.shape.dim) == 2


def _pick(items: list[str]) -> str | None:
    """The one name that looks like a probability output, else the only name."""
    named = [name for name in items if "probab" in name.lower()]
    if len(named) == 1:
        return named[0]
    return items[0] if len(items) == 1 else None


def _probability_output(model, path: Path) -> tuple[str, str | None]:
    """(the tensor holding the probabilities, the ZipMap output it was found behind or None)."""
    outputs = list(model.graph.output)
    listing = ", ".join(f"{item.name} ({_type_text(item.type)})" for item in outputs)
    matrices = [item.name for item in outputs if _is_float_matrix(item)]
    if matrices:
        chosen = _pick(matrices)
        if chosen is None:
            raise LabelDPInputError(f"{path}: several float matrix outputs and none named like 'probabilities': "
                                    f"{listing}")
        return chosen, None
    producers = {name: node for node in model.graph.node for name in node.output}
    zipped = {item.name: producers[item.name].input[0] for item in outputs
              if item.name in producers and producers[item.name].op_type == "ZipMap"
              and producers[item.name].input and producers[item.name].input[0] in producers}
    if zipped:
        chosen = _pick(sorted(zipped))
        if chosen is None:
            raise LabelDPInputError(f"{path}: several ZipMap outputs and none named like 'probabilities': {listing}")
        return zipped[chosen], chosen
    if any(item.type.WhichOneof("value") in ("sequence_type", "map_type") for item in outputs):
        raise LabelDPInputError(f"{path}: the probabilities are a sequence of maps, not a tensor ({listing}); "
                                f"{EXPORT_HINT}")
    raise LabelDPInputError(f"{path}: no float (rows x classes) probability output among the outputs: {listing}")


def _probe(data: bytes, output: str, path: Path, dataset: DatasetSpec) -> int:
    """Runs the model on a small zero batch; returns its class count after checking the output is probabilities."""
    from pipelines.models.formats.onnx_session import make_session, probability_inference

    try:
        session = make_session(data, output)
    except Exception as exc:  # onnxruntime's Fail / InvalidGraph / NotImplemented ...
        raise LabelDPInputError(f"{path}: onnxruntime cannot load the model ({_one_line(exc)})") from None
    probe = np.zeros((PROBE_ROWS, len(dataset.numeric)), dtype=np.float32)
    try:
        result = probability_inference(session, [probe], output=output)[0]
    except Exception as exc:
        raise LabelDPInputError(f"{path}: onnxruntime failed on a probe batch of {PROBE_ROWS} x "
                                f"{len(dataset.numeric)} float32 features ({_one_line(exc)})") from None
    if result.ndim != 2 or result.shape[0] != PROBE_ROWS:
        raise LabelDPInputError(f"{path}: output {output!r} has shape {result.shape} for {PROBE_ROWS} rows; expected "
                                f"({PROBE_ROWS} x classes)")
    classes = result.shape[1]
    if classes != dataset.classes:
        raise LabelDPInputError(f"{path}: output {output!r} has {classes} class column(s) but dataset "
                                f"{dataset.name!r} ({dataset.describe()}) has {dataset.classes} classes")
    ok = (np.isfinite(result).all() and result.min() >= -PROBABILITY_TOLERANCE
          and result.max() <= 1 + PROBABILITY_TOLERANCE
          and np.abs(result.sum(axis=1) - 1).max() <= PROBABILITY_TOLERANCE)
    if not ok:
        raise LabelDPInputError(f"{path}: output {output!r} does not hold class probabilities (a probe row gives "
                                f"{np.round(result[0], 6).tolist()}, which is not in [0, 1] summing to 1); export "
                                f"the model's probability output")
    return classes


def recorded_output(metadata: ModelMetadata) -> str:
    """The probability output a registration recorded (``onnx.output``)."""
    if not metadata.onnx:
        raise LabelDPInputError(f"model {metadata.model_name!r} of {metadata.date.isoformat()}: its metadata lacks "
                                f"onnx.output (the probability output); register it again")
    return metadata.onnx.output


def check_reads(metadata: ModelMetadata, dataset: DatasetSpec) -> None:
    """LabelDPInputError unless the model was registered on ``dataset``'s numeric features, in this order."""
    recorded = metadata.feature_names
    if recorded != list(dataset.numeric):
        raise LabelDPInputError(f"model {metadata.model_name!r} of {metadata.date.isoformat()} reads "
                                f"the features {recorded}, not dataset {dataset.name!r}'s numeric features "
                                f"{list(dataset.numeric)}")


@MODEL_FORMATS.register
class OnnxFormat(ModelFormat):
    name = "onnx"
    description = "an ONNX classifier reading the dataset's numeric features as one float tensor"
    file_name = "model.onnx"

    def inspect(self, path: Path, dataset: DatasetSpec) -> dict:
        path = Path(path)
        data, model = _read_model(path)
        input_name = _check_input(model, path, dataset)
        output, zipmap = _probability_output(model, path)
        classes = _probe(data, output, path, dataset)
        return {"feature_schema": [{"name": name, "kind": "numeric"} for name in dataset.numeric],
                "classes": classes, "onnx": {"input": input_name, "output": output, "zipmap_output": zipmap}}

    def prepare(self, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        return feature_matrix(table, dataset)

    def handler(self, model: ModelFile, dataset: DatasetSpec, *, thread_count: int = 1):
        from pipelines.models.formats.onnx_handler import OnnxProbabilityHandler

        check_reads(model.meta, dataset)
        return OnnxProbabilityHandler(str(model.artifact), recorded_output(model.meta),
                                      thread_count=thread_count)

    def predict(self, model: ModelFile, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        from pipelines.models.formats.onnx_session import make_session, probability_inference

        check_reads(model.meta, dataset)
        output = recorded_output(model.meta)
        path = model.artifact
        try:
            session = make_session(path.read_bytes(), output)
        except OSError as exc:
            raise LabelDPInputError(f"{path}: cannot read the model ({exc})") from None
        result = probability_inference(session, [self.prepare(table, dataset)], output=output)[0]
        return check_probability_matrix(result, table.num_rows, f"model {model.name!r}")
