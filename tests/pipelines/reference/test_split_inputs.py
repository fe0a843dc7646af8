"""One side's inputs to the split test (pipelines/reference/split_inputs.py): the features as stored
(categoricals as text, None where missing), the reference's log-odds of the positive class and the rows' places
in the day; labels are never read."""

from __future__ import annotations

import types

import numpy as np
import pyarrow as pa

from pipelines.data.dataset_spec import DatasetSpec
from pipelines.reference.split_inputs import POSITION, REFERENCE, side_inputs

SHOP = DatasetSpec(name="shop", label="clicked", classes=2, row_key="impression_id", numeric=("price",),
                   categorical=("country",))


def _reference(p_positive):
    def predict(reference, table, dataset):
        assert dataset is SHOP and "clicked" not in table.column_names
        return np.column_stack([1 - p_positive, p_positive])[: table.num_rows]

    return types.SimpleNamespace(format=types.SimpleNamespace(predict=predict))


def test_a_sides_inputs_are_its_features_the_references_log_odds_and_the_rows_places():
    table = pa.table({"price": pa.array([3, None, 5], pa.int32()),
                      "country": pa.array(["fr", None, "de"]).dictionary_encode(),
                      POSITION: pa.array([7, 0, 12], pa.int64())})
    out = side_inputs(table, SHOP, _reference(np.array([0.5, 0.8, 1.0])))
    assert set(out) == {"price", "country", REFERENCE, POSITION}
    np.testing.assert_array_equal(out["price"], [3.0, np.nan, 5.0])
    assert out["country"].dtype == object and out["country"].tolist() == ["fr", None, "de"]
    np.testing.assert_allclose(out[REFERENCE][:2], [0.0, np.log(4.0)])
    assert np.isfinite(out[REFERENCE][2]) and out[REFERENCE][2] > 27  # a certain reference clipped, not inf
    assert out[POSITION].dtype == np.float64 and out[POSITION].tolist() == [7.0, 0.0, 12.0]


def test_an_empty_side_asks_the_reference_nothing():
    table = pa.table({"price": pa.array([], pa.float64()), "country": pa.array([], pa.string()),
                      POSITION: pa.array([], pa.int64())})
    never = types.SimpleNamespace(format=None)  # any call would raise
    out = side_inputs(table, SHOP, never)
    assert all(out[name].size == 0 for name in ("price", "country", REFERENCE, POSITION))
