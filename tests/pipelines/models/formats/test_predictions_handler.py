"""The logged predictions' Beam handler (pipelines/models/formats/predictions_handler.py): it answers each array of
row ids with the table's rows, NaN for an id without a logged prediction, under the model's name and date. The
handler in a real Beam pipeline on a registered table: tests/pipelines/models/test_formats.py."""

from __future__ import annotations

import datetime as dt
import types

import numpy as np

from pipelines.models.formats.logged_predictions import LoggedPredictions
from pipelines.models.formats.predictions_handler import PredictionsModelHandler


def test_each_array_of_row_ids_is_answered_from_the_table():
    handler = PredictionsModelHandler(types.SimpleNamespace(name="ctr-logged", date=dt.date(2024, 5, 2)))
    logged = LoggedPredictions.from_arrays(np.array([7, 3]), np.array([[0.6, 0.4], [0.1, 0.9]]))
    batch = [np.array([3, 4], dtype=np.int64), np.array([7], dtype=np.int64)]
    first, second = handler.run_inference(batch, logged)
    assert first.model_id == second.model_id == "ctr-logged@2024-05-02" and first.example is batch[0]
    np.testing.assert_array_equal(first.inference, [[0.1, 0.9], [np.nan, np.nan]])
    np.testing.assert_array_equal(second.inference, [[0.6, 0.4]])
    assert handler.get_num_bytes(batch) == 24
