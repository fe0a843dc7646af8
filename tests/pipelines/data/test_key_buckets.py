"""pipelines.data.key_buckets: every row comes back once, equal keys in one bucket, in the order added."""

import numpy as np
import pytest

from pipelines.data import key_buckets
from pipelines.data.key_buckets import KeyBuckets, bucket_of, buckets_for


def test_buckets_for_sizes():
    assert buckets_for(0) == 1
    assert buckets_for(10, bucket_rows=10) == 1
    assert buckets_for(11, bucket_rows=10) == 2
    with pytest.raises(ValueError):
        buckets_for(5, bucket_rows=0)


@pytest.mark.parametrize("buckets", [1, 3, 16])
def test_rows_come_back_once_with_equal_keys_together(tmp_path, monkeypatch, buckets):
    monkeypatch.setattr(key_buckets, "_FLUSH_ROWS", 700)  # several flushes
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 400, 5_000).astype(np.uint64)  # many repeats
    positions = np.arange(keys.size, dtype=np.int64)
    with KeyBuckets(buckets, {"key": np.uint64, "position": np.int64}, parent=tmp_path) as spill:
        for start in range(0, keys.size, 333):
            spill.add(key=keys[start:start + 333], position=positions[start:start + 333])
        seen = []
        owner = {}
        parts = list(spill)
        assert len(parts) == buckets
        for index, part in enumerate(parts):
            assert np.array_equal(keys[part["position"]], part["key"])
            assert np.all(np.diff(part["position"]) > 0)  # the order rows were added in
            for key in np.unique(part["key"]):
                assert owner.setdefault(int(key), index) == index
            seen.append(part["position"])
        assert np.array_equal(np.sort(np.concatenate(seen)), positions)
        directory = spill.directory
        assert directory.parent == tmp_path
    assert not directory.exists()


def test_sequential_ids_spread_evenly():
    which = bucket_of(np.arange(1_000_000, dtype=np.int64), 8)
    counts = np.bincount(which, minlength=8)
    assert counts.min() > 0.97 * 125_000 and counts.max() < 1.03 * 125_000


def test_removed_after_an_error(tmp_path):
    with pytest.raises(RuntimeError):
        with KeyBuckets(4, {"key": np.uint64}, parent=tmp_path) as spill:
            spill.add(key=np.arange(10, dtype=np.uint64))
            list(spill)
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_bad_columns_refused(tmp_path):
    with KeyBuckets(2, {"key": np.uint64, "row_id": np.int64}, parent=tmp_path) as spill:
        with pytest.raises(ValueError, match="columns"):
            spill.add(key=np.zeros(3, np.uint64))
        with pytest.raises(ValueError, match="lengths"):
            spill.add(key=np.zeros(3, np.uint64), row_id=np.zeros(2, np.int64))
