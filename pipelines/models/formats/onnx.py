"""ONNX ``model.onnx``: a classifier exported from any framework (scikit-learn, LightGBM, XGBoost, PyTorch, CatBoost
without categorical features, ...).

The graph's inputs are fed from the dataset's columns as `pipelines.models.formats.onnx_inputs` maps them: one
input per column named after it (a string tensor for a categorical, float, double or int64 for a numeric or an
integer-coded categorical), one float tensor of the numeric features, or the columns a mapping file names, in
order. The values reach the graph as the partition stores them (`pipelines.models.formats.onnx_elements`). Its
class probabilities are a float (rows x classes) output: the one named like "probabilities" / "probability", or
the only float matrix output. A ZipMap over that matrix (CatBoost's export always adds one; skl2onnx and
onnxmltools do by default) is looked through: the model runs up to the matrix
(`pipelines.models.formats.onnx_session.probability_graph`). An output that is a sequence of maps made some other
way is refused.

`inspect` parses the file (onnx, no code runs), maps and checks its inputs, picks the probability output, then
runs the model in onnxruntime on a probe: up to `OnnxFormat.probe_rows` real rows of the model's day (a keyed
sample; two made-up rows when the day has no partition), checking the output really is a (rows x classes)
probability matrix for the dataset's class count, and measuring the share of the probe's values outside each
vocabulary the graph declares (`pipelines.models.formats.onnx_vocabulary`). The runtime is Beam's ONNX handler
(`pipelines.models.formats.onnx_handler.OnnxProbabilityHandler`).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow as pa

from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import INTERNAL_ROW_ID, DatasetSpec
from pipelines.models.formats.base import (
    MODEL_FORMATS,
    ModelFile,
    ModelFormat,
    Offer,
    check_model_features,
    check_probability_matrix,
)
from pipelines.models.formats.onnx_feeds import input_feeds, one_line, run_graph
from pipelines.models.formats.onnx_inputs import match_inputs
from pipelines.models.formats.onnx_vocabulary import Vocabulary, declared_vocabularies
from pipelines.models.metadata import (
    CATEGORICAL,
    NUMERIC,
    ModelMetadata,
    OnnxInput,
    OnnxPart,
    OnnxProbe,
    VocabularyShare,
)

PROBE_ROWS = 2
PROBABILITY_TOLERANCE = 1e-4  # float32 outputs: a row of probabilities sums to 1 within this
EXPORT_HINT = ("export the probability matrix as a tensor (skl2onnx: options={id(model): {'zipmap': False}}; "
               "onnxmltools: zipmap=False)")


def _read_model(path: Path):
    import onnx

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelDPInputError(f"{path}: cannot read the file ({exc})") from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf's DecodeError and friends: the bytes are not a ModelProto
        raise LabelDPInputError(f"{path}: not an ONNX model ({one_line(exc)})") from None
    if not model.graph.node or not model.opset_import:
        raise LabelDPInputError(f"{path}: not an ONNX model (no graph to run)")
    if any(tensor.data_location == onnx.TensorProto.EXTERNAL for tensor in model.graph.initializer):
        raise LabelDPInputError(f"{path}: the model keeps tensors in external data files; save it as one file "
                                f"(onnx.save_model(model, path, save_as_external_data=False))")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # onnx.checker.ValidationError and unknown-operator errors
        raise LabelDPInputError(f"{path}: not a valid ONNX model ({one_line(exc)})") from None
    return data, model


def _type_text(value_type) -> str:
    import onnx

    return onnx.helper.printable_type(value_type) or "an untyped value"


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


def _synthetic_probe(dataset: DatasetSpec, columns: list[str]) -> pa.Table:
    """Two made-up rows for a day without a partition: 0 in every numeric column, "0" in every categorical one."""
    data = {INTERNAL_ROW_ID: pa.array(range(PROBE_ROWS), pa.int64())}
    for name in columns:
        data[name] = (pa.array([0.0] * PROBE_ROWS) if name in dataset.numeric else pa.array(["0"] * PROBE_ROWS))
    return pa.table(data)


def _probe(data: bytes, model, inputs: tuple[OnnxInput, ...], output: str, path: Path, dataset: DatasetSpec,
           rows: pa.Table | None) -> tuple[int, OnnxProbe]:
    """Runs the model on the probe rows; returns its class count after checking the output is probabilities, and
    the probe's record (the share of values outside each declared vocabulary)."""
    from pipelines.models.formats.onnx_session import make_session

    columns = list(dict.fromkeys(name for item in inputs for name in item.columns))
    real = rows is not None and rows.num_rows > 0
    table = rows.select([INTERNAL_ROW_ID, *columns]) if real else _synthetic_probe(dataset, columns)
    where = f"{path} (probe on {table.num_rows} {'real rows of the day' if real else 'made-up rows'})"
    try:
        session = make_session(data, output)
    except Exception as exc:  # onnxruntime's Fail / InvalidGraph / NotImplemented ...
        raise LabelDPInputError(f"{path}: onnxruntime cannot load the model ({one_line(exc)})") from None
    vocabularies = declared_vocabularies(model, [item.name for item in inputs])
    strict = {name: vocabulary for name, vocabulary in vocabularies.items() if vocabulary.strict}
    result = run_graph(session, output, inputs, table, where, strict)
    rows_fed = table.num_rows
    if result.ndim != 2 or result.shape[0] != rows_fed:
        raise LabelDPInputError(f"{path}: output {output!r} has shape {result.shape} for {rows_fed} rows; expected "
                                f"({rows_fed} x classes)")
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
    shares = []
    if real:
        feeds = input_feeds(inputs, table, where)
        for item in inputs:
            vocabulary = vocabularies.get(item.name)
            if vocabulary is not None and len(item.columns) == 1:
                share = float(vocabulary.outside(feeds[item.name]).mean())
                shares.append(VocabularyShare(item.columns[0], item.name, vocabulary.operator, vocabulary.size,
                                              round(share, 6)))
    return classes, OnnxProbe(rows_fed if real else 0, tuple(shares))


