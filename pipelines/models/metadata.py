"""A model's ``metadata.json`` as a typed, frozen record (`ModelMetadata`), with the records nested in it.

`ModelMetadata.from_dict` is the one reader of the stored JSON (`pipelines.models.registry.read_metadata` calls it
where ``metadata.json`` is loaded): it names the file and the field of a missing, unknown or malformed key. Keys
added after the first models were written (every key outside `REQUIRED`) may be absent; they read as `ABSENT`.
``to_dict`` writes exactly the JSON the writers have always written: a key that was absent stays absent, a null
stays null (`ABSENT` is not None), numbers keep their JSON type (an infinite epsilon is ``"inf"``).

The producers (`pipelines.training.train.register`, `pipelines.models.registration.register_model`) build the
record; the consumers read its attributes. Parts a model kind owns and whose reader lives with it (the CatBoost
parameters, the test metrics, a noise correction, the split names, a control's or a recalibration's record, the
held-out rows, the dataset's spec) are kept as their JSON objects.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from labeldp.errors import LabelDPInputError

REQUIRED = ("metadata_version", "model_name", "date", "mechanism", "seed", "partition_fingerprint",
            "feature_schema", "catboost_params", "test_metrics", "code_version", "created_at")
NUMERIC = "numeric"
CATEGORICAL = "categorical"
DEFAULT_FORMAT = "catboost"
DEFAULT_MODEL_FILE = "model.cbm"
ORACLE_MODEL_TYPE = "rr-label-oracle"  # the positive control, written before formats existed: its format
TRAINED = "trained"  # the ``source`` of a model without one
# The version the writers write. 2: an ONNX model records the columns that feed each graph input
# (``onnx.inputs``); a version-1 ONNX part (one float input of the numeric features, ``onnx.input``) is read as
# its version-2 form (`upgraded`). Nothing else differs, so other version-1 files read and write back unchanged.
METADATA_VERSION = 2


class Absent:
    """The value of a key the JSON does not have (falsy; not None, which is a JSON null). One instance: `ABSENT`."""

    _instance: Absent | None = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self):
        return "ABSENT"


ABSENT = Absent()


# ------------------------------------------------------------------------------------------------ reading


class _Part:
    """One JSON object of the metadata being read: its keys checked against the record's (unknown and missing
    ones named with their path), its values read by ``value``."""

    def __init__(self, data: Any, where: str, path: str, known: tuple[str, ...], required: tuple[str, ...] = ()):
        if not isinstance(data, Mapping):
            raise LabelDPInputError(f"{where}: {path or 'the metadata'} must be a JSON object; got {data!r}")
        self.data, self.where, self.path = data, where, path
        unknown = sorted(key for key in data if key not in known)
        if unknown:
            raise LabelDPInputError(f"{where}: unknown key(s) {[self._name(key) for key in unknown]}")
        missing = [self._name(key) for key in required if key not in data]
        if missing:
            raise LabelDPInputError(f"{where}: missing key(s) {missing}")

    def _name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def value(self, key: str, read: Callable[[Any, str, str], Any]) -> Any:
        """The key's value read by ``read(value, where, field)``; `ABSENT` when the object lacks it."""
        if key not in self.data:
            return ABSENT
        return read(self.data[key], self.where, self._name(key))


def _bad(where: str, field: str, wanted: str, value: Any) -> LabelDPInputError:
    return LabelDPInputError(f"{where}: {field} must be {wanted}; got {value!r}")


def _nullable(read: Callable[[Any, str, str], Any]) -> Callable[[Any, str, str], Any]:
    return lambda value, where, field: None if value is None else read(value, where, field)


def _text(value, where, field) -> str:
    if not isinstance(value, str):
        raise _bad(where, field, "a string", value)
    return value


def _whole(value, where, field) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(where, field, "a whole number", value)
    return value


def _count(value, where, field) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(where, field, "a whole number >= 0", value)
    return value


def _number(value, where, field) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(where, field, "a number", value)
    return value  # an int stays an int: to_dict writes it back as it was


def _flag(value, where, field) -> bool:
    if not isinstance(value, bool):
        raise _bad(where, field, "true or false", value)
    return value


def _object(value, where, field) -> dict:
    if not isinstance(value, dict):
        raise _bad(where, field, "a JSON object", value)
    return value


