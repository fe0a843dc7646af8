"""LP-2ST: two-stage label-private training (Ghazi et al. 2021, "Deep Learning with Label Differential
Privacy", the multi-stage LP-MST with two stages; paper Sec. 6.1).

Mechanism, for n labelled rows:

1. A seeded random permutation puts ``ceil(stage_one_fraction * n)`` rows in stage 1, the rest in stage 2.
2. Stage-1 labels are released with LP-1ST (``rr_with_prior``) under the initial prior (uniform, or the
   previous day's checkpoint as a domain prior).
3. A stage-1 model is trained on the stage-1 rows and their *privatized* labels only; its predictions on the
   stage-2 rows become their prior.
4. Stage-2 labels are released with LP-1ST under that prior.
5. The caller trains the final model on all n privatized labels (stage 1 and stage 2).

Guarantee: eps-label-DP, unit = replacement of one row's label (implies eps-SIM-DP for the paper's
add/remove audit, see ``randomized_response``). Each label is privatized exactly once, by an eps-DP
randomizer; the stage-2 prior is a function of public features and stage-1 *privatized* labels only, i.e.
post-processing of an eps-DP release about other rows. The two releases touch disjoint rows, so by parallel
(adaptive) composition every single label enjoys eps-DP; the final model is post-processing of the two.
eps = inf releases the labels unchanged (the stage-1 model is still trained, its prior is unused).

``TwoStage`` is the registered mechanism ``lp-2st`` (parameters ``prior`` of stage 1 and
``stage_one_fraction``); at eps = inf it releases the labels unchanged without training a stage-1 model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import check_epsilon, check_labels, check_probabilities, check_rng
from pipelines.training.mechanisms.base import LabelContext, PriorMechanism, Release, check_open_fraction
from pipelines.training.mechanisms.learner import FitPredict
from pipelines.training.mechanisms.rr_with_prior import rr_with_prior


@dataclass(frozen=True)
class TwoStageRelease:
    labels: np.ndarray          # (n,) the privatized labels of every row
    stage_one: np.ndarray       # (n,) bool, True for the rows released in stage 1
    stage_two_prior: np.ndarray  # (n_stage_two, k): the stage-1 model's predictions on stage-2 rows


def two_stage_labels(labels: np.ndarray, initial_prior: np.ndarray, epsilon: float, rng: np.random.Generator,
                     fit_predict: FitPredict, stage_one_fraction: float = 0.5) -> TwoStageRelease:
    """Runs steps 1-4 of the module docstring; the caller trains the final model on ``release.labels``."""
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    fraction = float(stage_one_fraction)
    if not 0.0 < fraction < 1.0 or math.isnan(fraction):
        raise LabelDPInputError(f"stage_one_fraction must be in the open interval (0, 1); got "
                                f"{stage_one_fraction!r}")
    prior = np.asarray(initial_prior, dtype=np.float64)
    if prior.ndim != 2:
        raise LabelDPInputError(f"initial_prior must have shape (rows, classes); got {prior.shape}")
    labels = check_labels(labels, prior.shape[1])
    prior = check_probabilities(prior, labels.size, name="initial_prior")
    n = labels.size
    n_one = math.ceil(fraction * n)
    if n_one < 1 or n_one >= n:
        raise LabelDPInputError(f"stage_one_fraction={fraction} leaves an empty stage for {n} rows")
    permutation = rng.permutation(n)
    stage_one = np.zeros(n, dtype=bool)
    stage_one[permutation[:n_one]] = True
    rows_one, rows_two = np.flatnonzero(stage_one), np.flatnonzero(~stage_one)

    out = np.empty(n, dtype=np.int64)
    out[rows_one] = rr_with_prior(labels[rows_one], prior[rows_one], epsilon, rng)
    # The stage-1 model sees stage-1 rows with their privatized labels only.
    stage_two_prior = check_probabilities(fit_predict(rows_one, out[rows_one], rows_two), rows_two.size,
                                          name="stage-1 model predictions", atol=1e-4)
    out[rows_two] = rr_with_prior(labels[rows_two], stage_two_prior, epsilon, rng)
    return TwoStageRelease(labels=out, stage_one=stage_one, stage_two_prior=stage_two_prior)


@dataclass(frozen=True)
class TwoStage(PriorMechanism):
    """``lp-2st``: LP-1ST on a ``stage_one_fraction`` of the rows, whose model is the prior of the others."""

    name = "lp-2st"
    summary = "a stage-1 LP-1ST model on half the rows is the prior for the other half"
    identity_at_infinity = True

    stage_one_fraction: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_open_fraction(self.stage_one_fraction, "stage_one_fraction")

    def privatize(self, context: LabelContext) -> Release:
        learner = context.learner("lp-2st stage-1 model")
        release = two_stage_labels(context.labels, self.initial_prior(context), context.epsilon, context.rng,
                                   learner, self.stage_one_fraction)
        return Release(targets=release.labels, parameters={
            "prior": self.prior, "stage_one_fraction": self.stage_one_fraction,
            "stage_one_rows": int(release.stage_one.sum())})

    def validation_label_uses(self, release: Release, output_correction: dict | None) -> list[str]:
        return ["trained the LP-2ST stage-1 model"]
