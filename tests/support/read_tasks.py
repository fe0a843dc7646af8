"""A day's read tasks for the batch readers' tests (tests/pipelines/scoring/test_partition_batches.py and
test_beam_dofns.py): a synthetic day of 5,000 rows in 5 files, a row group each, as `read_tasks` lists them; and
batches flattened to compare them. tests/pipelines/scoring/conftest.py offers the fixture
(day_read_tasks) by name."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.data import synth
from pipelines.data.day import listed_day
from pipelines.scoring.partition_batches import read_tasks

DAY = dt.date(2024, 5, 2)


@pytest.fixture(scope="module")
def day_read_tasks(tmp_path_factory):
    root = tmp_path_factory.mktemp("read-ahead")
    synth.write_synthetic_day(root, DAY, rows=5000, rows_per_file=1200)  # 5 files, a row group each
    found = read_tasks(list(listed_day(root, DAY).files))
    assert len(found) == 5
    return found


def flat(pairs):
    """(batch id, the batch as a dict of columns) for each (batch id, table) pair."""
    return [(batch_id, table.to_pydict()) for batch_id, table in pairs]
