"""The reference M' recalibrated on a keyed share of day D's training rows, registered as one CatBoost model.

Why: the audit's M' is the D-1 checkpoint. When day D's click odds move (a campaign, drift on a segment of rows),
a perfectly private model trained on day D's labels learns day D's rates and the game reads the gap to M' as
leakage. A global (Platt) fit does not remove segment drift, so the correction learns feature-dependent drift.

The correction (fitted by `fit_correction`, below the registration in this module's first part): a global intercept
a, then a few regularised CatBoost rounds c(x) chosen on validation rows; corrected logit = raw_M' + a + c.

Registered (`recalibrate_reference`): on the CORRECTION rows (`CorrectionRows`: a keyed share, 0.1 by default, of
the rows no audited model holds out, `pipelines.data.splits.correction_share`), which then leave every game of the
night, the targets' and the controls' (`pipelines.scoring.beam_request.ScoringRequest.correction_rows`). Every
held-out row is a capacity-check row (`CheckRowSelection`): no audited model and no correction saw its label. The
corrected reference is thus a function of labels that are neither an audited row's nor a check row's, which is
all the game (Lemma 1) and the check (Lemma 2) condition on (docs/soundness.md sections 6 and 8.8); the correction
fitted on half of the held-out rows before, which halved the check rows. Fit / validation rows by
`pipelines.data.splits.correction_validation`. The result is one ordinary CatBoost model, ``models/<name>/date=D/
model.cbm`` + ``metadata.json`` (written atomically by `pipelines.models.registry.save_model`), whose raw prediction is
raw_M' + a + c, so the Beam job, the counterfactual sampling, the attack score and the risk priors use it
unchanged: ``ScoringRequest(reference=<name>, reference_date=D)``.

One .cbm from two models: ``catboost.sum_models([M', correction])`` concatenates the trees and adds the biases
(the intercept a is then added to the summed model's bias, ``set_scale_and_bias``; with no round kept the file is
M' with its bias moved by a), but it merges the two models' CTR tables (categorical features) by key (feature, CTR
type, target border index). Its other merge policies do not keep M' exact in a writable file (why:
benchmarks/results/notes_from_code.md), so the correction uses a target-CTR type M' does not use (``Buckets``
when M' uses the project's ``Borders`` and ``Counter``, `pipelines.training.train.CatBoostSettings`) and the sum runs
with ``FailIfCtrIntersects``: both models' tables are kept as they are, or the sum fails loudly. Every run then
checks the written file: its raw prediction on the correction rows must equal raw_M' + a + c within
``SUM_TOLERANCE``, recorded in the metadata; this check runs on every write, the no-round file included. A
reference with an ``output_correction`` (LP-1ST-NC) is not logit-additive and is skipped.

Held-out rows (`check_heldout`, `HeldOutRows`): the rows of day D whose labels entered no audited model. Models
trained here record the built-in split, so they are the test split. A registered (outside) model that lists its
training keys (`pipelines.scoring.audit_rows`) holds out the day's other rows: with such targets the held-out rows are
those in no audited model's keys (and in the test split when a target records the built-in split); the correction's
share is taken among the other rows by the same keyed hash, whoever trained on them.

No held-out rows (an audited model read the test split's labels, read every row's label, or has no record of
which rows it read, the audit plays on every row, the day has no such rows or too few clicks there), a reference
that is not a CatBoost model (the correction is summed into its trees) or a dataset that is not binary:
`ReferenceCheckSkipped`, whose ``reason`` the flow reports as "skipped, reference not checked".

Everything runs on the partition's own dataset spec (`pipelines.data.dataset_spec.dataset_of`): its features, its row
key and label under the pipeline names ``row_id`` and ``label``.

The correction of the reference M' at array level: a global intercept, then a few CatBoost rounds.

`fit_correction` corrects M''s raw logits on some rows towards their labels; `pipelines.reference.recalibration`
explains why the reference is recalibrated and registers the result. How:

- First a global intercept a (`fit_intercept`): the maximum-likelihood shift of sigmoid(raw_M' + a) on the fit
  rows (Newton steps, closed-form derivatives), kept only if it lowers the validation log-loss (else a = 0). The
  slope stays 1, so the correction stays additive. Why: the rounds alone under-correct a global click-rate shift,
  because learning rate 0.1, l2 20 and early stopping approach a constant shift only geometrically (the
  retired label-blind control saw the leftover: benchmarks/results/drift_constructed.md).
- Then a CatBoost model boosted from raw_M' + a (``Pool(baseline=...)``): its raw output c(x) is added,
  corrected logit = raw_M'(x) + a + c(x). It is regularised (``RecalibrationSettings``: depth 3,
  l2_leaf_reg 20, learning rate 0.1, at most 300 rounds) and validated: it is fitted on part of the calibration
  rows and the rest choose the number of rounds (CatBoost's eval set with ``use_best_model``, early stop after
  20 rounds without improvement). If the best round does not lower the validation log-loss below that of
  raw_M' + a (by more than ``min_improvement``), no round is kept (c = 0); with a = 0 too M' is kept unchanged,
  which the record says.
- Deterministic: the CatBoost seed derives from ``seed`` and ``thread_count`` is fixed (2) and recorded, because
  the number of threads can change CatBoost's trees (benchmarks/results/notes_from_code.md). Same inputs and
  thread count give byte-identical predictions (tests/pipelines/reference/test_recalibration.py).
- Recorded (``Correction.record``): fit / validation rows and clicks, the intercept (fitted, kept, Newton steps),
  rounds chosen and built, the validation log-loss per round, after the intercept step and after the rounds,
  and on the validation rows the log-loss, expected calibration error
  (`pipelines.reference.shift_diagnostics.expected_calibration_error`, 15 equal-mass bins) and mean probability before and
  after; the settings and CatBoost parameters.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.special import expit

from auditing.verdict.reference_check import CalibrationFigures
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.names import check_name
from labeldp.progress import Progress, no_progress
from pipelines.data import schema, splits
from pipelines.data.dataset_spec import DatasetSpec, is_default
from pipelines.data.day import Day
from pipelines.models import registry
from pipelines.models.handle import ModelHandle, resolve_model
from pipelines.models.metadata import ABSENT, or_none
from pipelines.reference.shift_diagnostics import expected_calibration_error
from pipelines.scoring.audit_rows import ALL, KEYS, KeysSelection, training_rows
from pipelines.training.fitting import CatBoostSettings
from pipelines.training.train import NUM_CLASSES, dataset_record, feature_frame

# ------------------------------------------------------------------------------------------ recalibration fit


TARGET_CTR_TYPES = ("Buckets", "Borders")  # CatBoost's CPU target CTRs for classification, in order of preference
_SEED_TAG = 0x7265_6361  # "reca": the correction's CatBoost seed is not a target's for the same plan seed


class ReferenceCheckSkipped(Exception):  # a skip, not an error: the flow reports it and goes on
    """The reference cannot be recalibrated, or checked, on this day: ``reason`` says
    why. The flow records "skipped, reference not checked: <reason>" and audits against the uncorrected M'."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# ------------------------------------------------------------------------------------------ settings


