"""A data root holding a day of the numeric click dataset (tests/support/numeric_clicks.py), for the tests that
register its models: the registration's (tests/pipelines/models/test_registration.py) and the ``models`` command's
(tests/flows/commands/test_models.py). Import the fixtures by name: ``from tests.support.numeric_registry import
files, root``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from tests.support.numeric_clicks import make_world, write_day


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("registration"))


@pytest.fixture
def root(tmp_path, files):
    """A fresh data root holding day DAY of the numeric dataset."""
    root = tmp_path / "data"
    write_day(root, files)
    return root


def sha256_fingerprint(path: Path) -> str:
    """A file's fingerprint as the registry writes it."""
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def row_keys(files: dict) -> np.ndarray:
    """The row keys of the world's day."""
    return files["log"].column("impression_id").to_numpy()
