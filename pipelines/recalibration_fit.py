"""The correction of the reference M' at array level: a global intercept, then a few CatBoost rounds.

`fit_correction` corrects M''s raw logits on some rows towards their labels; `pipelines.recalibration`
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
  thread count give byte-identical predictions (tests/test_recalibration.py).
- Recorded (``Correction.record``): fit / validation rows and clicks, the intercept (fitted, kept, Newton steps),
  rounds chosen and built, the validation log-loss per round, after the intercept step and after the rounds,
  and on the validation rows the log-loss, expected calibration error
  (`pipelines.shift_diagnostics.expected_calibration_error`, 15 equal-mass bins) and mean probability before and
  after; the settings and CatBoost parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from auditing.errors import LabelDPInputError
from pipelines import registry
from pipelines.shift_diagnostics import expected_calibration_error
from pipelines.training import CatBoostSettings

__all__ = ["TARGET_CTR_TYPES", "Correction", "RecalibrationSettings", "ReferenceCheckSkipped", "calibration_figures",
           "catboost_seed", "fit_correction", "fit_intercept", "log_loss", "recalibrated_logits"]

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
    taken (`pipelines.recalibration` module docstring). ``validation_fraction``: the share of the calibration
    rows that choose the rounds. ``min_rows``: the fewest fit and validation rows each (each also needs a click
    and a non-click).
    """

    max_rounds: int = 300
    learning_rate: float = 0.1
    depth: int = 3
    l2_leaf_reg: float = 20.0
    early_stopping_rounds: int = 20
    validation_fraction: float = 1 / 3
    min_improvement: float = 0.0
    min_rows: int = 100
    thread_count: int = 2
    ctr_types: tuple[str, ...] = TARGET_CTR_TYPES
    catboost: CatBoostSettings = field(default_factory=CatBoostSettings)

    def __post_init__(self) -> None:
        for name, low in (("max_rounds", 1), ("depth", 1), ("early_stopping_rounds", 1), ("min_rows", 1),
                          ("thread_count", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LabelDPInputError(f"recalibration {name} must be a whole number >= {low}; got {value!r}")
        if self.depth > 16:
            raise LabelDPInputError(f"recalibration depth must be at most 16; got {self.depth}")
        for name in ("learning_rate", "l2_leaf_reg"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise LabelDPInputError(f"recalibration {name} must be a finite number > 0; got {value!r}")
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

    def raw(self, features: pd.DataFrame) -> np.ndarray:
        """c(x): the correction's raw output on ``features`` (zeros for the identity)."""
        if self.model is None:
            return np.zeros(len(features), dtype=np.float64)
        from catboost import Pool

        pool = Pool(features, cat_features=list(self.cat_features))
        return np.asarray(self.model.predict(pool, prediction_type="RawFormulaVal", thread_count=self.thread_count),
                          dtype=np.float64)

    def corrected_logits(self, features: pd.DataFrame, base_logits: np.ndarray) -> np.ndarray:
        """base logit + a + c(x) for other rows (``features`` with the columns the correction was fitted on)."""
        base = np.asarray(base_logits, dtype=np.float64).reshape(-1)
        if base.size != len(features):
            raise LabelDPInputError(f"base_logits has {base.size} values for {len(features)} feature rows")
        return base + self.intercept + self.raw(features)


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

    x_fit, x_val = features.iloc[np.flatnonzero(fit)], features.iloc[np.flatnonzero(validation)]
    model = CatBoostClassifier(**params)
    model.fit(Pool(x_fit, y[fit], cat_features=cats, baseline=start[fit]),
              eval_set=Pool(x_val, y[validation], cat_features=cats, baseline=start[validation]))
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
                       "ece_bins": "15 equal-mass bins (pipelines.shift_diagnostics)"},
        "validation_log_loss_by_round": curve,
        "ctr_type": ctr_type, "settings": settings.describe(), "catboost_params": params,
        "seed": int(seed), "catboost_seed": random_seed,
    }
    return correction


def calibration_figures(record: dict) -> dict:
    """The warehouse's ``reference_check.calibration_figures`` (`auditing.warehouse`) from a recalibration
    record (``metadata["recalibration"]`` of `recalibrate_reference`, or ``Correction.record``)."""
    validation = record["validation"]
    return {"rows_fit": int(record["fit_rows"]), "rows_validation": int(record["validation_rows"]),
            "rounds": int(record["rounds"]), "logloss_before": float(validation["log_loss_before"]),
            "logloss_after": float(validation["log_loss_after"]), "ece_before": float(validation["ece_before"]),
            "ece_after": float(validation["ece_after"])}


def recalibrated_logits(features: pd.DataFrame, base_logits: np.ndarray, labels: np.ndarray,
                        apply_features: pd.DataFrame, apply_base_logits: np.ndarray, cat_features: Sequence[str],
                        **kwargs) -> tuple[np.ndarray, dict]:
    """One call for a benchmark: `fit_correction` on (``features``, ``base_logits``, ``labels``), then the
    corrected logits of the other rows (``apply_features``, ``apply_base_logits``). Returns (logits, record);
    ``kwargs`` go to `fit_correction` (validation, settings, seed, ctr_type)."""
    correction = fit_correction(features, base_logits, labels, cat_features, **kwargs)
    return correction.corrected_logits(apply_features, apply_base_logits), correction.record
