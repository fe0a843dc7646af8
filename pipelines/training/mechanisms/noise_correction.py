"""LP-1ST with noise correction: train on randomized-response labels, then undo the known flip rates in the
model's predicted probabilities (paper Sec. 6.1 / Table 2, "LP-1ST (noise correction)").

Privatization is plain k-ary randomized response (= LP-1ST with a uniform prior, see ``rr_with_prior``), so
the guarantee, privacy unit and parameters are those of ``randomized_response``: eps-label-DP under
replacement of one label, which implies eps-SIM-DP for the paper's add/remove audit. The correction below is
post-processing of a model trained only on privatized labels, so it costs no privacy.

The correction (post-hoc, on predicted probabilities). Under k-ary RR with keep = e^eps/(e^eps+k-1) and
flip = 1/(e^eps+k-1), the noisy label's law given x is

    p_noisy(j | x) = flip + (keep - flip) * p_true(j | x),

an invertible affine map (keep > flip for every finite eps > 0). A model trained with log-loss on the noisy
labels estimates p_noisy; we return

    p_true(j | x) = (p_noisy(j | x) - flip) / (keep - flip),   clipped to [floor, 1], rows renormalised.

For binary labels with flip probability q this is (p_noisy - q) / (1 - 2q). The clip is needed because the
estimate of p_noisy can fall below flip (estimation error is amplified by 1/(keep - flip), 20x at eps = 0.1),
and a probability of 0 gives an infinite log-loss.

Why post-hoc rather than an unbiased loss inside CatBoost: the unbiased loss (Natarajan et al. 2013) is not
convex in the model output and needs a custom Python objective, which is orders of magnitude slower in
CatBoost on 800K rows; the affine inversion is exact in expectation, preserves the model's ranking of rows,
and leaves CatBoost's fast built-in Logloss in charge of training. The inverse map cannot be folded into the
.cbm file (it is not affine in logit space), so the registry records it in the metadata and applies it on
load (``pipelines.models.registry``).

Choosing the floor without touching true labels: ``select_floor`` minimises the *unbiased* estimate of the
true-label log-loss on the privatized validation labels. For the loss vector L_y = -log p(y) the estimator
l~(j) = (L_j - flip * sum_y L_y) / (keep - flip) satisfies E[l~(noisy label) | y] = L_y exactly (it is
T^-1 L for the RR transition matrix T), so its mean over validation rows is an unbiased estimate of the true
validation log-loss, computed from privatized labels only.

``NoiseCorrectedRR`` is the registered mechanism ``lp-1st-nc``: the release of ``rr``, then the floor chosen
on the validation split and recorded as the model's ``output_correction``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import check_epsilon, check_labels, check_probabilities
from pipelines.training.mechanisms.base import LabelContext, Release
from pipelines.training.mechanisms.randomized_response import (
    RandomizedResponse,
    flip_probability,
    keep_probability,
)

DEFAULT_FLOOR_GRID = (1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)


def _check_floor(floor: float) -> float:
    floor = float(floor)
    if not 0.0 < floor < 0.5 or math.isnan(floor):
        raise LabelDPInputError(f"floor must be in the open interval (0, 0.5); got {floor!r}")
    return floor


def correct_probabilities(noisy_probabilities: np.ndarray, epsilon: float, floor: float) -> np.ndarray:
    """Maps predicted noisy-label probabilities (n, k) to corrected true-label probabilities (n, k).

    p_true = (p_noisy - flip) / (keep - flip), clipped to [floor, 1], each row renormalised to sum 1 (for
    binary labels the result lies in [floor / (1 + floor), 1 / (1 + floor)]). eps = inf (flip = 0,
    keep = 1) returns the input clipped the same way.
    """
    epsilon = check_epsilon(epsilon)
    floor = _check_floor(floor)
    noisy = np.asarray(noisy_probabilities, dtype=np.float64)
    if noisy.ndim != 2 or noisy.shape[1] < 2:
        raise LabelDPInputError(f"noisy_probabilities must have shape (rows, classes>=2); got {noisy.shape}")
    noisy = check_probabilities(noisy, noisy.shape[0], name="noisy_probabilities")
    k = noisy.shape[1]
    keep, flip = keep_probability(epsilon, k), flip_probability(epsilon, k)
    corrected = np.clip((noisy - flip) / (keep - flip), floor, 1.0)
    return corrected / corrected.sum(axis=1, keepdims=True)


def unbiased_log_loss(probabilities: np.ndarray, noisy_labels: np.ndarray, epsilon: float) -> float:
    """Unbiased estimate of the true-label mean log-loss of ``probabilities`` from RR-privatized labels.

    Row estimate: (L_j - flip * sum_y L_y) / (keep - flip) with L_y = -log p(y), j the noisy label
    (module docstring). At eps = inf it is the ordinary log-loss. The estimate can be negative on small
    samples; it is an estimate, not a bound.
    """
    epsilon = check_epsilon(epsilon)
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if probabilities.ndim != 2:
        raise LabelDPInputError(f"probabilities must have shape (rows, classes); got {probabilities.shape}")
    k = probabilities.shape[1]
    noisy_labels = check_labels(noisy_labels, k, name="noisy_labels")
    if noisy_labels.size != probabilities.shape[0] or noisy_labels.size == 0:
        raise LabelDPInputError(f"noisy_labels must have one label per row of probabilities "
                                f"({probabilities.shape[0]} rows); got {noisy_labels.size}")
    keep, flip = keep_probability(epsilon, k), flip_probability(epsilon, k)
    losses = -np.log(probabilities)
    chosen = losses[np.arange(noisy_labels.size), noisy_labels]
    estimate = (chosen - flip * losses.sum(axis=1)) / (keep - flip)
    return float(estimate.mean())


def select_floor(noisy_probabilities: np.ndarray, noisy_labels: np.ndarray, epsilon: float,
                 grid: tuple[float, ...] = DEFAULT_FLOOR_GRID) -> tuple[float, dict[float, float]]:
    """The floor of ``grid`` whose corrected probabilities minimise ``unbiased_log_loss`` on the privatized
    validation rows; returns (floor, {floor: estimate}). Uses privatized labels only (post-processing)."""
    if not grid:
        raise LabelDPInputError("grid (candidate floors) must not be empty")
    estimates = {}
    for floor in grid:
        corrected = correct_probabilities(noisy_probabilities, epsilon, floor)
        estimates[float(floor)] = unbiased_log_loss(corrected, noisy_labels, epsilon)
    best = min(estimates, key=lambda value: (estimates[value], value))
    return best, estimates


@dataclass(frozen=True)
class NoiseCorrectedRR(RandomizedResponse):
    """``lp-1st-nc``: randomized response, then the final model's outputs corrected (``rr_inverse``)."""

    name = "lp-1st-nc"
    summary = "RR, then the model's probabilities corrected for the known flip rate"

    def privatize(self, context: LabelContext) -> Release:
        release = super().privatize(context)
        release.correct_output = True
        return release

    def output_correction(self, release: Release, raw_validation: np.ndarray, validation_targets: np.ndarray,
                          epsilon: float) -> dict[str, Any]:
        floor, estimates = select_floor(raw_validation, validation_targets, epsilon)
        release.parameters.update({
            "correction": "p_true = (p_noisy - q) / (1 - 2q), clipped to [floor, 1], renormalised",
            "floor": floor, "floor_unbiased_validation_log_loss": estimates})
        return {"kind": "rr_inverse", "epsilon": epsilon, "floor": floor}

    def validation_label_uses(self, release: Release, output_correction: dict | None) -> list[str]:
        return ["chose the LP-1ST-NC correction floor"] if output_correction is not None else []
