"""A model's ``metadata.json`` as a typed, frozen record (`ModelMetadata`), with the records nested in it.

`labeldp.codec` reads and writes it: `as_metadata` is the one reader of the stored JSON
(`pipelines.models.registry.read_metadata` calls it where ``metadata.json`` is loaded) and names the file and the
field of a missing, unknown or malformed key; ``encode`` writes exactly the JSON the writers have always written.
Keys added after the first models were written (every key outside `REQUIRED`) may be absent: their fields are
marked `OMIT_DEFAULT` with the default `ABSENT`, so an absent key reads `ABSENT` and stays absent, and a null stays
null (`ABSENT` is not None). A field whose rule goes beyond its type is read by its own reader (`codec.reader`):
whole numbers and counts (an int, never 3.0), numbers that keep their JSON type, canonical dates, an epsilon that is
a number >= 0 or ``"inf"`` (written back as ``"inf"``), the kinds a column or training-rows record may have.

The producers (`pipelines.training.train.register`, `pipelines.models.registration.register_model`) build the
record; the consumers read its attributes. Parts a model kind owns and whose reader lives with it (the CatBoost
parameters, the test metrics, a noise correction, the split names, a control's or a recalibration's record, the
held-out rows, the dataset's spec) are kept as their JSON objects.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labeldp.codec import INF_AS_STRING, OMIT_DEFAULT, decode, reader
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


def _bad(name: str, wanted: str, value: Any) -> LabelDPInputError:
    return LabelDPInputError(f"{name} must be {wanted}; got {value!r}")


def _nullable(read: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    return lambda value, name: None if value is None else read(value, name)


def _whole(value, name) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(name, "a whole number", value)
    return value


def _count(value, name) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(name, "a whole number >= 0", value)
    return value


def _number(value, name) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(name, "a number", value)
    return value  # an int stays an int: it is written back as it was


def _day(value, name) -> dt.date:
    try:
        day = dt.date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        day = None
    if day is None or day.isoformat() != value:
        raise _bad(name, "a date YYYY-MM-DD", value)
    return day


def _epsilon(value, name) -> float:
    if value == "inf":
        return math.inf
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0 or math.isinf(value):
        raise _bad(name, 'a number >= 0 or "inf"', value)
    return value


def _wholes(value, name) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _bad(name, "a list of whole numbers", value)
    return tuple(_whole(item, f"{name}[{index}]") for index, item in enumerate(value))


def _column_kind(value, name) -> str:
    if value not in (NUMERIC, CATEGORICAL):
        raise _bad(name, f"{NUMERIC!r} or {CATEGORICAL!r}", value)
    return value


def _rows_kind(value, name) -> str:
    if value not in (ALL_ROWS, KEYS):
        raise LabelDPInputError(f"{name}: unknown kind {value!r} (known: {KEYS!r}, {ALL_ROWS!r}, or the split-scheme "
                                "record without a kind)")
    return value


def _non_empty(read: Callable[[Any, str], tuple], wanted: str) -> Callable[[Any, str], tuple]:
    def check(value, name):
        items = read(value, name)
        if not items:
            raise _bad(name, wanted, list(items))
        return items
    return check


def _by_type(annotation: Any) -> Callable[[Any, str], Any]:
    """The codec's reading of ``annotation`` as a reader (to wrap it in a further rule)."""
    return lambda value, name: decode(annotation, value, name)


def _absent(read: Callable[[Any, str], Any]) -> dict:
    """Field metadata of a key a model may lack (`ABSENT` when absent, and not written then), read by ``read``."""
    return {**OMIT_DEFAULT, **reader(read)}


# ------------------------------------------------------------------------------------------------ nested records


@dataclass(frozen=True)
class FeatureColumn:
    """One column the model reads: its name and kind (``numeric`` or ``categorical``)."""

    name: str
    kind: str = field(metadata=reader(_column_kind))


@dataclass(frozen=True)
class MechanismRecord:
    """The label-DP mechanism and its claim: ``epsilon`` (``math.inf``: no claim) and ``delta``. A trained model
    records the mechanism's ``unit``, ``guarantee``, ``parameters`` and ``catboost_seed``; a control its
    ``guarantee``; a registered model only its claim."""

    name: str
    epsilon: float = field(metadata={**reader(_epsilon), **INF_AS_STRING})
    delta: float = field(metadata=reader(_number))
    unit: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    guarantee: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    parameters: dict | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    catboost_seed: int | Absent | None = field(default=ABSENT, metadata=_absent(_nullable(_whole)))


@dataclass(frozen=True)
class DatasetRecord:
    """The dataset spec the model reads: its name, fingerprint and the spec itself (``DatasetSpec.to_dict``)."""

    name: str
    fingerprint: str
    spec: dict


@dataclass(frozen=True)
class CodeVersion:
    """The code that wrote the metadata: package, version, git commit and whether the checkout was dirty."""

    package: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    version: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    git_commit: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    git_dirty: bool | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)


