"""LP-2ST (pipelines/training/mechanisms/two_stage.py): each label privatized once, stage two following the stage-one
prior, pure numpy, seeded (tolerances: tests/support/mechanism_draws.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms.randomized_response import (
    flip_probability,
)
from pipelines.training.mechanisms.rr_with_prior import output_distribution
from pipelines.training.mechanisms.two_stage import two_stage_labels
from tests.support.mechanism_draws import SIGMAS, assert_frequency, histogram_learner


def test_lp2st_privatizes_each_label_once_and_stage_two_follows_the_stage_one_prior():
    rng = np.random.default_rng(12)
    n, k, epsilon = 60_000, 2, 1.0
    feature = rng.integers(0, 20, size=n)
    p_click = np.linspace(0.02, 0.6, 20)[feature]
    labels = (rng.random(n) < p_click).astype(np.int64)
    calls = []
    learner = histogram_learner(feature, k)

    def spy(train_rows, targets, predict_rows):
        calls.append((train_rows.copy(), np.asarray(targets).copy(), predict_rows.copy()))
        return learner(train_rows, targets, predict_rows)

    release = two_stage_labels(labels, np.full((n, k), 0.5), epsilon, rng, spy, stage_one_fraction=0.5)
    assert len(calls) == 1
    rows_one, seen_targets, rows_two = calls[0]
    assert release.stage_one.sum() == n // 2 and not np.intersect1d(rows_one, rows_two).size
    # The stage-1 model saw the privatized stage-1 labels, not the true ones.
    assert np.array_equal(seen_targets, release.labels[rows_one])
    assert not np.array_equal(seen_targets, labels[rows_one])
    # Stage 1 is RR (uniform prior): flip rate 1/(e^eps + 1).
    flips = int(np.sum(release.labels[rows_one] != labels[rows_one]))
    assert_frequency(flips, rows_one.size, flip_probability(epsilon, 2), "stage-1 flip rate")
    # Stage 2 follows RRWithPrior under the stage-1 model's prior, row by row in expectation.
    law = output_distribution(labels[rows_two], release.stage_two_prior, epsilon)
    expected_same = float(law[np.arange(rows_two.size), labels[rows_two]].sum())
    observed_same = int(np.sum(release.labels[rows_two] == labels[rows_two]))
    variance = float(np.sum(law[np.arange(rows_two.size), labels[rows_two]]
                            * (1 - law[np.arange(rows_two.size), labels[rows_two]])))
    assert abs(observed_same - expected_same) <= SIGMAS * math.sqrt(variance) + 1


def test_lp2st_infinite_epsilon_returns_the_labels():
    rng = np.random.default_rng(13)
    feature = rng.integers(0, 5, size=1000)
    labels = rng.integers(0, 2, size=1000)
    release = two_stage_labels(labels, np.full((1000, 2), 0.5), math.inf, rng, histogram_learner(feature, 2))
    assert np.array_equal(release.labels, labels)
    with pytest.raises(LabelDPInputError, match="stage_one_fraction"):
        two_stage_labels(labels, np.full((1000, 2), 0.5), 1.0, rng, histogram_learner(feature, 2), 1.0)
