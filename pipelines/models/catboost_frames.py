"""The CatBoost input of the scoring job: partition rows (an Arrow batch) as the feature frame the registry's
models read, and the CatBoost `Pool` built from it once for both models. No Beam: the RunInference handler
(`pipelines.models.formats.catboost_handler`) uses them, and so do the benchmarks and the recalibration's checks.

- `catboost_frame` holds exactly the values of ``pipelines.training.train.feature_frame`` (the conversion training
  used: the model hashes categorical values as strings, so scoring must present the same strings;
  tests/pipelines/models/test_catboost_frames.py checks the predictions are identical) but is built ~10x faster:
  with pandas 3 the frame's categories are Arrow-backed strings that CatBoost reads one Python call at a time, and
  an Arrow batch read from Parquet carries its row group's whole dictionary (every value of the file, not of the
  batch).
- `catboost_pool` keeps the last Pool per thread, so the reference model reuses the Pool the target built on
  the same frame; `shared_frame` likewise keeps the last batch's frame, so both models' examples are one frame.
- The columns come from the dataset spec (`pipelines.data.dataset_spec`; default the Criteo spec): its numeric
  features as float64, then its categorical features.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import catboost
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.data.categories import MISSING_CATEGORY, used_categories
from pipelines.data.dataset_spec import DatasetSpec, criteo


def _batch_categories(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, categories) of a categorical column: the categories are the values present in these rows (held as
    Python strings, `pipelines.data.categories.used_categories`), "" for missing; codes index them."""
    codes, categories = used_categories(column)
    if (codes < 0).any():
        hit = np.flatnonzero(categories == MISSING_CATEGORY)
        if not hit.size:
            hit = [categories.size]
            categories = np.append(categories, MISSING_CATEGORY)
        codes = np.where(codes < 0, hit[0], codes)
    return codes.astype(np.int32), categories


def catboost_frame(table: pa.Table, dataset: DatasetSpec | None = None) -> pd.DataFrame:
    """The CatBoost input for partition rows: the numeric features (Criteo: ``I1..I13``) as float64 (NaN =
    missing), then the categorical ones (Criteo: ``C1..C26``) as pandas categoricals of their strings ("" =
    missing) whose categories are the batch's own values held as Python strings (object dtype). Same values as
    ``pipelines.training.train.feature_frame``."""
    dataset = dataset or criteo()
    columns: dict[str, Any] = {}
    for name in dataset.numeric:
        columns[name] = pc.cast(table.column(name), pa.float64()).to_numpy(zero_copy_only=False)
    for name in dataset.categorical:
        codes, categories = _batch_categories(table.column(name))
        columns[name] = pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))
    return pd.DataFrame(columns)


_POOLS = threading.local()
_FRAMES = threading.local()


def shared_frame(table: pa.Table, dataset: DatasetSpec | None = None) -> pd.DataFrame:
    """`catboost_frame` of ``table``, built once per batch: the last table's frame is kept per thread, so the
    reference's example is the frame the target's was (and `catboost_pool` then reuses its Pool too)."""
    dataset = dataset or criteo()
    last = getattr(_FRAMES, "last", None)
    if last is not None and last[0]() is table and last[1] == dataset:
        return last[2]
    frame = catboost_frame(table, dataset)
    _FRAMES.last = (weakref.ref(table), dataset, frame)
    return frame


def catboost_pool(frame: pd.DataFrame, model) -> catboost.Pool:
    """The CatBoost `Pool` that ``model.predict_proba(frame)`` would build (same data, the model's categorical
    feature indices), built once per frame and reused by the next model with the same categorical features:
    the job runs the target and the reference on the same frame one after the other, and building the Pool
    costs more than the prediction itself (benchmarks/results/beam_scoring.md)."""
    cat_features = tuple(int(i) for i in model.get_cat_feature_indices())
    last = getattr(_POOLS, "last", None)
    if last is not None and last[0]() is frame and last[1] == cat_features:
        return last[2]
    pool = catboost.Pool(frame, cat_features=list(cat_features))
    _POOLS.last = (weakref.ref(frame), cat_features, pool)
    return pool


__all__ = ["MISSING_CATEGORY", "catboost_frame", "catboost_pool", "shared_frame"]
