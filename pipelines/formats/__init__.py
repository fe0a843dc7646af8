"""The built-in model formats (`pipelines.model_formats`), registered on import in this order. A new format is
one module here that subclasses `ModelFormat`, registers it and is imported below."""

from pipelines.formats import catboost_format, onnx_format, predictions_format, oracle_format  # noqa: F401, I001
