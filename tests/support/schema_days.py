"""A synthetic day's table for the partition schema's tests (tests/pipelines/data/test_schema.py) and the ``data
validate`` command's (tests/flows/commands/test_data.py): 600 rows of day SCHEMA_DATE, seed 11, once per module.
Each folder's conftest.py offers ``schema_table`` by name."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from pipelines.data.synth import generate_day

SCHEMA_DATE = dt.date(2024, 2, 1)


@pytest.fixture(scope="module")
def schema_table() -> pa.Table:
    return generate_day(SCHEMA_DATE, rows=600, seed=11).table
