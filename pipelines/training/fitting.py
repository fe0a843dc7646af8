"""CatBoost fitting for `pipelines.training.train`: the settings, the Pool, the fit (with its constant-model
fallback), predictions, and the learner the multi-stage mechanisms train through.

- Binary labels (clicks): ``loss_function="Logloss"`` on hard labels, ``"CrossEntropy"`` on soft labels
  (ALIBI). A single class among hard targets cannot be fitted by CatBoost; the model is then a constant with
  the add-one (Laplace) estimate of the class-1 rate, and the fit's ``FitInfo.degenerate`` says so.
- Features are ``pipelines.training.train.feature_frame`` frames of any dataset spec: the numeric features are
  float64 columns and every other column (the spec's categorical features, pandas categoricals of strings) is a
  CatBoost categorical feature (`categorical_columns`), so nothing here names a column.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from labeldp.errors import LabelDPInputError
from labeldp.progress import Countdown, Progress, no_progress
from labeldp.settings import setting

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class CatBoostSettings:
    """CatBoost knobs. Defaults chosen for 2 cores (benchmarks/bench_training.py, results/training.md):

    - ``max_ctr_complexity=1``: no combinations of categorical features (~3x faster);
    - ``simple_ctr``: one prior per CTR type (Borders with prior 0.5, Counter) instead of CatBoost's three
      Borders priors: about half the CTR features, ~30% less time per iteration at no loss measured;
    - ``one_hot_max_size=32``: categorical columns with at most 32 values are one-hot encoded instead of
      CTR-encoded, which represents their per-value effects exactly (CatBoost's CPU default is 2); on a
      synthetic train split this lowered the test log-loss at no extra time (benchmarks/results/training.md);
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
        if not isinstance(self.use_best_model, bool):
            raise LabelDPInputError(f"use_best_model must be true or false; got {self.use_best_model!r}")
        if not isinstance(self.extra, dict):
            raise LabelDPInputError(f"extra must be a dict of CatBoost parameters; got {type(self.extra).__name__}")

    def params(self, random_seed: int, loss_function: str = "Logloss") -> dict[str, Any]:
        """The CatBoost constructor parameters for one fit."""
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
        if not self.use_best_model:
            # recorded only when off (the default's parameters are unchanged): a model fitted without the best
            # iteration pick is then told apart from one fitted with it (`pipelines.training.train.reuse_mismatch`)
            out["use_best_model"] = False
        out.update(self.extra)
        return out


def settings_from(base: CatBoostSettings | None = None, **overrides: Any) -> CatBoostSettings:
    """``base`` (default ``CatBoostSettings()``) with the non-None overrides applied (the CLI's --iterations etc.,
    a plan target's `CatBoostOverrides`), checked as `CatBoostSettings` checks its fields."""
    values = {key: value for key, value in overrides.items() if value is not None}
    return dataclasses.replace(base or CatBoostSettings(), **values)


@dataclass(frozen=True)
class CatBoostOverrides:
    """A plan target's own training capacity: each field given replaces that `CatBoostSettings` field for this
    target only (null keeps the run's setting); e.g. a deeper, unregularised model without the best iteration pick
    memorises its training labels (the default plan's planted violation)."""

    iterations: int | None = setting(None, help="CatBoost iterations (null: the plan's catboost_iterations, else "
                                                "the training default 200)", minimum=1)
    depth: int | None = setting(None, help="tree depth (null: the training default 6)", minimum=1, maximum=16)
    l2_leaf_reg: float | None = setting(None, help="L2 regularisation of the leaf values (null: the training "
                                                   "default 3)", minimum=0, open_minimum=True, finite=True)
    learning_rate: float | None = setting(None, help="learning rate (null: the training default 0.15)", minimum=0,
                                          open_minimum=True, finite=True)
    use_best_model: bool | None = setting(None, help="pick the best iteration on the (privatized) validation split "
                                                     "(null: the training default true); false fits every iteration "
                                                     "and reads no validation label")

    def __post_init__(self) -> None:
        self.apply(CatBoostSettings())  # CatBoostSettings' own checks, each naming its field

    def _encoded(self) -> dict[str, Any]:
        """As a plan file writes it: only the overrides given (`labeldp.codec.encode`)."""
        return self.given()

    def given(self) -> dict[str, Any]:
        """The overrides set (field -> value)."""
        return {item.name: getattr(self, item.name) for item in dataclasses.fields(self)
                if getattr(self, item.name) is not None}

    def apply(self, settings: CatBoostSettings) -> CatBoostSettings:
        """``settings`` with these overrides applied."""
        return settings_from(settings, **self.given())


def categorical_columns(features: pd.DataFrame) -> list[str]:
    """The columns of a feature frame CatBoost reads as categorical: every column whose dtype is not numeric
    (a Criteo frame: ``C1..C26``, in frame order)."""
    from pandas.api.types import is_numeric_dtype  # imported here: a plan (`flows.plan`) reads this module

    return [str(name) for name in features.columns if not is_numeric_dtype(features[name].dtype)]


def training_pool(features: pd.DataFrame, label=None):
    """The ``catboost.Pool`` training fits and predicts on: a feature frame (categorical columns declared),
    with optional targets."""
    from catboost import Pool

    return Pool(features, label=label, cat_features=categorical_columns(features))


def _constant_model(features: pd.DataFrame, p_one: float, params: dict):
    """A valid CatBoost model that predicts P(class 1) = p_one everywhere, with the usual feature schema.

    Fitted for one iteration on label-free alternating dummy targets (so it reads no data labels), then
    scale 0 and bias logit(p_one) make the output constant."""
    from catboost import CatBoostClassifier

    rows = min(len(features), 64)
    dummy = np.arange(rows) % 2
    model = CatBoostClassifier(**{**params, "iterations": 1, "loss_function": "Logloss"})
    model.fit(training_pool(features.iloc[:rows], dummy))
    model.set_scale_and_bias(0.0, float(math.log(p_one / (1.0 - p_one))))
    return model


# A fit's live progress line at most this often (a 60,000-row day's fit takes 40-60 s on 2 cores).
PROGRESS_SECONDS = 10.0


class _Iterations:
    """CatBoost's callback after each iteration: the iterations done, to a `Countdown` (it never stops a fit)."""

    def __init__(self, countdown: Countdown):
        self.countdown = countdown

    def after_iteration(self, info) -> bool:
        self.countdown(int(info.iteration))
        return True


@dataclass(frozen=True)
class FitInfo:
    """What a fit (`fit_catboost`) did: the CatBoost parameters it used, its training rows, why the model is a
    constant one (None: a fitted model), the best iteration chosen on the eval set (None: none was used) and the
    trees kept (None for a constant model)."""

    params: dict
    rows: int
    degenerate: str | None = None
    best_iteration: int | None = None
    trees: int | None = None


def fit_catboost(features: pd.DataFrame, targets: np.ndarray, settings: CatBoostSettings, random_seed: int,
                 eval_features: pd.DataFrame | None = None, eval_targets: np.ndarray | None = None,
                 model_class=None, progress: Progress = no_progress, what: str = "model") -> tuple[Any, FitInfo]:
    """Fits a binary CatBoostClassifier (or ``model_class``, a subclass); returns (model, `FitInfo`).

    ``targets``: int labels (Logloss) or float class-1 probabilities (CrossEntropy, soft labels). With a
    single class among hard targets the model is a constant plain CatBoostClassifier (module docstring) and
    ``FitInfo.degenerate`` explains it. ``FitInfo.params`` are the CatBoost parameters used. ``progress``: where
    the fit's live progress goes (iterations and the time left, "CatBoost <what>: ..."), when progress is live
    (`labeldp.progress.live`); the callback changes nothing in the model.
    """
    from catboost import CatBoostClassifier

    model_class = model_class or CatBoostClassifier
    targets = np.asarray(targets)
    soft = np.issubdtype(targets.dtype, np.floating)
    params = settings.params(random_seed, "CrossEntropy" if soft else "Logloss")
    if not soft and np.unique(targets).size < 2:
        n_one = int(np.sum(targets == 1))
        p_one = (n_one + 1.0) / (targets.size + 2.0)
        degenerate = (f"all {targets.size} training labels are {int(targets[0])}: constant model with "
                      f"P(click) = (clicks + 1) / (rows + 2) = {p_one:.3g}")
        return _constant_model(features, p_one, params), FitInfo(params, int(targets.size), degenerate)
    use_eval = eval_features is not None and settings.use_best_model and len(eval_features) > 0
    if use_eval and not soft and np.unique(eval_targets).size < 2:
        use_eval = False  # CatBoost's Logloss cannot score a one-class eval set
    model = model_class(**params)
    fit_kwargs = {}
    if use_eval:
        fit_kwargs = {"eval_set": training_pool(eval_features, eval_targets), "use_best_model": True}
    countdown = Countdown(progress, f"CatBoost {what}", params["iterations"], "iterations", PROGRESS_SECONDS)
    if countdown.enabled:
        fit_kwargs["callbacks"] = [_Iterations(countdown)]
    model.fit(training_pool(features, targets), **fit_kwargs)
    return model, FitInfo(params, int(targets.size), best_iteration=int(model.get_best_iteration()) if use_eval
                          else None, trees=int(model.tree_count_))


def predict_probabilities(model, features: pd.DataFrame) -> np.ndarray:
    """The model's class probabilities (rows, 2) on a feature frame, as float64 (corrected ones for a
    noise-corrected model)."""
    return np.asarray(model.predict_proba(training_pool(features)), dtype=np.float64)


def predict_raw_probabilities(model, features: pd.DataFrame) -> np.ndarray:
    """CatBoost's own probabilities, bypassing a NoiseCorrectedClassifier's correction."""
    from catboost import CatBoostClassifier

    return np.asarray(CatBoostClassifier.predict_proba(model, training_pool(features)), dtype=np.float64)


class CatBoostLearner:
    """``FitPredict`` for the multi-stage mechanisms: row numbers index ``rows`` (the day's private rows).

    Fit number c is seeded ``random_seed + c`` (mod 2^32) and announced on ``progress`` as "<what> <c>"."""

    def __init__(self, features: pd.DataFrame, rows: np.ndarray, settings: CatBoostSettings, random_seed: int,
                 progress: Progress, what: str):
        self.features, self.rows, self.settings = features, rows, settings
        self.random_seed, self.progress, self.what = random_seed, progress, what
        self.calls = 0

    def __call__(self, train_rows: np.ndarray, targets: np.ndarray, predict_rows: np.ndarray) -> np.ndarray:
        self.calls += 1
        targets = np.asarray(targets)
        if targets.ndim == 2:
            targets = targets[:, 1].astype(np.float64)
        self.progress(f"{self.what} {self.calls}: fitting on {train_rows.size} rows")
        features = self.features.iloc[self.rows[train_rows]]
        model, _info = fit_catboost(features, targets, self.settings, (self.random_seed + self.calls) % 2**32,
                                    progress=self.progress, what=f"{self.what} {self.calls}")
        return predict_probabilities(model, self.features.iloc[self.rows[predict_rows]])