@dataclass(frozen=True)
class RecalibrationSettings:
    """The correction's knobs: few, shallow, strongly regularised rounds chosen on validation rows.

    ``catboost`` supplies the feature handling (borders, one-hot size, CTR complexity, ``extra``) so the
    correction sees the features as the targets and M' do; its iterations, learning rate, depth, l2 and CTR types
    are replaced by the fields here. ``ctr_types``: candidate target-CTR types, the first one M' does not use is
    taken (`pipelines.reference.recalibration` module docstring). ``share``: the keyed share of the rows no audited
    model holds out whose labels fit the correction (`CorrectionRows`; they leave every game of the night); 0.1 of
    the built-in 84% training rows is about as many rows as half the test split, the correction's size when it fitted
    on held-out rows. ``validation_fraction``: the share of the correction rows that choose the rounds. ``min_rows``:
    the fewest fit and validation rows each (each also needs a click and a non-click). ``max_rows``: the most
    correction rows the correction reads; a day with more fits on the keyed sample of that many
    (`pipelines.data.splits.keyed_sample`), so that the fit's cost stops growing with the day (a correction of a
    few shallow rounds needs far fewer rows).
    """

    max_rounds: int = 300
    learning_rate: float = 0.1
    depth: int = 3
    l2_leaf_reg: float = 20.0
    early_stopping_rounds: int = 20
    validation_fraction: float = 1 / 3
    min_improvement: float = 0.0
    min_rows: int = 100
    max_rows: int = 1_000_000
    share: float = splits.CORRECTION_SHARE
    thread_count: int = 2
    ctr_types: tuple[str, ...] = TARGET_CTR_TYPES
    catboost: CatBoostSettings = field(default_factory=CatBoostSettings)

    def __post_init__(self) -> None:
        for name, low in (("max_rounds", 1), ("depth", 1), ("early_stopping_rounds", 1), ("min_rows", 1),
                          ("max_rows", 2), ("thread_count", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LabelDPInputError(f"recalibration {name} must be a whole number >= {low}; got {value!r}")
        if self.depth > 16:
            raise LabelDPInputError(f"recalibration depth must be at most 16; got {self.depth}")
        for name in ("learning_rate", "l2_leaf_reg"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise LabelDPInputError(f"recalibration {name} must be a finite number > 0; got {value!r}")
        if isinstance(self.share, bool) or not isinstance(self.share, int | float) or not 0.0 < self.share < 1.0:
            raise LabelDPInputError(f"recalibration share must be in (0, 1); got {self.share!r}")
        if not isinstance(self.validation_fraction, int | float) or not 0.0 < self.validation_fraction < 1.0:
            raise LabelDPInputError(f"recalibration validation_fraction must be in (0, 1); got "
                                    f"{self.validation_fraction!r}")
        if (not isinstance(self.min_improvement, int | float) or not math.isfinite(self.min_improvement)
                or self.min_improvement < 0):
            raise LabelDPInputError(f"recalibration min_improvement must be a finite number >= 0; got "
                                    f"{self.min_improvement!r}")
        if not self.ctr_types or any(t not in TARGET_CTR_TYPES for t in self.ctr_types):
            raise LabelDPInputError(f"recalibration ctr_types must be a non-empty subset of {list(TARGET_CTR_TYPES)}; "
                                    f"got {self.ctr_types!r}")
        if not isinstance(self.catboost, CatBoostSettings):
            raise LabelDPInputError(f"recalibration catboost must be a CatBoostSettings; got "
                                    f"{type(self.catboost).__name__}")

    def params(self, random_seed: int, ctr_type: str) -> dict[str, Any]:
        """The correction's CatBoost parameters (Logloss on hard labels, boosted from the given baseline)."""
        ctr = (f"{ctr_type}:Prior=0/1",)
        settings = dataclasses.replace(self.catboost, iterations=self.max_rounds, learning_rate=self.learning_rate,
                                       depth=self.depth, l2_leaf_reg=self.l2_leaf_reg, thread_count=self.thread_count,
                                       use_best_model=True, simple_ctr=ctr)
        out = settings.params(random_seed, "Logloss")
        out.update({"od_type": "Iter", "od_wait": self.early_stopping_rounds, "use_best_model": True,
                    "boost_from_average": False})
        return out

    def describe(self) -> dict[str, Any]:
        """JSON-ready record of the settings (compared to decide whether a registered entry is current)."""
        record = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "catboost"}
        record["ctr_types"] = list(self.ctr_types)
        record["catboost"] = registry.jsonable(dataclasses.asdict(self.catboost))
        return registry.jsonable(record)


def catboost_seed(seed: int) -> int:
    """The correction's CatBoost ``random_seed`` for a plan ``seed`` (32 bits of a SeedSequence)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise LabelDPInputError(f"seed must be a whole number in 0..2^63-1; got {seed!r}")
    return int(np.random.SeedSequence([int(seed), _SEED_TAG]).generate_state(1)[0])


# ------------------------------------------------------------------------------------------ figures


def log_loss(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean binary log-loss of raw logits: log(1 + e^z) - y z, computed stably (``logaddexp``) in logit space so
    that no probability is clipped."""
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def _figures(logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    p = expit(logits)
    return {"log_loss": log_loss(logits, labels), "ece": expected_calibration_error(p, labels.astype(np.float64)),
            "mean_probability": float(p.mean())}


# ------------------------------------------------------------------------------------------ the correction


@dataclass
class Correction:
    """A fitted correction of base logits: base + ``intercept`` + c(x). ``model`` is the CatBoost correction c
    (None: no round kept, c = 0); ``intercept`` the global shift a (0.0: none kept); ``record`` holds the figures
    (module docstring)."""

    model: Any
    record: dict
    cat_features: tuple[str, ...]
    thread_count: int = 2
    intercept: float = 0.0

    @property
    def rounds(self) -> int:
        return 0 if self.model is None else int(self.model.tree_count_)

    def raw(self, features) -> np.ndarray:
        """c(x): the correction's raw output on ``features`` (a frame, or a catboost Pool of it without a
        baseline; zeros for the identity)."""
        from catboost import Pool

        rows = features.num_row() if isinstance(features, Pool) else len(features)
        if self.model is None:
            return np.zeros(rows, dtype=np.float64)
        pool = features if isinstance(features, Pool) else Pool(features, cat_features=list(self.cat_features))
        return np.asarray(self.model.predict(pool, prediction_type="RawFormulaVal", thread_count=self.thread_count),
                          dtype=np.float64)

    def corrected_logits(self, features, base_logits: np.ndarray) -> np.ndarray:
        """base logit + a + c(x) for other rows (``features`` with the columns the correction was fitted on, or a
        Pool of them without a baseline)."""
        base = np.asarray(base_logits, dtype=np.float64).reshape(-1)
        raw = self.raw(features)
        if base.size != raw.size:
            raise LabelDPInputError(f"base_logits has {base.size} values for {raw.size} feature rows")
        return base + self.intercept + raw


def _check_inputs(features, base_logits, labels, cat_features) -> tuple[np.ndarray, np.ndarray, list[str]]:
    if not isinstance(features, pd.DataFrame):
        raise LabelDPInputError(f"features must be a pandas DataFrame; got {type(features).__name__}")
    base = np.asarray(base_logits, dtype=np.float64).reshape(-1)
    y = np.asarray(labels).reshape(-1)
    if base.size != len(features) or y.size != len(features):
        raise LabelDPInputError(f"features ({len(features)} rows), base_logits ({base.size}) and labels ({y.size}) "
                                f"must have one value per row")
    if not np.all(np.isfinite(base)):
        raise LabelDPInputError("base_logits must be finite")
    if y.size and not np.isin(y, (0, 1)).all():
        raise LabelDPInputError(f"labels must be 0 or 1; got values {np.unique(y)[:5].tolist()}")
    cats = list(cat_features)
    missing = [c for c in cats if c not in features.columns]
    if missing:
        raise LabelDPInputError(f"cat_features {missing} are not columns of features ({list(features.columns)})")
    return base, y.astype(np.int64), cats


def _random_validation(n: int, fraction: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng([catboost_seed(seed), 1])
    mask = np.zeros(n, dtype=bool)
    mask[rng.permutation(n)[: round(fraction * n)]] = True
    return mask


def _check_part(name: str, labels: np.ndarray, min_rows: int) -> None:
    clicks = int(labels.sum())
    if labels.size < min_rows or clicks == 0 or clicks == labels.size:
        raise ReferenceCheckSkipped(
            f"too few held-out rows to recalibrate the reference: {labels.size} {name} rows with {clicks} clicks "
            f"(needs at least {min_rows} rows with both labels)")


def fit_intercept(base_logits: np.ndarray, labels: np.ndarray, max_steps: int = 100) -> tuple[float, int]:
    """The maximum-likelihood global intercept a of sigmoid(base + a) and the Newton steps taken.

    Closed-form derivatives of the log-likelihood sum(y (base + a) - log(1 + e^(base + a))): gradient
    sum(y - q), curvature -sum(q (1 - q)) with q = sigmoid(base + a). Concave, so Newton from a = 0 converges; a step
    that would lower the likelihood is halved (a safeguard for extreme shifts).
    Deterministic: plain float64 sums in row order."""
    z = np.asarray(base_logits, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    a, steps = 0.0, 0
    loss = log_loss(z, y)
    while steps < max_steps:
        steps += 1
        q = expit(z + a)
        curvature = float(np.sum(q * (1.0 - q)))
        if not curvature > 0.0:
            break
        step = float(np.sum(y - q)) / curvature
        for _ in range(60):
            new_loss = log_loss(z + a + step, y)
            if new_loss <= loss:
                break
            step /= 2.0
        else:
            break
        a, loss = a + step, new_loss
        if abs(step) < 1e-12:
            break
    return float(a), steps


def fit_correction(features: pd.DataFrame, base_logits: np.ndarray, labels: np.ndarray,
                   cat_features: Sequence[str], *, validation: np.ndarray | None = None,
                   settings: RecalibrationSettings | None = None, seed: int = 0,
                   ctr_type: str | None = None) -> Correction:
    """Fits the correction of ``base_logits`` (M''s raw logits on ``features``) to ``labels`` (0/1).

    ``cat_features``: the categorical columns of ``features`` (the others are numeric). ``validation``: a boolean
    mask of the rows that choose the rounds (default: a seeded random ``settings.validation_fraction`` of them).
    ``ctr_type``: the target-CTR type of the correction (default ``settings.ctr_types[0]``; pick one the base
    model does not use if the two are to be summed into one CatBoost model). Raises `ReferenceCheckSkipped` when
    either part has fewer than ``settings.min_rows`` rows or a single label. Deterministic in its arguments.

    Returns a `Correction`: ``corrected_logits(other_features, other_base_logits)`` applies it to other rows,
    ``record`` holds the figures."""
    from catboost import CatBoostClassifier, Pool

    settings = settings or RecalibrationSettings()
    base, y, cats = _check_inputs(features, base_logits, labels, cat_features)
    random_seed = catboost_seed(seed)
    if validation is None:
        validation = _random_validation(y.size, settings.validation_fraction, seed)
        partition = f"seeded random {settings.validation_fraction:.4g} of the rows (seed {int(seed)})"
    else:
        validation = np.asarray(validation, dtype=bool).reshape(-1)
        if validation.size != y.size:
            raise LabelDPInputError(f"validation mask has {validation.size} values for {y.size} rows")
        partition = "given mask"
    fit = ~validation
    _check_part("fit", y[fit], settings.min_rows)
    _check_part("validation", y[validation], settings.min_rows)
    ctr_type = ctr_type or settings.ctr_types[0]
    if ctr_type not in TARGET_CTR_TYPES:
        raise LabelDPInputError(f"ctr_type must be one of {list(TARGET_CTR_TYPES)}; got {ctr_type!r}")
    params = settings.params(random_seed, ctr_type)

    # The global intercept first (module docstring): the rounds then only learn what depends on the features.
    a_fitted, newton_steps = fit_intercept(base[fit], y[fit])
    y_val = y[validation].astype(np.float64)
    before = _figures(base[validation], y[validation])
    intercept_loss = log_loss(base[validation] + a_fitted, y_val)
    intercept_kept = intercept_loss < before["log_loss"]
    a = a_fitted if intercept_kept else 0.0
    start = base + a  # the rounds are boosted from here
    after_intercept = intercept_loss if intercept_kept else before["log_loss"]

    # One Pool of every row, sliced: no copy of the frame's parts (the fit and validation rows as frames and their
    # Pools held about 300 MB at 1e6 rows beside CatBoost's own training memory).
    pool = Pool(features, y, cat_features=cats)
    fit_rows, validation_rows = np.flatnonzero(fit), np.flatnonzero(validation)
    fit_pool, eval_pool, x_val = pool.slice(fit_rows), pool.slice(validation_rows), pool.slice(validation_rows)
    del pool
    fit_pool.set_baseline(start[fit])
    eval_pool.set_baseline(start[validation])  # x_val: the same rows without a baseline, for predictions
    model = CatBoostClassifier(**params)
    model.fit(fit_pool, eval_set=eval_pool)
    del fit_pool, eval_pool
    curve = [float(v) for v in model.get_evals_result().get("validation", {}).get("Logloss", [])]
    correction = Correction(model, {}, tuple(cats), settings.thread_count, intercept=a)
    z_before = base[validation]
    z_rounds = correction.corrected_logits(x_val, base[validation])
    after_rounds = log_loss(z_rounds, y_val)
    kept_reason = None
    if not after_intercept - after_rounds > settings.min_improvement:
        kept_reason = (f"no round lowered the validation log-loss by more than {settings.min_improvement:g} "
                       f"(best {after_rounds:.6g} after {model.tree_count_} rounds vs {after_intercept:.6g} "
                       f"after the intercept step): "
                       + ("the reference is kept unchanged" if a == 0.0 else "the intercept alone is kept"))
        correction.model = None
    z_after = correction.corrected_logits(x_val, base[validation])
    after = _figures(z_after, y[validation])
    kept_reference = correction.model is None and a == 0.0
    # Paired per-row log-loss differences: their standard error says whether the improvement exceeds noise
    # (reported, not used for the decision; a and the rounds were chosen on these same rows, so it is optimistic).
    per_row = (np.logaddexp(0.0, z_after) - y_val * z_after) - (np.logaddexp(0.0, z_before) - y_val * z_before)
    change_se = float(per_row.std(ddof=1) / math.sqrt(per_row.size)) if per_row.size > 1 else None
    correction.record = {
        "method": "a global intercept a (maximum likelihood on the fit rows), then CatBoost rounds boosted from the "
                  "reference's raw logits + a (Pool baseline); corrected logit = reference logit + a + correction",
        "partition": partition,
        "fit_rows": int(fit.sum()), "validation_rows": int(validation.sum()),
        "fit_clicks": int(y[fit].sum()), "validation_clicks": int(y[validation].sum()),
        "intercept": a, "intercept_fitted": a_fitted, "intercept_kept": bool(intercept_kept),
        "intercept_newton_steps": newton_steps,
        "rounds": correction.rounds, "rounds_built": len(curve), "best_rounds": int(model.tree_count_),
        "kept_reference": kept_reference, "kept_reason": kept_reason,
        "validation": {"log_loss_before": before["log_loss"], "log_loss_after": after["log_loss"],
                       "log_loss_after_intercept": after_intercept, "log_loss_after_rounds": after_rounds,
                       "log_loss_change": after["log_loss"] - before["log_loss"],
                       "log_loss_change_se": None if kept_reference else change_se,
                       "ece_before": before["ece"], "ece_after": after["ece"],
                       "mean_probability_before": before["mean_probability"],
                       "mean_probability_after": after["mean_probability"],
                       "click_rate": float(y[validation].mean()),
                       "ece_bins": "15 equal-mass bins (pipelines.reference.shift_diagnostics)"},
        "validation_log_loss_by_round": curve,
        "ctr_type": ctr_type, "settings": settings.describe(), "catboost_params": params,
        "seed": int(seed), "catboost_seed": random_seed,
    }
    return correction


def calibration_figures(record: dict) -> CalibrationFigures:
    """The reference check's calibration figures (`auditing.verdict.reference_check`) from a recalibration
    record (``metadata["recalibration"]`` of `recalibrate_reference`, or ``Correction.record``)."""
    validation = record["validation"]
    return CalibrationFigures(
        rows_fit=int(record["fit_rows"]), rows_validation=int(record["validation_rows"]), rounds=int(record["rounds"]),
        logloss_before=float(validation["log_loss_before"]), logloss_after=float(validation["log_loss_after"]),
        ece_before=float(validation["ece_before"]), ece_after=float(validation["ece_after"]))


def recalibrated_logits(features: pd.DataFrame, base_logits: np.ndarray, labels: np.ndarray,
                        apply_features: pd.DataFrame, apply_base_logits: np.ndarray, cat_features: Sequence[str],
                        **kwargs) -> tuple[np.ndarray, dict]:
    """One call for a benchmark: `fit_correction` on (``features``, ``base_logits``, ``labels``), then the
    corrected logits of the other rows (``apply_features``, ``apply_base_logits``). Returns (logits, record);
    ``kwargs`` go to `fit_correction` (validation, settings, seed, ctr_type)."""
    correction = fit_correction(features, base_logits, labels, cat_features, **kwargs)
    return correction.corrected_logits(apply_features, apply_base_logits), correction.record


RECALIBRATED_TYPE = "recalibrated-reference"
RECALIBRATION_VERSION = 3  # bump when the procedure changes: a registered entry is then refitted
SUM_MERGE_POLICY = "FailIfCtrIntersects"
SUM_TOLERANCE = 1e-9  # |raw(summed model) - (raw_M' + a + c)| allowed on the correction rows


# ------------------------------------------------------------------------------------------ held-out rows


@dataclass(frozen=True)
class HeldOutRows:
    """The rows of day D held out from every audited model: the test split when ``test_split`` (a target records
    the built-in split, or no target lists keys), minus the keys of every target in ``excluded``."""

    excluded: tuple[KeysSelection, ...] = ()
    fingerprints: tuple[str, ...] = ()  # of the excluded keys files, in the same order
    test_split: bool = True

    @property
    def builtin(self) -> bool:
        """True when the held-out rows are exactly the built-in test split."""
        return not self.excluded

    def mask(self, row_ids) -> np.ndarray:
        ids = np.asarray(row_ids, dtype=np.int64)
        keep = splits.split_of(ids) == splits.TEST if self.test_split else np.ones(ids.shape, dtype=bool)
        for selection in self.excluded:
            keep &= ~selection.mask(ids)
        return keep

    def where(self) -> str:
        return "test split" if self.builtin else "rows in no audited model's training keys"

    def describe(self) -> dict:
        """The JSON record of the rule (compared to decide whether a registered entry is current)."""
        out = {"split": splits.scheme(), "heldout": self.where()
               + (" and in the test split" if not self.builtin and self.test_split else "")}
        if not self.builtin:
            out["excluded_keys"] = [{"model": sel.model, "date": sel.date, "rows": sel.rows, "fingerprint": fp}
                                    for sel, fp in zip(self.excluded, self.fingerprints, strict=True)]
        return out


@dataclass(frozen=True)
class CheckRowSelection:
    """The capacity check's rows (`auditing.verdict.capacity_check`): every held-out row of ``heldout``. Their
    labels trained neither an audited model nor the reference's correction (which fits on `CorrectionRows`), which is
    what the check needs. Picklable for Beam workers, like the audit row selections."""

    heldout: HeldOutRows

    def mask(self, row_ids) -> np.ndarray:
        return self.heldout.mask(row_ids)

    def describe(self) -> dict:
        return {"rows": self.heldout.where(), "scheme": self.heldout.describe()}


@dataclass(frozen=True)
class CorrectionRows:
    """The rows whose labels fit the reference's correction on day D: the keyed ``share`` of the rows that are not
    held out (`pipelines.data.splits.correction_share`), so never a check row. Every game of the day leaves the whole
    keyed share out (`CorrectionExclusion`), so the corrected reference is a function of labels no audited row and no
    check row has (docs/soundness.md sections 6 and 8.8)."""

    heldout: HeldOutRows
    share: float

    def in_correction(self, row_ids) -> np.ndarray:
        ids = np.asarray(row_ids, dtype=np.int64)
        return splits.correction_share(ids, self.share) & ~self.heldout.mask(ids)

    def describe(self) -> dict:
        return {**splits.correction_scheme(self.share), "heldout": self.heldout.describe()}


@dataclass(frozen=True)
class CorrectionExclusion:
    """The rows a game of day D leaves out because a reference corrected on day D may have fitted their labels:
    the whole keyed ``share`` (a superset of `CorrectionRows`: the held-out rows in it are no audited model's training
    rows anyway). An exclusion for `pipelines.scoring.row_grouping.ExcludingSelection`: ``mask`` is True for the rows
    that MAY be audited. Picklable for Beam workers."""

    share: float
    label = "excluded_for_correction"  # its key in an audited selection's description
    excluded = None  # no list of ids: a keyed share (the audited count is then not known before the job)

    def mask(self, row_ids) -> np.ndarray:
        return ~splits.correction_share(np.asarray(row_ids, dtype=np.int64), self.share)

    def describe(self) -> dict:
        return splits.correction_scheme(self.share)


def correction_exclusion(reference: ModelHandle, date: dt.date) -> CorrectionExclusion | None:
    """The rows a game of day ``date`` played against ``reference`` must leave out: the correction's keyed share when
    the reference is a recalibrated reference corrected on that day's rows (its metadata's ``correction_rows``),
    None otherwise (a D-1 checkpoint, another day's correction, or one fitted on held-out rows before 2026-11-29).
    Read from the reference itself, so every caller of the Beam job (the nightly, `labeldp-audit score`) leaves them
    out."""
    record = reference.meta.correction_rows
    if not record or reference.date != date:
        return None
    scheme = record.get("scheme") if isinstance(record, dict) else None
    share = scheme.get("share") if isinstance(scheme, dict) else None
    # the recorded hash, salts and split must be this version's, or the share would leave other rows out
    if not (isinstance(share, int | float) and 0.0 < share < 1.0) or {
            k: v for k, v in scheme.items() if k != "heldout"} != splits.correction_scheme(float(share)):
        raise LabelDPInputError(f"reference {reference.name!r}@{reference.date.isoformat()}: its metadata's "
                                f"correction_rows.scheme is not one this version reads ({scheme!r}); refit it")
    return CorrectionExclusion(float(share))


def correction_rows(heldout: HeldOutRows, settings: RecalibrationSettings | None = None) -> CorrectionRows:
    """The rows the correction of a night whose held-out rows are ``heldout`` fits on (``settings.share``)."""
    return CorrectionRows(heldout, (settings or RecalibrationSettings()).share)


def check_heldout(targets: Iterable[ModelHandle] = (), audit_rows: str = "training") -> HeldOutRows:
    """The rows of day D held out from every audited model, or `ReferenceCheckSkipped`: the audit must play on
    the training rows only (``audit_rows`` "training"), and each audited model (``targets``, resolved) must record
    its training rows (`pipelines.scoring.audit_rows`): under the built-in split scheme with labels read from the
    train and validation splits only, or as a list of keys (a file in the model's directory).
    A model without a record, or trained on every row of the day (kind "all"), leaves no row known to be held
    out. A keys file that is missing or unreadable is a LabelDPInputError naming it."""
    if audit_rows != "training":
        raise ReferenceCheckSkipped(
            f"audit_rows is {audit_rows!r}: the game is played on every row, the held-out rows included, so their "
            f"labels can neither recalibrate the reference nor check it")
    expected = splits.scheme()
    excluded, fingerprints, split_targets = [], [], 0
    for target in targets:
        record = target.meta.training_rows
        model = f"model {target.name!r} of {target.date.isoformat()}"
        if not record:
            raise ReferenceCheckSkipped(
                f"{model} has no training_rows record: it may have been trained on every row of the day, so no "
                f"row is known to be held out")
        kind = record.kind
        if kind == ALL:
            raise ReferenceCheckSkipped(f"{model} read every row's label of day {target.meta.date.isoformat()}: no "
                                        f"row is held out")
        if kind == KEYS:
            from pipelines.data.layout import file_fingerprint

            selection = training_rows(target.meta, target.directory)
            excluded.append(selection)
            fingerprints.append(file_fingerprint(Path(selection.file)))
            continue
        if kind is not ABSENT:
            raise ReferenceCheckSkipped(f"{model} records its training rows as {kind!r}, which leaves no row known "
                                        f"to be held out")
        split_targets += 1
        if or_none(record.split) != expected:
            raise ReferenceCheckSkipped(
                f"{model} was split with {or_none(record.split)!r}, not the built-in scheme {expected!r}: its "
                f"held-out rows are not the test split")
        read = set(record.label_splits or [])
        if not read <= {"train", "validation"}:
            raise ReferenceCheckSkipped(f"{model} read the labels of the split(s) {sorted(read)}: the test split "
                                        f"is not held out")
    return HeldOutRows(excluded=tuple(excluded), fingerprints=tuple(fingerprints),
                       test_split=bool(split_targets) or not excluded)


def check_binary_dataset(dataset: DatasetSpec) -> None:
    """`ReferenceCheckSkipped` unless the dataset is binary (the correction and the control are 0/1 models)."""
    if dataset.classes != NUM_CLASSES:
        raise ReferenceCheckSkipped(f"dataset {dataset.name!r} has {dataset.classes} classes: the recalibration and "
                                    f"the correction fits binary models only")


def correction_frame(table: pa.Table, rows: CorrectionRows,
                     dataset: DatasetSpec | None = None) -> tuple[np.ndarray, pd.DataFrame, np.ndarray]:
    """(row_ids, feature frame, labels) of the rows of ``table`` (pipeline names: ``row_id``, ``label``, the
    features of ``dataset``, default Criteo) in the correction's ``rows``."""
    row_ids = table.column("row_id").to_numpy()
    keep = np.flatnonzero(rows.in_correction(row_ids))
    part = table if keep.size == table.num_rows else table.take(pa.array(keep))  # all of them: no copy
    return (row_ids[keep], feature_frame(part, dataset),
            part.column("label").to_numpy().astype(np.int64))


@dataclass(frozen=True)
class CorrectionPart:
    """Day D's correction rows as the correction reads them (`correction_part`)."""

    table: pa.Table  # pipeline names, in the partition's order
    partition_rows: int
    available: int  # the day's correction rows, before the cap
    heldout: int  # the day's held-out rows (the check rows), counted in the same pass


def correction_part(day: Day, rows: CorrectionRows, max_rows: int) -> CorrectionPart:
    """The correction's ``rows`` of ``day`` (read with its dataset), at most ``max_rows`` of them (the keyed sample,
    `pipelines.data.splits.keyed_sample`; the rest of the share are neither fitted nor audited), streamed in two
    passes: the row ids alone, then the rows kept. Memory holds the day's correction row ids and the rows kept,
    never the day (`schema.read_keyed_sample`)."""
    heldout = 0

    def among(ids: np.ndarray) -> np.ndarray:
        nonlocal heldout
        held = rows.heldout.mask(ids)
        heldout += int(held.sum())
        return splits.correction_share(ids, rows.share) & ~held

    table, read, available = schema.read_keyed_sample(day, day.dataset, max_rows, among=among)
    return CorrectionPart(table, read, available, heldout)


# ------------------------------------------------------------------------------------------ the registry


def _used_ctr_types(model) -> set[str]:
    """The CTR types in the model's training parameters ("" when they are not recorded)."""
    try:
        params = model.get_all_params()
    except Exception:  # a model without recorded parameters: let FailIfCtrIntersects decide
        return set()
    used = set()
    for key in ("simple_ctr", "combinations_ctr", "per_feature_ctr"):
        values = params.get(key) or []
        if isinstance(values, str):
            values = [values]
        for item in values:
            used.add(str(item).split(":", 1)[0])
    return used


class _CtrIntersection(Exception):
    """sum_models refused: the correction uses a CTR table the reference has (another CTR type is tried)."""


def _summed_model(reference, correction: Correction, features: pd.DataFrame, base: np.ndarray) -> tuple[Any, dict]:
    """sum_models([M', correction]) with the intercept a added to its bias, written to a .cbm and read back as a
    CatBoostClassifier, checked against base + a + c on ``features``. No round kept: M' with its bias moved by a."""
    from catboost import CatBoostError, sum_models

    if correction.model is None:
        summed = reference.copy()
        how = "the reference with its bias moved by the intercept (no correction round was kept)"
    else:
        try:
            summed = sum_models([reference, correction.model], ctr_merge_policy=SUM_MERGE_POLICY)
        except CatBoostError as exc:
            raise _CtrIntersection(str(exc)) from None
        how = (f"catboost.sum_models([reference, correction], ctr_merge_policy={SUM_MERGE_POLICY!r}), bias moved "
               f"by the intercept")
        # sum_models keeps each model's training record as "model0:params", "model1:params", ... and none at the
        # top, which makes every later load print "There are invalid params" and get_all_params() fail: the
        # top-level records are M''s (model0), the correction's stay under "model1:".
        info = summed.get_metadata()
        for key in ("params", "output_options", "training", "class_params"):
            if key not in info and f"model0:{key}" in info:
                info[key] = info[f"model0:{key}"]
    if correction.intercept != 0.0:
        scale, bias = summed.get_scale_and_bias()
        summed.set_scale_and_bias(scale, float(bias) + correction.intercept)
    return _written_and_checked(summed, correction, features, base, how)


def _written_and_checked(model_in, correction: Correction, features: pd.DataFrame, base: np.ndarray,
                         how: str) -> tuple[Any, dict]:
    """The model written to a .cbm and read back as a CatBoostClassifier; its raw prediction on ``features`` must
    equal base + a + c within ``SUM_TOLERANCE`` (run on every write)."""
    from catboost import CatBoostClassifier, Pool

    model = CatBoostClassifier()
    with tempfile.TemporaryDirectory(prefix="labeldp-recalibration-") as tmp:
        path = Path(tmp) / registry.MODEL_FILE
        model_in.save_model(str(path), format="cbm")
        model.load_model(str(path), format="cbm")
    pool = Pool(features, cat_features=list(correction.cat_features))
    expected = correction.corrected_logits(features, base)
    raw = np.asarray(model.predict(pool, prediction_type="RawFormulaVal", thread_count=correction.thread_count),
                     dtype=np.float64)
    probability = np.asarray(model.predict_proba(pool, thread_count=correction.thread_count), dtype=np.float64)[:, 1]
    raw_gap = float(np.max(np.abs(raw - expected))) if raw.size else 0.0
    probability_gap = float(np.max(np.abs(probability - expit(expected)))) if raw.size else 0.0
    if not raw_gap <= SUM_TOLERANCE:
        raise LabelDPInputError(f"the registered reference + intercept + correction model predicts raw logits up to "
                                f"{raw_gap:.3g} away from reference + intercept + correction (tolerance "
                                f"{SUM_TOLERANCE:g}); not registered")
    return model, {"how": how, "intercept": correction.intercept, "checked_rows": int(raw.size),
                   "max_abs_raw_difference": raw_gap, "max_abs_probability_difference": probability_gap,
                   "tolerance": SUM_TOLERANCE}


def changed_keys(seen: dict | None, expected: dict, prefix: str = "") -> list[str]:
    """The keys (dotted, one level into nested dicts) whose value in ``seen`` differs from ``expected``: what
    changed since a registered entry was written (the CatBoost settings, the partition, the held-out rows...)."""
    seen = seen if isinstance(seen, dict) else {}
    out = []
    for key in sorted(set(seen) | set(expected)):
        before, after = seen.get(key), expected.get(key)
        if before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict) and not prefix:
            out += changed_keys(before, after, f"{key}.")
        else:
            out.append(prefix + key)
    return out


def _current(day: Day, name: str, inputs: dict, progress: Progress) -> ModelHandle | None:
    """The recalibrated reference ``name``'s entry of ``day`` when it was fitted from ``inputs``, else None."""
    date = day.date
    try:
        entry = resolve_model(day.root, name, date)
    except LabelDPInputError:
        entry = None
    recalibration = ABSENT if entry is None else entry.meta.recalibration  # this module's record
    seen = recalibration["inputs"] if recalibration and "inputs" in recalibration else None
    if entry is not None and seen == inputs and entry.meta.model_type == RECALIBRATED_TYPE:
        return entry
    progress(f"recalibrated reference: refitting {name}@{date} (changed: "
             f"{', '.join(changed_keys(seen, inputs)) or 'incomplete entry'})")
    return None


def recalibrate_reference(day: Day, name: str, reference: ModelHandle, *, targets: Iterable[ModelHandle] = (),
                          audit_rows: str = "training", settings: RecalibrationSettings | None = None, seed: int = 0,
                          progress: Progress = no_progress) -> ModelHandle:
    """Registers ``models/<name>/date=<date>/`` under the day's data root: the resolved reference ``reference``
    corrected on ``day``'s
    correction rows (module docstring). Returns the registered model, resolved; its metadata's ``recalibration`` key
    holds the record: ``source_reference`` (name, date, fingerprint), ``fit_rows`` / ``validation_rows``,
    ``intercept`` (a), ``rounds`` (0: no round kept, ``kept_reason`` says why; ``kept_reference``: M' itself),
    ``validation`` (log-loss and ECE before / after),
    ``sum`` (the exactness check of the .cbm) and ``inputs`` (what decides whether the entry is current: an entry
    with the same inputs is returned as it is, not refitted).

    ``targets``: the night's audited models, resolved (`check_heldout`); ``audit_rows``: the plan's.
    Raises `ReferenceCheckSkipped` (with ``reason``) when there are no usable held-out rows, the reference is not
    a CatBoost model or not logit-additive, or the dataset is not binary; `LabelDPInputError` for a missing
    reference, partition or keys file. Score with ``ScoringRequest(reference_model=<the returned handle>)``.
    ``day``: the day's handle (`pipelines.data.day.Day`), whose fingerprint keys the entry.
    """
    root, date = day.root, day.date
    check_name(name, "recalibrated reference name")
    ref_name, ref_date, ref_md = reference.name, reference.date, reference.meta
    if (ref_name, ref_date) == (name, date):
        raise LabelDPInputError(f"the recalibrated reference {name!r}@{date} would overwrite its own source; "
                                f"give it another name")
    settings = settings or RecalibrationSettings()
    heldout = check_heldout(targets, audit_rows)
    rows = correction_rows(heldout, settings)
    if not reference.format.catboost_classifier:
        raise ReferenceCheckSkipped(f"reference {ref_name!r}@{ref_date} is a {reference.format.name!r} model: the "
                                    f"recalibration sums a correction into CatBoost trees, so it needs a CatBoost "
                                    f"reference")
    dataset = day.dataset
    check_binary_dataset(dataset)
    if ref_md.output_correction:
        raise ReferenceCheckSkipped(
            f"reference {ref_name!r}@{ref_date} applies an output correction "
            f"({ref_md.output_correction.get('kind')}) that is not additive in logit space, so no single "
            f"CatBoost model can hold it plus a correction")
    fingerprint = reference.fingerprint
    partition_fp = day.fingerprint
    source_record = {"name": ref_name, "date": ref_date.isoformat(), "fingerprint": fingerprint,
                     "partition_fingerprint": ref_md.partition_fingerprint}
    inputs = {"reference": source_record, "partition_fingerprint": partition_fp, "settings": settings.describe(),
              "seed": int(seed), "correction_rows": rows.describe(), "version": RECALIBRATION_VERSION}
    if not is_default(dataset):
        inputs["dataset"] = dataset.fingerprint()
    inputs = registry.jsonable(inputs)
    current = _current(day, name, inputs, progress)
    if current is not None:
        progress(f"recalibrated reference: reusing {name}@{date} (same reference, partition and settings)")
        return dataclasses.replace(current, source=reference)

    part = correction_part(day, rows, settings.max_rows)
    registry.check_features(ref_md, part.table.schema)
    row_ids, features, labels = correction_frame(part.table, rows, dataset)
    partition_rows, available, heldout_rows = part.partition_rows, part.available, part.heldout
    del part  # the rows are in the frame now: their Arrow copy goes before the fit, and back to the system
    pa.default_memory_pool().release_unused()
    if heldout_rows == 0:
        raise ReferenceCheckSkipped(f"partition {date.isoformat()} ({partition_rows} rows) has no held-out rows "
                                    f"({heldout.where()}) to check the reference on")
    if row_ids.size == 0:
        raise ReferenceCheckSkipped(f"partition {date.isoformat()} ({partition_rows} rows) has no row to fit the "
                                    f"correction on (the keyed share {settings.share:g} of the rows outside the "
                                    f"{heldout.where()})")
    names = ref_md.feature_names
    cats = [item.name for item in ref_md.feature_schema if item.kind == registry.CATEGORICAL]
    if list(features.columns) != names:
        features = features[names]  # a copy: only when the frame's order is not the model's
    reference_model = registry.load_model(reference)
    from catboost import Pool

    base = np.asarray(reference_model.predict(Pool(features, cat_features=cats), prediction_type="RawFormulaVal",
                                              thread_count=settings.thread_count), dtype=np.float64)
    validation = splits.correction_validation(row_ids, settings.validation_fraction)
    # CTR types M' does not record first; a refused sum (M' has the table after all) tries the next type.
    used = _used_ctr_types(reference_model)
    candidates = [t for t in settings.ctr_types if t not in used] + [t for t in settings.ctr_types if t in used]
    sampled = f", the keyed sample of {available}" if available > row_ids.size else ""
    progress(f"recalibrating {ref_name}@{ref_date} on {row_ids.size} correction rows of {date.isoformat()} "
             f"(validation {int(validation.sum())}{sampled})")
    refused = []
    for ctr_type in candidates:
        correction = fit_correction(features, base, labels, cats, validation=validation, settings=settings,
                                    seed=seed, ctr_type=ctr_type)
        try:
            model, check = _summed_model(reference_model, correction, features, base)
            break
        except _CtrIntersection as exc:
            refused.append(f"{ctr_type}: {exc}")
    else:
        raise LabelDPInputError(f"reference {ref_name!r}@{ref_date}: catboost.sum_models refused every correction "
                                f"CTR type ({'; '.join(refused)}); RecalibrationSettings.ctr_types needs one the "
                                f"reference does not use")
    record = correction.record
    progress(f"recalibration: intercept {record['intercept']:+.4f}, {record['rounds']} round(s); validation log-loss "
             f"{record['validation']['log_loss_before']:.5f} -> {record['validation']['log_loss_after']:.5f}, ECE "
             f"{record['validation']['ece_before']:.4f} -> {record['validation']['ece_after']:.4f}")
    metadata = {
        "model_type": RECALIBRATED_TYPE,
        "mechanism": {"name": RECALIBRATED_TYPE, "epsilon": math.inf, "delta": 0.0,
                      "guarantee": "none (an audit artifact like M'): the D-1 reference corrected on a keyed share of "
                                   "day D's training rows, which leave every audited game and are no check rows"},
        "seed": int(seed), "partition_fingerprint": partition_fp, "partition_rows": partition_rows,
        "feature_schema": encode(ref_md.feature_schema),
        "catboost_params": {"reference": ref_md.catboost_params, "correction": record["catboost_params"]},
        "test_metrics": {**record["validation"], "evaluated_on": "the correction rows' validation rows"},
        "reference": source_record,
        "recalibration": {**record, "source_reference": source_record, "sum": check, "inputs": inputs},
        "correction_rows": {"scheme": rows.describe(), "rows": int(row_ids.size), "heldout_rows": heldout_rows,
                         "available_rows": available, "max_rows": settings.max_rows,
                         "fit_rows": record["fit_rows"], "validation_rows": record["validation_rows"],
                         "validation_fraction": settings.validation_fraction},
    }
    if dataset_record(dataset) is not None:
        metadata["dataset"] = encode(dataset_record(dataset))
    registry.save_model(root, name, date, model, metadata)
    return dataclasses.replace(resolve_model(root, name, date), source=reference)


__all__ = ["RECALIBRATED_TYPE", "RECALIBRATION_VERSION", "SUM_MERGE_POLICY", "SUM_TOLERANCE", "TARGET_CTR_TYPES", "CheckRowSelection", "Correction", "CorrectionExclusion", "CorrectionPart", "CorrectionRows", "HeldOutRows", "RecalibrationSettings", "ReferenceCheckSkipped", "calibration_figures", "catboost_seed", "changed_keys", "check_binary_dataset", "check_heldout", "correction_exclusion", "correction_frame", "correction_part", "correction_rows", "fit_correction", "fit_intercept", "log_loss", "recalibrate_reference", "recalibrated_logits"]
