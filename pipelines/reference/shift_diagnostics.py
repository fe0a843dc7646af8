"""A day-over-day data diagnostic beside breaking_kappa: a diagnostic, NOT a proof of the kappa assumption.

The audit assumes |log D'(y|x) - log D(y|x)| <= kappa between the data's label law and the reference M' the
counterfactual labels are drawn from (docs/soundness.md). The capacity check (auditing/verdict/capacity_check.py) is the check that
can fail for it; these two figures only make a small kappa more or less plausible:

- how M' fits day D versus its own day D-1: log-loss and expected calibration error (ECE) of M' on rows of
  each day whose labels did not train M': day D's test split (M' never saw day D), and on day D-1 the rows its
  ``training_rows`` record leaves out (the test split for the models trained here, the rows not in its keys for
  a registered model that lists them; a model trained on every row is measured on every row and marked
  in-sample). M' is run through its format (`pipelines.models.formats.registry`), so any registered reference works;
  rows it has no prediction for are left out. ECE uses 15 equal-mass bins of M'(x): sum over bins of (rows in
  bin / n) * |mean p - mean y|. The reference recalibrated on day D (the nightly's default) is measured as the
  D-1 checkpoint it corrects: it was fitted on day D's held-out rows, so its own day is D, and measuring it
  there would compare day D with itself.
- a shift statistic of the features: the population stability index PSI = sum_b (q_b - p_b) ln(q_b / p_b)
  per feature between day D-1 (p) and day D (q), on D-1's deciles for numerics (plus a missing bin) and on
  D-1's 20 most frequent values plus "other" and "missing" for categoricals; proportions are floored at 1e-4
  so that an empty bin gives a large, finite value. The features are the partition's dataset spec's.

Each day is read in batches; a day of more than ``SAMPLE_ROWS`` rows is measured on a keyed sample of that many
rows (the sample depends on the row ids only), which each fit's ``rows_rule`` says; below it every row, as before.
Memory then stays flat in the day's rows (benchmarks/results/night.md).

``shift_diagnostic`` returns a `auditing.verdict.shift_diagnostic.ShiftDiagnostic` naming the two days it
compares; the nightly flow stores it in the result record and the warehouse (``shift_diagnostic`` JSON,
``reference_log_loss_shift``, ``feature_shift_max_psi``) and the report shows it, labelled a diagnostic. When it
cannot compare two days (the reference is not of a day before D, or the earlier day's partition is not there) it
says why instead (``not_computed``).
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from auditing.verdict.shift_diagnostic import DayFit, FeaturePsi, FeatureShift, ShiftDiagnostic
from pipelines.data import schema, splits
from pipelines.data.dataset_spec import DatasetSpec, check_same_dataset, criteo
from pipelines.data.day import Day, Days
from pipelines.data.layout import partition_listing
from pipelines.models.handle import ModelHandle, resolve_model
from pipelines.scoring.audit_rows import ALL, KEYS, record_kind, training_rows

ECE_BINS = 15
NUMERIC_BINS = 10
TOP_CATEGORIES = 20
PROPORTION_FLOOR = 1e-4
LABEL = "a diagnostic, not a proof: no statistic of the features or of M''s fit certifies kappa"
# Rows of each day the diagnostic reads at most: above it a keyed sample of them (`pipelines.data.splits.keyed_sample`).
SAMPLE_ROWS = 1_000_000


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE over ``bins`` equal-mass bins of the predicted probability ``p`` (module docstring)."""
    order = np.argsort(p, kind="stable")
    total = 0.0
    for chunk in np.array_split(order, min(bins, max(1, p.size))):
        if chunk.size:
            total += chunk.size * abs(float(p[chunk].mean()) - float(y[chunk].mean()))
    return total / max(1, p.size)


def _fit(predict, table: pa.Table, rows: np.ndarray, rows_rule: str | None = None) -> DayFit:
    """M''s log-loss and ECE on the ``rows`` of ``table`` (pipeline names) that it has a prediction for."""
    part = table.take(pa.array(rows, type=pa.int64()))
    p = np.asarray(predict(part), dtype=np.float64)[:, 1]
    y = part.column("label").to_numpy().astype(np.float64)
    answered = np.isfinite(p)
    p, y = p[answered], y[answered]
    if not y.size:
        return DayFit(None, None, 0, None, rows_rule)
    clipped = np.clip(p, 1e-15, 1 - 1e-15)
    log_loss = float(-np.mean(y * np.log(clipped) + (1 - y) * np.log1p(-clipped)))
    return DayFit(log_loss, expected_calibration_error(p, y), int(y.size), float(y.mean()), rows_rule)


def _sampled(rule: str | None, kept: int, day_rows: int) -> str | None:
    """A fit's ``rows_rule``, saying when its rows come from a keyed sample of the day (``rule`` None: day D's
    test split, which says nothing unless sampled)."""
    if kept == day_rows:
        return rule
    return f"{rule or 'test split'}, of a keyed sample of {kept:,} of the day's {day_rows:,} rows (so is the feature shift)"


def _unseen_rows(reference: ModelHandle, row_ids: np.ndarray) -> tuple[np.ndarray, str]:
    """The rows of the reference's own day whose labels did not train it (its ``training_rows`` record), and
    how they were chosen."""
    kind = record_kind(reference.meta)
    if kind == KEYS:
        selection = training_rows(reference.meta, reference.directory)
        return np.flatnonzero(~selection.mask(row_ids)), "rows not in its training keys"
    if kind == ALL:
        return np.arange(row_ids.size), "every row (it was trained on all of them: in-sample)"
    return np.flatnonzero(splits.split_of(row_ids) == splits.TEST), "test split"


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


