"""The randomized-response validation worlds (auditing/bounds/rr_validation.py): the mixture's exact posterior,
k-ary RR that moves a label only to another class, and one validation row per distinct guess count. That the
bound is valid at the stated rate on these worlds: tests/behaviour/test_soundness.py and the `validate-rr`
command (tests/behaviour/test_cli_audit.py)."""

import numpy as np
import pytest
from scipy import special

from auditing.bounds.rr_validation import (
    fit_logistic_proxy,
    gaussian_mixture,
    logistic_predict,
    randomized_response,
    rows_as_dicts,
    true_posterior,
    validate_randomized_response,
)


def test_the_posterior_of_the_mixture_is_bayes_rule_on_its_gaussians():
    rng = np.random.default_rng(0)
    x, y = gaussian_mixture(500, 3, rng)
    assert x.shape == (500, 5) and set(np.unique(y)) == {0, 1, 2}
    log_likelihood = np.stack([-0.5 * ((x - np.eye(5)[c]) ** 2).sum(axis=1) for c in range(3)], axis=1)
    np.testing.assert_allclose(true_posterior(x, 3), special.softmax(log_likelihood, axis=1), rtol=1e-10)


def test_rr_keeps_a_label_at_its_rate_and_moves_it_only_to_another_class():
    rng = np.random.default_rng(1)
    n, k, eps = 200_000, 4, 1.0
    y = rng.integers(0, k, n)
    released = randomized_response(y, k, eps, rng)
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    assert abs((released == y).mean() - keep) < 5 * np.sqrt(keep * (1 - keep) / n)
    moved = released[released != y] - y[released != y]
    assert set(np.unique(moved % k)) == {1, 2, 3}  # every other class, and never the label itself


def test_rr_over_one_class_keeps_every_label():
    y = np.zeros(50, dtype=np.int64)
    released = randomized_response(y, 1, 0.5, np.random.default_rng(2))
    assert np.array_equal(released, y) and released is not y


def test_the_proxy_fitted_on_the_mixture_is_close_to_the_truth():
    rng = np.random.default_rng(2)
    x, y = gaussian_mixture(20_000, 2, rng)
    proxy = logistic_predict(x[:1000], *fit_logistic_proxy(x, y, 2))
    assert np.abs(proxy - true_posterior(x[:1000], 2)).max() < 0.05


def test_one_row_per_distinct_guess_count_at_the_settings_given():
    rows = validate_randomized_response(rows=2000, classes=2, epsilon=2.0, counterfactual="truth",
                                        fractions=(0.01, 0.0101, 0.1), repetitions=3)
    assert [r.guesses for r in rows] == [20, 21, 200] and all(r.repetitions == 3 and r.rows == 2000 for r in rows)
    assert all(0 <= r.valid_lower_bound <= 2.0 + 1e-9 for r in rows)
    assert rows_as_dicts(rows)[0]["guess_fraction"] == 0.01 and rows_as_dicts(rows)[0]["counterfactual"] == "truth"
    with pytest.raises(ValueError, match="counterfactual must be 'truth' or 'proxy'"):
        validate_randomized_response(rows=100, classes=2, epsilon=1.0, counterfactual="model")
