"""The compiled step of `boundary_bins` (auditing/game/histogram_totals.py): the totals of a histogram's top bins,
from the last bin down, and whether every bin holds 0 <= correct <= rows."""

import numpy as np

from auditing.game.histogram_totals import descending_totals


def _totals(rows, correct):
    cum_rows, cum_correct = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
    valid = descending_totals(np.array(rows, np.int64), np.array(correct, np.int64), cum_rows, cum_correct)
    return bool(valid), cum_rows.tolist(), cum_correct.tolist()


def test_totals_run_from_the_last_bin_down():
    assert _totals([1, 3, 0, 2], [0, 2, 0, 1]) == (True, [2, 2, 5, 6], [1, 1, 3, 3])
    rng = np.random.default_rng(5)
    rows = rng.integers(0, 50, 200)
    correct = rng.integers(0, rows + 1)
    valid, cum_rows, cum_correct = _totals(rows, correct)
    assert valid and cum_rows == np.cumsum(rows[::-1]).tolist() and cum_correct == np.cumsum(correct[::-1]).tolist()


def test_a_bin_with_more_correct_than_rows_or_a_negative_count_is_reported():
    assert not _totals([1, 3, 0, 2], [0, 4, 0, 1])[0]
    assert not _totals([1, 3, 0, 2], [0, 2, -1, 1])[0]
    assert not _totals([5, 3], [6, 0])[0]  # the first bin, checked last
