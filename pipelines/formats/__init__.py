"""The built-in model formats (`pipelines.model_formats`), registered on import in this order: CatBoost ``.cbm``
(the default, what `pipelines.training` writes), ONNX, logged predictions and the positive control's RR-label
oracle. A new format is one module here that subclasses `ModelFormat`, registers it and is imported below."""

from pipelines.formats import catboost_format, onnx_format, oracle_format, predictions_format  # noqa: F401
