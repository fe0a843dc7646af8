"""Statistical and exact checks of the label-DP mechanisms (pipelines/mechanisms), pure numpy, seeded.

Statistical tolerances: a frequency estimated from n independent draws is compared with its exact value
within 5 binomial standard deviations (a false alarm has probability < 1e-6 per comparison); the seeds are
fixed, so the tests are deterministic anyway.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms import mechanism_names
from pipelines.training.mechanisms.alibi import (
    alibi_soft_labels,
    laplace_scale,
    noisy_one_hot,
    posterior_soft_labels,
)
from pipelines.training.mechanisms.noise_correction import (
    correct_probabilities,
    select_floor,
    unbiased_log_loss,
)
from pipelines.training.mechanisms.pate import aggregate_votes, pate_labels, per_query_epsilon
from pipelines.training.mechanisms.randomized_response import (
    flip_probability,
    keep_probability,
    randomized_response,
    transition_matrix,
)
from pipelines.training.mechanisms.rr_with_prior import optimal_top_k, output_distribution, rr_with_prior
from pipelines.training.mechanisms.two_stage import two_stage_labels

SIGMAS = 5.0


def assert_frequency(count: int, n: int, p: float, what: str) -> None:
    """count/n equals p within 5 binomial standard deviations (plus 1/n for p at 0 or 1)."""
    tolerance = SIGMAS * math.sqrt(p * (1.0 - p) / n) + 1.0 / n
    assert abs(count / n - p) <= tolerance, f"{what}: {count}/{n} = {count / n:.5f}, expected {p:.5f} +- {tolerance:.5f}"


def random_prior(rng: np.random.Generator, n: int, k: int, concentration: float = 0.5) -> np.ndarray:
    return rng.dirichlet(np.full(k, concentration), size=n)


def histogram_learner(feature: np.ndarray, k: int):
    """A tiny numpy learner for one discrete feature: smoothed class frequencies per feature value."""

    def fit_predict(train_rows, targets, predict_rows):
        targets = np.asarray(targets)
        soft = targets if targets.ndim == 2 else np.eye(k)[targets]
        counts = np.ones((feature.max() + 1, k))  # add-one smoothing
        np.add.at(counts, feature[train_rows], soft)
        probabilities = counts / counts.sum(axis=1, keepdims=True)
        return probabilities[feature[predict_rows]]

    return fit_predict


# ------------------------------------------------------------------------------------------ randomized response


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


# ------------------------------------------------------------------------------------------ LP-1ST (RR with prior)


def test_optimal_top_k_matches_brute_force():
    rng = np.random.default_rng(11)
    prior = random_prior(rng, 500, 6)
    for epsilon in [0.1, 1.0, 3.0]:
        order, set_size = optimal_top_k(prior, epsilon)
        for i in range(prior.shape[0]):
            ranked = np.sort(prior[i])[::-1]
            gains = [ranked[:j].sum() * math.exp(epsilon) / (math.exp(epsilon) + j - 1) for j in range(1, 7)]
            assert set_size[i] == int(np.argmax(gains)) + 1
            assert np.all(np.diff(prior[i, order[i]]) <= 0)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_lp1st_output_distribution_matches_sampling(epsilon):
    rng = np.random.default_rng(21)
    k = 4
    prior = random_prior(rng, 8, k)                 # 8 distinct priors ...
    n_each = 25_000
    priors = np.repeat(prior, n_each, axis=0)       # ... each used for 25K rows
    labels = rng.integers(0, k, size=priors.shape[0])
    out = rr_with_prior(labels, priors, epsilon, rng)
    exact = output_distribution(labels, priors, epsilon)
    for group in range(prior.shape[0]):
        for y in range(k):
            rows = np.flatnonzero((np.arange(priors.shape[0]) // n_each == group) & (labels == y))
            for o in range(k):
                assert_frequency(int(np.sum(out[rows] == o)), rows.size, float(exact[rows[0], o]),
                                 f"prior {group}, P(out={o} | y={y})")


def test_lp1st_satisfies_label_dp_exactly_for_every_prior():
    rng = np.random.default_rng(5)
    k = 5
    prior = random_prior(rng, 2000, k, concentration=0.3)
    for epsilon in [0.1, 1.0, 4.0]:
        laws = np.stack([output_distribution(np.full(prior.shape[0], y), prior, epsilon) for y in range(k)])
        high, low = laws.max(axis=0), laws.min(axis=0)       # over the true label y, per row and output
        support = high > 0
        assert np.all(low[support] > 0), "an output possible for one label must be possible for all"
        assert np.max(high[support] / low[support]) <= math.exp(epsilon) * (1 + 1e-12)


def test_lp1st_with_uniform_prior_is_randomized_response():
    k = 3
    uniform = np.full((k, k), 1.0 / k)
    for epsilon in [0.1, 1.0, 5.0]:
        assert np.allclose(output_distribution(np.arange(k), uniform, epsilon), transition_matrix(epsilon, k))


def test_lp1st_confident_prior_at_small_epsilon_outputs_the_prior_top_class():
    # Binary, prior 0.97 on class 0: j* = 1 whenever 0.97 > e^eps / (e^eps + 1), i.e. eps < log(0.97/0.03).
    prior = np.tile([0.97, 0.03], (1000, 1))
    labels = np.arange(1000) % 2
    out = rr_with_prior(labels, prior, 1.0, np.random.default_rng(0))
    assert np.all(out == 0)
    assert np.all(optimal_top_k(prior, 4.0)[1] == 2)   # log(0.97/0.03) = 3.48 < 4: both classes kept


def test_lp1st_infinite_epsilon_is_identity_and_checks_the_prior():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=100)
    prior = random_prior(rng, 100, 3)
    assert np.array_equal(rr_with_prior(labels, prior, math.inf, rng), labels)
    with pytest.raises(LabelDPInputError, match="prior: 1 row"):
        bad = prior.copy()
        bad[3] = [0.5, 0.5, 0.5]
        rr_with_prior(labels, bad, 1.0, rng)
    with pytest.raises(LabelDPInputError, match=r"prior must have shape \(rows=100"):
        rr_with_prior(labels, prior[:50], 1.0, rng)


# ------------------------------------------------------------------------------------------ noise correction


def test_noise_correction_inverts_the_flip_rates_exactly():
    rng = np.random.default_rng(2)
    for k, epsilon in [(2, 0.1), (2, 1.0), (4, 2.0)]:
        p_true = random_prior(rng, 200, k, concentration=5.0)
        p_true = np.maximum(p_true, 1e-3)
        p_true /= p_true.sum(axis=1, keepdims=True)
        p_noisy = p_true @ transition_matrix(epsilon, k)      # the law of the RR label given x
        assert np.allclose(correct_probabilities(p_noisy, epsilon, floor=1e-6), p_true, atol=1e-9)
    q = flip_probability(1.0, 2)
    binary = correct_probabilities(np.array([[0.6, 0.4]]), 1.0, floor=1e-6)
    assert binary[0, 1] == pytest.approx((0.4 - q) / (1 - 2 * q))
    clipped = correct_probabilities(np.array([[1 - q / 2, q / 2]]), 1.0, floor=1e-3)  # below q: clipped
    assert clipped[0, 1] == pytest.approx(1e-3, rel=1e-2)


def test_unbiased_log_loss_has_the_true_expectation():
    # Exact: for every true label y, sum_j T[y, j] * estimate(j) equals -log p(y).
    rng = np.random.default_rng(4)
    for k, epsilon in [(2, 0.5), (3, 2.0)]:
        probabilities = random_prior(rng, 1, k, concentration=2.0)
        matrix = transition_matrix(epsilon, k)
        estimates = np.array([unbiased_log_loss(probabilities, [j], epsilon) for j in range(k)])
        assert np.allclose(matrix @ estimates, -np.log(probabilities[0]))
    # Statistical: over RR draws, the mean estimate matches the true log-loss (5 standard errors).
    n = 200_000
    probabilities = random_prior(rng, n, 2, concentration=2.0)
    labels = (rng.random(n) < probabilities[:, 1]).astype(np.int64)
    noisy = randomized_response(labels, 1.0, 2, rng)
    true = float(np.mean(-np.log(probabilities[np.arange(n), labels])))
    keep, flip = keep_probability(1.0, 2), flip_probability(1.0, 2)
    losses = -np.log(probabilities)
    rows = (losses[np.arange(n), noisy] - flip * losses.sum(axis=1)) / (keep - flip)
    assert abs(unbiased_log_loss(probabilities, noisy, 1.0) - true) <= SIGMAS * rows.std() / math.sqrt(n)


def test_select_floor_prefers_a_small_floor_when_predictions_are_good():
    rng = np.random.default_rng(6)
    n, epsilon = 100_000, 2.0
    p_true = np.clip(rng.beta(0.5, 10.0, size=n), 1e-4, 1 - 1e-4)    # ~5% positives, many near 0
    labels = (rng.random(n) < p_true).astype(np.int64)
    noisy = randomized_response(labels, epsilon, 2, rng)
    q = flip_probability(epsilon, 2)
    p_noisy = q + (1 - 2 * q) * p_true
    floor, estimates = select_floor(np.column_stack([1 - p_noisy, p_noisy]), noisy, epsilon)
    assert floor <= 1e-3, estimates
    assert set(estimates) >= {1e-5, 3e-2}


# ------------------------------------------------------------------------------------------ ALIBI


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_alibi_noise_is_laplace_with_scale_two_over_epsilon(epsilon):
    rng = np.random.default_rng(8)
    n, k = 100_000, 3
    labels = rng.integers(0, k, size=n)
    noise = (noisy_one_hot(labels, epsilon, k, rng) - np.eye(k)[labels]).ravel()
    scale = 2.0 / epsilon
    assert laplace_scale(epsilon) == scale
    # mean |noise| estimates b; its standard error is b / sqrt(N) (Var|Lap(b)| = b^2).
    assert abs(np.mean(np.abs(noise)) - scale) <= SIGMAS * scale / math.sqrt(noise.size)
    assert abs(np.mean(noise)) <= SIGMAS * math.sqrt(2) * scale / math.sqrt(noise.size)
    assert stats.kstest(noise[:20_000], stats.laplace(scale=scale).cdf).pvalue > 1e-4


def test_alibi_posterior_is_bayes_rule_with_laplace_likelihood():
    rng = np.random.default_rng(9)
    epsilon, k = 1.5, 3
    noisy = rng.normal(0.3, 1.0, size=(50, k))
    prior = random_prior(rng, 50, k)
    scale = 2.0 / epsilon
    likelihood = np.stack(
        [stats.laplace(loc=np.eye(k)[c], scale=scale).pdf(noisy).prod(axis=1) for c in range(k)], axis=1)
    expected = prior * likelihood
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(posterior_soft_labels(noisy, prior, epsilon), expected, atol=1e-12)


def test_alibi_posterior_is_calibrated_when_the_prior_is_the_true_law():
    rng = np.random.default_rng(10)
    n, epsilon = 200_000, 1.0
    p_true = rng.beta(1.0, 4.0, size=n)
    prior = np.column_stack([1 - p_true, p_true])
    labels = (rng.random(n) < p_true).astype(np.int64)
    _noisy, soft = alibi_soft_labels(labels, prior, epsilon, rng)
    # Bayes: among rows with posterior in a bin, the positive rate equals the mean posterior.
    bins = np.digitize(soft[:, 1], np.linspace(0, 1, 11)[1:-1])
    for b in np.unique(bins):
        rows = bins == b
        if rows.sum() >= 2000:
            assert_frequency(int(labels[rows].sum()), int(rows.sum()), float(soft[rows, 1].mean()), f"bin {b}")


def test_alibi_infinite_epsilon_gives_exact_one_hot_labels():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, size=500)
    noisy, soft = alibi_soft_labels(labels, np.full((500, 2), 0.5), math.inf, rng)
    assert np.array_equal(soft, np.eye(2)[labels]) and np.array_equal(noisy, np.eye(2)[labels])


# ------------------------------------------------------------------------------------------ LP-2ST


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


# ------------------------------------------------------------------------------------------ PATE


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


def test_mechanism_names_are_the_cli_choices():
    assert mechanism_names() == ("none", "rr", "lp-1st", "lp-1st-nc", "lp-2st", "alibi", "pate")
