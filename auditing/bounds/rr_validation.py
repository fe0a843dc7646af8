"""Validation of the audit on randomized response, where the true epsilon is known (paper Sec. 6.6, App. 11).

Data: k balanced classes, x | y ~ N(e_y, I_d) with d = max(5, k) (the paper states d = 5, which cannot hold
k = 10 distinct unit vectors, so d grows with k). The mechanism is k-ary randomized response with
parameter eps (keep the label w.p. e^eps / (e^eps + k - 1), else a uniformly random other class), which is
eps-label-DP. The "model" the attacker sees is the mechanism's output itself: M(x) = one-hot(RR label).

Counterfactual labels y1 come either from the true posterior p(y | x) = softmax_y(x_y) (D' = D, kappa = 0 is
exact) or from a multinomial logistic-regression proxy fitted on fresh, disjoint data (D' close to D).

For each pre-registered guess fraction (0.1% and 1% by default) the valid bound is repetition 0's bound at
the full confidence (no selection, so no correction); the paper's statistic is the mean and std over
repetitions of the same bound, as in the paper's Figures 2-3.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import optimize, special

from auditing.bounds.lower_bound import pointwise_bounds
from auditing.game.play import play_repetition
from auditing.game.scores import resolve_score
from auditing.game.sweep import correct_at, grid_from_fractions, rank_order


def gaussian_mixture(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """x | y ~ N(e_y, I_d), y uniform on k classes, d = max(5, k)."""
    d = max(5, k)
    y = rng.integers(0, k, size=n)
    x = rng.standard_normal((n, d))
    x[np.arange(n), y] += 1.0
    return x, y


def true_posterior(x: np.ndarray, k: int) -> np.ndarray:
    """p(y | x) for the mixture: log p(x | y) = x_y + const, so the posterior is softmax over x[:, :k]."""
    return special.softmax(x[:, :k], axis=1)


def fit_logistic_proxy(x: np.ndarray, y: np.ndarray, k: int, l2: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression (weights, bias) by L-BFGS on the mean cross-entropy + l2/2 ||W||^2."""
    n, d = x.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), y] = 1.0

    def loss_and_grad(theta):
        w, b = theta[: d * k].reshape(d, k), theta[d * k:]
        logits = x @ w + b
        log_p = logits - special.logsumexp(logits, axis=1, keepdims=True)
        loss = -(onehot * log_p).sum() / n + 0.5 * l2 * (w**2).sum()
        residual = (np.exp(log_p) - onehot) / n
        grad = np.concatenate([(x.T @ residual + l2 * w).ravel(), residual.sum(axis=0)])
        return loss, grad

    res = optimize.minimize(loss_and_grad, np.zeros(d * k + k), jac=True, method="L-BFGS-B")
    return res.x[: d * k].reshape(d, k), res.x[d * k:]


def logistic_predict(x: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Class probabilities (n, k) of the proxy fitted by `fit_logistic_proxy`."""
    return special.softmax(x @ weights + bias, axis=1)


def randomized_response(y: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """k-ary RR: keep w.p. e^eps/(e^eps + k - 1), else a uniformly chosen *other* class."""
    if k == 1:  # one class: nothing to flip to
        return y.copy()
    keep = rng.random(y.size) < special.expit(epsilon - np.log(k - 1.0))
    shift = rng.integers(1, k, size=y.size)  # 1..k-1: moves to a different class uniformly
    return np.where(keep, y, (y + shift) % k)


@dataclass(frozen=True)
class ValidationRow:
    """One guess fraction's result: the valid bound of repetition 0 and the paper's mean / std statistic."""

    classes: int
    epsilon: float
    counterfactual: str  # "truth" or "proxy"
    guess_fraction: float
    guesses: int
    valid_lower_bound: float  # repetition 0, pre-registered fraction, full confidence
    paper_mean: float
    paper_std: float
    rows: int
    repetitions: int
    confidence: float


def validate_randomized_response(
    *, rows: int, classes: int, epsilon: float, counterfactual: str, fractions=(0.001, 0.01),
    repetitions: int = 100, seed: int = 0, confidence: float = 0.95, proxy_rows: int = 100_000,
    method: str = "binomial",
) -> list[ValidationRow]:
    """Audits k-ary RR at a known epsilon with `method` (binomial or fdp, delta = 0 either way: RR is pure
    eps-DP).

    Args:
        counterfactual: "truth" (the true posterior as the reference) or "proxy" (a logistic regression fitted
            on ``proxy_rows`` fresh rows).
        fractions: the pre-registered guess fractions, each in (0, 1].
    Returns:
        One `ValidationRow` per distinct guess count of ``fractions``.
    Raises:
        ValueError: an unknown ``counterfactual``; LabelDPInputError: bad fractions, confidence or method.
    """
    rng = np.random.default_rng([seed, classes, round(epsilon * 1000)])
    x, y = gaussian_mixture(rows, classes, rng)
    released = randomized_response(y, classes, epsilon, rng)
    target = np.zeros((rows, classes))
    target[np.arange(rows), released] = 1.0
    if counterfactual == "truth":
        reference = true_posterior(x, classes)
    elif counterfactual == "proxy":
        x_fit, y_fit = gaussian_mixture(proxy_rows, classes, np.random.default_rng([seed, classes, 7]))
        reference = logistic_predict(x, *fit_logistic_proxy(x_fit, y_fit, classes))
    else:
        raise ValueError(f"counterfactual must be 'truth' or 'proxy'; got {counterfactual!r}")
    row_ids = np.arange(rows, dtype=np.int64)
    grid = grid_from_fractions(rows, fractions)
    score = resolve_score("paper")
    correct = np.empty((repetitions, grid.size), dtype=np.int64)
    for r in range(repetitions):
        game = play_repetition(target, reference, y, row_ids, seed=seed, repetition=r, score=score)
        correct[r] = correct_at(game.correct, rank_order(game.scores, row_ids), grid)
    bounds = np.array([
        pointwise_bounds(correct[r], grid, rows, method=method, delta=0.0, confidence=confidence)
        for r in range(repetitions)
    ])
    out = []
    for j, g in enumerate(grid):
        out.append(ValidationRow(
            classes=classes, epsilon=epsilon, counterfactual=counterfactual, guess_fraction=float(g / rows),
            guesses=int(g), valid_lower_bound=float(bounds[0, j]), paper_mean=float(bounds[:, j].mean()),
            paper_std=float(bounds[:, j].std(ddof=1)) if repetitions > 1 else 0.0, rows=rows,
            repetitions=repetitions, confidence=confidence,
        ))
    return out


def rows_as_dicts(rows: list[ValidationRow]) -> list[dict]:
    """The rows as plain dicts (for JSON and tables)."""
    return [asdict(r) for r in rows]