ALL_ROWS = "all"
KEYS = "keys"


@dataclass(frozen=True)
class TrainingRows:
    """Which rows' labels trained the model. ``kind`` ``"all"`` (every row of the day; ``rows`` None without a
    partition), ``"keys"`` (the keys listed in ``file``, with its ``fingerprint``), or `ABSENT`: the split record
    of a model trained here (``split`` scheme, ``label_splits`` read, ``validation_labels_used_for``,
    ``unread_row_ids``). `pipelines.scoring.audit_rows` turns it into the audited rows."""

    kind: str | Absent = field(default=ABSENT, metadata=_absent(_rows_kind))
    rows: int | Absent | None = field(default=ABSENT, metadata=_absent(_nullable(_count)))
    file: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    fingerprint: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    split: dict | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    label_splits: tuple[str, ...] | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    validation_labels_used_for: tuple[str, ...] | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    unread_row_ids: tuple[int, ...] | Absent = field(default=ABSENT, metadata=_absent(_wholes))

    @property
    def kind_name(self) -> str:
        """``"all"``, ``"keys"`` or ``"split"`` (the record of a model trained here)."""
        return self.kind or "split"


@dataclass(frozen=True)
class Lineage:
    """The model another one derives from (its metadata's ``reference``): a trained model's reference (its
    ``model_name``, ``date``, ``partition_fingerprint`` and whether it was ``used_as_prior``), the reference a
    negative control copies (``name``, ``date``), or the source of a recalibrated reference (``name``, ``date``,
    ``fingerprint``, ``partition_fingerprint``)."""

    model_name: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    name: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    date: dt.date = field(kw_only=True, metadata=reader(_day))  # written after the names, as it always was
    fingerprint: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    partition_fingerprint: str | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    used_as_prior: bool | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)

    @property
    def model(self) -> str | None:
        """The source model's name, however this kind of lineage spells it."""
        return self.model_name or self.name or None


@dataclass(frozen=True)
class OnnxInput:
    """One input of an ONNX graph and the dataset columns that feed it, in order: its element type (``string``,
    ``float``, ``double`` or ``int64``; `pipelines.models.formats.onnx_elements`) and rank (1: ``[rows]``, one
    column; 2: ``[rows, len(columns)]``)."""

    name: str
    columns: tuple[str, ...] = field(metadata=reader(_non_empty(_by_type(tuple[str, ...]),
                                                                 "a non-empty list of column names")))
    type: str
    rank: int = field(metadata=reader(_whole))

    def __post_init__(self):
        if self.rank not in (1, 2) or (self.rank == 1 and len(self.columns) != 1):
            raise _bad(f"ONNX input {self.name!r}: rank", "1 (one column) or 2", self.rank)


@dataclass(frozen=True)
class VocabularyShare:
    """Of the registration probe's rows, the share whose value of ``column`` (fed to graph input ``input``) is
    outside the vocabulary the graph declares for it (``vocabulary`` values, declared by an ``operator``)."""

    column: str
    input: str
    operator: str
    vocabulary: int = field(metadata=reader(_count))
    outside_share: float = field(metadata=reader(_number))


@dataclass(frozen=True)
class OnnxProbe:
    """The registration's probe: how many real rows of the day the graph was run on (0: the day had no
    partition, the probe was a made-up batch), and the share of their values outside each declared vocabulary."""

    rows: int = field(metadata=reader(_count))
    outside_vocabulary: tuple[VocabularyShare, ...]


@dataclass(frozen=True)
class OnnxPart:
    """An ONNX model's own part: its graph inputs and the columns feeding each (`OnnxInput`), the probability
    output the audit fetches, the ZipMap output that output was found behind (None: none), and the
    registration's probe (absent in metadata written before the probe ran on real rows)."""

    inputs: tuple[OnnxInput, ...] = field(metadata=reader(_non_empty(_by_type(tuple[OnnxInput, ...]),
                                                                     "a non-empty list of graph inputs")))
    output: str
    zipmap_output: str | None
    probe: OnnxProbe | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)

    @property
    def columns(self) -> list[str]:
        """Every column the graph reads, once, in the order of the inputs."""
        return list(dict.fromkeys(name for item in self.inputs for name in item.columns))


@dataclass(frozen=True)
class PredictionsPart:
    """A logged-predictions table's own part: its row-key column and probability columns, as found."""

    key_column: str
    probability_columns: tuple[str, ...]


# ------------------------------------------------------------------------------------------------ the metadata