def _day(value, where, field) -> dt.date:
    try:
        day = dt.date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        day = None
    if day is None or day.isoformat() != value:
        raise _bad(where, field, "a date YYYY-MM-DD", value)
    return day


def _epsilon(value, where, field) -> float:
    if value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0 or math.isinf(value):
        raise _bad(where, field, 'a number >= 0 or "inf"', value)
    return value


def _texts(value, where, field) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _bad(where, field, "a list of strings", value)
    return tuple(_text(item, where, f"{field}[{index}]") for index, item in enumerate(value))


def _wholes(value, where, field) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _bad(where, field, "a list of whole numbers", value)
    return tuple(_whole(item, where, f"{field}[{index}]") for index, item in enumerate(value))


def _list_of(cls) -> Callable[[Any, str, str], tuple]:
    """A reader of a JSON list of ``cls`` records."""
    def read(value, where, field):
        if not isinstance(value, list):
            raise _bad(where, field, "a list of JSON objects", value)
        return tuple(cls.from_dict(item, where, f"{field}[{index}]") for index, item in enumerate(value))
    return read


def _present(items: dict) -> dict:
    """``items`` without its `ABSENT` values (the keys the JSON does not have)."""
    return {key: value for key, value in items.items() if value is not ABSENT}


# ------------------------------------------------------------------------------------------------ nested records


@dataclass(frozen=True)
class FeatureColumn:
    """One column the model reads: its name and kind (``numeric`` or ``categorical``)."""

    name: str
    kind: str

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> FeatureColumn:
        part = _Part(data, where, path, ("name", "kind"), ("name", "kind"))
        kind = part.value("kind", _text)
        if kind not in (NUMERIC, CATEGORICAL):
            raise _bad(where, f"{path}.kind", f"{NUMERIC!r} or {CATEGORICAL!r}", kind)
        return cls(part.value("name", _text), kind)

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind}


@dataclass(frozen=True)
class MechanismRecord:
    """The label-DP mechanism and its claim: ``epsilon`` (``math.inf``: no claim) and ``delta``. A trained model
    records the mechanism's ``unit``, ``guarantee``, ``parameters`` and ``catboost_seed``; a control its
    ``guarantee``; a registered model only its claim."""

    name: str
    epsilon: float
    delta: float
    unit: str | Absent | None = ABSENT
    guarantee: str | Absent | None = ABSENT
    parameters: dict | Absent | None = ABSENT
    catboost_seed: int | Absent | None = ABSENT

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> MechanismRecord:
        part = _Part(data, where, path, ("name", "epsilon", "delta", "unit", "guarantee", "parameters",
                                         "catboost_seed"), ("name", "epsilon", "delta"))
        return cls(name=part.value("name", _text), epsilon=part.value("epsilon", _epsilon),
                   delta=part.value("delta", _number), unit=part.value("unit", _nullable(_text)),
                   guarantee=part.value("guarantee", _nullable(_text)),
                   parameters=part.value("parameters", _nullable(_object)),
                   catboost_seed=part.value("catboost_seed", _nullable(_whole)))

    def to_dict(self) -> dict:
        return _present({"name": self.name, "epsilon": "inf" if math.isinf(self.epsilon) else self.epsilon,
                         "delta": self.delta, "unit": self.unit, "guarantee": self.guarantee,
                         "parameters": self.parameters, "catboost_seed": self.catboost_seed})


@dataclass(frozen=True)
class DatasetRecord:
    """The dataset spec the model reads: its name, fingerprint and the spec itself (``DatasetSpec.to_dict``)."""

    name: str
    fingerprint: str
    spec: dict

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> DatasetRecord:
        part = _Part(data, where, path, ("name", "fingerprint", "spec"), ("name", "fingerprint", "spec"))
        return cls(part.value("name", _text), part.value("fingerprint", _text), part.value("spec", _object))

    def to_dict(self) -> dict:
        return {"name": self.name, "fingerprint": self.fingerprint, "spec": self.spec}


@dataclass(frozen=True)
class CodeVersion:
    """The code that wrote the metadata: package, version, git commit and whether the checkout was dirty."""

    package: str | Absent | None = ABSENT
    version: str | Absent | None = ABSENT
    git_commit: str | Absent | None = ABSENT
    git_dirty: bool | Absent | None = ABSENT

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> CodeVersion:
        part = _Part(data, where, path, ("package", "version", "git_commit", "git_dirty"))
        return cls(package=part.value("package", _nullable(_text)), version=part.value("version", _nullable(_text)),
                   git_commit=part.value("git_commit", _nullable(_text)),
                   git_dirty=part.value("git_dirty", _nullable(_flag)))

    def to_dict(self) -> dict:
        return _present({"package": self.package, "version": self.version, "git_commit": self.git_commit,
                         "git_dirty": self.git_dirty})


