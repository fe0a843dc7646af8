"""A drifted day and its recalibrated reference, for the reference's tests (tests/pipelines/reference/
test_recalibration.py, test_shift_diagnostics.py): a data root with the reference trained on D-1 and a day D whose
labels drifted (labels redrawn from the day's oracle probability shifted in logit, +0.8 everywhere and +1.0 more on a
segment), and the reference recalibrated on D. tests/pipelines/reference/conftest.py offers the fixtures (drifted_world,
drifted_recalibrated) by name."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pytest
from scipy.special import expit, logit

from pipelines.data import schema, splits, synth
from pipelines.data.day import listed_day
from pipelines.models import registry
from pipelines.models.handle import resolve_model
from pipelines.reference.recalibration import HeldOutRows, correction_rows, recalibrate_reference
from pipelines.training import train as training
from tests.support.model_handles import unregistered

PREVIOUS = dt.date(2024, 3, 1)
DAY = dt.date(2024, 3, 2)
EMPTY_DAY = dt.date(2024, 3, 3)  # a partition without test rows
DAY_ROWS = 60_000
SETTINGS = training.CatBoostSettings(iterations=60)  # the reference: fast on 2 cores
TARGET = {"model_name": "target", "date": DAY.isoformat(),
          "training_rows": {"split": splits.scheme(), "label_splits": ["train", "validation"],
                            "validation_labels_used_for": ["chose the best iteration (use_best_model)"],
                            "unread_row_ids": [], "rows": 0}}
RECALIBRATED = "reference-recalibrated"


def top_value_mask(table: pa.Table, column: str) -> np.ndarray:
    """The rows holding the column's most frequent (non-missing) value: the drifting segment."""
    values = np.asarray(table.column(column).combine_chunks().cast(pa.string()).to_numpy(zero_copy_only=False),
                        dtype=object)
    present = values[values != np.array(None)]
    uniques, counts = np.unique(present.astype(str), return_counts=True)
    return values == uniques[np.argmax(counts)]


def draw(p: np.ndarray, seed: int) -> np.ndarray:
    """Labels drawn from the click probabilities ``p``, seeded."""
    return (np.random.default_rng(seed).random(p.size) < p).astype(np.int64)


@pytest.fixture(scope="module")
def drifted_world(tmp_path_factory):
    """A data root with the reference trained on D-1 and a day D whose labels drifted: +0.8 in logit everywhere
    and +1.0 more on the most frequent value of C1 (a CTR-encoded column, ~25% of rows)."""
    root = tmp_path_factory.mktemp("recalibration")
    synth.write_synthetic_day(root, PREVIOUS, rows=DAY_ROWS)
    previous = training.load_day(listed_day(root, PREVIOUS))
    result = training.train_model(previous, "none", math.inf, seed=0, settings=SETTINGS)
    training.register("reference", previous, result)

    day = synth.generate_day(DAY, rows=DAY_ROWS)
    segment = top_value_mask(day.table, "C1")
    truth = expit(logit(day.oracle.column(schema.P_CLICK).to_numpy()) + 0.8 + 1.0 * segment)
    labels = draw(truth, 11).astype(np.int8)
    table = day.table.set_column(day.table.schema.get_field_index(schema.LABEL), schema.LABEL, pa.array(labels))
    schema.write_partition(root, DAY, table, source="drifted test day")

    empty = synth.generate_day(EMPTY_DAY, rows=5_000).table
    keep = splits.split_of(empty.column(schema.ROW_ID).to_numpy()) != splits.TEST
    schema.write_partition(root, EMPTY_DAY, empty.filter(pa.array(keep)), source="no test rows")

    ids = table.column(schema.ROW_ID).to_numpy()
    reference = registry.load_model(resolve_model(root, "reference", PREVIOUS))
    frame = training.feature_frame(table)
    return {"root": root, "table": table, "frame": frame, "ids": ids, "truth": truth, "segment": segment,
            "reference": reference,
            "reference_raw": reference.predict(frame, prediction_type="RawFormulaVal"),
            "audited": (splits.split_of(ids) == splits.TRAIN) & ~correction_rows(HeldOutRows()).in_correction(ids)}


@pytest.fixture(scope="module")
def drifted_recalibrated(drifted_world):
    """The reference recalibrated on day D for the target: (its metadata, the model, its click probabilities)."""
    world = drifted_world
    metadata = recalibrate_reference(listed_day(world["root"], DAY), RECALIBRATED, resolve_model(world["root"], "reference", PREVIOUS),
                                     targets=[unregistered(TARGET)], seed=0).metadata
    model = registry.load_model(resolve_model(world["root"], RECALIBRATED, DAY))
    return metadata, model, np.asarray(model.predict_proba(world["frame"]), dtype=np.float64)[:, 1]
