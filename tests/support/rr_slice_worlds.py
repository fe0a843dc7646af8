"""The slice tests' seeded randomized-response world (tests/auditing/test_slices.py, and the ``audit-scores``
command's slices in tests/flows/commands/test_audit_scores.py): per-row click rates D(1 | x) of 1-30% stand for the
features, training labels are drawn from D, the mechanism is binary randomized response at a known eps (per
category, for a planted leak), and the target model is the Bayes posterior P[y = 1 | released label] under D for the
mechanism it claims. The reference is D itself (kappa 0 holds) or D with moved logits (kappa computed from the
construction)."""

from __future__ import annotations

import numpy as np


def rr_world(rng, n: int, eps: float, *, leak_eps: float | None = None, categories: int = 20, logit_shift=0.0):
    """(p_target, p_reference, labels, category, kappa): RR at ``eps`` on every row (``leak_eps`` on category 0),
    the target the posterior under the claimed ``eps``; the reference D with its logits moved by ``logit_shift``."""
    p = np.exp(rng.uniform(np.log(0.01), np.log(0.3), n))
    category = rng.integers(0, categories, n)
    y = (rng.random(n) < p).astype(np.int64)
    actual = np.full(n, eps) if leak_eps is None else np.where(category == 0, leak_eps, eps)
    keep = np.exp(actual) / (1.0 + np.exp(actual))
    released = np.where(rng.random(n) < keep, y, 1 - y)
    k = np.exp(eps) / (1.0 + np.exp(eps))
    like1, like0 = np.where(released == 1, k, 1 - k), np.where(released == 0, k, 1 - k)
    target = p * like1 / (p * like1 + (1 - p) * like0)
    reference = 1.0 / (1.0 + np.exp(-(np.log(p) - np.log1p(-p) + logit_shift)))
    kappa = float(max(np.abs(np.log(reference) - np.log(p)).max(), np.abs(np.log1p(-reference) - np.log1p(-p)).max()))
    return target, reference, y, category, kappa
