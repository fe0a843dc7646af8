"""Sweep ranking and counting and the guess grid. The probability row checks the game runs before it plays:
tests/auditing/game/test_play.py; the audit end to end: tests/auditing/test_audit.py."""

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
