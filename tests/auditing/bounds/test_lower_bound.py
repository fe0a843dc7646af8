"""The best bound over the guess grid (auditing/bounds/lower_bound.py): pruning never changes the maximum, and many
sweeps' bounds at once are best_bound's row by row, whatever the threads."""

import numpy as np
import pytest

from labeldp.errors import LabelDPInputError


@pytest.mark.parametrize("method, delta", [("binomial", 1e-6), ("fdp", 1e-5), ("binomial", 0.0)])
def test_pruned_best_bound_equals_brute_force_max(method, delta):
    """best_bound skips points it can prove cannot win; it must return exactly the max of all points."""
    from auditing.bounds.lower_bound import best_bound, pointwise_bounds

    rng = np.random.default_rng(11)
    m = 50_000
    for _ in range(5):
        guesses = np.unique(rng.integers(50, m, size=25))
        correct = np.array([rng.binomial(g, rng.uniform(0.45, 0.9)) for g in guesses])
        everything = pointwise_bounds(correct, guesses, m, method=method, delta=delta, confidence=0.99)
        value, index = best_bound(correct, guesses, m, method=method, delta=delta, confidence=0.99)
        assert value == everything.max()
        assert everything[index] == value


@pytest.mark.parametrize("method, delta", [("binomial", 0.0), ("binomial", 1e-6)])
def test_best_bounds_of_many_sweeps_are_best_bound_row_by_row(method, delta):
    """The repetitions' bounds, computed for all rows at once and split over threads, are best_bound's doubles
    row by row, whatever the number of threads."""
    from auditing.bounds.lower_bound import best_bound, best_bounds

    rng = np.random.default_rng(5)
    m = 200_000
    guesses = np.tile(np.unique(rng.integers(20, m, size=60)), (12 if delta else 90, 1))
    correct = rng.binomial(guesses, rng.uniform(0.4, 0.95, size=guesses.shape))
    expected = np.array([best_bound(c, g, m, method=method, delta=delta, confidence=0.95, kappa=0.1)[0]
                         for c, g in zip(correct, guesses, strict=True)])
    for threads in (1, 2, 3):
        got = best_bounds(correct, guesses, m, method=method, delta=delta, confidence=0.95, kappa=0.1,
                          threads=threads)
        assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))
    with pytest.raises(LabelDPInputError, match="2-D"):
        best_bounds(correct[0], guesses[0], m, method=method, delta=delta)
