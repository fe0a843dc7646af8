"""The capacity check's histograms (auditing/game/check_histograms.py): one shape per number of classes, checked
counts, and histograms of disjoint chunks that add. Their stored round trip and a merge of two seeds:
tests/auditing/verdict/test_capacity_check.py."""

import numpy as np
import pytest

from auditing.game.check_histograms import CHECK_BINS, FINE_REFERENCE_BINS, CheckHistograms, strata_count
from labeldp.errors import LabelDPInputError


def test_strata_are_released_label_by_direction_by_reference_bin():
    assert FINE_REFERENCE_BINS == 18
    assert strata_count(2) == 2 * 2 * 18 and strata_count(5) == 5 * 2 * 18


def test_merging_adds_every_histogram_cell_by_cell():
    rng = np.random.default_rng(3)
    shape = (strata_count(3), CHECK_BINS.num_bins)

    def part():
        rows = [rng.integers(0, 4, shape) for _ in range(3)]
        return CheckHistograms(3, 5, *(x for r in rows for x in (r, rng.integers(0, r + 1))))

    a, b = part(), part()
    merged = a.merge(b).merge(CheckHistograms.empty(3, 5))
    for name in CheckHistograms._FIELDS:
        np.testing.assert_array_equal(getattr(merged, name), getattr(a, name) + getattr(b, name))
    with pytest.raises(LabelDPInputError, match="cannot merge check histograms of 2 classes"):
        a.merge(CheckHistograms.empty(2, 5))


def test_a_histogram_of_the_wrong_shape_or_with_more_correct_than_rows_is_refused():
    shape = (strata_count(2), CHECK_BINS.num_bins)
    zeros = [np.zeros(shape, np.int64) for _ in CheckHistograms._FIELDS]
    with pytest.raises(LabelDPInputError, match="classes must be a whole number >= 2"):
        CheckHistograms(1, 0, *zeros)
    with pytest.raises(LabelDPInputError, match=r"check histogram bound_rows: shape"):
        CheckHistograms(2, 0, *zeros[:2], np.zeros((1, 1), np.int64), *zeros[3:])
    over = [z.copy() for z in zeros]
    over[5][0, 0] = 1  # a correct check guess in a cell without check rows
    with pytest.raises(LabelDPInputError, match="check histogram check: need 0 <= correct <= rows"):
        CheckHistograms(2, 0, *over)
