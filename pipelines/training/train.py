"""CatBoost training of a (label-DP) click model for one partition day, and the registered reference M'.

What happens in ``train_model`` (paper Sec. 6.4 setup):

- Features per the partition's dataset spec (`pipelines.data.dataset_spec`, read with the partition:
  `pipelines.data.dataset_spec.dataset_of`): its numeric features as float64 with NaN for missing (CatBoost's
  default ``nan_mode="Min"``), then its categorical features as CatBoost categorical features (their strings; a
  missing value is the empty string ""). Criteo: ``I1..I13`` then ``C1..C26``. ``feature_frame`` is the one
  conversion; scorers must use it too. Inside, the row key and the label are ``row_id`` and ``label``
  (``spec.to_internal``). The metadata records the spec's ``feature_schema`` and, for a spec other than the
  built-in Criteo one, ``dataset`` (name, fingerprint, spec), as registered models do.
- Splits per ``pipelines.data.splits`` (hash of row_id, 80/4/16). The mechanism privatizes the labels of the
  train *and* validation rows -- every label the training procedure reads, since the validation split picks
  the best iteration (``use_best_model``) and, for LP-1ST-NC, the correction's floor. Test labels are read
  only to compute the reported test metrics, against the *true* labels.
- The mechanism is a registered class (``pipelines.training.mechanisms``): ``train_model`` builds it from its name
  and the options, hands it the private rows' labels (`LabelContext`, with CatBoost behind the learner
  hooks) and fits the final model on its `Release`; it never compares mechanism names.
- Scope of the claim: it covers the model (and anything computed from it and from privatized labels). The
  test metrics in the metadata are computed from true test labels for the operator (the paper's Table 5)
  and are not part of the label-DP release; the non-private reference M' trained on day D-1 is an audit
  artifact (the paper's M') and must not be released as if it were private.
- Binary labels (clicks): ``loss_function="Logloss"`` on hard labels, ``"CrossEntropy"`` on ALIBI's soft
  labels. The mechanisms themselves are k-ary; the training wrapper is binary: a dataset spec with another
  class count is refused.
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

``CatBoostSettings`` (``pipelines.training.fitting``) holds the speed/quality knobs; the defaults suit 2 cores
(benchmarks/results/training.md has the measured time and log-loss against CatBoost's own defaults).

A registered model is reused only when everything that made it is the same: `reuse_mismatch` compares its
metadata with the mechanism, eps, seed, partition, dataset and CatBoost parameters a run would use.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from labeldp import hints
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError, mention
from labeldp.names import require_date
from labeldp.progress import Progress, no_progress
from pipelines.data import schema, splits
from pipelines.data.categories import MISSING_CATEGORY
from pipelines.data.dataset_spec import DatasetSpec, criteo, is_default
from pipelines.data.day import Day, listed_day
from pipelines.data.layout import model_dir
from pipelines.models import registry
from pipelines.models.handle import ModelHandle, resolve_model
from pipelines.models.metadata import (
    ABSENT,
    DatasetRecord,
    FeatureColumn,
    Lineage,
    MechanismRecord,
    ModelMetadata,
    TrainingRows,
    as_metadata,
    or_none,
)
from pipelines.training.fitting import (
    CatBoostLearner,
    CatBoostSettings,
    fit_catboost,
    predict_probabilities,
    predict_raw_probabilities,
)
from pipelines.training.mechanisms import LabelContext, Mechanism, MechanismOptions, mechanism_from
from pipelines.training.mechanisms._checks import check_epsilon

__all__ = [
    "NUM_CLASSES", "DayData", "TrainResult", "check_binary", "dataset_fingerprint_of", "dataset_record",
    "default_model_name", "ensure_reference", "evaluate", "feature_frame", "load_day", "needs_reference",
    "reference_date", "register", "reuse_mismatch", "train_and_register", "train_model", "training_rows_record"
]

NUM_CLASSES = 2
PROBABILITY_CLIP = 1e-15  # only for log-loss arithmetic: log(0) would be -inf


# ------------------------------------------------------------------------------------------ data


def feature_frame(table: pa.Table, dataset: DatasetSpec | None = None) -> pd.DataFrame:
    """The CatBoost input for a partition table: the numeric features of ``dataset`` (default Criteo:
    ``I1..I13``; float64, NaN = missing) then its categorical ones (Criteo: ``C1..C26``; pandas categoricals
    of the strings, "" = missing), in ``dataset.feature_schema()`` order.

    Scoring must use this same conversion (the model hashes categorical values as strings)."""
    dataset = dataset or criteo()
    columns: dict[str, Any] = {}
    for name in dataset.numeric:
        columns[name] = table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
    for name in dataset.categorical:
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
    table_schema: pa.Schema   # pipeline names (row_id, label, the features)
    fingerprint: str
    root: Path                # the data root it was read from: where its models are registered
    dataset: DatasetSpec = field(default_factory=criteo)   # the partition's spec

    @property
    def private_rows(self) -> np.ndarray:
        """Rows whose labels the training procedure reads (train + validation), privatized by the mechanism."""
        return np.flatnonzero(self.split != splits.TEST)

    def rows(self, code: int) -> np.ndarray:
        return np.flatnonzero(self.split == code)


def check_binary(dataset: DatasetSpec, what: str = "training") -> None:
    """LabelDPInputError unless ``dataset`` has two classes (the CatBoost wrappers fit binary Logloss)."""
    if dataset.classes != NUM_CLASSES:
        raise LabelDPInputError(f"dataset {dataset.name!r} ({dataset.describe()}) has {dataset.classes} classes: "
                                f"{what} fits binary (2-class) CatBoost models only")


def load_day(day: Day) -> DayData:
    """Reads and validates ``day``'s partition (``schema.read_day``, with the spec it was written with) under
    the pipeline names and prepares features; its fingerprint is the handle's (hashed once). A spec with other than
    2 classes is refused."""
    date, dataset = day.date, day.dataset
    check_binary(dataset)
    table = dataset.to_internal(schema.read_day(day, dataset=dataset))
    row_ids = table.column("row_id").to_numpy()
    split = splits.split_of(row_ids)
    for code, name in splits.SPLIT_NAMES.items():
        if not np.any(split == code):
            raise LabelDPInputError(f"partition {date.isoformat()} ({table.num_rows} rows) has no {name} rows; "
                                    f"training needs every split (use more rows)")
    return DayData(date=date, row_ids=row_ids, labels=table.column("label").to_numpy().astype(np.int64),
                   features=feature_frame(table, dataset), split=split, table_schema=table.schema,
                   fingerprint=day.fingerprint, root=day.root, dataset=dataset)


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
    check_binary(day.dataset)
    if chosen.needs_reference and reference_model is None:
        raise LabelDPInputError(f"mechanism {name!r} with prior 'reference' needs the reference model "
                                f"(the previous day's checkpoint); none was given")

    mechanism_sequence, catboost_seed = _seeds(seed)
    rng = np.random.default_rng(mechanism_sequence)
    started = time.monotonic()

    private = day.private_rows

    def fit_all(targets: np.ndarray) -> np.ndarray:
        model, _info = fit_catboost(day.features.iloc[private], targets, settings, catboost_seed, progress=progress,
                                    what=f"{name} eps={epsilon:g}, every private row")
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
                               if release.correct_output else None, progress=progress, what=f"{name} eps={epsilon:g}")
    correction = None
    if release.correct_output and info.degenerate is None:
        raw = predict_raw_probabilities(model, day.features.iloc[fit_rows[is_validation]])
        correction = chosen.output_correction(release, raw, targets[is_validation], epsilon)
        model.labeldp_correction = registry.jsonable(correction)
    train_seconds = time.monotonic() - started
    validation_uses = []   # what the (privatized) validation labels were used for
    if info.best_iteration is not None:
        validation_uses.append("chose the best iteration (use_best_model)")
    if not release.identity:
        validation_uses += chosen.validation_label_uses(release, correction)

    test = day.rows(splits.TEST)
    probabilities = predict_probabilities(model, day.features.iloc[test])
    metrics = evaluate(probabilities, day.labels[test])
    metrics.update({"train_rows": int(np.sum(~is_validation)), "validation_rows": int(np.sum(is_validation)),
                    "train_seconds": round(train_seconds, 2), "degenerate": info.degenerate,
                    "best_iteration": info.best_iteration, "trees": info.trees,
                    "notes": release.notes})
    if info.degenerate:
        progress(f"warning: {info.degenerate}")
    mechanism_record = {**chosen.record(epsilon, release), "catboost_seed": catboost_seed}
    unread_rows = day.row_ids[private[release.unread]]   # private rows whose labels were never read (PATE)
    return TrainResult(model=model, mechanism=mechanism_record, metrics=metrics, catboost_params=info.params,
                       seed=seed, output_correction=correction,
                       privatized_labels=targets if not np.issubdtype(targets.dtype, np.floating) else None,
                       training_rows=training_rows_record(day, validation_uses, unread_rows))



def _seeds(seed: int) -> tuple[np.random.SeedSequence, int]:
    """The mechanism's SeedSequence and CatBoost's ``random_seed`` for a training ``seed``."""
    mechanism_sequence, catboost_sequence = np.random.SeedSequence(int(seed)).spawn(2)
    return mechanism_sequence, int(catboost_sequence.generate_state(1)[0])


def training_rows_record(day: DayData, validation_uses: list[str], unread_row_ids: np.ndarray) -> dict:
    """The registry's record of the rows whose labels entered training: the split scheme as used
    (``splits.scheme()``), the splits whose labels were read (train, plus validation when ``validation_uses``
    is not empty), and the row ids of those splits whose labels were never read (PATE's student rows).
    ``pipelines.scoring.audit_rows`` selects the audited rows from this record alone."""
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


def ensure_reference(day: Day, reference_name: str, on_missing: str, seed: int, settings: CatBoostSettings,
                     progress: Progress = no_progress):
    """Returns ``(classifier, reference)`` for ``day``: the reference (``reference_name`` at D-1, under the day's
    data root) resolved
    (`pipelines.models.handle.resolve_model`), and its CatBoost classifier, or None for a registered reference of
    another format (`pipelines.models.formats.registry`), which training cannot use as a prior (only the audit
    reads it, through its format).

    When it is missing: ``on_missing="train"`` trains it non-privately on the D-1 partition and registers it;
    ``"fail"`` raises a ``LabelDPInputError`` that says how to create it.
    """
    root = day.root
    ref_date = reference_date(day.date)
    directory = model_dir(root, reference_name, ref_date)
    if directory.is_dir():
        progress(f"reference: using {directory}")
        reference = resolve_model(root, reference_name, ref_date)
        return (registry.load_model(reference) if reference.format.catboost_classifier else None), reference
    if on_missing == "fail":
        raise LabelDPInputError(
            f"no reference model at {directory} (the day D-1 = {ref_date.isoformat()} checkpoint of "
            f"{mention('reference_name')} {reference_name!r}); create it with "
            f"{hints.TRAIN_REFERENCE.line(date=ref_date.isoformat(), name=reference_name)}, or pass "
            f"{mention('on_missing_reference')} train", field="reference_name")
    if on_missing != "train":
        raise LabelDPInputError(f"on_missing must be 'train' or 'fail'; got {on_missing!r}")
    progress(f"reference: {directory} is missing; training it non-privately on {ref_date.isoformat()}")
    previous = load_day(listed_day(root, ref_date))
    result = train_model(previous, "none", math.inf, seed=seed, settings=settings, progress=progress)
    register(reference_name, previous, result)
    reference = resolve_model(root, reference_name, ref_date)
    return registry.load_model(reference), reference


def register(model_name: str, day: DayData, result: TrainResult, reference: Lineage | None = None) -> os.PathLike:
    """Writes ``result``, trained on ``day``, to ``models/<model_name>/date=D/`` under the day's data root
    (atomically) with its full metadata."""
    where = f"the training of {model_name}@{day.date.isoformat()}"
    training_rows = result.training_rows
    metadata = ModelMetadata(
        metadata_version=registry.METADATA_VERSION, model_name=model_name, date=day.date,
        mechanism=decode(MechanismRecord, registry.jsonable(result.mechanism), f"{where}: mechanism"),
        seed=result.seed, partition_fingerprint=day.fingerprint,
        feature_schema=tuple(FeatureColumn(item["name"], item["kind"]) for item in day.dataset.feature_schema()),
        catboost_params=registry.jsonable(result.catboost_params), test_metrics=registry.jsonable(result.metrics),
        code_version=registry.current_code_version(), created_at=registry.created_now(),
        dataset=dataset_record(day.dataset) or ABSENT,
        training_rows=None if training_rows is None else decode(
            TrainingRows, registry.jsonable(training_rows), f"{where}: training_rows"),
        reference=reference, partition_rows=int(day.row_ids.size),
        output_correction=registry.jsonable(result.output_correction),
        splits={"train": "splits.TRAIN", "validation": "splits.VALIDATION", "test": "splits.TEST",
                "privatized": "train + validation labels", "evaluated": "true test labels"})
    return registry.save_model(day.root, model_name, day.date, result.model, metadata)


def dataset_record(dataset: DatasetSpec) -> DatasetRecord | None:
    """The metadata's ``dataset`` record (name, fingerprint, spec) of a model of ``dataset``; None for the
    built-in Criteo spec, whose models carry no record (as before specs existed)."""
    if is_default(dataset):
        return None
    return DatasetRecord(dataset.name, dataset.fingerprint(), registry.jsonable(encode(dataset)))


def dataset_fingerprint_of(metadata: ModelMetadata) -> str:
    """The fingerprint of the dataset a registered model reads (no ``dataset`` record: the Criteo spec)."""
    if metadata.dataset and metadata.dataset.fingerprint:
        return metadata.dataset.fingerprint
    return criteo().fingerprint()


def train_and_register(partition: Day, mechanism: str | Mechanism, epsilon: float, model_name: str | None = None,
                       seed: int = 0, settings: CatBoostSettings | None = None,
                       options: MechanismOptions | None = None, reference_name: str = "reference",
                       on_missing_reference: str = "train", progress: Progress = no_progress,
                       reference: ModelHandle | None = None) -> tuple[Any, ModelMetadata]:
    """The ``labeldp-audit train`` job: load day D, resolve the reference (D-1 checkpoint), train, register.

    The reference is resolved whenever it exists or can be made, because the audit of day D needs it as M'
    (paper Sec. 6.2), and always when the mechanism needs it as its prior. ``on_missing_reference="skip"``
    proceeds without one for mechanisms that do not need it (e.g. the first day of data). A model named like
    the reference does not resolve a reference of its own. ``mechanism`` is a registered name (built from
    ``options``) or a `Mechanism`. ``reference``: the reference already resolved by the caller (a night resolves it
    once for every target), else resolved or made here. ``partition``: day D's handle (`pipelines.data.day.Day`:
    its files, dataset and fingerprint, hashed once); the model is registered under its data root. Returns
    ``(model_dir, metadata)``.
    """
    root, date = partition.root, partition.date
    settings = settings or CatBoostSettings()
    chosen = mechanism_from(mechanism, options)
    model_name = model_name or default_model_name(chosen.name, epsilon)
    if on_missing_reference not in ("train", "fail", "skip"):
        raise LabelDPInputError(f"on_missing_reference must be train, fail or skip; got {on_missing_reference!r}")
    epsilon = check_epsilon(epsilon)
    needed = chosen.needs_reference
    if needed and model_name == reference_name:
        raise LabelDPInputError(f"model {model_name!r} cannot be its own reference prior; pick another "
                                f"{mention('model_name')} or {mention('prior')} uniform", field="model_name")
    progress(f"loading partition {date.isoformat()}")
    day = load_day(partition)
    progress(f"{day.row_ids.size} rows: train {day.rows(splits.TRAIN).size}, validation "
             f"{day.rows(splits.VALIDATION).size}, test {day.rows(splits.TEST).size}")
    reference_model, reference_info = None, None
    wants = model_name != reference_name and (needed or on_missing_reference != "skip"
                                              or model_dir(root, reference_name, reference_date(date)).is_dir())
    if wants:
        policy = "fail" if on_missing_reference == "skip" else on_missing_reference
        if reference is not None and reference.key == (reference_name, reference_date(date)):
            progress(f"reference: using {reference.directory}")
            reference_model = registry.load_model(reference) if reference.format.catboost_classifier else None
        else:
            reference_model, reference = ensure_reference(partition, reference_name, policy, seed, settings,
                                                          progress)
        ref_metadata = reference.meta
        ref_day = ref_metadata.date.isoformat()
        registry.check_features(ref_metadata, day.table_schema)
        if dataset_fingerprint_of(ref_metadata) != day.dataset.fingerprint():
            raise LabelDPInputError(f"reference {reference_name!r}@{ref_day} reads another dataset than "
                                    f"day {date.isoformat()} ({day.dataset.name!r}, {day.dataset.describe()})")
        if needed and reference_model is None:
            raise LabelDPInputError(f"mechanism {chosen.name!r} with prior 'reference' reads the reference's "
                                    f"predictions on the training rows, but {reference_name!r}@{ref_day} "
                                    f"is a {or_none(ref_metadata.format)!r} model, not CatBoost; use "
                                    f"{mention('prior')} uniform", field="prior")
        reference_info = Lineage(model_name=reference_name, date=ref_metadata.date,
                                 partition_fingerprint=ref_metadata.partition_fingerprint, used_as_prior=needed)
    result = train_model(day, chosen, epsilon, seed=seed, settings=settings,
                         reference_model=reference_model if needed else None, progress=progress)
    directory = register(model_name, day, result, reference=reference_info)
    progress(f"registered {directory}")
    return directory, registry.read_metadata(root, model_name, date)


def default_model_name(mechanism: str, epsilon: float) -> str:
    """e.g. ``lp-1st-eps4``, ``rr-eps0.1``, ``none-epsinf``."""
    epsilon = check_epsilon(epsilon)
    return f"{mechanism}-eps{'inf' if math.isinf(epsilon) else format(epsilon, 'g')}"


# ------------------------------------------------------------------------------------------ reuse


def _short(value: Any) -> str:
    text = str(value)
    return text[:19] + "..." if text.startswith("sha256:") and len(text) > 22 else text


def reuse_mismatch(metadata: ModelMetadata | dict, *, mechanism: str | Mechanism, epsilon: float, seed: int,
                   partition_fingerprint: str, settings: CatBoostSettings | None, dataset: DatasetSpec) -> str | None:
    """None when the registered model (its ``metadata``; a dict: its JSON form) was made exactly as this run would
    make it: the same mechanism name, eps, seed, partition fingerprint, dataset fingerprint, and the CatBoost
    parameters ``settings`` give (compared with the recorded ``catboost_params``, seeded from ``seed``). Otherwise
    one short sentence naming every difference, registered value first ("catboost iterations 50 != 200")."""
    metadata = as_metadata(metadata)
    settings = settings or CatBoostSettings()
    wanted_name = mechanism if isinstance(mechanism, str) else mechanism.name
    differences = []
    if metadata.mechanism.name != wanted_name:
        differences.append(f"mechanism {metadata.mechanism.name} != {wanted_name}")
    recorded_epsilon = float(metadata.claimed_epsilon)
    if recorded_epsilon != float(epsilon):
        differences.append(f"epsilon {recorded_epsilon:g} != {float(epsilon):g}")
    seed_differs = metadata.seed != seed
    if seed_differs:
        differences.append(f"seed {metadata.seed} != {seed}")
    if metadata.partition_fingerprint != partition_fingerprint:
        differences.append(f"partition {_short(metadata.partition_fingerprint)} != "
                           f"{_short(partition_fingerprint)}")
    if dataset_fingerprint_of(metadata) != dataset.fingerprint():
        recorded = metadata.dataset.name if metadata.dataset else criteo().name
        differences.append(f"dataset {recorded} ({_short(dataset_fingerprint_of(metadata))}) != "
                           f"{dataset.name} ({_short(dataset.fingerprint())})")
    recorded_params = metadata.catboost_params
    if recorded_params is None:
        differences.append("no catboost parameters recorded")
    else:
        # the CatBoost parameters are CatBoost's own JSON object: a key it leaves out takes CatBoost's default
        loss = recorded_params.get("loss_function", "Logloss")
        valid_seed = isinstance(seed, int | np.integer) and not isinstance(seed, bool) and 0 <= int(seed) < 2**63
        catboost_seed = _seeds(int(seed))[1] if valid_seed else None
        expected = registry.jsonable(settings.params(catboost_seed or 0, loss))
        for key in sorted(set(expected) | set(recorded_params)):
            if key == "random_seed" and (seed_differs or catboost_seed is None):
                continue
            if expected.get(key) != recorded_params.get(key):
                differences.append(f"catboost {key} {recorded_params.get(key)} != {expected.get(key)}")
    return "; ".join(differences) if differences else None
