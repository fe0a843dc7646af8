"""The deterministic 80/4/16 split by a hash of row_id (pipelines.data.splits; paper Sec. 6.4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.data.splits import SPLIT_NAMES, TEST, TRAIN, VALIDATION, split_masks, split_of

# Pinned: the split of row_ids 0..39 must never change (models, scores and audits rely on it).
PINNED_0_TO_39 = [2, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 2, 0, 2, 0, 0, 2, 2,
                  0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 0, 0, 0, 0]


def _check_proportions(split: np.ndarray) -> None:
    # Tolerance: 5 binomial standard errors for each share.
    n = len(split)
    for code, share in ((TRAIN, 0.80), (VALIDATION, 0.04), (TEST, 0.16)):
        observed = float(np.mean(split == code))
        tolerance = 5 * np.sqrt(share * (1 - share) / n)
        assert abs(observed - share) < tolerance, (SPLIT_NAMES[code], observed, share, tolerance)


def test_proportions_consecutive_ids():
    _check_proportions(split_of(np.arange(1_000_000, dtype=np.int64)))


def test_proportions_synthetic_and_line_number_ids():
    day = np.int64(19_723) * np.int64(2**32)  # synthetic row_ids: epoch day * 2^32 + index
    _check_proportions(split_of(day + np.arange(300_000, dtype=np.int64)))
    _check_proportions(split_of(np.arange(1, 300_001, dtype=np.int64)))  # ingest: line numbers
    _check_proportions(split_of(np.arange(0, 600_000, 2, dtype=np.int64)))  # no parity artefact


def test_pinned_values_are_stable():
    assert split_of(np.arange(40)).tolist() == PINNED_0_TO_39
    assert split_of(np.array([-1, 2**62, 123456789012345])).tolist() == [0, 0, 0]


def test_dtype_and_order_do_not_matter():
    ids = np.arange(5_000, dtype=np.int64)
    base = split_of(ids)
    assert base.dtype == np.int8
    np.testing.assert_array_equal(split_of(ids.astype(np.int32)), base)
    np.testing.assert_array_equal(split_of(ids.astype(np.uint64)), base)
    np.testing.assert_array_equal(split_of(list(ids)), base)
    perm = np.random.default_rng(0).permutation(len(ids))
    np.testing.assert_array_equal(split_of(ids[perm]), base[perm])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=50))
def test_elementwise(ids):
    """A row's split depends on its row_id only, never on the other rows of the batch."""
    together = split_of(np.array(ids, dtype=np.int64))
    alone = [int(split_of(np.array([x], dtype=np.int64))[0]) for x in ids]
    assert together.tolist() == alone
    assert set(alone) <= {TRAIN, VALIDATION, TEST}


def test_masks_are_disjoint_and_cover():
    masks = split_masks(np.arange(10_000))
    assert set(masks) == {"train", "validation", "test"}
    total = masks["train"].astype(int) + masks["validation"] + masks["test"]
    assert np.all(total == 1)


def test_rejects_non_integers():
    with pytest.raises(TypeError, match="row_ids must be integers"):
        split_of(np.array([0.5, 1.5]))
    assert split_of(np.array([], dtype=np.int64)).shape == (0,)
