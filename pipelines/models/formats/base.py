"""The base of a model format and the format registry (`pipelines.models.formats.registry` describes formats and looks them
up; the built-in formats in `pipelines.models.formats` subclass `ModelFormat` from here and register themselves)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import pyarrow as pa

from labeldp.choices import Choices
from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.models.metadata import ModelMetadata


class ModelFile(Protocol):
    """What a format reads of a resolved model (`pipelines.models.handle.ModelHandle`): its name and day, where
    its file is (``artifact``) and what its metadata says (``meta``); never the registry's folder layout."""

    name: str
    date: dt.date
    artifact: Path
    meta: ModelMetadata


@dataclass(frozen=True)
class Offer:
    """What a registration hands a format beside the file (`ModelFormat.inspect`): a few real rows of the model's
    day (``probe``, pipeline names; None when the day has no partition or the format's `probe_rows` is 0),
    and a file naming which dataset columns feed which of the model's inputs (``input_mapping``; only a format
    that `takes_input_mapping`)."""

    probe: pa.Table | None = None
    input_mapping: Path | None = None


class ModelFormat:
    """The base of a model format (frozen, stateless; one instance is registered)."""

    name: ClassVar[str]
    description: ClassVar[str]
    file_name: ClassVar[str]  # the artifact's name in models/<name>/date=D/
    registrable: ClassVar[bool] = True  # `labeldp-audit models register --format NAME` accepts it
    scores_one_day: ClassVar[bool] = False  # answers only for the rows of one day (its ``predictions_for``)
    # the file is a CatBoost classifier (`pipelines.models.registry.load_model` reads it): usable as a training
    # prior, and a reference whose raw logits a fitted correction can be summed into (`pipelines.reference.recalibration`)
    catboost_classifier: ClassVar[bool] = False
    # `inspect` runs the model on up to this many real rows of its day (`Offer.probe`; 0: it reads none)
    probe_rows: ClassVar[int] = 0
    # the model's inputs may be mapped to the dataset's columns by a file (`Offer.input_mapping`)
    takes_input_mapping: ClassVar[bool] = False

    def inspect(self, path: Path, dataset: DatasetSpec, offer: Offer | None = None) -> dict:
        """Checks a file offered for registration; returns the metadata it implies (at least ``feature_schema``
        and ``classes``). Raises LabelDPInputError naming ``path`` and what is wrong."""
        raise NotImplementedError

    def prepare(self, table: pa.Table, dataset: DatasetSpec) -> Any:
        """The handler's example for a validated batch (pipeline names: row_id, label, features)."""
        raise NotImplementedError

    def handler(self, model: ModelFile, dataset: DatasetSpec, *, thread_count: int = 1):
        """A Beam ``ModelHandler`` of ``model`` (its ``artifact`` and ``meta``) on `prepare`'s examples whose
        ``PredictionResult.inference`` is the (rows x classes) float64 probability array."""
        raise NotImplementedError

    def predict(self, model: ModelFile, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        """(rows x classes) float64 probabilities of ``model`` on ``table``, in this process."""
        raise NotImplementedError

    def check_reference_coverage(self, model: ModelFile, row_ids: np.ndarray) -> None:
        """Raises LabelDPInputError when ``model``, as the reference, cannot answer some of the day's rows
        ``row_ids`` (only a format that `scores_one_day` can lack rows; a model computes any row)."""


MODEL_FORMATS: Choices[ModelFormat] = Choices("format")


def missing_prediction(rows: int, classes: int) -> np.ndarray:
    """The NaN rows of a batch a format has no prediction for."""
    return np.full((rows, classes), np.nan)


def check_model_features(schema: list[dict[str, str]], dataset: DatasetSpec, where: str) -> None:
    """LabelDPInputError naming every feature the model reads that the dataset lacks, or reads as another kind."""
    numeric, categorical = set(dataset.numeric), set(dataset.categorical)
    missing = [item["name"] for item in schema if item["name"] not in numeric | categorical]
    mismatched = [f"{item['name']} (model: {item['kind']}, dataset: "
                  f"{'numeric' if item['name'] in numeric else 'categorical'})"
                  for item in schema if item["name"] in numeric | categorical
                  and (item["name"] in numeric) != (item["kind"] == "numeric")]
    problems = []
    if missing:
        problems.append(f"reads column(s) {missing} that dataset {dataset.name!r} ({dataset.describe()}) does not "
                        f"have as features")
    if mismatched:
        problems.append(f"reads column(s) as another kind: {mismatched}")
    if problems:
        raise LabelDPInputError(f"{where}: the model " + "; ".join(problems))


def check_probability_matrix(p: Any, rows: int, where: str) -> np.ndarray:
    """``p`` as a (rows x classes) float64 array, or LabelDPInputError naming ``where``."""
    out = np.asarray(p, dtype=np.float64)
    if out.ndim != 2 or out.shape[0] != rows or out.shape[1] < 2:
        raise LabelDPInputError(f"{where}: expected a ({rows} x classes) probability array, got shape {out.shape}")
    return out


__all__ = ["MODEL_FORMATS", "ModelFile", "ModelFormat", "Offer", "check_model_features", "check_probability_matrix",
           "missing_prediction"]
