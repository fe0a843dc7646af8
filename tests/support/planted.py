"""A planted violation for the tests that run whole nights on small synthetic days (tests/behaviour/test_flows.py,
tests/behaviour/test_operations.py, tests/flows/test_exit_codes.py): a model that memorises its training
labels, so that its
VIOLATION is one the capacity check vouches for even on a day of 20,000 rows. (A non-private CatBoost model on such
a day leaks too little beyond what the reference's misfit explains for its check rows to tell: its VIOLATION is
shown untrusted, which is what the product should say at that size.)"""

from __future__ import annotations

import datetime as dt
from pathlib import Path


def register_memorizer(root, day: str, name: str = "leaky", claimed_epsilon: float = 0.0) -> None:
    """A planted violation that memorises its training labels (the train and validation splits of the day):
    its logged predictions are 0.9 on a training row that clicked, 0.02 on one that did not, and the day's click
    rate on every other row (it learned nothing that generalises). Registered with its training keys, so the
    day's other rows check the reference."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.data import schema, splits
    from pipelines.models.registration import register_model

    table = schema.read_partition(root, dt.date.fromisoformat(day), columns=[schema.ROW_ID, schema.LABEL])
    ids = table.column(schema.ROW_ID).to_numpy()
    labels = table.column(schema.LABEL).to_numpy()
    trained = splits.split_of(ids) != splits.TEST
    p = np.where(trained, np.where(labels == 1, 0.9, 0.02), labels.mean())
    files = Path(root) / "files"
    files.mkdir(exist_ok=True)
    pq.write_table(pa.table({"row_id": ids, "prob_0": 1 - p, "prob_1": p}), files / f"{name}-{day}.parquet")
    pq.write_table(pa.table({"row_id": np.sort(ids[trained])}), files / f"{name}-{day}-keys.parquet")
    register_model(root, name, dt.date.fromisoformat(day), files / f"{name}-{day}.parquet", fmt="predictions",
                   claimed_epsilon=claimed_epsilon, dataset=None, training_rows=files / f"{name}-{day}-keys.parquet")
