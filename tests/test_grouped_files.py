"""The two-stage plan's grouped spill files (`pipelines.scoring.grouped_files`): every key's rows come back from
every batch, in batch-name order, whatever the group size; torn writes are not read; batches that disagree on
the keys are refused."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.scoring.grouped_files import key_order, read_groups, write_grouped


def _write_batches(directory, rng, batches: int, keys: int, rows: int) -> dict[int, list[np.ndarray]]:
    """Random batches; returns {key: [(ids, values) per batch in name order]} as written."""
    expected: dict[int, list] = {}
    for b in range(batches):
        key = rng.integers(0, keys, rows)
        key[key == 3] = 2  # key 3 never has rows
        ids = rng.integers(-(1 << 62), 1 << 62, rows)
        values = rng.random(rows)
        order, offsets = key_order(key, keys)
        write_grouped(directory, f"batch-{b:03d}", offsets, {"ids": ids[order], "values": values[order]})
        for k in range(keys):
            mask = key == k
            expected.setdefault(k, []).append((ids[mask], values[mask]))
    return expected


@pytest.mark.parametrize("max_rows", [1, 50, 10**9])
def test_every_key_comes_back_whole_and_in_batch_order(tmp_path, max_rows):
    rng = np.random.default_rng(7)
    expected = _write_batches(tmp_path, rng, batches=5, keys=12, rows=300)
    seen = []
    for key, columns in read_groups(tmp_path, max_rows=max_rows):
        seen.append(key)
        ids = np.concatenate([ids for ids, _ in expected[key]])
        values = np.concatenate([values for _, values in expected[key]])
        # stable grouping: within a batch the rows keep their order, and batches come in name order
        np.testing.assert_array_equal(columns["ids"], ids)
        np.testing.assert_array_equal(columns["values"], values)
        assert columns["ids"].dtype == np.int64 and columns["values"].dtype == np.float64
    assert seen == [k for k in range(12) if k != 3]  # keys without rows are skipped, the others in order


def test_a_torn_write_and_a_batch_without_offsets_are_not_read(tmp_path):
    rng = np.random.default_rng(1)
    _write_batches(tmp_path, rng, batches=2, keys=4, rows=50)
    (tmp_path / ".tmp-123-batch-009.offsets.npy").write_bytes(b"torn")
    # a data file whose offsets were never written (the write was interrupted between the two)
    (tmp_path / "batch-010.rows.npy").write_bytes(b"partial")
    total = sum(columns["ids"].size for _, columns in read_groups(tmp_path))
    assert total == 100


def test_batches_that_disagree_on_the_keys_are_refused(tmp_path):
    write_grouped(tmp_path, "a", np.array([0, 1, 2]), {"x": np.arange(2)})
    write_grouped(tmp_path, "b", np.array([0, 1, 1, 2]), {"x": np.arange(2)})
    with pytest.raises(RuntimeError, match="disagree on the number of keys"):
        list(read_groups(tmp_path))


def test_columns_must_match_the_offsets(tmp_path):
    with pytest.raises(ValueError, match="column 'x' has 3 rows; the offsets say 2"):
        write_grouped(tmp_path, "a", np.array([0, 2]), {"x": np.arange(3)})
    assert not list(tmp_path.iterdir())


def test_keys_outside_the_range_are_refused():
    with pytest.raises(ValueError, match=r"keys must lie in \[0, 4\); got 0..4"):
        key_order(np.array([0, 4]), 4)


def test_an_empty_directory_yields_nothing(tmp_path):
    assert list(read_groups(tmp_path)) == []
    assert list(read_groups(tmp_path / "missing")) == []
