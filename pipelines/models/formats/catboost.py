"""CatBoost ``.cbm``: the models `pipelines.training.train` trains, and any team's CatBoost classifier.

The example is the batch's CatBoost frame (`pipelines.models.catboost_frames.shared_frame`: built once per batch for
both models, whose Pool is shared too); the handler is `pipelines.models.formats.catboost_handler.CatBoostModelHandler`, which
loads the resolved model's file through `pipelines.models.registry.load_model` (so a noise-corrected LP-1ST-NC model predicts corrected
probabilities) and feeds the model its own feature columns in its own order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.models.formats.base import (
    MODEL_FORMATS,
    ModelFile,
    ModelFormat,
    Offer,
    check_model_features,
    check_probability_matrix,
)


def feature_kinds(model) -> list[dict[str, str]]:
    """The model's ``feature_schema`` (name, numeric or categorical) from the model itself."""
    categorical = {int(i) for i in model.get_cat_feature_indices()}
    return [{"name": str(name), "kind": "categorical" if index in categorical else "numeric"}
            for index, name in enumerate(model.feature_names_)]


@MODEL_FORMATS.register
class CatBoostFormat(ModelFormat):
    name = "catboost"
    description = "a CatBoost classifier saved as .cbm (CatBoost's own format)"
    file_name = "model.cbm"
    catboost_classifier = True

    def inspect(self, path: Path, dataset: DatasetSpec, offer: Offer | None = None) -> dict:
        from catboost import CatBoostClassifier

        model = CatBoostClassifier()
        try:
            model.load_model(str(path), format="cbm")
        except Exception as exc:  # CatBoostError and OS errors alike: report the file
            raise LabelDPInputError(f"{path}: not a readable CatBoost model ({exc})") from None
        schema = feature_kinds(model)
        check_model_features(schema, dataset, str(path))
        known = getattr(model, "classes_", None)
        classes = 0 if known is None else len(known)
        if classes and classes != dataset.classes:
            raise LabelDPInputError(f"{path}: the model predicts {classes} classes but dataset {dataset.name!r} has "
                                    f"{dataset.classes}")
        return {"feature_schema": schema, "classes": dataset.classes,
                "catboost_params": {key: value for key, value in model.get_params().items()
                                    if isinstance(value, bool | int | float | str)}}

    def prepare(self, table: pa.Table, dataset: DatasetSpec):
        from pipelines.models.catboost_frames import shared_frame

        return shared_frame(table, dataset)

    def handler(self, model: ModelFile, dataset: DatasetSpec, *, thread_count: int = 1):
        from pipelines.models.formats.catboost_handler import CatBoostModelHandler

        return CatBoostModelHandler(model, thread_count=thread_count)

    def predict(self, model: ModelFile, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        from pipelines.models.catboost_frames import catboost_frame
        from pipelines.models.registry import load_model

        classifier = load_model(model)
        frame = catboost_frame(table, dataset)[list(classifier.feature_names_)]
        return check_probability_matrix(classifier.predict_proba(frame), table.num_rows, f"model {model.name!r}")
