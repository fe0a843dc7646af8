"""Sweep ranking and counting, the guess grid, and the probability row checks the game runs before it plays.
The audit end to end: tests/auditing/test_audit.py."""

import numpy as np
import pytest

from auditing.game.sweep import correct_at, guess_grid, rank_order
from labeldp.errors import LabelDPInputError


def test_rank_order_matches_lexsort_with_ties():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=50_000), 2)
    ids = rng.permutation(50_000).astype(np.int64)
    assert np.array_equal(rank_order(scores, ids), np.lexsort((ids, -np.abs(scores))))


def test_correct_at_by_hand():
    scores = np.array([0.1, -0.9, 0.5, 0.0, -0.5])
    correct = np.array([True, False, True, True, False])
    ids = np.array([10, 11, 12, 13, 9])
    order = rank_order(scores, ids)  # |s|: 0.9 (11), 0.5 (9 before 12), 0.1 (10), 0.0 (13)
    assert order.tolist() == [1, 4, 2, 0, 3]
    assert correct_at(correct, order, np.array([1, 2, 3, 5])).tolist() == [0, 0, 1, 3]


def test_guess_grid():
    grid = guess_grid(10**6)
    assert grid[0] == 100 and grid[-1] == 10**6 and len(grid) == 100 and np.all(np.diff(grid) > 0)
    assert guess_grid(10**6, kind="paper").tolist() == [10_000 * k for k in range(1, 101)]
    small = guess_grid(7)
    assert small[0] == 1 and small[-1] == 7 and len(set(small)) == len(small)
    with pytest.raises(LabelDPInputError, match="grid kind"):
        guess_grid(10, kind="nope")


@pytest.mark.parametrize("k", [2, 3, 5, 12])
def test_row_checks_equal_the_numpy_expressions_row_by_row(k):
    """`probability_row_checks` (compiled for two classes, numpy otherwise) flags exactly the rows the numpy
    expressions flag: a value NaN, +-inf or outside [0, 1], a sum off 1 by more than the tolerance (sums placed on
    both sides of it, where the order of the additions decides), certain rows and rows without any prediction;
    C- and Fortran-ordered alike (numpy's own sum adds in another order for a Fortran array of 3+ classes)."""
    from auditing.game.play import SUM_TOLERANCE, certain_rows, probability_row_checks

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), 4000)
    p[:400] *= 1.0 + SUM_TOLERANCE * rng.choice([-1.0, 1.0], (400, 1)) * (1.0 + rng.uniform(-1e-12, 1e-12, (400, 1)))
    p[400:800, 0] += 1.0 - p[400:800].sum(axis=1) + rng.choice([-1.0, 1.0], 400) * SUM_TOLERANCE
    p[800:900] = np.eye(k)[rng.integers(0, k, 100)]  # certain
    p[900:950] = np.nan  # no prediction
    p[950:960, 0] = -0.0
    cells = 960 * k + rng.integers(0, (4000 - 960) * k, 60)
    p.flat[cells] = rng.choice([np.nan, np.inf, -np.inf, -1e-9, 1.0 + 1e-9, 0.0, 1.0], 60)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(p).all(axis=1) | (p < 0.0).any(axis=1) | (p > 1.0).any(axis=1)
        bad |= ~(np.abs(p.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    found = probability_row_checks(p)
    assert 0 < bad[:800].sum() < 800  # the boundary rows fall on both sides
    np.testing.assert_array_equal(found[0], bad)
    np.testing.assert_array_equal(found[1], certain_rows(p))
    np.testing.assert_array_equal(found[2], np.isnan(p).all(axis=1))
    fortran = np.asfortranarray(p)
    with np.errstate(invalid="ignore"):
        bad_fortran = ~np.isfinite(fortran).all(axis=1) | (fortran < 0.0).any(axis=1) | (fortran > 1.0).any(axis=1)
        bad_fortran |= ~(np.abs(fortran.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    np.testing.assert_array_equal(probability_row_checks(fortran)[0], bad_fortran)


def test_probability_checks_count_the_rows_numpy_counts():
    """The one-pass row checks (NaN rows, rows out of [0, 1], certain rows) name the counts the plain numpy
    expressions give, for 1-D and k-column inputs, Fortran-ordered ones too."""
    from auditing.game.play import as_class_probabilities, as_reference_probabilities

    rng = np.random.default_rng(4)
    for k in (2, 3, 5):
        p = rng.dirichlet(np.ones(k), 2000)
        cells = rng.integers(0, p.size, 40)
        p.flat[cells[:10]] = np.nan
        p.flat[cells[10:20]] = rng.choice([-0.5, 1.5, np.inf], 10)
        nan_rows = int(np.isnan(p).any(axis=1).sum())
        with pytest.raises(LabelDPInputError, match=rf"p_target: {nan_rows} row\(s\) contain NaN"):
            as_class_probabilities(np.asfortranarray(p), "p_target")
        p[np.isnan(p)] = 0.25
        out = int(((p < 0) | (p > 1)).any(axis=1).sum())
        with pytest.raises(LabelDPInputError, match=rf"p_target: {out} row\(s\) have probabilities outside"):
            as_class_probabilities(p, "p_target")
        q = rng.dirichlet(np.ones(k), 2000)
        q[rng.integers(0, 2000, 30)] = np.eye(k)[0]
        certain = int(((q <= 0) | (q >= 1)).any(axis=1).sum())
        with pytest.raises(LabelDPInputError, match=rf"p_reference: {certain} row\(s\) give a class probability"):
            as_reference_probabilities(q, "p_reference")
    tiny = np.full(100, 0.3)
    tiny[:4] = 1e-17  # 1 - p rounds to 1.0: certain once the binary column is stacked, as before
    with pytest.raises(LabelDPInputError, match=r"p_reference: 4 row\(s\)"):
        as_reference_probabilities(tiny, "p_reference")
