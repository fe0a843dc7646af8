"""A day-over-day data diagnostic beside breaking_kappa: a diagnostic, NOT a proof of the kappa assumption.

The audit assumes |log D'(y|x) - log D(y|x)| <= kappa between the data's label law and the reference M' the
counterfactual labels are drawn from (docs/soundness.md). The label-blind control is the check that can fail
for it; these two figures only make a small kappa more or less plausible:

- how M' fits day D versus its own day D-1: log-loss and expected calibration error (ECE) of M' on the test
  split of each day (rows whose labels trained no model: M' never saw day D, and D-1's test split was held
  out from M'). ECE uses 15 equal-mass bins of M'(x): sum over bins of (rows in bin / n) * |mean p - mean y|.
- a shift statistic of the features: the population stability index PSI = sum_b (q_b - p_b) ln(q_b / p_b)
  per feature between day D-1 (p) and day D (q), on D-1's deciles for numerics (plus a missing bin) and on
  D-1's 20 most frequent values plus "other" and "missing" for categoricals; proportions are floored at 1e-4
  so that an empty bin gives a large, finite value.

``shift_diagnostic`` returns a JSON-ready dict; the nightly flow stores it in the result record and the
warehouse (``shift_diagnostic`` JSON, ``reference_log_loss_shift``, ``feature_shift_max_psi``) and the report
shows it, labelled a diagnostic.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines import registry, schema, splits
from pipelines.layout import require_date

ECE_BINS = 15
NUMERIC_BINS = 10
TOP_CATEGORIES = 20
PROPORTION_FLOOR = 1e-4
LABEL = "a diagnostic, not a proof: no statistic of the features or of M''s fit certifies kappa"


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE over ``bins`` equal-mass bins of the predicted probability ``p`` (module docstring)."""
    order = np.argsort(p, kind="stable")
    total = 0.0
    for chunk in np.array_split(order, min(bins, max(1, p.size))):
        if chunk.size:
            total += chunk.size * abs(float(p[chunk].mean()) - float(y[chunk].mean()))
    return total / max(1, p.size)


def _fit(model, table: pa.Table) -> dict:
    from pipelines.training import feature_frame

    row_ids = table.column(schema.ROW_ID).to_numpy()
    test = np.flatnonzero(splits.split_of(row_ids) == splits.TEST)
    part = table.take(pa.array(test))
    p = np.asarray(model.predict_proba(feature_frame(part)), dtype=np.float64)[:, 1]
    y = part.column(schema.LABEL).to_numpy().astype(np.float64)
    clipped = np.clip(p, 1e-15, 1 - 1e-15)
    log_loss = float(-np.mean(y * np.log(clipped) + (1 - y) * np.log1p(-clipped)))
    return {"log_loss": log_loss, "ece": expected_calibration_error(p, y), "rows": int(test.size),
            "click_rate": float(y.mean()) if y.size else None}


def _psi(p: np.ndarray, q: np.ndarray) -> float:
    p = np.maximum(p / max(p.sum(), 1), PROPORTION_FLOOR)
    q = np.maximum(q / max(q.sum(), 1), PROPORTION_FLOOR)
    return float(np.sum((q - p) * np.log(q / p)))


def _numeric_psi(before: pa.ChunkedArray, after: pa.ChunkedArray) -> float:
    a = before.to_numpy(zero_copy_only=False).astype(np.float64)
    b = after.to_numpy(zero_copy_only=False).astype(np.float64)
    finite = a[np.isfinite(a)]
    edges = np.unique(np.quantile(finite, np.linspace(0, 1, NUMERIC_BINS + 1)[1:-1])) if finite.size else np.array([])

    def histogram(values: np.ndarray) -> np.ndarray:
        missing = ~np.isfinite(values)
        counts = np.bincount(np.searchsorted(edges, values[~missing], side="right"), minlength=edges.size + 1)
        return np.append(counts, missing.sum()).astype(np.float64)

    return _psi(histogram(a), histogram(b))


