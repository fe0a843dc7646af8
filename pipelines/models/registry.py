"""The model registry: ``models/<name>/date=YYYY-MM-DD/`` holding ``model.cbm`` and ``metadata.json``.

Models trained elsewhere are registered from a file by `pipelines.models.registration` (``labeldp-audit models
register``): their metadata names their format and file (``format``, ``model_file``; docs/model_registry.md).

- Written through ``layout.atomic_directory``: the directory appears complete or not at all, and a failed
  write leaves an existing model of that name and day untouched.
- No pickle anywhere: the model is CatBoost's own ``.cbm`` format, the metadata strict JSON (an infinite
  epsilon is written as the string ``"inf"``; ``claimed_epsilon`` reads it back as a float).
- ``metadata.json`` records what an audit needs to trust and reproduce the model: the mechanism, its
  parameters, claimed eps and delta, the privacy unit, the seed, the partition fingerprint, the feature
  schema, the CatBoost parameters, the test metrics, the code version (package version and git commit when
  available) and ``created_at`` (UTC).
- ``load_model`` takes a resolved model (`pipelines.models.handle.resolve_model`) and returns its classifier. For
  a noise-corrected model (LP-1ST-NC) the classifier is a ``NoiseCorrectedClassifier``, whose ``predict_proba``
  applies the recorded correction, so every scorer gets true-label probabilities (the correction is not affine
  in logit space, so it cannot live inside the .cbm file).
- ``check_features`` compares a model's feature schema with the schema of the table it will score and names
  every missing or mismatched column.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import os
import subprocess
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from labeldp import hints
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError, mention
from pipelines.data import schema
from pipelines.data.layout import atomic_directory, model_dir, read_json_object
from pipelines.models.formats.base import ModelFile
from pipelines.models.metadata import (
    CATEGORICAL,
    DEFAULT_MODEL_FILE,
    METADATA_VERSION,
    NUMERIC,
    REQUIRED,
    CodeVersion,
    ModelMetadata,
    as_metadata,
)

MODEL_FILE = DEFAULT_MODEL_FILE
METADATA_FILE = "metadata.json"
PACKAGE = "labeldp-audit"

REQUIRED_METADATA = REQUIRED


# ------------------------------------------------------------------------------------------ metadata helpers


def feature_schema() -> list[dict[str, str]]:
    """The feature columns a model trained by ``pipelines.training.train`` reads, in CatBoost's column order."""
    return ([{"name": name, "kind": NUMERIC} for name in schema.NUMERIC_COLUMNS]
            + [{"name": name, "kind": CATEGORICAL} for name in schema.CATEGORICAL_COLUMNS])


@functools.cache
def code_version() -> dict[str, Any]:
    """The package version and, when this file sits in a git checkout, its commit and whether tracked files
    differ from it; missing pieces are ``None`` (never an error). Computed once per process (git takes
    about a second on a busy tree)."""
    try:
        version = importlib_metadata.version(PACKAGE)
    except importlib_metadata.PackageNotFoundError:
        version = None
    repo = Path(__file__).resolve().parents[2]
    commit = dirty = None
    try:
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip() or None
        changed = subprocess.run(["git", "-C", str(repo), "diff", "--quiet", "HEAD", "--"], capture_output=True,
                                 timeout=10)
        dirty = changed.returncode != 0
    except (OSError, subprocess.SubprocessError):
        pass
    return {"package": PACKAGE, "version": version, "git_commit": commit, "git_dirty": dirty}


def jsonable(value: Any) -> Any:
    """Strict-JSON copy: inf/-inf -> "inf"/"-inf", NaN -> None, numpy scalars and arrays -> Python."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return [jsonable(item) for item in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"metadata value of type {type(value).__name__} is not JSON-serialisable: {value!r}")


def claimed_epsilon(metadata: ModelMetadata | dict) -> float:
    """The claimed eps as a float (``math.inf`` for a non-private model)."""
    return float(as_metadata(metadata).claimed_epsilon)


def current_code_version() -> CodeVersion:
    """`code_version` as the metadata's record."""
    return CodeVersion(**code_version())


