"""The data root's layout (pipelines/data/layout.py): the paths of a day's partition, oracle and model, and
atomic directories, one or several replaced together, leaving nothing behind on failure."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from pipelines.data.layout import atomic_directories, atomic_directory, model_dir, oracle_dir, partition_dir


def test_layout_paths(tmp_path):
    assert partition_dir(tmp_path, dt.date(2024, 1, 5)) == tmp_path / "partitions" / "date=2024-01-05"
    assert oracle_dir(tmp_path, dt.date(2024, 1, 5)) == tmp_path / "oracle" / "date=2024-01-05"
    assert model_dir(tmp_path, "lp-1st_eps4.0", dt.date(2024, 1, 5)) == tmp_path / "models" / "lp-1st_eps4.0" / "date=2024-01-05"


def test_atomic_directory_publishes_and_replaces(tmp_path):
    final = tmp_path / "a" / "b" / "out"
    with atomic_directory(final) as tmp:
        (tmp / "f.txt").write_text("one")
        assert not final.exists()
    assert (final / "f.txt").read_text() == "one"
    with atomic_directory(final) as tmp:
        (tmp / "g.txt").write_text("two")
    assert sorted(os.listdir(final)) == ["g.txt"]
    assert sorted(os.listdir(final.parent)) == ["out"]  # no temporary or old directory left behind


def test_atomic_directory_failure_leaves_nothing(tmp_path):
    final = tmp_path / "new" / "parent" / "out"
    with pytest.raises(RuntimeError), atomic_directory(final) as tmp:
        (tmp / "f.txt").write_text("half")
        raise RuntimeError("crash")
    assert not (tmp_path / "new").exists()  # nor the parents it created
    existing = tmp_path / "old"
    with atomic_directory(existing) as tmp:
        (tmp / "keep.txt").write_text("keep")
    with pytest.raises(RuntimeError), atomic_directory(existing) as tmp:
        (tmp / "new.txt").write_text("x")
        raise RuntimeError("crash")
    assert sorted(os.listdir(existing)) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["old"]


def test_atomic_directories_replace_together_and_a_failure_leaves_nothing(tmp_path):
    """Two directories replaced as one (a day's oracle and partition): both new after success, no journal or
    temporary left; an exception inside the block leaves both old ones and removes the parents it created."""
    first, second = tmp_path / "oracle" / "d", tmp_path / "partitions" / "d"
    with atomic_directories(first, second) as (a, b):
        (a / "f").write_text("a1")
        (b / "f").write_text("b1")
    with atomic_directories(first, second) as (a, b):
        (a / "f").write_text("a2")
        (b / "f").write_text("b2")
    assert ((first / "f").read_text(), (second / "f").read_text()) == ("a2", "b2")
    assert sorted(os.listdir(tmp_path)) == ["oracle", "partitions"]  # no journal
    assert os.listdir(first.parent) == ["d"] and os.listdir(second.parent) == ["d"]
    with pytest.raises(RuntimeError), atomic_directories(first, second, tmp_path / "new" / "d") as (a, _b, _c):
        (a / "f").write_text("half")
        raise RuntimeError("crash")
    assert ((first / "f").read_text(), (second / "f").read_text()) == ("a2", "b2")
    assert sorted(os.listdir(tmp_path)) == ["oracle", "partitions"]
    assert os.listdir(first.parent) == ["d"] and os.listdir(second.parent) == ["d"]