ALL_ROWS = "all"
KEYS = "keys"


@dataclass(frozen=True)
class TrainingRows:
    """Which rows' labels trained the model. ``kind`` ``"all"`` (every row of the day; ``rows`` None without a
    partition), ``"keys"`` (the keys listed in ``file``, with its ``fingerprint``), or `ABSENT`: the split record
    of a model trained here (``split`` scheme, ``label_splits`` read, ``validation_labels_used_for``,
    ``unread_row_ids``). `pipelines.scoring.audit_rows` turns it into the audited rows."""

    kind: str | Absent = ABSENT
    rows: int | Absent | None = ABSENT
    file: str | Absent = ABSENT
    fingerprint: str | Absent | None = ABSENT
    split: dict | Absent = ABSENT
    label_splits: tuple[str, ...] | Absent = ABSENT
    validation_labels_used_for: tuple[str, ...] | Absent = ABSENT
    unread_row_ids: tuple[int, ...] | Absent = ABSENT

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> TrainingRows:
        part = _Part(data, where, path, ("kind", "rows", "file", "fingerprint", "split", "label_splits",
                                         "validation_labels_used_for", "unread_row_ids"))
        kind = part.value("kind", _text)
        if kind not in (ABSENT, ALL_ROWS, KEYS):
            raise LabelDPInputError(f"{where}: unknown {path}.kind {kind!r} (known: {KEYS!r}, {ALL_ROWS!r}, or the "
                                    f"split-scheme record without a kind)")
        return cls(kind=kind, rows=part.value("rows", _nullable(_count)), file=part.value("file", _text),
                   fingerprint=part.value("fingerprint", _nullable(_text)), split=part.value("split", _object),
                   label_splits=part.value("label_splits", _texts),
                   validation_labels_used_for=part.value("validation_labels_used_for", _texts),
                   unread_row_ids=part.value("unread_row_ids", _wholes))

    @property
    def kind_name(self) -> str:
        """``"all"``, ``"keys"`` or ``"split"`` (the record of a model trained here)."""
        return self.kind or "split"

    def to_dict(self) -> dict:
        lists = {key: list(value) if value is not ABSENT else ABSENT for key, value in (
            ("label_splits", self.label_splits), ("validation_labels_used_for", self.validation_labels_used_for),
            ("unread_row_ids", self.unread_row_ids))}
        return _present({"kind": self.kind, "rows": self.rows, "file": self.file, "fingerprint": self.fingerprint,
                         "split": self.split, **lists})


@dataclass(frozen=True)
class Lineage:
    """The model another one derives from (its metadata's ``reference``): a trained model's reference (its
    ``model_name``, ``date``, ``partition_fingerprint`` and whether it was ``used_as_prior``), the reference a
    negative control copies (``name``, ``date``), or the source of a recalibrated reference (``name``, ``date``,
    ``fingerprint``, ``partition_fingerprint``)."""

    date: dt.date
    model_name: str | Absent = ABSENT
    name: str | Absent = ABSENT
    fingerprint: str | Absent = ABSENT
    partition_fingerprint: str | Absent | None = ABSENT
    used_as_prior: bool | Absent = ABSENT

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> Lineage:
        part = _Part(data, where, path, ("model_name", "name", "date", "fingerprint", "partition_fingerprint",
                                         "used_as_prior"), ("date",))
        return cls(date=part.value("date", _day), model_name=part.value("model_name", _text),
                   name=part.value("name", _text), fingerprint=part.value("fingerprint", _text),
                   partition_fingerprint=part.value("partition_fingerprint", _nullable(_text)),
                   used_as_prior=part.value("used_as_prior", _flag))

    @property
    def model(self) -> str | None:
        """The source model's name, however this kind of lineage spells it."""
        return self.model_name or self.name or None

    def to_dict(self) -> dict:
        return _present({"model_name": self.model_name, "name": self.name, "date": self.date.isoformat(),
                         "fingerprint": self.fingerprint, "partition_fingerprint": self.partition_fingerprint,
                         "used_as_prior": self.used_as_prior})