def created_now() -> str:
    """The metadata's ``created_at``: now, UTC, to the second."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------------ the classifier


def _catboost_classifier_class():
    from catboost import CatBoostClassifier

    return CatBoostClassifier


@functools.cache
def noise_corrected_classifier_class():
    """The ``NoiseCorrectedClassifier`` class (a CatBoostClassifier subclass), built on first use so that
    importing the registry does not import CatBoost."""
    from pipelines.training.mechanisms.noise_correction import correct_probabilities

    class NoiseCorrectedClassifier(_catboost_classifier_class()):
        """A CatBoost model trained on randomized-response labels (LP-1ST-NC) whose outputs are corrected to
        true-label probabilities with ``labeldp_correction = {"kind": "rr_inverse", "epsilon", "floor"}``:
        ``predict_proba`` returns ``correct_probabilities(raw, epsilon, floor)``; ``predict`` supports
        ``prediction_type`` "Class" and "Probability" on corrected probabilities and refuses the raw types,
        which would silently skip the correction."""

        labeldp_correction: dict | None = None

        def _correction(self) -> tuple[float, float]:
            correction = self.labeldp_correction or {}
            if correction.get("kind") != "rr_inverse":
                raise LabelDPInputError(f"output_correction.kind must be 'rr_inverse'; got {correction!r}")
            epsilon = math.inf if correction["epsilon"] == "inf" else float(correction["epsilon"])
            return epsilon, float(correction["floor"])

        def predict_proba(self, data, *args, **kwargs):
            epsilon, floor = self._correction()
            return correct_probabilities(super().predict_proba(data, *args, **kwargs), epsilon, floor)

        def predict(self, data, prediction_type="Class", *args, **kwargs):
            if prediction_type == "Probability":
                return self.predict_proba(data, *args, **kwargs)
            if prediction_type == "Class":
                probabilities = self.predict_proba(data, *args, **kwargs)
                return np.asarray(self.classes_)[np.argmax(probabilities, axis=1)]
            raise LabelDPInputError(f"prediction_type {prediction_type!r} would skip the noise correction of "
                                    f"this LP-1ST-NC model; use predict_proba or prediction_type='Probability'")

    return NoiseCorrectedClassifier


def make_noise_corrected_classifier(correction: dict):
    """An empty ``NoiseCorrectedClassifier`` carrying ``correction`` (validated now, not at first predict)."""
    model = noise_corrected_classifier_class()()
    model.labeldp_correction = jsonable(dict(correction))
    model._correction()
    return model


# ------------------------------------------------------------------------------------------ save / load


def save_model(root: str | os.PathLike, model_name: str, date: dt.date, model,
               metadata: ModelMetadata | dict) -> Path:
    """Writes ``model.cbm`` + ``metadata.json`` to ``models/<model_name>/date=D/`` atomically; returns the dir.

    ``metadata`` (the record, or its JSON form) gets ``metadata_version``, ``model_name``, ``date``,
    ``code_version`` and ``created_at`` set; a dict also ``feature_schema`` (if absent), and must then hold every
    key of ``REQUIRED_METADATA``.
    """
    final = model_dir(root, model_name, date)
    if isinstance(metadata, ModelMetadata):
        record = dataclasses.replace(metadata, metadata_version=METADATA_VERSION, model_name=model_name, date=date,
                                     code_version=current_code_version(), created_at=created_now())
    else:
        fields = dict(metadata)
        fields.setdefault("feature_schema", feature_schema())
        fields.update({"metadata_version": METADATA_VERSION, "model_name": model_name, "date": date.isoformat(),
                       "code_version": dict(code_version()), "created_at": created_now()})
        missing = [key for key in REQUIRED_METADATA if key not in fields]
        if missing:
            raise LabelDPInputError(f"model metadata for {final} lacks the key(s) {missing}")
        record = as_metadata(jsonable(fields), f"model metadata for {final}")
    names = record.feature_names
    model_names = list(getattr(model, "feature_names_", None) or [])
    if model_names and model_names != names:
        raise LabelDPInputError(f"the model's feature names {model_names} differ from metadata feature_schema "
                                f"{names}")
    text = json.dumps(jsonable(encode(record)), indent=2, sort_keys=True, allow_nan=False) + "\n"
    with atomic_directory(final) as tmp:
        model.save_model(str(tmp / MODEL_FILE), format="cbm")
        (tmp / METADATA_FILE).write_text(text, encoding="utf-8")
    return final


def read_metadata(root: str | os.PathLike, model_name: str, date: dt.date) -> ModelMetadata:
    """The ``metadata.json`` of a registered model, read (`as_metadata`: the one reader; clear errors
    naming the file for a missing or corrupt file and for a missing, unknown or malformed key)."""
    directory = model_dir(root, model_name, date)
    path = directory / METADATA_FILE
    if not directory.is_dir():
        day = date.isoformat()
        raise LabelDPInputError(f"no model {model_name!r} for {day}: {directory} does not exist; register the "
                                f"file of a model trained elsewhere with "
                                f"{hints.REGISTER_MODEL.line(name=model_name, date=day)}, train one here with "
                                f"{hints.TRAIN_MODEL.line(name=model_name, date=day)}, or pass the right "
                                f"{mention('data_root')}", field="data_root")
    if not path.is_file():
        raise LabelDPInputError(f"{path}: missing; the model directory is incomplete")
    return as_metadata(read_json_object(path), str(path))


def load_model(model: ModelFile):
    """The ``catboost.CatBoostClassifier`` of a resolved CatBoost model (`pipelines.models.handle.resolve_model`): a
    ``NoiseCorrectedClassifier`` subclass when its metadata records an ``output_correction``. Raises
    ``LabelDPInputError`` naming the file when it is unreadable or its feature names disagree with its metadata.
    """
    path, record = model.artifact, model.meta
    correction = record.output_correction
    classifier = make_noise_corrected_classifier(correction) if correction else _catboost_classifier_class()()
    try:
        classifier.load_model(str(path), format="cbm")
    except Exception as exc:  # CatBoostError and OS errors alike: report the file
        raise LabelDPInputError(f"{path}: not a readable CatBoost model ({exc})") from None
    names = record.feature_names
    if list(classifier.feature_names_) != names:
        raise LabelDPInputError(f"{path}: the model's feature names {list(classifier.feature_names_)} differ from "
                                f"its metadata feature_schema {names}")
    return classifier


# ------------------------------------------------------------------------------------------ feature check


def _kind_accepts(kind: str, type_: pa.DataType) -> bool:
    if kind == NUMERIC:
        return pa.types.is_integer(type_) or pa.types.is_floating(type_) or pa.types.is_null(type_)
    if pa.types.is_dictionary(type_):
        type_ = type_.value_type
    return pa.types.is_string(type_) or pa.types.is_large_string(type_) or pa.types.is_null(type_)


def check_features(metadata: ModelMetadata | dict, table_schema: pa.Schema | pa.Table) -> None:
    """Raises ``LabelDPInputError`` unless ``table_schema`` has every feature column the model reads, with a
    compatible type (numeric: integer or float; categorical: strings, plain or dictionary-encoded).

    The message names the model, every missing column and every mismatched column with both types. Extra
    columns (``row_id``, ``label``, anything else) are fine. ``metadata``: the record (a dict: its JSON form, from
    a caller not yet typed).
    """
    metadata = as_metadata(metadata)
    if isinstance(table_schema, pa.Table):
        table_schema = table_schema.schema
    if not isinstance(table_schema, pa.Schema):
        raise LabelDPInputError(f"table_schema must be a pyarrow Schema or Table; got {type(table_schema).__name__}")
    missing, mismatched = [], []
    for item in metadata.feature_schema:
        name, kind = item.name, item.kind
        index = table_schema.get_field_index(name)
        if index < 0:
            missing.append(name)
            continue
        type_ = table_schema.field(index).type
        if not _kind_accepts(kind, type_):
            wanted = "integer or float" if kind == NUMERIC else "strings (plain or dictionary-encoded)"
            mismatched.append(f"{name} (model: {kind}, {wanted}; table: {type_})")
    if missing or mismatched:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if mismatched:
            parts.append(f"mismatched column(s) {mismatched}")
        model = f"model {metadata.model_name!r} of {metadata.date.isoformat()}"
        raise LabelDPInputError(f"the table does not fit the {model}: " + "; ".join(parts))
