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


# ------------------------------------------------------------------------------------------ the keyed sample


def _streamed(ids: np.ndarray, max_rows: int, cuts) -> np.ndarray | None:
    from pipelines.data.splits import KeyedSampler

    sampler = KeyedSampler(max_rows)
    for part in np.split(ids, np.sort(cuts)):
        sampler.add(part)
    assert sampler.rows == ids.size
    return sampler.result()


def _same(streamed, whole) -> None:
    assert (streamed is None) == (whole is None)
    if whole is not None:
        assert streamed.dtype == np.int64
        np.testing.assert_array_equal(streamed, whole)


@pytest.mark.parametrize("seed", range(6))
def test_keyed_sampler_is_keyed_sample_whatever_the_batches(seed):
    from pipelines.data.splits import keyed_sample

    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(-5_000, 20_000, dtype=np.int64), size=int(rng.integers(1, 6_000)), replace=False)
    for max_rows in (0, 1, 7, ids.size // 3, ids.size - 1, ids.size, ids.size + 5):
        whole = keyed_sample(ids, max_rows)
        cuts = rng.integers(0, ids.size + 1, size=int(rng.integers(0, 40)))
        _same(_streamed(ids, max_rows, cuts), whole)
        _same(_streamed(ids, max_rows, np.arange(1, ids.size)), whole)  # one id a batch
    assert _streamed(ids, ids.size, []) is None  # no more than max_rows: every row


@pytest.mark.parametrize("buckets", [1, 3, 50])
def test_keyed_sampler_breaks_hash_ties_by_row_id(monkeypatch, buckets):
    """splitmix64 is a bijection, so distinct ids never tie; a coarse stand-in forces ties, which both break by
    row_id (a hash at the k-th place shared by ids inside and outside the sample included)."""
    from pipelines.data import splits

    monkeypatch.setattr(splits, "splitmix64", lambda x: x % np.uint64(buckets))
    rng = np.random.default_rng(buckets)
    ids = rng.permutation(np.arange(-300, 2_700, dtype=np.int64))
    for max_rows in (1, 10, 999, 1_500, 2_999):
        whole = splits.keyed_sample(ids, max_rows)
        hashes = (ids.view(np.uint64) ^ splits.SAMPLE_SALT) % np.uint64(buckets)
        expected = np.sort(sorted(ids.tolist(), key=lambda i: (int(hashes[ids == i][0]), i))[:max_rows])
        np.testing.assert_array_equal(whole, expected)
        _same(_streamed(ids, max_rows, rng.integers(0, ids.size, 25)), whole)


def test_keyed_sampler_holds_at_most_twice_max_rows():
    from pipelines.data.splits import KeyedSampler, keyed_sample

    ids = np.random.default_rng(1).permutation(200_000).astype(np.int64)
    sampler = KeyedSampler(100)
    for part in np.array_split(ids, 400):
        sampler.add(part)
        assert sampler._ids.size + sampler._pending_rows < 2 * 100 + part.size
    np.testing.assert_array_equal(sampler.result(), keyed_sample(ids, 100))
    with pytest.raises(ValueError, match="max_rows"):
        KeyedSampler(-1)
