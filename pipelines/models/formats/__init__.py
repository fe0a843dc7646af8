"""The built-in model formats (`pipelines.models.formats.registry`), registered on import in this order. A new
format is one module here that subclasses `ModelFormat` (`base.py`) and registers it, imported below; its Beam
inference handler is a module beside it (imported only by the scoring job)."""

from pipelines.models.formats import catboost, onnx, predictions, oracle  # noqa: F401, I001
