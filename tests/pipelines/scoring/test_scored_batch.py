"""A scored batch (pipelines/scoring/scored_batch.py): bad probabilities counted per model, and the nine row
counters across the batch's edges."""

import numpy as np
import pyarrow as pa

from labeldp.codec import encode
from pipelines.scoring.scored_batch import RowCounts, scored_batch


def test_bad_probabilities_are_counted_per_model():
    table = pa.table({"row_id": pa.array([1, 2, 3, 4, 5], pa.int64()), "label": pa.array([0, 1, 0, 1, 0], pa.int8())})
    good = np.array([[0.9, 0.1]] * 5)
    target = good.copy()
    target[1] = [np.nan, 0.5]
    target[2] = [1.2, -0.2]
    reference = good.copy()
    reference[3] = [0.3, 0.3]  # does not sum to 1
    batch = scored_batch("b", table, target, reference)
    assert batch.issues == RowCounts(rows_read=5, rows_scored=2, rows_bad_target_probabilities=2,
                                     rows_bad_reference_probabilities=1)
    assert batch.row_ids.tolist() == [1, 5]


def test_row_counts_cross_their_edges_as_the_nine_counters():
    """The counters are written as result.json's ``diagnostics.rows`` always was (nine keys, this order), travel
    through a two-stage plan's Parquet metadata exactly, and stay with the whole batch, not its parts."""
    from pipelines.scoring.scored_batch import batch_from_predictions, predictions_table

    assert list(encode(RowCounts())) == [
        "rows_read", "rows_scored", "rows_without_row_id", "rows_bad_target_probabilities",
        "rows_bad_reference_probabilities", "rows_without_target_prediction", "rows_without_reference_prediction",
        "check_rows_read", "check_rows_scored"]
    table = pa.table({"row_id": pa.array([1, None, 3], pa.int64()), "label": pa.array([0, 1, 0], pa.int8())})
    batch = scored_batch("b", table, np.array([[0.9, 0.1]] * 3), np.array([[0.8, 0.2], [0.7, 0.3], [np.nan, 0.5]]))
    assert batch.issues == RowCounts(rows_read=3, rows_scored=1, rows_without_row_id=1,
                                     rows_bad_reference_probabilities=1)
    assert batch_from_predictions(predictions_table(batch)).issues == batch.issues
    assert batch.take(np.arange(1)).issues is None and batch.audited().issues == batch.issues
    assert RowCounts(rows_read=2) + RowCounts(rows_read=1, check_rows_read=4) == RowCounts(rows_read=3,
                                                                                          check_rows_read=4)
