"""PATE (pipelines/training/mechanisms/pate.py): per-query epsilon, the exponential-mechanism vote and disjoint teachers,
pure numpy, seeded (tolerances: tests/support/mechanism_draws.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms.pate import aggregate_votes, pate_labels, per_query_epsilon
from tests.support.mechanism_draws import assert_frequency, histogram_learner


def test_pate_per_query_epsilon_composes_back_to_the_claim():
    eps_q, accounting = per_query_epsilon(8.0, 1e-5, 1000)
    rho = 1000 * eps_q**2 / 8
    assert rho + 2 * math.sqrt(rho * math.log(1e5)) == pytest.approx(8.0, rel=1e-12)
    assert accounting["composition"].startswith("zCDP") and accounting["delta"] == 1e-5
    # With delta = 0 (or very few queries) basic composition is the bound used.
    eps_q, accounting = per_query_epsilon(1.0, 0.0, 10)
    assert eps_q == pytest.approx(0.1) and accounting["delta"] == 0.0
    assert per_query_epsilon(math.inf, 1e-5, 10)[0] == math.inf
    with pytest.raises(LabelDPInputError, match="delta must be in"):
        per_query_epsilon(1.0, 1.5, 10)


def test_pate_aggregation_is_the_exponential_mechanism():
    rng = np.random.default_rng(14)
    eps_q = 0.8
    votes = np.array([[6, 3, 1]])
    n = 100_000
    chosen = aggregate_votes(np.repeat(votes, n, axis=0), eps_q, rng)
    weights = np.exp(eps_q * votes[0] / 2)
    for c in range(3):
        assert_frequency(int(np.sum(chosen == c)), n, float(weights[c] / weights.sum()), f"P(class {c})")
    assert np.array_equal(aggregate_votes(np.array([[1, 4], [3, 3]]), math.inf, rng), [1, 0])


def test_pate_teachers_are_disjoint_and_never_see_student_labels():
    rng = np.random.default_rng(15)
    n, k = 5000, 2
    feature = rng.integers(0, 10, size=n)
    labels = (rng.random(n) < np.linspace(0.1, 0.9, 10)[feature]).astype(np.int64)
    learner = histogram_learner(feature, k)
    seen = []

    def spy(train_rows, targets, predict_rows):
        seen.append(train_rows.copy())
        assert np.array_equal(targets, labels[train_rows])
        return learner(train_rows, targets, predict_rows)

    release = pate_labels(labels, k, math.inf, 1e-5, rng, spy, num_teachers=5, num_queries=500)
    assert len(seen) == 5
    union = np.concatenate(seen)
    assert union.size == np.unique(union).size == n - 500                     # disjoint teachers
    assert not np.intersect1d(union, release.student_rows).size              # student labels unread
    assert np.array_equal(release.votes.sum(axis=1), np.full(500, 5))
    # eps = inf: the student label is the majority vote, which here tracks the feature's majority class.
    p_student = np.linspace(0.1, 0.9, 10)[feature[release.student_rows]]
    clear = np.abs(p_student - 0.5) > 0.1          # feature values whose majority class is not a near-tie
    assert np.mean(release.student_labels[clear] == (p_student[clear] > 0.5)) > 0.95
    with pytest.raises(LabelDPInputError, match="num_queries"):
        pate_labels(labels, k, 1.0, 1e-5, rng, spy, num_teachers=5, num_queries=n)
