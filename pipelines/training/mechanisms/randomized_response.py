"""Randomized response (RR) on labels, binary and k-ary (Warner, 1965; paper Sec. 6.1).

Mechanism. Each label y in {0, ..., k-1} is released independently as

    y        with probability  keep = e^eps / (e^eps + k - 1),
    y' != y  with probability  flip = 1 / (e^eps + k - 1)        (for each of the k-1 other classes).

eps = inf gives keep = 1: the identity (no privacy).

Guarantee: eps-label-DP. For any output o and any two labels y, y' of the same row,
P(o | y) / P(o | y') <= keep / flip = e^eps. The privacy unit is the *replacement* of one row's label
(x, y) -> (x, y'). The paper audits SIM-DP in the add/remove model (its Definition 2, the imputation-based
simulator, which runs the mechanism with y replaced by an imputed y' ~ D|x): the simulator's output
distribution is a mixture over y' of distributions each within a factor e^eps of the real one, so
replacement eps-label-DP implies eps-SIM-DP, and the claimed eps is audited as stated.

Parameters: ``epsilon`` in (0, inf], ``num_classes`` k >= 2, and a seeded ``numpy.random.Generator``.
With a uniform prior, LP-1ST (``rr_with_prior``) reduces exactly to this mechanism. ``RandomizedResponse``
is the registered mechanism ``rr``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.training.mechanisms._checks import (
    check_epsilon,
    check_labels,
    check_num_classes,
    check_rng,
    exp_neg,
)
from pipelines.training.mechanisms.base import LabelContext, Mechanism, Release


def keep_probability(epsilon: float, num_classes: int) -> float:
    """e^eps / (e^eps + k - 1), written 1 / (1 + (k-1) e^-eps) so large eps cannot overflow."""
    epsilon = check_epsilon(epsilon)
    k = check_num_classes(num_classes)
    return 1.0 / (1.0 + (k - 1) * exp_neg(epsilon))


def flip_probability(epsilon: float, num_classes: int) -> float:
    """1 / (e^eps + k - 1): the probability of each one wrong class; 0 for eps = inf."""
    epsilon = check_epsilon(epsilon)
    k = check_num_classes(num_classes)
    small = exp_neg(epsilon)
    return small / (1.0 + (k - 1) * small)


def transition_matrix(epsilon: float, num_classes: int) -> np.ndarray:
    """T[y, o] = P(output o | true label y): keep on the diagonal, flip elsewhere; rows sum to 1."""
    k = check_num_classes(num_classes)
    keep, flip = keep_probability(epsilon, k), flip_probability(epsilon, k)
    matrix = np.full((k, k), flip)
    np.fill_diagonal(matrix, keep)
    return matrix


def randomized_response(labels: np.ndarray, epsilon: float, num_classes: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Releases each label through k-ary RR; returns int64 labels of the same shape.

    One uniform draw per row decides keep/flip; a flipped row draws its new class uniformly among the other
    k-1 classes (y + 1 + U{0..k-2} mod k). eps = inf returns a copy of ``labels`` and draws nothing.
    """
    k = check_num_classes(num_classes)
    labels = check_labels(labels, k)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    out = labels.copy()
    if np.isinf(epsilon) or labels.size == 0:
        return out
    flipped = rng.random(labels.size) >= keep_probability(epsilon, k)
    shift = 1 + rng.integers(0, k - 1, size=int(flipped.sum()))
    out[flipped] = (labels[flipped] + shift) % k
    return out


@dataclass(frozen=True)
class RandomizedResponse(Mechanism):
    """``rr``: k-ary randomized response on every label; no parameters besides eps."""

    name = "rr"
    summary = "randomized response: keep w.p. e^eps/(e^eps+1)"
    identity_at_infinity = True

    def privatize(self, context: LabelContext) -> Release:
        targets = randomized_response(context.labels, context.epsilon, context.num_classes, context.rng)
        return Release(targets=targets,
                       parameters={"flip_probability": flip_probability(context.epsilon, context.num_classes)})
