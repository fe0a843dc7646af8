"""Model formats: how a registered model's file is checked, loaded and run. One registry (`MODEL_FORMATS`), like
the mechanisms: the Beam job, the registration command, the reference resolution and the bare-inference
benchmark ask the format of a model's metadata (`format_of`) and call its methods; no other module compares a
format name with text. A new format is one new module that subclasses `ModelFormat` and registers it.

Every format turns a validated batch of the day's rows (an Arrow table with the pipelines' names: ``row_id``,
``label`` and the dataset's feature columns, `pipelines.data.dataset_spec`) into (rows x classes) float64 class
probabilities:

- `prepare` builds the format's example from the batch (a CatBoost frame, a float32 matrix, the row keys);
- `handler` is a Beam RunInference `ModelHandler` on those examples, loaded once per worker process;
- `predict` does the same in this process (tests, benchmarks, in-process audits).

A row the format cannot answer (a logged-predictions table without that row key) gets a row of NaN, which the
scoring job counts as "without a prediction" and leaves out of the game (`pipelines.scoring.scored_batch`), never drops
silently. `inspect` checks a file offered for registration against the dataset (readable as this format,
feature names and class count) before anything is copied, and returns what the metadata records about it.

A registered file is data: no format unpickles or executes anything but its own runtime (CatBoost's ``.cbm``
reader, onnxruntime, Parquet).
"""

from __future__ import annotations

from pipelines.models.formats.base import (
    MODEL_FORMATS,
    ModelFormat,
)
from pipelines.models.metadata import DEFAULT_FORMAT, ModelMetadata


def model_format(choice: str | ModelFormat, name: str = "format") -> ModelFormat:
    """The registered format for a name (LabelDPInputError listing the known ones)."""
    _load_builtins()
    return MODEL_FORMATS.get(choice, name)


def format_names(registrable_only: bool = False) -> tuple[str, ...]:
    _load_builtins()
    return tuple(f.name for f in MODEL_FORMATS if f.registrable or not registrable_only)


def format_of(metadata: ModelMetadata) -> ModelFormat:
    """The format of a registered model from its metadata (``format``; models trained before formats existed
    are CatBoost, the positive control's oracle says so by its ``model_type``: `ModelMetadata.format_name`)."""
    where = f"model {metadata.model_name!r} of {metadata.date.isoformat()}: metadata format"
    return model_format(metadata.format_name, where)


def _load_builtins() -> None:
    # The built-in formats register themselves on import; importing here keeps this module free of their
    # runtimes (CatBoost, onnxruntime, Beam) until a format is asked for.
    pass


__all__ = ["DEFAULT_FORMAT", "format_names", "format_of", "model_format"]
