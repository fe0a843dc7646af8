"""The non-private mechanism ``none`` (pipelines/training/mechanisms/identity.py): it accepts only eps = inf and
releases the true labels unchanged, as a copy, marked as the identity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms.base import NO_GUARANTEE, LabelContext
from pipelines.training.mechanisms.identity import NoPrivacy


def _context(labels):
    def never(*_args):
        raise AssertionError("the identity fits nothing")

    return LabelContext(labels=labels, epsilon=math.inf, rng=np.random.default_rng(0), num_classes=2,
                        learner=never, fit_all=never)


def test_infinite_epsilon_is_accepted_and_a_non_positive_one_refused_as_any_mechanism_does():
    assert math.isinf(NoPrivacy().check_epsilon(math.inf))
    with pytest.raises(LabelDPInputError, match="must be > 0"):
        NoPrivacy().check_epsilon(0)


def test_the_release_is_the_labels_unchanged_as_a_copy():
    labels = np.array([1, 0, 0, 1, 1], dtype=np.int64)
    release = NoPrivacy().release(_context(labels))
    assert release.identity and release.rows is None
    np.testing.assert_array_equal(release.targets, labels)
    release.targets[0] = 0
    assert labels[0] == 1  # the caller's labels are never written through the release


def test_it_claims_no_guarantee():
    assert NoPrivacy.claim == "" and NoPrivacy().guarantee(math.inf, 0.0) == NO_GUARANTEE
