"""Two synthetic days with an RR target trained on the second, for the tests of the rows a scoring job audits
(tests/pipelines/scoring/test_audit_rows.py) and of the ``score`` command's option checks (tests/flows/commands/
test_score.py): days PREVIOUS and DAY of ROWS rows (2 files each), the target "rr-1" trained on DAY by
`pipelines.training.train.train_and_register` with 10 CatBoost iterations. Each folder's conftest.py offers
``rr_trained_world`` by name."""

from __future__ import annotations

import datetime as dt

import pytest

from labeldp.codec import encode
from pipelines.data import schema, synth
from pipelines.data.day import listed_day
from pipelines.training import fitting
from pipelines.training import train as training

PREVIOUS, DAY = dt.date(2024, 5, 1), dt.date(2024, 5, 2)
ROWS = 4000


@pytest.fixture(scope="module")
def rr_trained_world(tmp_path_factory):
    """The data root, the target's metadata (encoded) and day DAY's table."""
    root = tmp_path_factory.mktemp("audit-rows")
    for date in (PREVIOUS, DAY):
        synth.write_synthetic_day(root, date, rows=ROWS, rows_per_file=2000)
    settings = fitting.settings_from(iterations=10, thread_count=1)
    _, metadata = training.train_and_register(listed_day(root, DAY), "rr", 1.0, model_name="rr-1", settings=settings)
    table = schema.read_partition(root, DAY)
    return {"root": root, "metadata": encode(metadata), "table": table}