@dataclass(frozen=True)
class ModelMetadata:
    """A registered or trained model's ``metadata.json`` (docs/model_registry.md lists every key). The fields up
    to ``created_at`` every model has; the others are `ABSENT` when its writer (or its age) left them out.
    Frozen; its JSON objects (``catboost_params``, ``test_metrics``, ...) are shared, read them only. A version-1
    file is read in its current form (`upgraded`)."""

    metadata_version: int = field(metadata=reader(_whole))
    model_name: str
    date: dt.date = field(metadata=reader(_day))
    mechanism: MechanismRecord
    seed: int | None = field(metadata=reader(_nullable(_whole)))
    partition_fingerprint: str | None
    feature_schema: tuple[FeatureColumn, ...]
    catboost_params: dict | None
    test_metrics: dict | None
    code_version: CodeVersion
    created_at: str
    # every model kind may have these
    format: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # absent: catboost (or the oracle's, by its model_type); see ``format_name``
    model_file: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # absent: model.cbm
    dataset: DatasetRecord | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # absent: the built-in Criteo spec
    training_rows: TrainingRows | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    reference: Lineage | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    # registered models (and copies of them)
    source: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # absent: trained here
    fingerprint: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # sha256 of the artifact at registration
    registered_from: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    classes: int | Absent = field(default=ABSENT, metadata=_absent(_count))
    predictions_for: dt.date | Absent = field(default=ABSENT, metadata=_absent(_day))
    onnx: OnnxPart | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    rows: int | Absent = field(default=ABSENT, metadata=_absent(_count))
    predictions: PredictionsPart | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    # trained models
    partition_rows: int | Absent = field(default=ABSENT, metadata=_absent(_count))
    output_correction: dict | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)  # LP-1ST-NC's correction (`registry.load_model` applies it)
    splits: dict | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    # the night's own models: the controls and the recalibrated reference
    model_type: str | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    control: dict | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    recalibration: dict | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    heldout_rows: dict | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # a recalibrated reference of before its correction fitted training rows
    correction_rows: dict | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)  # a recalibrated reference's correction rows

    @classmethod
    def _upgrade(cls, value: dict) -> dict:
        return upgraded(value)

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
    def recalibrated_from(self) -> Lineage | None:
        """A recalibrated reference's source, the D-1 checkpoint it corrects (its ``recalibration`` record's
        ``source_reference``, read as a `Lineage` as its ``reference`` is); None for a model that is not one."""
        source = self.recalibration.get("source_reference") if isinstance(self.recalibration, dict) else None
        return decode(Lineage, source, "recalibration.source_reference") if isinstance(source, dict) else None

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


@dataclass(frozen=True)
class FormatPart:
    """What a format's ``inspect`` reports for a file offered for registration: ``feature_schema`` and ``classes``,
    and its own part (``catboost_params``, ``onnx``, ``rows``, ``predictions``), read like the stored metadata."""

    feature_schema: tuple[FeatureColumn, ...]
    classes: int = field(metadata=reader(_count))
    catboost_params: dict | Absent | None = field(default=ABSENT, metadata=OMIT_DEFAULT)
    onnx: OnnxPart | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)
    rows: int | Absent = field(default=ABSENT, metadata=_absent(_count))
    predictions: PredictionsPart | Absent = field(default=ABSENT, metadata=OMIT_DEFAULT)


def format_part(info: Any, where: str) -> dict[str, Any]:
    """`FormatPart`'s fields of ``info`` (the metadata keys a format's ``inspect`` reports), read and checked;
    ``catboost_params`` is None for a format without them."""
    part = decode(FormatPart, info, f"{where}: format part")
    values = {name: getattr(part, name) for name in FormatPart.__dataclass_fields__}
    values["catboost_params"] = or_none(values["catboost_params"])
    return values


def as_metadata(metadata: ModelMetadata | Mapping, where: str = "model metadata") -> ModelMetadata:
    """``metadata`` as the record: the one reader of a parsed ``metadata.json`` (and of a caller that still holds
    the JSON form, ``ModelHandle.metadata``); ``where`` (the file) starts every error message, which names the
    missing, unknown or malformed key."""
    if isinstance(metadata, ModelMetadata):
        return metadata
    version = metadata.get("metadata_version") if isinstance(metadata, Mapping) else None
    if isinstance(version, int) and not isinstance(version, bool) and not 1 <= version <= METADATA_VERSION:
        raise LabelDPInputError(f"{where}: metadata_version {version} is not one this labeldp-audit reads "
                                f"(1..{METADATA_VERSION}); a newer version wrote it")
    return decode(ModelMetadata, metadata, f"{where}: metadata")


__all__ = ["ABSENT", "ALL_ROWS", "CATEGORICAL", "DEFAULT_FORMAT", "DEFAULT_MODEL_FILE", "KEYS", "METADATA_VERSION",
           "NUMERIC", "REQUIRED", "Absent", "CodeVersion", "DatasetRecord", "FeatureColumn", "FormatPart", "Lineage",
           "MechanismRecord", "ModelMetadata", "OnnxInput", "OnnxPart", "OnnxProbe", "PredictionsPart",
           "TrainingRows", "VocabularyShare", "as_metadata", "format_part", "or_none", "upgraded"]
