"""Randomized response (pipelines/training/mechanisms/randomized_response.py): flip rates, the e^eps ratio, seeds
and bad input, pure numpy, seeded (tolerances: tests/support/mechanism_draws.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms.randomized_response import (
    flip_probability,
    keep_probability,
    randomized_response,
    transition_matrix,
)
from tests.support.mechanism_draws import assert_frequency


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_rr_flip_rate_per_wrong_class(k, epsilon):
    rng = np.random.default_rng(1000 + k)
    n = 200_000
    labels = rng.integers(0, k, size=n)
    out = randomized_response(labels, epsilon, k, rng)
    flip = 1.0 / (math.exp(epsilon) + k - 1)
    assert flip_probability(epsilon, k) == pytest.approx(flip, rel=1e-12)
    assert keep_probability(epsilon, k) == pytest.approx(math.exp(epsilon) * flip, rel=1e-12)
    for y in range(k):
        rows = labels == y
        for o in range(k):
            expected = math.exp(epsilon) * flip if o == y else flip
            assert_frequency(int(np.sum(out[rows] == o)), int(rows.sum()), expected, f"P(out={o} | y={y})")


def test_rr_transition_matrix_ratio_is_exactly_e_eps():
    for k, epsilon in itertools.product([2, 3, 10], [0.1, 1.0, 8.0]):
        matrix = transition_matrix(epsilon, k)
        assert np.allclose(matrix.sum(axis=1), 1.0)
        worst = (matrix.max(axis=0) / matrix.min(axis=0)).max()  # max over o of P(o|y)/P(o|y')
        assert worst == pytest.approx(math.exp(epsilon), rel=1e-12)


def test_rr_infinite_epsilon_is_identity_and_large_epsilon_does_not_overflow():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, size=1000)
    state = rng.bit_generator.state
    assert np.array_equal(randomized_response(labels, math.inf, 4, rng), labels)
    assert rng.bit_generator.state == state  # eps = inf draws nothing
    assert keep_probability(1e6, 3) == 1.0 and flip_probability(1e6, 3) == 0.0


def test_rr_is_reproducible_from_the_seed():
    labels = np.arange(1000) % 2
    a = randomized_response(labels, 1.0, 2, np.random.default_rng(7))
    b = randomized_response(labels, 1.0, 2, np.random.default_rng(7))
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"epsilon": 0.0}, "epsilon must be > 0"),
        ({"epsilon": -1.0}, "epsilon must be > 0"),
        ({"epsilon": math.nan}, "epsilon must be > 0"),
        ({"epsilon": "abc"}, "epsilon must be a number"),
        ({"num_classes": 1}, "num_classes must be a whole number in 2..127"),
        ({"labels": np.array([0, 2])}, "labels: 1 value(s) are outside the classes 0..1"),
        ({"labels": np.array([0.0, 1.0])}, "labels must hold integer class ids"),
        ({"rng": 42}, "rng must be a numpy.random.Generator"),
    ],
)
def test_rr_rejects_bad_input_naming_the_argument(kwargs, fragment):
    arguments = {"labels": np.array([0, 1]), "epsilon": 1.0, "num_classes": 2, "rng": np.random.default_rng(0)}
    arguments.update(kwargs)
    with pytest.raises(LabelDPInputError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        randomized_response(**arguments)
