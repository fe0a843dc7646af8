"""A numeric-only click dataset and a model trained outside this tool on it: the dataset spec, one day's log (a
learnable signal, 5% missing values, non-contiguous row keys), a CatBoost classifier trained on its first rows, saved
as .cbm and exported to ONNX by CatBoost itself, and the training keys. Shared by the model formats' and the
registration's tests (tests/pipelines/models/) and the ``models`` command's (tests/flows/commands/test_models.py)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DAY = dt.date(2025, 3, 2)
ROWS = 3000
TRAIN_ROWS = 2400
SPEC = {"name": "num_clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
        "numeric": ["f1", "f2", "f3", "f4"], "categorical": [], "numeric_type": "float64"}


def click_log(rows: int = ROWS, seed: int = 5) -> pa.Table:
    """A click log with a learnable signal and 5% missing values (non-contiguous row keys)."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(rows, 4))
    f[rng.random(f.shape) < 0.05] = np.nan
    logit = -0.5 + 1.2 * np.nan_to_num(f[:, 0]) - 0.8 * np.nan_to_num(f[:, 1])
    clicked = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    columns = {"impression_id": 10_000 + 3 * np.arange(rows, dtype=np.int64), "clicked": clicked}
    columns.update({f"f{i + 1}": f[:, i] for i in range(4)})
    return pa.table(columns)


def fit(table: pa.Table, features: list[str], iterations: int = 60):
    from catboost import CatBoostClassifier

    model = CatBoostClassifier(iterations=iterations, depth=4, random_seed=0, verbose=False, thread_count=2)
    frame = table.select(SPEC["numeric"]).to_pandas()
    frame.columns = features
    model.fit(frame, table.column("clicked").to_numpy())
    return model


def make_world(base: Path) -> dict:
    """Files for a numeric dataset: the spec, one day's log, a CatBoost model trained on its first 2400 rows as
    .cbm and .onnx, and the training keys. `write_day` puts the day into a data root."""
    from pipelines.data.dataset_spec import load_spec

    base.mkdir(parents=True, exist_ok=True)
    spec_path = base / "num_clicks.json"
    spec_path.write_text(json.dumps(SPEC))
    log = click_log()
    train = log.slice(0, TRAIN_ROWS)
    model = fit(train, SPEC["numeric"])
    model.save_model(str(base / "ctr.cbm"))
    model.save_model(str(base / "ctr.onnx"), format="onnx")
    pq.write_table(train.select(["impression_id"]), base / "train_keys.parquet")
    return {"base": base, "spec_path": spec_path, "spec": load_spec(spec_path), "log": log, "model": model,
            "cbm": base / "ctr.cbm", "onnx": base / "ctr.onnx", "keys": base / "train_keys.parquet"}


def write_day(root: Path, world: dict, day: dt.date = DAY) -> Path:
    from pipelines.data.schema import write_partition

    return write_partition(root, day, world["log"], dataset=world["spec"])
