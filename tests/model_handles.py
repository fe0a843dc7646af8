"""Model handles for tests that judge metadata alone (which rows a model read, which reference it names) without
a registered file: `pipelines.models.handle.ModelHandle` is a plain record, so such a test builds one."""

from __future__ import annotations

import datetime as dt
import os

from pipelines.data.layout import model_dir
from pipelines.models.handle import ModelHandle

NO_FILE = "sha256:" + "0" * 64


def unregistered(metadata: dict, root: str | os.PathLike = "/nonexistent") -> ModelHandle:
    """A handle on ``metadata`` (its ``model_name`` and ``date``) at its place under ``root``, whose file need not
    exist (its fingerprint is all zeros)."""
    name, day = metadata["model_name"], dt.date.fromisoformat(metadata["date"])
    directory = model_dir(root, name, day)
    return ModelHandle(name, day, directory, directory / "model.cbm", metadata, NO_FILE)
