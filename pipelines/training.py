"""CatBoost training of a (label-DP) click model for one partition day, and the registered reference M'.

What happens in ``train_model`` (paper Sec. 6.4 setup):

- Features per ``pipelines.schema``: ``I1..I13`` as float64 with NaN for missing (CatBoost's default
  ``nan_mode="Min"``), ``C1..C26`` as CatBoost categorical features (the 8-hex strings; a missing value is
  the empty string ""). ``feature_frame`` is the one conversion; scorers must use it too.
- Splits per ``pipelines.splits`` (hash of row_id, 80/4/16). The mechanism privatizes the labels of the
  train *and* validation rows -- every label the training procedure reads, since the validation split picks
  the best iteration (``use_best_model``) and, for LP-1ST-NC, the correction's floor. Test labels are read
  only to compute the reported test metrics, against the *true* labels.
- The mechanism is a registered class (``pipelines.mechanisms``): ``train_model`` builds it from its name
  and the options, hands it the private rows' labels (`LabelContext`, with CatBoost behind the learner
  hooks) and fits the final model on its `Release`; it never compares mechanism names.
- Scope of the claim: it covers the model (and anything computed from it and from privatized labels). The
  test metrics in the metadata are computed from true test labels for the operator (the paper's Table 5)
  and are not part of the label-DP release; the non-private reference M' trained on day D-1 is an audit
  artifact (the paper's M') and must not be released as if it were private.
- Binary labels (clicks): ``loss_function="Logloss"`` on hard labels, ``"CrossEntropy"`` on ALIBI's soft
  labels. The mechanisms themselves are k-ary; the training wrapper is binary like the partitions.
- Randomness: one ``seed`` drives everything: ``numpy.random.SeedSequence(seed)`` gives the mechanism's
  Generator and CatBoost's ``random_seed``, so (data, mechanism, eps, seed, settings) reproduce the model.
- eps = inf: rr, lp-1st, lp-1st-nc and lp-2st release the labels unchanged and train exactly as ``none``
  (same seed, same model). ALIBI at eps = inf trains on exact one-hot soft labels (CrossEntropy), PATE on
  its teachers' votes: neither is plain training by construction.
- A privatized training set with a single class (LP-1ST with a confident domain prior at small eps outputs
  the prior's top class for every row; PATE's argmax votes on rare clicks) cannot be fitted by CatBoost; the
  model is then a constant with the add-one (Laplace) estimate of the class-1 rate, which is what training
  on such labels can learn, and ``degenerate`` says so in the metrics. The paper reports such runs as "did
  not produce meaningful outcomes" (Table 2).

``CatBoostSettings`` (``pipelines.fitting``) holds the speed/quality knobs; the defaults suit 2 cores
(benchmarks/results/training.md has the measured time and log-loss against CatBoost's own defaults).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from auditing.errors import LabelDPInputError
from pipelines import registry, schema, splits
from pipelines.fitting import (
    CatBoostLearner,
    CatBoostSettings,
    fit_catboost,
    predict_probabilities,
    predict_raw_probabilities,
    settings_from,
)
from pipelines.layout import model_dir, require_date
from pipelines.mechanisms import LabelContext, Mechanism, MechanismOptions, mechanism_from
from pipelines.mechanisms._checks import check_epsilon
from pipelines.mechanisms.base import PRIORS, UNIT
from pipelines.progress import Progress, no_progress

__all__ = ["NUM_CLASSES", "PRIORS", "UNIT", "CatBoostLearner", "CatBoostSettings", "DayData", "MechanismOptions",
           "TrainResult", "default_model_name", "ensure_reference", "evaluate", "feature_frame", "fit_catboost",
           "load_day", "needs_reference", "predict_probabilities", "reference_date", "register", "settings_from",
           "train_and_register", "train_model", "training_rows_record"]

NUM_CLASSES = 2
MISSING_CATEGORY = ""
PROBABILITY_CLIP = 1e-15  # only for log-loss arithmetic: log(0) would be -inf


# ------------------------------------------------------------------------------------------ data


def feature_frame(table: pa.Table) -> pd.DataFrame:
    """The CatBoost input for a partition table: columns ``I1..I13`` (float64, NaN = missing) then
    ``C1..C26`` (pandas categoricals of the hex strings, "" = missing), in ``registry.feature_schema`` order.

    Scoring must use this same conversion (the model hashes categorical values as strings)."""
    columns: dict[str, Any] = {}
    for name in schema.NUMERIC_COLUMNS:
        columns[name] = table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
    for name in schema.CATEGORICAL_COLUMNS:
        values = table.column(name).combine_chunks()
        if not pa.types.is_dictionary(values.type):
            values = values.dictionary_encode()
        series = values.to_pandas()
        if series.isna().any():
            if MISSING_CATEGORY not in series.cat.categories:
                series = series.cat.add_categories([MISSING_CATEGORY])
            series = series.fillna(MISSING_CATEGORY)
        columns[name] = series
    return pd.DataFrame(columns)


@dataclass
class DayData:
    """One partition day in memory: features, true labels and the split of every row."""

    date: dt.date
    row_ids: np.ndarray
    labels: np.ndarray        # int64, true labels
    features: pd.DataFrame    # feature_frame(table)
    split: np.ndarray         # int8: splits.TRAIN / VALIDATION / TEST
    table_schema: pa.Schema
    fingerprint: str

    @property
    def private_rows(self) -> np.ndarray:
        """Rows whose labels the training procedure reads (train + validation), privatized by the mechanism."""
        return np.flatnonzero(self.split != splits.TEST)

    def rows(self, code: int) -> np.ndarray:
        return np.flatnonzero(self.split == code)


def load_day(root: str | os.PathLike, date: dt.date) -> DayData:
    """Reads and validates the partition of ``date`` (``schema.read_partition``) and prepares features."""
    date = require_date(date)
    table = schema.read_partition(root, date)
    row_ids = table.column(schema.ROW_ID).to_numpy()
    split = splits.split_of(row_ids)
    for code, name in splits.SPLIT_NAMES.items():
        if not np.any(split == code):
            raise LabelDPInputError(f"partition {date.isoformat()} ({table.num_rows} rows) has no {name} rows; "
                                    f"training needs every split (use more rows)")
    return DayData(date=date, row_ids=row_ids, labels=table.column(schema.LABEL).to_numpy().astype(np.int64),
                   features=feature_frame(table), split=split, table_schema=table.schema,
                   fingerprint=schema.partition_fingerprint(root, date))




# ------------------------------------------------------------------------------------------ mechanisms


def needs_reference(mechanism: str | Mechanism, options: MechanismOptions | None = None) -> bool:
    """Whether the mechanism reads the reference model's predictions as its prior.

    Raises:
        LabelDPInputError: an unknown mechanism name (the message lists the known ones).
    """
    return mechanism_from(mechanism, options).needs_reference


@dataclass
class TrainResult:
    model: Any                       # catboost.CatBoostClassifier (or the registry's NoiseCorrectedClassifier)
    mechanism: dict                  # name, epsilon, delta, unit, guarantee, parameters
    metrics: dict                    # test log-loss / accuracy against true labels, sizes, timings, notes
    catboost_params: dict
    seed: int
    output_correction: dict | None = None
    privatized_labels: np.ndarray | None = None   # hard labels given to the final fit (None for soft)
    training_rows: dict | None = None  # whose labels entered training (registry metadata ``training_rows``)


def train_model(day: DayData, mechanism: str | Mechanism, epsilon: float, seed: int = 0,
                settings: CatBoostSettings | None = None, options: MechanismOptions | None = None,
                reference_model=None, progress: Progress = no_progress) -> TrainResult:
    """Privatizes the day's train+validation labels with ``mechanism`` at ``epsilon``, trains CatBoost, and
    measures test log-loss and accuracy against the true test labels.

    Args:
        mechanism: a registered mechanism name (built from ``options``) or a `Mechanism` instance.
        reference_model: a classifier with ``predict_proba``, required when the mechanism
            ``needs_reference``: its predictions are the domain prior.

    Returns:
        A ``TrainResult``; nothing is written.

    Raises:
        LabelDPInputError: an unknown mechanism, an eps or seed out of range, a missing reference model.
    """
    chosen = mechanism_from(mechanism, options)
    name = chosen.name
    epsilon = chosen.check_epsilon(epsilon)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise LabelDPInputError(f"seed must be a whole number in 0..2^63-1; got {seed!r}")
    seed = int(seed)
    settings = settings or CatBoostSettings()
    if chosen.needs_reference and reference_model is None:
        raise LabelDPInputError(f"mechanism {name!r} with prior 'reference' needs the reference model "
                                f"(the previous day's checkpoint); none was given")

    sequence = np.random.SeedSequence(seed)
    mechanism_sequence, catboost_sequence = sequence.spawn(2)
    rng = np.random.default_rng(mechanism_sequence)
    catboost_seed = int(catboost_sequence.generate_state(1)[0])
    started = time.monotonic()

    private = day.private_rows

    def fit_all(targets: np.ndarray) -> np.ndarray:
        model, _info = fit_catboost(day.features.iloc[private], targets, settings, catboost_seed)
        return predict_probabilities(model, day.features.iloc[private])

    def reference_prior() -> np.ndarray:
        return predict_probabilities(reference_model, day.features.iloc[private])

    context = LabelContext(
        labels=day.labels[private], epsilon=epsilon, rng=rng, num_classes=NUM_CLASSES,
        learner=lambda what: CatBoostLearner(day.features, private, settings, catboost_seed, progress, what),
        fit_all=fit_all, reference_prior=None if reference_model is None else reference_prior, progress=progress)
    release = chosen.release(context)
    targets = np.asarray(release.targets)   # int labels, or float soft labels (ALIBI)
    fit_rows = private if release.rows is None else private[release.rows]   # rows the final model is fitted on
    if not release.keep_validation:
        is_validation = np.zeros(fit_rows.size, dtype=bool)   # e.g. PATE's student has no eval set
    else:
        is_validation = day.split[fit_rows] == splits.VALIDATION

    progress(f"{name} eps={epsilon:g}: fitting CatBoost on {int(np.sum(~is_validation))} rows "
             f"(validation {int(np.sum(is_validation))})")
    model, info = fit_catboost(day.features.iloc[fit_rows[~is_validation]], targets[~is_validation], settings,
                               catboost_seed, day.features.iloc[fit_rows[is_validation]],
                               targets[is_validation],
                               model_class=registry.noise_corrected_classifier_class()
                               if release.correct_output else None)
    correction = None
    if release.correct_output and info["degenerate"] is None:
        raw = predict_raw_probabilities(model, day.features.iloc[fit_rows[is_validation]])
        correction = chosen.output_correction(release, raw, targets[is_validation], epsilon)
        model.labeldp_correction = registry.jsonable(correction)
    train_seconds = time.monotonic() - started
    validation_uses = []   # what the (privatized) validation labels were used for
    if info.get("best_iteration") is not None:
        validation_uses.append("chose the best iteration (use_best_model)")
    if not release.identity:
        validation_uses += chosen.validation_label_uses(release, correction)

    test = day.rows(splits.TEST)
    probabilities = predict_probabilities(model, day.features.iloc[test])
    metrics = evaluate(probabilities, day.labels[test])
    metrics.update({"train_rows": int(np.sum(~is_validation)), "validation_rows": int(np.sum(is_validation)),
                    "train_seconds": round(train_seconds, 2), "degenerate": info["degenerate"],
                    "best_iteration": info.get("best_iteration"), "trees": info.get("trees"),
                    "notes": release.notes})
    if info["degenerate"]:
        progress(f"warning: {info['degenerate']}")
    mechanism_record = {**chosen.record(epsilon, release), "catboost_seed": catboost_seed}
    unread_rows = day.row_ids[private[release.unread]]   # private rows whose labels were never read (PATE)
    return TrainResult(model=model, mechanism=mechanism_record, metrics=metrics, catboost_params=info["params"],
                       seed=seed, output_correction=correction,
                       privatized_labels=targets if not np.issubdtype(targets.dtype, np.floating) else None,
                       training_rows=training_rows_record(day, validation_uses, unread_rows))



def training_rows_record(day: DayData, validation_uses: list[str], unread_row_ids: np.ndarray) -> dict:
    """The registry's record of the rows whose labels entered training: the split scheme as used
    (``splits.scheme()``), the splits whose labels were read (train, plus validation when ``validation_uses``
    is not empty), and the row ids of those splits whose labels were never read (PATE's student rows).
    ``pipelines.audit_rows`` selects the audited rows from this record alone."""
    label_splits = ["train"] + (["validation"] if validation_uses else [])
    codes = [splits.TRAIN] + ([splits.VALIDATION] if validation_uses else [])
    unread = np.sort(np.asarray(unread_row_ids, dtype=np.int64))
    return {"split": splits.scheme(), "label_splits": label_splits, "validation_labels_used_for": validation_uses,
            "unread_row_ids": unread.tolist(),
            "rows": int(np.isin(day.split, codes).sum()) - int(unread.size)}


def evaluate(probabilities: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """Test metrics against true labels: mean log-loss, accuracy (argmax), and the log-loss of the constant
    test click rate (what a model with no signal would score)."""
    labels = np.asarray(labels, dtype=np.int64)
    p = np.clip(probabilities[np.arange(labels.size), labels], PROBABILITY_CLIP, 1.0)
    rate = float(np.mean(labels))
    constant = -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate)) if 0 < rate < 1 else 0.0
    return {"test_log_loss": float(-np.mean(np.log(p))),
            "test_accuracy": float(np.mean(np.argmax(probabilities, axis=1) == labels)),
            "test_rows": int(labels.size), "test_click_rate": rate, "test_log_loss_constant": constant}


# ------------------------------------------------------------------------------------------ registry glue


def reference_date(date: dt.date) -> dt.date:
    """The reference M' of day D is the checkpoint of day D-1 (paper Sec. 6.2)."""
    return require_date(date) - dt.timedelta(days=1)


def ensure_reference(root: str | os.PathLike, date: dt.date, reference_name: str, on_missing: str,
                     seed: int, settings: CatBoostSettings, progress: Progress = no_progress):
    """Returns ``(model, metadata)`` of the reference for day ``date`` (``reference_name`` at D-1).

    When it is missing: ``on_missing="train"`` trains it non-privately on the D-1 partition and registers it;
    ``"fail"`` raises a ``LabelDPInputError`` that says how to create it.
    """
    ref_date = reference_date(date)
    directory = model_dir(root, reference_name, ref_date)
    if directory.is_dir():
        progress(f"reference: using {directory}")
        return registry.load_model(root, reference_name, ref_date)
    if on_missing == "fail":
        raise LabelDPInputError(
            f"no reference model at {directory} (the day D-1 = {ref_date.isoformat()} checkpoint of "
            f"--reference-name {reference_name!r}); create it with `labeldp-audit train --date "
            f"{ref_date.isoformat()} --mechanism none --model-name {reference_name}`, or pass "
            f"--on-missing-reference train")
    if on_missing != "train":
        raise LabelDPInputError(f"on_missing must be 'train' or 'fail'; got {on_missing!r}")
    progress(f"reference: {directory} is missing; training it non-privately on {ref_date.isoformat()}")
    day = load_day(root, ref_date)
    result = train_model(day, "none", math.inf, seed=seed, settings=settings, progress=progress)
    register(root, reference_name, day, result)
    return registry.load_model(root, reference_name, ref_date)


def register(root: str | os.PathLike, model_name: str, day: DayData, result: TrainResult,
             reference: dict | None = None) -> os.PathLike:
    """Writes ``result`` to ``models/<model_name>/date=D/`` (atomically) with its full metadata."""
    metadata = {
        "mechanism": result.mechanism,
        "seed": result.seed,
        "partition_fingerprint": day.fingerprint,
        "partition_rows": int(day.row_ids.size),
        "feature_schema": registry.feature_schema(),
        "catboost_params": result.catboost_params,
        "test_metrics": result.metrics,
        "output_correction": result.output_correction,
        "reference": reference,
        "splits": {"train": "splits.TRAIN", "validation": "splits.VALIDATION", "test": "splits.TEST",
                   "privatized": "train + validation labels", "evaluated": "true test labels"},
        "training_rows": result.training_rows,
    }
    return registry.save_model(root, model_name, day.date, result.model, metadata)


def train_and_register(root: str | os.PathLike, date: dt.date, mechanism: str | Mechanism, epsilon: float,
                       model_name: str | None = None, seed: int = 0, settings: CatBoostSettings | None = None,
                       options: MechanismOptions | None = None, reference_name: str = "reference",
                       on_missing_reference: str = "train", progress: Progress = no_progress) -> tuple[Any, dict]:
    """The ``labeldp-audit train`` job: load day D, resolve the reference (D-1 checkpoint), train, register.

    The reference is resolved whenever it exists or can be made, because the audit of day D needs it as M'
    (paper Sec. 6.2), and always when the mechanism needs it as its prior. ``on_missing_reference="skip"``
    proceeds without one for mechanisms that do not need it (e.g. the first day of data). A model named like
    the reference does not resolve a reference of its own. ``mechanism`` is a registered name (built from
    ``options``) or a `Mechanism`. Returns ``(model_dir, metadata)``.
    """
    date = require_date(date)
    settings = settings or CatBoostSettings()
    chosen = mechanism_from(mechanism, options)
    model_name = model_name or default_model_name(chosen.name, epsilon)
    if on_missing_reference not in ("train", "fail", "skip"):
        raise LabelDPInputError(f"on_missing_reference must be train, fail or skip; got {on_missing_reference!r}")
    epsilon = check_epsilon(epsilon)
    needed = chosen.needs_reference
    if needed and model_name == reference_name:
        raise LabelDPInputError(f"model {model_name!r} cannot be its own reference prior; pick another "
                                f"--model-name or --prior uniform")
    progress(f"loading partition {date.isoformat()}")
    day = load_day(root, date)
    progress(f"{day.row_ids.size} rows: train {day.rows(splits.TRAIN).size}, validation "
             f"{day.rows(splits.VALIDATION).size}, test {day.rows(splits.TEST).size}")
    reference_model, reference_info = None, None
    wants = model_name != reference_name and (needed or on_missing_reference != "skip"
                                              or model_dir(root, reference_name, reference_date(date)).is_dir())
    if wants:
        policy = "fail" if on_missing_reference == "skip" else on_missing_reference
        reference_model, ref_metadata = ensure_reference(root, date, reference_name, policy, seed, settings, progress)
        registry.check_features(ref_metadata, day.table_schema)
        reference_info = {"model_name": reference_name, "date": ref_metadata["date"],
                          "partition_fingerprint": ref_metadata["partition_fingerprint"],
                          "used_as_prior": needed}
    result = train_model(day, chosen, epsilon, seed=seed, settings=settings,
                         reference_model=reference_model if needed else None, progress=progress)
    directory = register(root, model_name, day, result, reference=reference_info)
    progress(f"registered {directory}")
    return directory, registry.read_metadata(root, model_name, date)


def default_model_name(mechanism: str, epsilon: float) -> str:
    """e.g. ``lp-1st-eps4``, ``rr-eps0.1``, ``none-epsinf``."""
    epsilon = check_epsilon(epsilon)
    return f"{mechanism}-eps{'inf' if math.isinf(epsilon) else format(epsilon, 'g')}"
