"""The mechanisms' shared argument checks (pipelines/training/mechanisms/_checks.py): each refusal is a
LabelDPInputError naming the argument, and what passes comes back in the form the mechanisms compute with."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import (
    check_epsilon,
    check_labels,
    check_num_classes,
    check_probabilities,
    check_rng,
    exp_neg,
)


def test_epsilon_is_positive_or_inf_and_a_refusal_names_the_argument():
    assert check_epsilon(0.5) == 0.5 and check_epsilon("2") == 2.0 and math.isinf(check_epsilon(math.inf))
    for bad in (0, -1.0, math.nan):
        with pytest.raises(LabelDPInputError, match=r"^eps_1 must be > 0 \(or inf for no privacy\)"):
            check_epsilon(bad, "eps_1")
    with pytest.raises(LabelDPInputError, match=r"^epsilon must be a number > 0 .*got 'high'$"):
        check_epsilon("high")


def test_num_classes_is_a_whole_number_from_2_to_127():
    assert check_num_classes(2) == 2 and check_num_classes(127.0) == 127
    for bad in (1, 128, 2.5, True):
        with pytest.raises(LabelDPInputError, match=r"^k must be a whole number in 2\.\.127"):
            check_num_classes(bad, "k")


def test_rng_must_be_a_seeded_generator():
    rng = np.random.default_rng(0)
    assert check_rng(rng) is rng
    with pytest.raises(LabelDPInputError, match=r"^rng must be a numpy\.random\.Generator .*got RandomState$"):
        check_rng(np.random.RandomState(0))


def test_labels_are_a_1d_int64_array_of_class_ids():
    out = check_labels(np.array([0, 2, 1], dtype=np.int8), 3)
    assert out.dtype == np.int64 and out.tolist() == [0, 2, 1]
    assert check_labels([], 2).size == 0
    with pytest.raises(LabelDPInputError, match=r"^labels must be a 1-d array; got shape \(1, 2\)$"):
        check_labels([[0, 1]], 2)
    with pytest.raises(LabelDPInputError, match=r"^labels must hold integer class ids; got dtype float64$"):
        check_labels([0.0, 1.0], 2)
    with pytest.raises(LabelDPInputError, match=r"^labels: 2 value\(s\) are outside the classes 0\.\.1$"):
        check_labels([0, 2, -1, 1], 2)


def test_probabilities_are_checked_rows_renormalised_exactly():
    prior = np.array([[0.3, 0.7000001], [1.0, 0.0]])
    out = check_probabilities(prior, 2)
    np.testing.assert_array_equal(out.sum(axis=1), [1.0, 1.0])
    assert out[0, 0] < 0.3
    with pytest.raises(LabelDPInputError, match=r"^prior must have shape \(rows=3, classes>=2\); got \(2, 2\)$"):
        check_probabilities(prior, 3)
    with pytest.raises(LabelDPInputError, match=r"^prior: 1 row\(s\) hold negative, NaN or infinite"):
        check_probabilities([[0.5, 0.5], [np.nan, 1.0]], 2)
    with pytest.raises(LabelDPInputError, match=r"^prior: 1 row\(s\) do not sum to 1 \(tolerance 1e-06\)$"):
        check_probabilities([[0.5, 0.5], [0.5, 0.6]], 2)


def test_exp_neg_is_exactly_zero_at_inf():
    assert exp_neg(math.inf) == 0.0
    assert exp_neg(1.0) == math.exp(-1.0)
