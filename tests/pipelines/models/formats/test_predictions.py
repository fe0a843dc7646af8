"""The logged-predictions model format (pipelines/models/formats/predictions.py), with real parts: the
probabilities of a CatBoost classifier trained here, registered as a predictions table. They come back exactly,
a row without a logged prediction gets NaN, never a number, and inspecting names what is wrong with a table.
The world: tests/support/numeric_registry.py (`numeric_formats`); the formats in a Beam pipeline:
tests/pipelines/models/test_formats.py.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.errors import LabelDPInputError
from tests.support.numeric_clicks import DAY
from tests.support.numeric_registry import predict as _predict


def test_logged_predictions_come_back_and_unknown_rows_are_nan(numeric_formats, tmp_path):
    from pipelines.models.registration import register_model

    np.testing.assert_array_equal(_predict(numeric_formats, "predictions", "ctr-logged"), numeric_formats["probabilities"])
    # a 2-class table may hold prob_1 alone: [1 - p, p]
    p = numeric_formats["probabilities"][:, 1]
    single = tmp_path / "single.parquet"
    pq.write_table(pa.table({"row_id": numeric_formats["log"].column("impression_id")[::-1], "prob_1": p[::-1]}), single)
    register_model(numeric_formats["root"], "ctr-logged-p1", DAY, single, fmt="predictions", claimed_epsilon=1.0,
                   dataset=numeric_formats["spec"])
    ids = pa.table({"row_id": pa.array([10_003, 7, 10_000], pa.int64())})
    got = _predict(numeric_formats, "predictions", "ctr-logged-p1", ids)
    np.testing.assert_array_equal(got[0], [1 - p[1], p[1]])
    assert np.isnan(got[1]).all()
    np.testing.assert_array_equal(got[2], [1 - p[0], p[0]])


@pytest.mark.parametrize("columns, message", [
    ({"impression_id": [1, 2], "prob_0": [0.5, 0.5]}, r"missing probability column\(s\) \['prob_1'\]"),
    ({"impression_id": [1, 2], "prob_1": [0.5, 0.5], "prob_2": [0.0, 0.0]}, r"column\(s\) \['prob_2'\] but dataset"),
    ({"key": [1, 2], "prob_1": [0.5, 0.5]}, r"no row-key column impression_id \(or row_id\)"),
    ({"impression_id": [1.0, 2.0], "prob_1": [0.5, 0.5]}, "column 'impression_id' has type double"),
    ({"impression_id": [1, None, 3], "prob_1": [0.5, 0.5, 0.5]}, r"1 row\(s\) are null"),
    ({"impression_id": [1, 2, 3], "prob_0": [0.5, 0.2, 0.1], "prob_1": [0.5, 0.7, 0.9]},
     r"1 row\(s\) have probabilities that do not sum to 1 \(within 1e-06\) \(e.g. row key 2"),
    ({"impression_id": [1, 2, 3], "prob_1": [0.5, float("nan"), None]}, r"2 row\(s\) have a probability that is "
                                                                       r"missing, not finite or outside \[0, 1\]"),
    ({"impression_id": pa.array([], pa.int64()), "prob_1": pa.array([], pa.float64())}, "holds no rows"),
])
def test_predictions_inspect_names_what_is_wrong(numeric_formats, tmp_path, columns, message):
    from pipelines.models.formats.registry import model_format

    path = tmp_path / "predictions.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(LabelDPInputError, match=message):
        model_format("predictions").inspect(path, numeric_formats["spec"])
