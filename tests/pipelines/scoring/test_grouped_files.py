"""The two-stage plan's grouped spill files (`pipelines.scoring.grouped_files`): every key's rows come back from
every batch, in batch-name order, whatever the group size; torn writes are not read; batches that disagree on
the keys are refused."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.scoring.grouped_files import key_order, key_rows, merge_sorted, read_groups, write_grouped


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


def test_only_the_keys_asked_for_are_read(tmp_path):
    rng = np.random.default_rng(3)
    expected = _write_batches(tmp_path, rng, batches=3, keys=6, rows=100)
    assert [key for key, _ in read_groups(tmp_path, keys={1, 4, 99})] == [1, 4]
    assert key_rows(tmp_path).tolist() == [sum(ids.size for ids, _ in expected[k]) for k in range(6)]
    assert key_rows(tmp_path / "missing").size == 0


@pytest.mark.parametrize("seed", range(5))
def test_the_groups_read_only_the_keys_asked_for(seed):
    """A group is a range of keys whose rows are read in one slice of every batch: it must hold no key left out
    (a slot merged as a stream instead, whose rows may be 1e9), and stay within max_rows unless one key is more."""
    from pipelines.scoring.grouped_files import _groups

    rng = np.random.default_rng(seed)
    totals = rng.integers(0, 100, 40) * (rng.random(40) < 0.8)
    wanted = rng.random(40) < 0.6
    groups = _groups(totals, 150, wanted)
    covered = [key for lo, hi in groups for key in range(lo, hi)]
    assert covered == sorted(set(covered)) and set(covered) == set(np.flatnonzero(wanted).tolist())
    assert all(totals[lo:hi].sum() <= 150 or hi - lo == 1 for lo, hi in groups)
    assert _groups(totals, 150) == _groups(totals, 150, np.ones(40, bool))


def _sort_key(rows):
    return rows["major"], rows["minor"]


@pytest.mark.parametrize("layout", ["interleaved", "disjoint", "ties", "one-batch"])
@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 10**6])
def test_merge_sorted_streams_one_key_in_order(tmp_path, layout, chunk_rows):
    """Batches each sorted by (major, minor) merge into the one ascending order of all their rows, chunk by
    chunk, every row once, and no chunk larger than the runs' windows allow."""
    rng = np.random.default_rng(hash(layout) % 1000)
    batches = 1 if layout == "one-batch" else 9
    everything = []
    for b in range(batches):
        rows = int(rng.integers(0, 300))
        key = rng.integers(0, 3, rows)
        if layout == "disjoint":  # each batch holds its own range of keys, as files in row-id order do
            major = np.full(rows, 5, np.uint64)
            minor = np.arange(rows, dtype=np.int64) + 1000 * b
        else:
            major = rng.integers(0, 3 if layout == "ties" else 1 << 40, rows).astype(np.uint64)
            minor = rng.permutation(rows).astype(np.int64) * batches + b  # unique across batches
        order = np.lexsort((minor, major, key))  # grouped by key, sorted within it
        offsets = np.zeros(4, np.int64)
        offsets[1:] = np.cumsum(np.bincount(key, minlength=3))
        write_grouped(tmp_path, f"b{b:02d}", offsets, {"major": major[order], "minor": minor[order],
                                                          "key": key[order]})
        everything.append((major[key == 1], minor[key == 1]))
    major = np.concatenate([m for m, _ in everything])
    minor = np.concatenate([m for _, m in everything])
    order = np.lexsort((minor, major))
    chunks = list(merge_sorted(tmp_path, 1, _sort_key, chunk_rows=chunk_rows))
    assert chunks and all(chunk.size for chunk in chunks)
    assert all(chunk.size <= max(1, chunk_rows // batches) * batches for chunk in chunks)
    merged = np.concatenate(chunks)
    np.testing.assert_array_equal(merged["major"], major[order])
    np.testing.assert_array_equal(merged["minor"], minor[order])
    assert (merged["key"] == 1).all()


def test_a_merge_of_more_runs_than_the_process_may_open_files(tmp_path):
    """A day of 1e9 rows has thousands of batches: the merge must not hold a file open per run. With the soft
    limit on open files just above what the process already holds, 200 runs still merge whole and in order."""
    resource = pytest.importorskip("resource")
    import os

    rng = np.random.default_rng(3)
    minors = []
    for b in range(200):
        minor = np.sort(rng.choice(10**6, 20, replace=False)).astype(np.int64) * 200 + b
        write_grouped(tmp_path, f"b{b:03d}", np.array([0, 20]), {"major": np.zeros(20, np.uint64), "minor": minor})
        minors.append(minor)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
    try:
        merged = np.concatenate(list(merge_sorted(tmp_path, 0, _sort_key, chunk_rows=64)))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    np.testing.assert_array_equal(merged["minor"], np.sort(np.concatenate(minors)))
