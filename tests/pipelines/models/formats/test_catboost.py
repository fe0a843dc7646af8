"""The CatBoost format's feature schema (pipelines/models/formats/catboost.py) read from the model itself; the
format on a registered model trained here: tests/pipelines/models/test_registration.py and test_formats.py."""

from __future__ import annotations

import types

from pipelines.models.formats.catboost import feature_kinds


def test_the_feature_schema_names_each_feature_with_its_kind_in_model_order():
    model = types.SimpleNamespace(feature_names_=["I1", "C1", "price", "C2"], get_cat_feature_indices=lambda: [3, 1])
    assert feature_kinds(model) == [{"name": "I1", "kind": "numeric"}, {"name": "C1", "kind": "categorical"},
                                    {"name": "price", "kind": "numeric"}, {"name": "C2", "kind": "categorical"}]
