"""ALIBI: additive Laplace noise on one-hot labels with Bayesian inference of soft labels (Malek et al. 2021,
"Antipodes of Label Differential Privacy: PATE and ALIBI", NeurIPS; Ghosh et al. 2012 for the Laplace step;
paper Sec. 6.1).

Mechanism. Each label y in {0..k-1} becomes the one-hot vector e_y, released as

    z = e_y + Lap(0, b)^k,   b = 2 / eps   (independent Laplace noise on every coordinate).

Guarantee: eps-label-DP, unit = replacement of one row's label. Replacing y by y' changes e_y in two
coordinates by 1 each: L1 sensitivity 2, so the Laplace mechanism with scale 2/eps is eps-DP (Dwork et al.
2006). Replacement eps-DP implies eps-SIM-DP for the paper's add/remove audit (see ``randomized_response``).
Everything after the release of z is post-processing and costs no privacy: the soft labels

    q(c | z, x) proportional to prior(c | x) * prod_j exp(-|z_j - [j = c]| / b)
                = prior(c | x) * exp((|z_c| - |z_c - 1|) / b) * (a factor common to all c),

the model trained on them (CatBoost ``loss_function="CrossEntropy"`` on the class-1 soft label, binary), and
the "iterative" refinement of Malek et al., in which the trained model's predictions become the prior of the
next round of posteriors. The prior must not depend on this row's label: a uniform prior, the previous day's
checkpoint (a domain prior), or a model trained on the noisy z themselves.

eps = inf: b = 0, no noise, the soft labels are exactly one-hot.

``Alibi`` is the registered mechanism ``alibi`` (parameters ``prior`` and ``alibi_rounds``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import (
    check_epsilon,
    check_labels,
    check_num_classes,
    check_probabilities,
    check_rng,
)
from pipelines.training.mechanisms.base import LabelContext, PriorMechanism, Release, check_count


def laplace_scale(epsilon: float) -> float:
    """b = 2 / eps (L1 sensitivity 2 of a one-hot label under replacement); 0 for eps = inf."""
    epsilon = check_epsilon(epsilon)
    return 0.0 if math.isinf(epsilon) else 2.0 / epsilon


def noisy_one_hot(labels: np.ndarray, epsilon: float, num_classes: int, rng: np.random.Generator) -> np.ndarray:
    """The released vectors z = e_y + Lap(2/eps)^k, shape (n, k), float64. The only step that reads labels."""
    k = check_num_classes(num_classes)
    labels = check_labels(labels, k)
    rng = check_rng(rng)
    scale = laplace_scale(epsilon)
    out = np.zeros((labels.size, k))
    out[np.arange(labels.size), labels] = 1.0
    if scale > 0.0:
        out += rng.laplace(0.0, scale, size=out.shape)
    return out


def posterior_soft_labels(noisy: np.ndarray, prior: np.ndarray, epsilon: float) -> np.ndarray:
    """q(c | z) proportional to prior(c) * exp((|z_c| - |z_c - 1|) / b); (n, k) rows summing to 1.

    Computed in log space with the row maximum subtracted (a stable softmax), since (|z_c| - |z_c - 1|)/b
    ranges over [-1/b, 1/b] and 1/b = eps/2 can be large. Classes with prior mass 0 get posterior 0. At
    eps = inf (b = 0) the posterior is the one-hot argmax of z.
    """
    epsilon = check_epsilon(epsilon)
    noisy = np.asarray(noisy, dtype=np.float64)
    if noisy.ndim != 2 or noisy.shape[1] < 2 or not np.all(np.isfinite(noisy)):
        raise LabelDPInputError(f"noisy must be a finite (rows, classes>=2) array; got shape {noisy.shape}")
    prior = check_probabilities(prior, noisy.shape[0])
    if prior.shape != noisy.shape:
        raise LabelDPInputError(f"prior shape {prior.shape} does not match noisy shape {noisy.shape}")
    scale = laplace_scale(epsilon)
    if scale == 0.0:
        return np.eye(noisy.shape[1])[np.argmax(noisy, axis=1)]
    with np.errstate(divide="ignore"):  # log(0) = -inf on purpose: a class the prior rules out stays out
        log_post = np.log(prior) + (np.abs(noisy) - np.abs(noisy - 1.0)) / scale
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    return post / post.sum(axis=1, keepdims=True)


def alibi_soft_labels(labels: np.ndarray, prior: np.ndarray, epsilon: float,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Releases the labels through ALIBI's Laplace step and returns (noisy z, soft labels under ``prior``).

    Keep z: later rounds recompute ``posterior_soft_labels(z, new_prior, eps)`` with a model's predictions
    as the new prior, at no extra privacy cost.
    """
    prior_array = np.asarray(prior, dtype=np.float64)
    if prior_array.ndim != 2:
        raise LabelDPInputError(f"prior must have shape (rows, classes); got {prior_array.shape}")
    noisy = noisy_one_hot(labels, epsilon, prior_array.shape[1], rng)
    return noisy, posterior_soft_labels(noisy, prior_array, epsilon)


@dataclass(frozen=True)
class Alibi(PriorMechanism):
    """``alibi``: soft labels from the Laplace release; round r >= 2 refits the prior on round r-1's soft
    labels (a model of every private row, at the final model's seed)."""

    name = "alibi"
    summary = "Laplace(2/eps) noise on one-hot labels, Bayesian soft labels"

    alibi_rounds: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_count(self.alibi_rounds, "alibi_rounds")

    def privatize(self, context: LabelContext) -> Release:
        epsilon = context.epsilon
        noisy = noisy_one_hot(context.labels, epsilon, context.num_classes, context.rng)
        soft = posterior_soft_labels(noisy, self.initial_prior(context), epsilon)
        parameters = {"prior": self.prior, "laplace_scale": laplace_scale(epsilon), "rounds": self.alibi_rounds}
        for round_number in range(2, self.alibi_rounds + 1):
            context.progress(f"alibi round {round_number}: refitting the prior on the soft labels")
            soft = posterior_soft_labels(noisy, context.fit_all(soft[:, 1]), epsilon)
        return Release(targets=soft[:, 1].astype(np.float64), parameters=parameters)

    def validation_label_uses(self, release: Release, output_correction: dict | None) -> list[str]:
        return ["refitted the ALIBI prior"] if self.alibi_rounds >= 2 else []
