"""CatBoost training of a (label-DP) click model for one partition day, and the registered reference M'.

What happens in ``train_model`` (paper Sec. 6.4 setup):

- Features per ``pipelines.schema``: ``I1..I13`` as float64 with NaN for missing (CatBoost's default
  ``nan_mode="Min"``), ``C1..C26`` as CatBoost categorical features (the 8-hex strings; a missing value is
  the empty string ""). ``feature_frame`` is the one conversion; scorers must use it too.
- Splits per ``pipelines.splits`` (hash of row_id, 80/4/16). The mechanism privatizes the labels of the
  train *and* validation rows -- every label the training procedure reads, since the validation split picks
  the best iteration (``use_best_model``) and, for LP-1ST-NC, the correction's floor. Test labels are read
  only to compute the reported test metrics, against the *true* labels.
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

``CatBoostSettings`` holds the speed/quality knobs; the defaults suit 2 cores (benchmarks/results/training.md
has the measured time and log-loss against CatBoost's own defaults).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from auditing.errors import LabelDPInputError
from pipelines import registry, schema, splits
from pipelines.layout import model_dir, require_date
from pipelines.mechanisms import MECHANISMS
from pipelines.mechanisms._checks import check_epsilon
from pipelines.mechanisms.alibi import laplace_scale, noisy_one_hot, posterior_soft_labels
from pipelines.mechanisms.noise_correction import select_floor
from pipelines.mechanisms.pate import pate_labels
from pipelines.mechanisms.randomized_response import flip_probability, randomized_response
from pipelines.mechanisms.rr_with_prior import rr_with_prior
from pipelines.mechanisms.two_stage import two_stage_labels
from pipelines.progress import Progress, no_progress

NUM_CLASSES = 2
PRIORS = ("reference", "uniform")
UNIT = ("replacement of one row's label (label-DP); implies the same eps for SIM-DP in the add/remove model "
        "with the imputation simulator that the paper audits (its Def. 2)")
MISSING_CATEGORY = ""
PROBABILITY_CLIP = 1e-15  # only for log-loss arithmetic: log(0) would be -inf



# ------------------------------------------------------------------------------------------ settings


@dataclass(frozen=True)
class CatBoostSettings:
    """CatBoost knobs. Defaults chosen for 2 cores (benchmarks/bench_training.py, results/training.md):

    - ``max_ctr_complexity=1``: no combinations of categorical features (~3x faster, ../shared/DESIGN.md);
    - ``simple_ctr``: one prior per CTR type (Borders with prior 0.5, Counter) instead of CatBoost's three
      Borders priors: about half the CTR features, ~30% less time per iteration at no loss measured;
    - ``one_hot_max_size=32``: categorical columns with at most 32 values are one-hot encoded instead of
      CTR-encoded, which represents their per-value effects exactly (CatBoost's CPU default is 2); on a
      200K-row synthetic train split this alone cut test log-loss from 0.1213 to 0.1186 at no extra time;
    - ``border_count=64`` numeric borders instead of 254 (13 numeric features; slightly faster);
    - 200 iterations at learning rate 0.15, the best iteration picked on the (privatized) validation split.

    ``extra`` passes any other CatBoost parameter through unchanged (e.g. ``{"l2_leaf_reg": 10}``).
    """

    iterations: int = 200
    learning_rate: float = 0.15
    depth: int = 6
    max_ctr_complexity: int = 1
    simple_ctr: tuple[str, ...] = ("Borders:Prior=0.5/1", "Counter:Prior=0/1")
    border_count: int = 64
    one_hot_max_size: int = 32
    thread_count: int = 2
    l2_leaf_reg: float = 3.0
    use_best_model: bool = True
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, low in (("iterations", 1), ("depth", 1), ("max_ctr_complexity", 1), ("border_count", 1),
                          ("one_hot_max_size", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LabelDPInputError(f"{name} must be a whole number >= {low}; got {value!r}")
        if self.depth > 16:
            raise LabelDPInputError(f"depth must be at most 16 (CatBoost's limit); got {self.depth}")
        if isinstance(self.thread_count, bool) or not isinstance(self.thread_count, int) or not (
                self.thread_count == -1 or self.thread_count >= 1):
            raise LabelDPInputError(f"thread_count must be -1 (all cores) or a whole number >= 1; got "
                                    f"{self.thread_count!r}")
        for name in ("learning_rate", "l2_leaf_reg"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise LabelDPInputError(f"{name} must be a finite number > 0; got {value!r}")
        if not isinstance(self.extra, dict):
            raise LabelDPInputError(f"extra must be a dict of CatBoost parameters; got {type(self.extra).__name__}")

    def params(self, random_seed: int, loss_function: str = "Logloss") -> dict[str, Any]:
        out = {
            "iterations": self.iterations,
            "learning_rate": self.learning_rate,
            "depth": self.depth,
            "max_ctr_complexity": self.max_ctr_complexity,
            "simple_ctr": list(self.simple_ctr),
            "combinations_ctr": list(self.simple_ctr),  # unused at max_ctr_complexity=1; silences a warning
            "border_count": self.border_count,
            "one_hot_max_size": self.one_hot_max_size,
            "l2_leaf_reg": self.l2_leaf_reg,
            "thread_count": self.thread_count,
            "loss_function": loss_function,
            "random_seed": int(random_seed),
            "allow_writing_files": False,
            "verbose": False,
        }
        out.update(self.extra)
        return out


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


# ------------------------------------------------------------------------------------------ fitting


def _pool(features: pd.DataFrame, label=None):
    from catboost import Pool

    return Pool(features, label=label, cat_features=list(schema.CATEGORICAL_COLUMNS))


def _constant_model(features: pd.DataFrame, p_one: float, params: dict):
    """A valid CatBoost model that predicts P(class 1) = p_one everywhere, with the usual feature schema.

    Fitted for one iteration on label-free alternating dummy targets (so it reads no data labels), then
    scale 0 and bias logit(p_one) make the output constant."""
    from catboost import CatBoostClassifier

    rows = min(len(features), 64)
    dummy = np.arange(rows) % 2
    model = CatBoostClassifier(**{**params, "iterations": 1, "loss_function": "Logloss"})
    model.fit(_pool(features.iloc[:rows], dummy))
    model.set_scale_and_bias(0.0, float(math.log(p_one / (1.0 - p_one))))
    return model


def fit_catboost(features: pd.DataFrame, targets: np.ndarray, settings: CatBoostSettings, random_seed: int,
                 eval_features: pd.DataFrame | None = None, eval_targets: np.ndarray | None = None,
                 model_class=None):
    """Fits a binary CatBoostClassifier (or ``model_class``, a subclass); returns (model, info).

    ``targets``: int labels (Logloss) or float class-1 probabilities (CrossEntropy, soft labels). With a
    single class among hard targets the model is a constant plain CatBoostClassifier (module docstring) and
    ``info["degenerate"]`` explains it. ``info["params"]`` are the CatBoost parameters used.
    """
    from catboost import CatBoostClassifier

    model_class = model_class or CatBoostClassifier
    targets = np.asarray(targets)
    soft = np.issubdtype(targets.dtype, np.floating)
    params = settings.params(random_seed, "CrossEntropy" if soft else "Logloss")
    info: dict[str, Any] = {"params": params, "degenerate": None, "rows": int(targets.size)}
    if not soft and np.unique(targets).size < 2:
        n_one = int(np.sum(targets == 1))
        p_one = (n_one + 1.0) / (targets.size + 2.0)
        info["degenerate"] = (f"all {targets.size} training labels are {int(targets[0])}: constant model with "
                              f"P(click) = (clicks + 1) / (rows + 2) = {p_one:.3g}")
        return _constant_model(features, p_one, params), info
    use_eval = eval_features is not None and settings.use_best_model and len(eval_features) > 0
    if use_eval and not soft and np.unique(eval_targets).size < 2:
        use_eval = False  # CatBoost's Logloss cannot score a one-class eval set
    model = model_class(**params)
    fit_kwargs = {}
    if use_eval:
        fit_kwargs = {"eval_set": _pool(eval_features, eval_targets), "use_best_model": True}
    model.fit(_pool(features, targets), **fit_kwargs)
    info["best_iteration"] = int(model.get_best_iteration()) if use_eval else None
    info["trees"] = int(model.tree_count_)
    return model, info


def _predict(model, features: pd.DataFrame) -> np.ndarray:
    return np.asarray(model.predict_proba(_pool(features)), dtype=np.float64)


def _predict_raw(model, features: pd.DataFrame) -> np.ndarray:
    """CatBoost's own probabilities, bypassing a NoiseCorrectedClassifier's correction."""
    from catboost import CatBoostClassifier

    return np.asarray(CatBoostClassifier.predict_proba(model, _pool(features)), dtype=np.float64)


class CatBoostLearner:
    """``FitPredict`` for the multi-stage mechanisms: row numbers index ``rows`` (the day's private rows)."""

    def __init__(self, day: DayData, rows: np.ndarray, settings: CatBoostSettings, random_seed: int,
                 progress: Progress, what: str):
        self.day, self.rows, self.settings = day, rows, settings
        self.random_seed, self.progress, self.what = random_seed, progress, what
        self.calls = 0

    def __call__(self, train_rows: np.ndarray, targets: np.ndarray, predict_rows: np.ndarray) -> np.ndarray:
        self.calls += 1
        targets = np.asarray(targets)
        if targets.ndim == 2:
            targets = targets[:, 1].astype(np.float64)
        self.progress(f"{self.what} {self.calls}: fitting on {train_rows.size} rows")
        features = self.day.features.iloc[self.rows[train_rows]]
        model, _info = fit_catboost(features, targets, self.settings, (self.random_seed + self.calls) % 2**32)
        return _predict(model, self.day.features.iloc[self.rows[predict_rows]])


# ------------------------------------------------------------------------------------------ mechanisms


@dataclass(frozen=True)
class MechanismOptions:
    """Per-mechanism parameters (ignored by mechanisms that do not use them).

    prior: "reference" (the previous day's checkpoint's predictions: the domain prior) or "uniform"; used by
    lp-1st, lp-2st (stage 1) and alibi. delta: the (eps, delta) target of pate (the others are pure eps-DP,
    delta 0). stage_one_fraction: lp-2st's stage-1 share of the private rows. alibi_rounds: posterior
    refinements (round r >= 2 uses round r-1's model as the prior). pate_teachers / pate_queries: number of
    teachers and of student rows labelled by noisy-argmax votes.
    """

    prior: str = "reference"
    delta: float = 1e-5
    stage_one_fraction: float = 0.5
    alibi_rounds: int = 1
    pate_teachers: int = 20
    pate_queries: int = 1000

    def __post_init__(self) -> None:
        if self.prior not in PRIORS:
            raise LabelDPInputError(f"prior must be one of {list(PRIORS)}; got {self.prior!r}")
        if not isinstance(self.delta, int | float) or not 0.0 <= self.delta < 1.0:
            raise LabelDPInputError(f"delta must be in [0, 1); got {self.delta!r}")
        if not isinstance(self.stage_one_fraction, int | float) or not 0.0 < self.stage_one_fraction < 1.0:
            raise LabelDPInputError(f"stage_one_fraction must be in (0, 1); got {self.stage_one_fraction!r}")
        for name in ("alibi_rounds", "pate_teachers", "pate_queries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LabelDPInputError(f"{name} must be a whole number >= 1; got {value!r}")


def needs_reference(mechanism: str, options: MechanismOptions) -> bool:
    """Whether the mechanism reads the reference model's predictions as its prior."""
    return mechanism in ("lp-1st", "lp-2st", "alibi") and options.prior == "reference"


def _uniform(n: int) -> np.ndarray:
    return np.full((n, NUM_CLASSES), 1.0 / NUM_CLASSES)


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


def _guarantee(mechanism: str, epsilon: float, delta: float) -> str:
    if mechanism == "none" or math.isinf(epsilon):
        return "none (eps = inf): the labels are used as they are"
    if mechanism == "pate":
        return f"({epsilon:g}, {delta:g})-label-DP for teacher rows' labels; student rows' labels are not used"
    return f"{epsilon:g}-label-DP (pure, delta = 0)"


def train_model(day: DayData, mechanism: str, epsilon: float, seed: int = 0,
                settings: CatBoostSettings | None = None, options: MechanismOptions | None = None,
                reference_model=None, progress: Progress = no_progress) -> TrainResult:
    """Privatizes the day's train+validation labels with ``mechanism`` at ``epsilon``, trains CatBoost, and
    measures test log-loss and accuracy against the true test labels.

    ``reference_model`` (a classifier with ``predict_proba``) is required when ``needs_reference``: its
    predictions are the domain prior. Returns a ``TrainResult``; nothing is written.
    """
    if mechanism not in MECHANISMS:
        raise LabelDPInputError(f"mechanism must be one of {list(MECHANISMS)}; got {mechanism!r}")
    epsilon = check_epsilon(epsilon)
    if mechanism == "none" and not math.isinf(epsilon):
        raise LabelDPInputError(f"mechanism 'none' is non-private: epsilon must be inf; got {epsilon!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise LabelDPInputError(f"seed must be a whole number in 0..2^63-1; got {seed!r}")
    seed = int(seed)
    settings = settings or CatBoostSettings()
    options = options or MechanismOptions()
    if needs_reference(mechanism, options) and reference_model is None:
        raise LabelDPInputError(f"mechanism {mechanism!r} with prior 'reference' needs the reference model "
                                f"(the previous day's checkpoint); none was given")

    sequence = np.random.SeedSequence(seed)
    mechanism_sequence, catboost_sequence = sequence.spawn(2)
    rng = np.random.default_rng(mechanism_sequence)
    catboost_seed = int(catboost_sequence.generate_state(1)[0])
    started = time.monotonic()

    private = day.private_rows
    is_validation = day.split[private] == splits.VALIDATION
    labels = day.labels[private]
    parameters: dict[str, Any] = {}
    notes: list[str] = []
    identity = math.isinf(epsilon) and mechanism in ("none", "rr", "lp-1st", "lp-1st-nc", "lp-2st")

    def prior_for(rows: np.ndarray) -> np.ndarray:
        if options.prior == "uniform":
            return _uniform(rows.size)
        return _predict(reference_model, day.features.iloc[rows])

    fit_rows = private           # rows of the day the final model is fitted on
    unread_rows = np.zeros(0, dtype=np.int64)   # private rows whose labels the procedure never read (PATE)
    targets: np.ndarray          # their (privatized) targets: int labels, or float soft labels (ALIBI)
    correction = None
    if identity:
        targets = labels.copy()
        if mechanism != "none":
            notes.append("eps = inf: labels released unchanged; identical to mechanism 'none'")
    elif mechanism == "rr" or mechanism == "lp-1st-nc":
        targets = randomized_response(labels, epsilon, NUM_CLASSES, rng)
        parameters["flip_probability"] = flip_probability(epsilon, NUM_CLASSES)
    elif mechanism == "lp-1st":
        prior = prior_for(private)
        targets = rr_with_prior(labels, prior, epsilon, rng)
        parameters["prior"] = options.prior
    elif mechanism == "lp-2st":
        learner = CatBoostLearner(day, private, settings, catboost_seed, progress, "lp-2st stage-1 model")
        release = two_stage_labels(labels, prior_for(private), epsilon, rng, learner, options.stage_one_fraction)
        targets = release.labels
        parameters.update({"prior": options.prior, "stage_one_fraction": options.stage_one_fraction,
                           "stage_one_rows": int(release.stage_one.sum())})
    elif mechanism == "alibi":
        noisy = noisy_one_hot(labels, epsilon, NUM_CLASSES, rng)
        soft = posterior_soft_labels(noisy, prior_for(private), epsilon)
        parameters.update({"prior": options.prior, "laplace_scale": laplace_scale(epsilon),
                           "rounds": options.alibi_rounds})
        for round_number in range(2, options.alibi_rounds + 1):
            progress(f"alibi round {round_number}: refitting the prior on the soft labels")
            model, _info = fit_catboost(day.features.iloc[private], soft[:, 1], settings, catboost_seed)
            soft = posterior_soft_labels(noisy, _predict(model, day.features.iloc[private]), epsilon)
        targets = soft[:, 1].astype(np.float64)
    elif mechanism == "pate":
        learner = CatBoostLearner(day, private, settings, catboost_seed, progress, "pate teacher")
        release = pate_labels(labels, NUM_CLASSES, epsilon, options.delta, rng, learner,
                              num_teachers=options.pate_teachers, num_queries=options.pate_queries)
        fit_rows = private[release.student_rows]
        unread_rows = day.row_ids[fit_rows]   # the student rows: their own labels are never read
        targets = release.student_labels
        is_validation = np.zeros(fit_rows.size, dtype=bool)   # the student has no eval set
        parameters.update({"teachers": options.pate_teachers, "queries": options.pate_queries,
                           "aggregation": "report-noisy-max with Gumbel(2/eps_q) = exponential mechanism",
                           "accounting": release.accounting,
                           "student_label_rate": float(np.mean(release.student_labels))})
    else:  # pragma: no cover - MECHANISMS is checked above
        raise AssertionError(mechanism)

    progress(f"{mechanism} eps={epsilon:g}: fitting CatBoost on {int(np.sum(~is_validation))} rows "
             f"(validation {int(np.sum(is_validation))})")
    corrected = mechanism == "lp-1st-nc" and not identity
    model, info = fit_catboost(day.features.iloc[fit_rows[~is_validation]], targets[~is_validation], settings,
                               catboost_seed, day.features.iloc[fit_rows[is_validation]],
                               targets[is_validation],
                               model_class=registry.noise_corrected_classifier_class() if corrected else None)
    if corrected and info["degenerate"] is None:
        validation_rows = fit_rows[is_validation]
        floor, estimates = select_floor(_predict_raw(model, day.features.iloc[validation_rows]),
                                        targets[is_validation], epsilon)
        correction = {"kind": "rr_inverse", "epsilon": epsilon, "floor": floor}
        model.labeldp_correction = registry._jsonable(correction)
        parameters.update({"correction": "p_true = (p_noisy - q) / (1 - 2q), clipped to [floor, 1], renormalised",
                           "floor": floor, "floor_unbiased_validation_log_loss": estimates})
    train_seconds = time.monotonic() - started
    validation_uses = _validation_label_uses(mechanism, identity, options, info, correction)

    test = day.rows(splits.TEST)
    probabilities = _predict(model, day.features.iloc[test])
    metrics = evaluate(probabilities, day.labels[test])
    metrics.update({"train_rows": int(np.sum(~is_validation)), "validation_rows": int(np.sum(is_validation)),
                    "train_seconds": round(train_seconds, 2), "degenerate": info["degenerate"],
                    "best_iteration": info.get("best_iteration"), "trees": info.get("trees"),
                    "notes": notes})
    if info["degenerate"]:
        progress(f"warning: {info['degenerate']}")
    delta = parameters["accounting"]["delta"] if mechanism == "pate" else 0.0  # the others are pure eps-DP
    mechanism_record = {"name": mechanism, "epsilon": epsilon, "delta": delta, "unit": UNIT,
                        "guarantee": _guarantee(mechanism, epsilon, delta), "parameters": parameters,
                        "catboost_seed": catboost_seed}
    return TrainResult(model=model, mechanism=mechanism_record, metrics=metrics, catboost_params=info["params"],
                       seed=seed, output_correction=correction,
                       privatized_labels=targets if not np.issubdtype(targets.dtype, np.floating) else None,
                       training_rows=training_rows_record(day, validation_uses, unread_rows))


def _validation_label_uses(mechanism: str, identity: bool, options: MechanismOptions, info: dict,
                           correction: dict | None) -> list[str]:
    """What the (privatized) validation labels were used for; empty when the procedure never read them."""
    uses = []
    if info.get("best_iteration") is not None:
        uses.append("chose the best iteration (use_best_model)")
    if correction is not None:
        uses.append("chose the LP-1ST-NC correction floor")
    if not identity and mechanism == "lp-2st":
        uses.append("trained the LP-2ST stage-1 model")
    if not identity and mechanism == "alibi" and options.alibi_rounds >= 2:
        uses.append("refitted the ALIBI prior")
    if mechanism == "pate":
        uses.append("trained the PATE teachers")
    return uses


def training_rows_record(day: DayData, validation_uses: list[str], unread_row_ids: np.ndarray) -> dict:
    """The registry's record of the rows whose labels entered training (issue 9): the split scheme as used
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


def train_and_register(root: str | os.PathLike, date: dt.date, mechanism: str, epsilon: float,
                       model_name: str | None = None, seed: int = 0, settings: CatBoostSettings | None = None,
                       options: MechanismOptions | None = None, reference_name: str = "reference",
                       on_missing_reference: str = "train", progress: Progress = no_progress) -> tuple[Any, dict]:
    """The ``labeldp-audit train`` job: load day D, resolve the reference (D-1 checkpoint), train, register.

    The reference is resolved whenever it exists or can be made, because the audit of day D needs it as M'
    (paper Sec. 6.2), and always when the mechanism needs it as its prior. ``on_missing_reference="skip"``
    proceeds without one for mechanisms that do not need it (e.g. the first day of data). A model named like
    the reference does not resolve a reference of its own. Returns ``(model_dir, metadata)``.
    """
    date = require_date(date)
    settings = settings or CatBoostSettings()
    options = options or MechanismOptions()
    model_name = model_name or default_model_name(mechanism, epsilon)
    if on_missing_reference not in ("train", "fail", "skip"):
        raise LabelDPInputError(f"on_missing_reference must be train, fail or skip; got {on_missing_reference!r}")
    epsilon = check_epsilon(epsilon)
    needed = needs_reference(mechanism, options)
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
    result = train_model(day, mechanism, epsilon, seed=seed, settings=settings, options=options,
                         reference_model=reference_model if needed else None, progress=progress)
    directory = register(root, model_name, day, result, reference=reference_info)
    progress(f"registered {directory}")
    return directory, registry.read_metadata(root, model_name, date)


def default_model_name(mechanism: str, epsilon: float) -> str:
    """e.g. ``lp-1st-eps4``, ``rr-eps0.1``, ``none-epsinf``."""
    epsilon = check_epsilon(epsilon)
    return f"{mechanism}-eps{'inf' if math.isinf(epsilon) else format(epsilon, 'g')}"


def settings_from(**overrides: Any) -> CatBoostSettings:
    """``CatBoostSettings`` with the non-None overrides applied (the CLI's --iterations etc.)."""
    values = {key: value for key, value in overrides.items() if value is not None}
    return dataclasses.replace(CatBoostSettings(), **values)
