"""Model handles for tests that judge metadata alone (which rows a model read, which reference it names) without
a registered file: `pipelines.models.handle.ModelHandle` is a plain record, so such a test builds one."""

from __future__ import annotations

import os

from pipelines.data.layout import model_dir
from pipelines.models.handle import ModelHandle
from pipelines.models.metadata import ModelMetadata, as_metadata

NO_FILE = "sha256:" + "0" * 64

# the keys every metadata has, for a test that gives only the ones it judges
FILLER = {"metadata_version": 1, "mechanism": {"name": "external", "epsilon": "inf", "delta": 0.0}, "seed": None,
          "partition_fingerprint": None, "feature_schema": [], "catboost_params": None, "test_metrics": None,
          "code_version": {}, "created_at": "2024-01-01T00:00:00+00:00"}


def metadata_of(metadata: dict) -> ModelMetadata:
    """The record of ``metadata`` (the keys it lacks from `FILLER`), as `as_metadata` reads a file."""
    return as_metadata({**FILLER, **metadata}, "a test's metadata")


def unregistered(metadata: dict, root: str | os.PathLike = "/nonexistent") -> ModelHandle:
    """A handle on ``metadata`` (its ``model_name`` and ``date``; the keys it lacks from `FILLER`) at its place under
    ``root``, whose file need not exist (its fingerprint is all zeros)."""
    record = as_metadata({**FILLER, **metadata}, "a test's metadata")
    directory = model_dir(root, record.model_name, record.date)
    return ModelHandle(record.model_name, record.date, directory, directory / "model.cbm", record, NO_FILE)
