"""A data root holding a day of the numeric click dataset (tests/support/numeric_clicks.py), for the tests that
register its models: the registration's (tests/pipelines/models/test_registration.py) and the ``models`` command's
(tests/flows/commands/test_models.py) use ``numeric_files`` and ``numeric_root``; the model formats' (tests/pipelines/
models/test_formats.py, formats/test_onnx.py, formats/test_predictions.py) use ``numeric_formats``, the models
registered in each format, and ``predict``. A folder's conftest.py offers the fixtures by name."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.numeric_clicks import DAY, SPEC, make_world, write_day


@pytest.fixture(scope="module")
def numeric_files(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("registration"))


@pytest.fixture
def numeric_root(tmp_path, numeric_files):
    """A fresh data root holding day DAY of the numeric dataset."""
    root = tmp_path / "data"
    write_day(root, numeric_files)
    return root


def sha256_fingerprint(path: Path) -> str:
    """A file's fingerprint as the registry writes it."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def row_keys(files: dict) -> np.ndarray:
    """The row keys of the world's day."""
    return files["log"].column("impression_id").to_numpy()


@pytest.fixture(scope="module")
def numeric_formats(tmp_path_factory):
    """The numeric world registered three ways: ctr-cbm (CatBoost), ctr-onnx (its ONNX export) and ctr-logged (its
    probabilities as a predictions table), with the day's batch and the probabilities."""
    from pipelines.data.schema import read_partition
    from pipelines.models.registration import register_model

    w = make_world(tmp_path_factory.mktemp("formats"))
    root = w["base"] / "data"
    write_day(root, w)
    spec = w["spec"]
    register_model(root, "ctr-cbm", DAY, w["cbm"], fmt="catboost", claimed_epsilon=1.0, dataset=spec)
    register_model(root, "ctr-onnx", DAY, w["onnx"], fmt="onnx", claimed_epsilon=1.0, dataset=spec)
    batch = spec.to_internal(read_partition(root, DAY))
    probabilities = w["model"].predict_proba(w["log"].select(SPEC["numeric"]).to_pandas())
    logged = w["base"] / "logged.parquet"
    pq.write_table(pa.table({"impression_id": w["log"].column("impression_id"), "prob_0": probabilities[:, 0],
                             "prob_1": probabilities[:, 1]}), logged)
    register_model(root, "ctr-logged", DAY, logged, fmt="predictions", claimed_epsilon=1.0, dataset=spec)
    return {**w, "root": root, "batch": batch, "probabilities": probabilities}


def predict(world, fmt: str, name: str, table: pa.Table | None = None) -> np.ndarray:
    """The probabilities the registered model ``name`` of ``world`` (in format ``fmt``) gives in process, on the
    day or on ``table``."""
    from pipelines.models.handle import resolve_model

    model = resolve_model(world["root"], name, DAY)
    assert model.format.name == fmt
    return model.format.predict(model, world["batch"] if table is None else table, world["spec"])
