"""What every model format shares (pipelines/models/formats/base.py): a row without a prediction is a row of NaN,
a model's features are checked against the dataset naming every misfit, and a format's output is a
(rows x classes) probability array or a refusal naming where it came from."""

from __future__ import annotations

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.models.formats.base import check_model_features, check_probability_matrix, missing_prediction

SHOP = DatasetSpec(name="shop", label="clicked", classes=2, row_key="impression_id", numeric=("price",),
                   categorical=("country",))


def test_a_missing_prediction_is_a_row_of_nan_per_class():
    out = missing_prediction(3, 2)
    assert out.shape == (3, 2) and out.dtype == np.float64 and np.isnan(out).all()


def test_model_features_must_be_dataset_features_of_the_same_kind():
    check_model_features([{"name": "price", "kind": "numeric"}, {"name": "country", "kind": "categorical"}], SHOP,
                         "model.cbm")
    schema = [{"name": "price", "kind": "categorical"}, {"name": "age", "kind": "numeric"},
              {"name": "country", "kind": "categorical"}]
    with pytest.raises(LabelDPInputError) as raised:
        check_model_features(schema, SHOP, "model.cbm")
    assert str(raised.value) == ("model.cbm: the model reads column(s) ['age'] that dataset 'shop' (shop) does not "
                                 "have as features; reads column(s) as another kind: ['price (model: categorical, "
                                 "dataset: numeric)']")


def test_a_probability_matrix_has_a_row_per_row_and_two_classes_or_more():
    out = check_probability_matrix([[0.2, 0.8], [1, 0]], 2, "ctr-onnx")
    assert out.dtype == np.float64 and out.tolist() == [[0.2, 0.8], [1.0, 0.0]]
    for bad in ([0.2, 0.8], [[0.2, 0.8]], [[1.0], [1.0]]):
        with pytest.raises(LabelDPInputError, match=r"^ctr-onnx: expected a \(2 x classes\) probability array, got "
                                                    r"shape \("):
            check_probability_matrix(bad, 2, "ctr-onnx")