def recorded_output(metadata: ModelMetadata) -> str:
    """The probability output a registration recorded (``onnx.output``)."""
    return _recorded(metadata).output


def _recorded(metadata: ModelMetadata) -> OnnxPart:
    if not metadata.onnx:
        raise LabelDPInputError(f"model {metadata.model_name!r} of {metadata.date.isoformat()}: its metadata lacks "
                                f"its onnx part (the inputs and the probability output); register it again")
    return metadata.onnx


def check_reads(metadata: ModelMetadata, dataset: DatasetSpec) -> None:
    """LabelDPInputError unless every column feeding the graph is a feature of ``dataset``, of the kind the
    registration recorded."""
    where = f"model {metadata.model_name!r} of {metadata.date.isoformat()}"
    schema = encode(metadata.feature_schema)
    check_model_features(schema, dataset, where)
    unrecorded = [name for name in _recorded(metadata).columns if name not in metadata.feature_names]
    if unrecorded:
        raise LabelDPInputError(f"{where}: its graph is fed by column(s) {unrecorded} missing from its "
                                f"feature_schema; register it again")


def strict_vocabularies(path: Path, inputs: tuple[OnnxInput, ...]) -> dict[str, Vocabulary]:
    """The vocabularies the graph at ``path`` declares that fail it on an unknown value, by input (so that an
    error names the value)."""
    import onnx

    try:
        model = onnx.load_model_from_string(Path(path).read_bytes())
    except OSError as exc:
        raise LabelDPInputError(f"{path}: cannot read the model ({exc})") from None
    found = declared_vocabularies(model, [item.name for item in inputs])
    return {name: vocabulary for name, vocabulary in found.items() if vocabulary.strict}


@MODEL_FORMATS.register
class OnnxFormat(ModelFormat):
    name = "onnx"
    description = "an ONNX classifier fed one input per column, the numeric matrix, or a mapping file's inputs"
    file_name = "model.onnx"
    probe_rows: ClassVar[int] = 1000
    takes_input_mapping: ClassVar[bool] = True

    def inspect(self, path: Path, dataset: DatasetSpec, offer: Offer | None = None) -> dict:
        path, offer = Path(path), offer or Offer()
        data, model = _read_model(path)
        inputs = match_inputs(model, path, dataset, offer.input_mapping)
        output, zipmap = _probability_output(model, path)
        classes, probe = _probe(data, model, inputs, output, path, dataset, offer.probe)
        part = OnnxPart(inputs, output, zipmap, probe)
        kinds = {name: NUMERIC for name in dataset.numeric} | {name: CATEGORICAL for name in dataset.categorical}
        return {"feature_schema": [{"name": name, "kind": kinds[name]} for name in part.columns],
                "classes": classes, "onnx": encode(part)}

    def prepare(self, table: pa.Table, dataset: DatasetSpec) -> pa.Table:
        """The batch's typed columns: the row keys (for messages) and the features, as stored."""
        return table.select([INTERNAL_ROW_ID, *dataset.features])

    def handler(self, model: ModelFile, dataset: DatasetSpec, *, thread_count: int = 1):
        from pipelines.models.formats.onnx_handler import OnnxProbabilityHandler

        check_reads(model.meta, dataset)
        part = _recorded(model.meta)
        return OnnxProbabilityHandler(str(model.artifact), part.output, part.inputs,
                                      model_id=f"{model.name}@{model.date.isoformat()}",
                                      strict=strict_vocabularies(model.artifact, part.inputs),
                                      thread_count=thread_count)

    def predict(self, model: ModelFile, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        from pipelines.models.formats.onnx_session import make_session, probability_inference

        check_reads(model.meta, dataset)
        part = _recorded(model.meta)
        path = model.artifact
        try:
            session = make_session(path.read_bytes(), part.output)
        except OSError as exc:
            raise LabelDPInputError(f"{path}: cannot read the model ({exc})") from None
        result = probability_inference(session, [self.prepare(table, dataset)], output=part.output,
                                       inputs=part.inputs, where=f"model {model.name}@{model.date.isoformat()}",
                                       strict=strict_vocabularies(path, part.inputs))[0]
        return check_probability_matrix(result, table.num_rows, f"model {model.name!r}")