def feature_shift(before: pa.Table, after: pa.Table, dataset: DatasetSpec | None = None) -> FeatureShift:
    """Per-feature PSI from day D-1 (``before``) to day D (``after``) over the features of ``dataset`` (default
    Criteo), summarised."""
    dataset = dataset or criteo()
    psi = {name: _numeric_psi(before.column(name), after.column(name)) for name in dataset.numeric}
    psi.update({name: _categorical_psi(before.column(name), after.column(name)) for name in dataset.categorical})
    values = np.array(list(psi.values()))
    top = sorted(psi.items(), key=lambda item: -item[1])[:5]
    return FeatureShift(
        statistic="population stability index (PSI)",
        bins=f"numerics: D-1 deciles + missing; categoricals: D-1 top {TOP_CATEGORIES} + other + missing",
        max_psi=float(values.max()), median_psi=float(np.median(values)), mean_psi=float(values.mean()),
        top=tuple(FeaturePsi(name, value) for name, value in top), per_feature=psi)


def measured_reference(root: str | os.PathLike, reference: ModelHandle) -> ModelHandle:
    """The reference whose fit the diagnostic measures: a recalibrated reference's source (the D-1 checkpoint it
    corrects, named in its ``recalibration`` record; the handle's ``source`` when the run resolved it), else the
    reference itself."""
    source = reference.meta.recalibrated_from
    if source is None:
        return reference
    if reference.source is not None:
        return reference.source
    return resolve_model(root, str(source.name), source.date)


def shift_diagnostic(day: Day, reference: ModelHandle, days: Days | None = None) -> ShiftDiagnostic:
    """The diagnostic for auditing ``day`` (its handle, `pipelines.data.day.Day`) against the resolved reference
    ``reference``.

    Returns a `ShiftDiagnostic`: ``label`` (the "diagnostic, not a proof" caveat), the two days (the reference's
    own day and ``date``), the reference's log-loss and ECE on each day's unseen rows and their differences, and
    ``feature_shift`` (`feature_shift`); or, when two days cannot be compared, ``not_computed`` saying why.
    Cached per (root, dates, reference and its fingerprint, partition fingerprints), so a rewritten partition or
    model is read again. ``days``: the run's day handles (`pipelines.data.day.Days`), so the reference's own day is
    hashed once a run however many models are diagnosed; None: this call's own. Raises LabelDPInputError for a
    missing source model.
    """
    root, date = day.root, day.date
    measured = measured_reference(root, reference)
    own_day = measured.date
    reference = measured.id
    if own_day >= date:
        return ShiftDiagnostic(LABEL, reference, own_day, date,
                               not_computed=f"the reference {reference} is not of a day before the audited day "
                                            f"{date}: there is no earlier day to compare day {date} with")
    own = partition_listing(root, own_day)
    if not own.exists:
        return ShiftDiagnostic(LABEL, reference, own_day, date,
                               not_computed=f"day {own_day} (the reference's own day) has no partition at "
                                            f"{own.directory} to compare day {date} with")
    days = days if days is not None else Days(root, {date: day})
    previous = days[own_day]
    return _cached(day, previous, measured, day.fingerprint, previous.fingerprint, SAMPLE_ROWS)


@functools.lru_cache(maxsize=8)
def _cached(day: Day, reference_day: Day, model: ModelHandle, fp_current: str, fp_previous: str,
            sample_rows: int) -> ShiftDiagnostic:
    """The diagnostic of ``day`` against ``reference_day`` (the reference's own day), keyed by both handles and
    their fingerprints (a handle's identity is its files, not their bytes), so a rewritten partition is read
    again."""
    reference_name, reference_date = model.key
    date, dataset = day.date, day.dataset
    check_same_dataset(dataset, reference_day.dataset, f"partition {reference_date.isoformat()}",
                       "the diagnostic compares two days of one dataset")
    # Each day streamed, and above sample_rows a keyed sample of its rows: memory stays flat in the day's rows.
    current, current_rows, _ = schema.read_keyed_sample(day, dataset, sample_rows)
    previous, previous_rows, _ = schema.read_keyed_sample(reference_day, dataset, sample_rows)

    def predict(part: pa.Table) -> np.ndarray:
        return model.format.predict(model, part, dataset)

    current_ids, previous_ids = (t.column("row_id").to_numpy() for t in (current, previous))
    unseen, rule = _unseen_rows(model, previous_ids)
    fit_current = _fit(predict, current, np.flatnonzero(splits.split_of(current_ids) == splits.TEST),
                       _sampled(None, current.num_rows, current_rows))
    fit_previous = _fit(predict, previous, unseen, _sampled(rule, previous.num_rows, previous_rows))
    shift = feature_shift(previous, current, dataset)
    both = fit_current.log_loss is not None and fit_previous.log_loss is not None
    gap = fit_current.log_loss - fit_previous.log_loss if both else math.nan
    return ShiftDiagnostic(
        LABEL, f"{reference_name}@{reference_date.isoformat()}", reference_date, date, fit_previous, fit_current,
        reference_log_loss_shift=gap if math.isfinite(gap) else None,
        reference_ece_shift=fit_current.ece - fit_previous.ece if both else None,
        feature_shift=shift, feature_shift_max_psi=shift.max_psi)
