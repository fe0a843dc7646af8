"""LP-1ST: randomized response with a prior (RRWithPrior of Ghazi et al. 2021, "Deep Learning with Label
Differential Privacy", NeurIPS; paper Sec. 6.1).

Mechanism, per row with label y and prior p(.|x) over the k classes:

1. Sort the classes by prior mass (descending, ties by class id). For each set size j = 1..k let
   w_j = (prior mass of the top-j classes) * e^eps / (e^eps + j - 1); pick j* = argmax_j w_j (the smallest j
   on ties). w_j is the probability that the output equals the true label when y ~ p(.|x), so j* is
   Ghazi et al.'s optimal top-k choice. S = the top-j* classes.
2. If y is in S: output y with probability e^eps / (e^eps + j* - 1), and each other class of S with
   probability 1 / (e^eps + j* - 1) (RR restricted to S).
   If y is not in S: output a class of S uniformly at random (probability 1/j* each).

eps = inf returns the labels unchanged (documented shortcut: with keep = 1 the optimal set always contains
the true label, except for classes the prior gives mass 0, where an identity is what "no privacy" means).

Guarantee: eps-label-DP, unit = replacement of one row's label (which implies eps-SIM-DP for the paper's
add/remove audit, see ``randomized_response``). S depends only on the prior, which is computed from the
row's public features by a model that never saw this row's label (the previous day's checkpoint -- the
"domain prior" --, a uniform prior, or in LP-2ST a stage-1 model trained on *other* rows), so for a fixed S
the output probabilities of a class o in S are among {e^eps/(e^eps+j-1), 1/(e^eps+j-1), 1/j}, whose pairwise
ratios are at most e^eps; classes outside S have probability 0 for every y. Hence for all y, y', o:
P(o | y) <= e^eps P(o | y').

A uniform prior gives j* = k (w_j is increasing in j), i.e. plain k-ary randomized response. A confident
prior at small eps gives j* = 1: the output is the prior's top class whatever the label -- private, and the
reason the paper's LP-1ST (domain prior) "did not produce meaningful outcomes" at eps <= 2 on Criteo.

``RRWithPrior`` is the registered mechanism ``lp-1st`` (parameter ``prior``: "reference" or "uniform").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import (
    check_epsilon,
    check_labels,
    check_probabilities,
    check_rng,
    exp_neg,
)
from pipelines.training.mechanisms.base import LabelContext, PriorMechanism, Release


def _keep_for_sizes(epsilon: float, num_classes: int) -> np.ndarray:
    """keep_j = e^eps/(e^eps + j - 1) for j = 1..k, in the overflow-free form 1/(1 + (j-1) e^-eps)."""
    sizes = np.arange(1, num_classes + 1, dtype=np.float64)
    return 1.0 / (1.0 + (sizes - 1.0) * exp_neg(epsilon))


def _check_inputs(labels: object, prior: object) -> tuple[np.ndarray, np.ndarray]:
    array = np.asarray(prior, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] < 2:
        raise LabelDPInputError(f"prior must have shape (rows, classes>=2); got {array.shape}")
    labels = check_labels(labels, array.shape[1])
    return labels, check_probabilities(array, labels.size)


def optimal_top_k(prior: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Ghazi et al.'s optimal set for each row: returns (order, set_size).

    ``order[i]`` lists row i's classes by descending prior mass (stable: ties by class id), ``set_size[i]``
    is j*; the set is ``order[i, :set_size[i]]``.
    """
    epsilon = check_epsilon(epsilon)
    prior = np.asarray(prior, dtype=np.float64)
    order = np.argsort(-prior, axis=1, kind="stable")
    mass = np.cumsum(np.take_along_axis(prior, order, axis=1), axis=1)
    gain = mass * _keep_for_sizes(epsilon, prior.shape[1])[None, :]
    set_size = np.argmax(gain, axis=1) + 1  # argmax returns the first maximum: the smallest j on ties
    return order, set_size


def output_distribution(labels: np.ndarray, prior: np.ndarray, epsilon: float) -> np.ndarray:
    """P(output = o | y, prior) for every row and class o: an (n, k) array whose rows sum to 1.

    The exact law that ``rr_with_prior`` samples from; used by the tests and to reason about the guarantee.
    """
    epsilon = check_epsilon(epsilon)
    labels, prior = _check_inputs(labels, prior)
    n, k = prior.shape
    if math.isinf(epsilon):
        return np.eye(k)[labels]
    order, set_size = optimal_top_k(prior, epsilon)
    rank = np.argsort(order, axis=1)  # rank[i, c] = position of class c in row i's order
    in_set = rank < set_size[:, None]
    keep = _keep_for_sizes(epsilon, k)[set_size - 1]
    flip = (1.0 - keep) / np.maximum(set_size - 1, 1)
    label_in_set = in_set[np.arange(n), labels]
    out = np.where(in_set, np.where(label_in_set[:, None], flip[:, None], 1.0 / set_size[:, None]), 0.0)
    rows = np.flatnonzero(label_in_set)
    out[rows, labels[rows]] = keep[rows]
    return out


def rr_with_prior(labels: np.ndarray, prior: np.ndarray, epsilon: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Releases each label through RRWithPrior (module docstring); returns int64 labels.

    Draws: one uniform per row (keep or not), then one integer per row that is not kept (its position in S).
    """
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    labels, prior = _check_inputs(labels, prior)
    out = labels.copy()
    if math.isinf(epsilon) or labels.size == 0:
        return out
    n, k = prior.shape
    order, set_size = optimal_top_k(prior, epsilon)
    rank = np.argsort(order, axis=1)
    label_rank = rank[np.arange(n), labels]
    label_in_set = label_rank < set_size
    keep = _keep_for_sizes(epsilon, k)[set_size - 1]
    # A row in S keeps its label with probability keep; a row outside S never "keeps" (it is re-drawn).
    kept = label_in_set & (rng.random(n) < keep)
    moved = np.flatnonzero(~kept)
    # Moved rows with the label in S draw one of the other j*-1 members: position p in 0..j*-2, skipping
    # the label's own rank. Rows with the label outside S draw one of the j* members uniformly.
    others = np.where(label_in_set[moved], set_size[moved] - 1, set_size[moved])
    position = np.floor(rng.random(moved.size) * others).astype(np.int64)
    position = np.minimum(position, others - 1)  # guards the measure-zero float edge random()*m == m
    skip = label_in_set[moved] & (position >= label_rank[moved])
    position = position + skip
    out[moved] = order[moved, position]
    return out


@dataclass(frozen=True)
class RRWithPrior(PriorMechanism):
    """``lp-1st``: RRWithPrior under the initial prior (the reference's predictions or uniform)."""

    name = "lp-1st"
    summary = "RR with prior (Ghazi et al. 2021): RR restricted to the prior's top-k"
    identity_at_infinity = True

    def privatize(self, context: LabelContext) -> Release:
        targets = rr_with_prior(context.labels, self.initial_prior(context), context.epsilon, context.rng)
        return Release(targets=targets, parameters={"prior": self.prior})