@dataclass(frozen=True)
class OnnxInput:
    """One input of an ONNX graph and the dataset columns that feed it, in order: its element type (``string``,
    ``float``, ``double`` or ``int64``; `pipelines.models.formats.onnx_elements`) and rank (1: ``[rows]``, one
    column; 2: ``[rows, len(columns)]``)."""

    name: str
    columns: tuple[str, ...]
    type: str
    rank: int

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> OnnxInput:
        part = _Part(data, where, path, ("name", "columns", "type", "rank"), ("name", "columns", "type", "rank"))
        columns = part.value("columns", _texts)
        if not columns:
            raise _bad(where, f"{path}.columns", "a non-empty list of column names", list(columns))
        rank = part.value("rank", _whole)
        if rank not in (1, 2) or (rank == 1 and len(columns) != 1):
            raise _bad(where, f"{path}.rank", "1 (one column) or 2", rank)
        return cls(part.value("name", _text), columns, part.value("type", _text), rank)

    def to_dict(self) -> dict:
        return {"name": self.name, "columns": list(self.columns), "type": self.type, "rank": self.rank}


@dataclass(frozen=True)
class VocabularyShare:
    """Of the registration probe's rows, the share whose value of ``column`` (fed to graph input ``input``) is
    outside the vocabulary the graph declares for it (``vocabulary`` values, declared by an ``operator``)."""

    column: str
    input: str
    operator: str
    vocabulary: int
    outside_share: float

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> VocabularyShare:
        keys = ("column", "input", "operator", "vocabulary", "outside_share")
        part = _Part(data, where, path, keys, keys)
        return cls(part.value("column", _text), part.value("input", _text), part.value("operator", _text),
                   part.value("vocabulary", _count), part.value("outside_share", _number))

    def to_dict(self) -> dict:
        return {"column": self.column, "input": self.input, "operator": self.operator,
                "vocabulary": self.vocabulary, "outside_share": self.outside_share}


@dataclass(frozen=True)
class OnnxProbe:
    """The registration's probe: how many real rows of the day the graph was run on (0: the day had no
    partition, the probe was a made-up batch), and the share of their values outside each declared vocabulary."""

    rows: int
    outside_vocabulary: tuple[VocabularyShare, ...]

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> OnnxProbe:
        part = _Part(data, where, path, ("rows", "outside_vocabulary"), ("rows", "outside_vocabulary"))
        return cls(part.value("rows", _count), part.value("outside_vocabulary", _list_of(VocabularyShare)))

    def to_dict(self) -> dict:
        return {"rows": self.rows, "outside_vocabulary": [item.to_dict() for item in self.outside_vocabulary]}


@dataclass(frozen=True)
class OnnxPart:
    """An ONNX model's own part: its graph inputs and the columns feeding each (`OnnxInput`), the probability
    output the audit fetches, the ZipMap output that output was found behind (None: none), and the
    registration's probe (absent in metadata written before the probe ran on real rows)."""

    inputs: tuple[OnnxInput, ...]
    output: str
    zipmap_output: str | None
    probe: OnnxProbe | Absent = ABSENT

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> OnnxPart:
        part = _Part(data, where, path, ("inputs", "output", "zipmap_output", "probe"),
                     ("inputs", "output", "zipmap_output"))
        inputs = part.value("inputs", _list_of(OnnxInput))
        if not inputs:
            raise _bad(where, f"{path}.inputs", "a non-empty list of graph inputs", [])
        return cls(inputs, part.value("output", _text), part.value("zipmap_output", _nullable(_text)),
                   part.value("probe", _record(OnnxProbe)))

    @property
    def columns(self) -> list[str]:
        """Every column the graph reads, once, in the order of the inputs."""
        return list(dict.fromkeys(name for item in self.inputs for name in item.columns))

    def to_dict(self) -> dict:
        return _present({"inputs": [item.to_dict() for item in self.inputs], "output": self.output,
                         "zipmap_output": self.zipmap_output,
                         "probe": self.probe.to_dict() if self.probe else ABSENT})


@dataclass(frozen=True)
class PredictionsPart:
    """A logged-predictions table's own part: its row-key column and probability columns, as found."""

    key_column: str
    probability_columns: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Any, where: str, path: str) -> PredictionsPart:
        part = _Part(data, where, path, ("key_column", "probability_columns"), ("key_column", "probability_columns"))
        return cls(part.value("key_column", _text), part.value("probability_columns", _texts))

    def to_dict(self) -> dict:
        return {"key_column": self.key_column, "probability_columns": list(self.probability_columns)}