def _categorical_psi(before: pa.ChunkedArray, after: pa.ChunkedArray) -> float:
    before, after = before.cast(pa.string()), after.cast(pa.string())
    counts = pc.value_counts(before.drop_null())
    values = counts.field("values").to_pylist()
    by_count = np.argsort(-np.asarray(counts.field("counts").to_numpy()), kind="stable")
    frequent = [values[i] for i in by_count[:TOP_CATEGORIES]]
    keys = pa.array(frequent, type=pa.string())

    def histogram(column: pa.ChunkedArray) -> np.ndarray:
        index = pc.index_in(column, value_set=keys).to_numpy(zero_copy_only=False)
        nulls = column.is_null().to_numpy(zero_copy_only=False)
        index = np.where(np.isnan(index.astype(np.float64)), len(frequent), index).astype(np.int64)  # other
        index[nulls] = len(frequent) + 1  # missing
        return np.bincount(index, minlength=len(frequent) + 2).astype(np.float64)

    return _psi(histogram(before), histogram(after))


def feature_shift(before: pa.Table, after: pa.Table) -> dict:
    """Per-feature PSI from day D-1 (``before``) to day D (``after``), summarised."""
    psi = {name: _numeric_psi(before.column(name), after.column(name)) for name in schema.NUMERIC_COLUMNS}
    psi.update({name: _categorical_psi(before.column(name), after.column(name))
                for name in schema.CATEGORICAL_COLUMNS})
    values = np.array(list(psi.values()))
    top = sorted(psi.items(), key=lambda item: -item[1])[:5]
    return {"statistic": "population stability index (PSI)",
            "bins": f"numerics: D-1 deciles + missing; categoricals: D-1 top {TOP_CATEGORIES} + other + missing",
            "max_psi": float(values.max()), "median_psi": float(np.median(values)), "mean_psi": float(values.mean()),
            "top": [{"feature": name, "psi": value} for name, value in top],
            "per_feature": psi}


def shift_diagnostic(root: str | os.PathLike, date: dt.date, reference_name: str,
                     reference_date: dt.date) -> dict:
    """The diagnostic for auditing day ``date`` against the reference ``reference_name`` of ``reference_date``.

    Returns a JSON-ready dict: ``label`` (the "diagnostic, not a proof" caveat), the reference's log-loss and
    ECE on each day's test split and their differences, and ``feature_shift`` (`feature_shift`). Cached per
    (root, dates, reference, partition fingerprints), so a rewritten partition is read again. Raises
    LabelDPInputError for a missing partition or model (from `pipelines.schema` / `pipelines.registry`).
    """
    date, reference_date = require_date(date), require_date(reference_date, "reference_date")
    return dict(_cached(str(root), date, reference_name, reference_date,
                        schema.partition_fingerprint(root, date), schema.partition_fingerprint(root, reference_date)))


@functools.lru_cache(maxsize=8)
def _cached(root: str, date: dt.date, reference_name: str, reference_date: dt.date, fp_current: str,
            fp_previous: str) -> dict:
    model, _ = registry.load_model(root, reference_name, reference_date)
    current = schema.read_partition(root, date)
    previous = schema.read_partition(root, reference_date)
    fit_current, fit_previous = _fit(model, current), _fit(model, previous)
    shift = feature_shift(previous, current)
    gap = fit_current["log_loss"] - fit_previous["log_loss"]
    return {"label": LABEL, "reference": f"{reference_name}@{reference_date.isoformat()}",
            "reference_fit": {"previous": fit_previous, "current": fit_current},
            "reference_log_loss_shift": gap if math.isfinite(gap) else None,
            "reference_ece_shift": fit_current["ece"] - fit_previous["ece"],
            "feature_shift": shift, "feature_shift_max_psi": shift["max_psi"]}
