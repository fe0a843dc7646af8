"""A table of logged predictions in memory (pipelines/models/formats/logged_predictions.py): its probability
columns, and a lookup by row key that gives NaN, never a number, for a key the table lacks. The format with a
trained model's table registered: test_predictions.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipelines.models.formats.logged_predictions import (
    LoggedPredictions,
    probability_columns,
    probability_matrix,
)


def test_probability_columns_and_a_single_positive_column_of_two_classes():
    assert probability_columns(3) == ["prob_0", "prob_1", "prob_2"]
    table = pa.table({"prob_0": [0.9, None], "prob_1": pa.array([0.25, None], pa.float32())})
    np.testing.assert_array_equal(probability_matrix(table, ["prob_1"], 2), [[0.75, 0.25], [np.nan, np.nan]])
    both = probability_matrix(table, ["prob_0", "prob_1"], 2)
    assert both.dtype == np.float64 and both[0].tolist() == [0.9, 0.25] and np.isnan(both[1]).all()


def test_a_lookup_by_key_in_any_order_with_nan_rows_for_keys_without_a_prediction():
    logged = LoggedPredictions.from_arrays(np.array([30, 10, 20]), np.array([[0.7, 0.3], [0.9, 0.1], [0.8, 0.2]]))
    assert logged.keys.tolist() == [10, 20, 30] and logged.classes == 2
    out = logged.predict_proba(np.array([20, 5, 30, 99, 10, 25]))
    np.testing.assert_array_equal(out[[0, 2, 4]], [[0.8, 0.2], [0.7, 0.3], [0.9, 0.1]])
    assert np.isnan(out[[1, 3, 5]]).all()  # below, beyond and between the keys
    empty = LoggedPredictions.from_arrays(np.zeros(0, np.int64), np.zeros((0, 2)))
    assert np.isnan(empty.predict_proba(np.array([1, 2]))).all() and empty.predict_proba([]).shape == (0, 2)