def _features(value, where, field) -> tuple[FeatureColumn, ...]:
    if not isinstance(value, list):
        raise _bad(where, field, "a list of {name, kind} objects", value)
    return tuple(FeatureColumn.from_dict(item, where, f"{field}[{index}]") for index, item in enumerate(value))


def _record(cls) -> Callable[[Any, str, str], Any]:
    return cls.from_dict


def _json(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


# ------------------------------------------------------------------------------------------------ the metadata


@dataclass(frozen=True)
class ModelMetadata:
    """A registered or trained model's ``metadata.json`` (docs/model_registry.md lists every key). The fields up
    to ``created_at`` every model has; the others are `ABSENT` when its writer (or its age) left them out.
    Frozen; its JSON objects (``catboost_params``, ``test_metrics``, ...) are shared, read them only."""

    metadata_version: int
    model_name: str
    date: dt.date
    mechanism: MechanismRecord
    seed: int | None
    partition_fingerprint: str | None
    feature_schema: tuple[FeatureColumn, ...]
    catboost_params: dict | None
    test_metrics: dict | None
    code_version: CodeVersion
    created_at: str
    # every model kind may have these
    format: str | Absent = ABSENT  # absent: catboost (or the oracle's, by its model_type); see ``format_name``
    model_file: str | Absent = ABSENT  # absent: model.cbm
    dataset: DatasetRecord | Absent = ABSENT  # absent: the built-in Criteo spec
    training_rows: TrainingRows | Absent | None = ABSENT
    reference: Lineage | Absent | None = ABSENT
    # registered models (and copies of them)
    source: str | Absent = ABSENT  # absent: trained here
    fingerprint: str | Absent = ABSENT  # sha256 of the artifact at registration
    registered_from: str | Absent = ABSENT
    classes: int | Absent = ABSENT
    predictions_for: dt.date | Absent = ABSENT
    onnx: OnnxPart | Absent = ABSENT
    rows: int | Absent = ABSENT
    predictions: PredictionsPart | Absent = ABSENT
    # trained models
    partition_rows: int | Absent = ABSENT
    output_correction: dict | Absent | None = ABSENT  # LP-1ST-NC's correction (`registry.load_model` applies it)
    splits: dict | Absent = ABSENT
    # the night's own models: the controls and the recalibrated reference
    model_type: str | Absent = ABSENT
    control: dict | Absent = ABSENT
    recalibration: dict | Absent = ABSENT
    heldout_rows: dict | Absent = ABSENT  # a recalibrated reference of before its correction fitted training rows
    correction_rows: dict | Absent = ABSENT  # a recalibrated reference's correction rows

    @classmethod
    def from_dict(cls, data: Any, where: str = "model metadata") -> ModelMetadata:
        """The record of a parsed ``metadata.json``; ``where`` (the file) starts every error message, which names
        the missing, unknown or malformed key."""
        version = data.get("metadata_version") if isinstance(data, Mapping) else None
        if isinstance(version, int) and not isinstance(version, bool) and not 1 <= version <= METADATA_VERSION:
            raise LabelDPInputError(f"{where}: metadata_version {version} is not one this labeldp-audit reads "
                                    f"(1..{METADATA_VERSION}); a newer version wrote it")
        part = _Part(upgraded(data), where, "", _KEYS, REQUIRED)
        values = {key: part.value(key, read) for key, read in _READERS.items()}
        return cls(**values)

    def to_dict(self) -> dict:
        """The JSON object the writers write (absent keys left out, nulls kept)."""
        out = {}
        for key in _READERS:
            value = getattr(self, key)
            if value is ABSENT:
                continue
            if key == "feature_schema":
                value = [item.to_dict() for item in value]
            elif isinstance(value, dt.date):
                value = value.isoformat()
            out[key] = _json(value)
        return out

    # what the absent keys mean
    @property
    def format_name(self) -> str:
        """The model's format: ``format``; absent, the oracle's for the positive control, else CatBoost's."""
        if self.format:
            return self.format
        return "rr-oracle" if self.model_type == ORACLE_MODEL_TYPE else DEFAULT_FORMAT

    @property
    def artifact_name(self) -> str:
        """The model file's name in its directory: ``model_file``, else ``model.cbm``."""
        return self.model_file or DEFAULT_MODEL_FILE

    @property
    def origin(self) -> str:
        """``registered`` for a model registered from a file, ``trained`` for one trained here."""
        return self.source or TRAINED

    @property
    def claimed_epsilon(self) -> float:
        return self.mechanism.epsilon

    @property
    def feature_names(self) -> list[str]:
        return [item.name for item in self.feature_schema]

    @property
    def id(self) -> str:
        """``name@YYYY-MM-DD``."""
        return f"{self.model_name}@{self.date.isoformat()}"


_READERS: dict[str, Callable[[Any, str, str], Any]] = {
    "metadata_version": _whole, "model_name": _text, "date": _day, "mechanism": _record(MechanismRecord),
    "seed": _nullable(_whole), "partition_fingerprint": _nullable(_text), "feature_schema": _features,
    "catboost_params": _nullable(_object), "test_metrics": _nullable(_object), "code_version": _record(CodeVersion),
    "created_at": _text,
    "format": _text, "model_file": _text, "dataset": _record(DatasetRecord),
    "training_rows": _nullable(_record(TrainingRows)), "reference": _nullable(_record(Lineage)),
    "source": _text, "fingerprint": _text, "registered_from": _text, "classes": _count, "predictions_for": _day,
    "onnx": _record(OnnxPart), "rows": _count, "predictions": _record(PredictionsPart),
    "partition_rows": _count, "output_correction": _nullable(_object), "splits": _object,
    "model_type": _text, "control": _object, "recalibration": _object, "heldout_rows": _object, "correction_rows": _object,
}
_KEYS = tuple(_READERS)


def upgraded(data: Any) -> Any:
    """``data`` in the current form: a version-1 ONNX part (``onnx.input``, the one float tensor of the numeric
    features, which were the model's ``feature_schema``) becomes ``onnx.inputs`` with that one input, and the
    version 2. Anything else (another version, another model, a malformed file) is returned as it is, for the
    reader to judge."""
    if not isinstance(data, Mapping) or data.get("metadata_version") != 1:
        return data
    part, features = data.get("onnx"), data.get("feature_schema")
    if not (isinstance(part, Mapping) and "input" in part and "inputs" not in part and isinstance(features, list)
            and all(isinstance(item, Mapping) and isinstance(item.get("name"), str) for item in features)):
        return data
    onnx = {key: value for key, value in part.items() if key != "input"}
    onnx["inputs"] = [{"name": part["input"], "columns": [item["name"] for item in features], "type": "float",
                       "rank": 2}]
    return {**data, "metadata_version": METADATA_VERSION, "onnx": onnx}


def or_none(value: Any) -> Any:
    """``value``, or None for `ABSENT` (for a summary or message that shows a missing key as null)."""
    return None if value is ABSENT else value


_FORMAT_PART = ("feature_schema", "classes", "catboost_params", "onnx", "rows", "predictions")


def format_part(info: Any, where: str) -> dict[str, Any]:
    """The metadata fields a format's ``inspect`` reports for a file offered for registration (``feature_schema``
    and ``classes``, and its own part: ``catboost_params``, ``onnx``, ``rows``, ``predictions``), read like the
    stored metadata; ``catboost_params`` is None for a format without them."""
    part = _Part(info, where, "", _FORMAT_PART, ("feature_schema", "classes"))
    values = {key: part.value(key, _READERS[key]) for key in _FORMAT_PART}
    values["catboost_params"] = or_none(values["catboost_params"])
    return values


def as_metadata(metadata: ModelMetadata | Mapping, where: str = "model metadata") -> ModelMetadata:
    """``metadata`` as the record: for a caller that still holds the JSON form (``ModelHandle.metadata``)."""
    return metadata if isinstance(metadata, ModelMetadata) else ModelMetadata.from_dict(metadata, where)


__all__ = ["ABSENT", "ALL_ROWS", "CATEGORICAL", "DEFAULT_FORMAT", "DEFAULT_MODEL_FILE", "KEYS", "METADATA_VERSION",
           "NUMERIC", "REQUIRED", "Absent", "CodeVersion", "DatasetRecord", "FeatureColumn", "Lineage",
           "MechanismRecord", "ModelMetadata", "OnnxInput", "OnnxPart", "OnnxProbe", "PredictionsPart",
           "TrainingRows", "VocabularyShare", "as_metadata", "format_part", "or_none", "upgraded"]
