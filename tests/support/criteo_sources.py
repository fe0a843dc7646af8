"""A synthetic day rendered as Criteo TSV, for the Criteo ingest's tests (tests/pipelines/data/test_criteo_ingest.py)
and the ``data ingest-criteo`` command's (tests/flows/commands/test_data.py): CRITEO_ROWS rows of day CRITEO_DATE,
seed 9, plain and gzip, once per module. Each folder's conftest.py offers ``criteo_source`` by name."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.data.criteo_ingest import write_criteo_tsv
from pipelines.data.synth import generate_day

CRITEO_DATE = dt.date(2024, 3, 5)
CRITEO_ROWS = 3_000


@pytest.fixture(scope="module")
def criteo_source(tmp_path_factory):
    """A synthetic day and its TSV rendering (plain and gzip)."""
    directory = tmp_path_factory.mktemp("criteo")
    table = generate_day(CRITEO_DATE, rows=CRITEO_ROWS, seed=9).table
    plain = write_criteo_tsv(table, directory / "day.tsv")
    gz = write_criteo_tsv(table, directory / "day.tsv.gz", compress=True)
    return table, plain, gz, plain.read_text().splitlines()


def write_lines(path, lines, end="\n"):
    path.write_text(end.join(lines) + end)
    return path
