"""pipelines.data.id_sets: an IdSet answers membership exactly like np.isin whatever its representation (a bitmap
for dense ids, the sorted ids for sparse ones), for any int64 query, and survives pickling."""

import pickle

import numpy as np
import pytest

from pipelines.data import id_sets
from pipelines.data.id_sets import IdSet, IdSetBuilder

MIN, MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _random_ids(rng, size: int, span: int, low: int) -> np.ndarray:
    """``size`` distinct sorted ids drawn from ``[low, low + span)``."""
    return low + np.sort(rng.choice(span, size=size, replace=False)).astype(np.int64)


def _queries(rng, ids: np.ndarray) -> np.ndarray:
    low, high = int(ids[0]), int(ids[-1])
    width = max(high - low, 1)
    edges = [low - 1, low, low + 1, high - 1, high, high + 1, 0, -1, 1, MIN, MIN + 1, MAX, MAX - 1]
    edges = np.array([e for e in edges if MIN <= e <= MAX], dtype=np.int64)
    around = rng.integers(max(MIN, low - width), min(MAX, high + width), size=5_000, endpoint=True)
    return np.concatenate([edges, around, ids, ids[:500] + 1, ids[:500] - 1, rng.integers(MIN, MAX, 1_000)])


# size, span of the range drawn from, first id, expected representation
CASES = [
    (5_000, 5_000, 0, "bitmap"),  # every id of the range
    (5_000, 10_000, -7_000, "bitmap"),  # half, across zero
    (1_000, 64_000, 123, "bitmap"),  # about 1 in 64: near where the bitmap stops paying
    (1_000, 1_000_000, -10**9, "array"),
    (200, 10**17, -5 * 10**16, "array"),
    (3_000, 4_000, MAX - 3_999, "bitmap"),  # up against int64's largest id
    (3_000, 4_000, MIN, "bitmap"),  # and its smallest
]


@pytest.mark.parametrize(("size", "span", "low", "kind"), CASES)
def test_membership_is_np_isin_for_any_int64(size, span, low, kind):
    rng = np.random.default_rng(size + span % 1_000)
    ids = _random_ids(rng, size, span, low)
    ids_set = IdSet.from_sorted(ids)
    assert ids_set.kind == kind and ids_set.size == len(ids_set) == size
    assert (ids_set.low, ids_set.high) == (ids[0], ids[-1])
    queries = _queries(rng, ids)
    np.testing.assert_array_equal(ids_set.contains(queries), np.isin(queries, ids))
    square = queries[:4_096].reshape(64, 64)  # any shape; other integer dtypes too
    np.testing.assert_array_equal(ids_set.contains(square), np.isin(square, ids))
    small = queries[(queries >= -(2**31)) & (queries < 2**31)].astype(np.int32)
    np.testing.assert_array_equal(ids_set.contains(small), np.isin(small, ids))
    np.testing.assert_array_equal(ids_set.to_array(), ids)
    expected = (int(ids[-1]) - int(ids[0])) // 8 + 1 if kind == "bitmap" else 8 * size
    assert ids_set.nbytes == expected


def test_the_bitmap_is_chosen_while_it_is_no_larger_than_the_ids():
    size = 100  # a bitmap of 64 * size bits takes 8 * size bytes, as many as the ids
    at_par = IdSet.from_sorted(np.r_[np.arange(size - 1), 64 * size - 1])
    assert at_par.kind == "bitmap" and at_par.nbytes == 8 * size
    wider = IdSet.from_sorted(np.r_[np.arange(size - 1), 64 * size + 7])
    assert wider.kind == "array" and wider.nbytes == 8 * size
    dense = IdSet.from_sorted(np.arange(8_000_000, step=5, dtype=np.int64))
    assert dense.kind == "bitmap" and dense.nbytes == 1_000_000  # the 1.6e6 ids take 12.8 MB


def test_extremes_of_int64_in_one_set():
    ids = np.array([MIN, -1, 0, 1, MAX], dtype=np.int64)
    ids_set = IdSet.from_sorted(ids)
    assert ids_set.kind == "array"
    queries = np.array([MIN, MIN + 1, -2, -1, 0, 1, 2, MAX - 1, MAX], dtype=np.int64)
    np.testing.assert_array_equal(ids_set.contains(queries), np.isin(queries, ids))
    single = IdSet.from_sorted([MAX])
    assert single.kind == "bitmap" and single.nbytes == 1
    np.testing.assert_array_equal(single.contains(queries), queries == MAX)


def test_empty_set_and_empty_queries():
    empty = IdSet.from_sorted(np.array([], dtype=np.int64))
    assert empty == IdSet.empty() and empty.size == 0 and empty.to_array().size == 0
    assert not empty.contains(np.array([MIN, 0, MAX])).any()
    assert empty.contains(np.array([], dtype=np.int64)).shape == (0,)
    ids_set = IdSet.from_sorted([1, 2, 3])
    assert ids_set.contains(np.array([], dtype=np.float64)).shape == (0,)
    with pytest.raises(TypeError, match="row_ids must be integers"):
        ids_set.contains(np.array([1.5]))


@pytest.mark.parametrize("ids", [[3, 1, 2], [1, 2, 2, 3], [5, 4]])
def test_ids_that_are_not_strictly_increasing_are_refused(ids):
    with pytest.raises(ValueError, match="strictly increasing"):
        IdSet.from_sorted(np.array(ids, dtype=np.int64))


@pytest.mark.parametrize(("span", "kind"), [(3_000, "bitmap"), (10**9, "array")])
@pytest.mark.parametrize("cut", ["even", "gap"])
def test_chunks_added_one_after_the_other_give_the_set_of_the_whole(span, kind, cut):
    """Chunks each kept as a bitmap or as ids, whatever the set's own representation: a chunk of the dense set
    spanning the gap is held as ids; chunks of the sparse set's dense cluster are held as bitmaps."""
    rng = np.random.default_rng(span % 97)
    ids = _random_ids(rng, 2_000, span, -span // 2)
    if cut == "gap":  # a dense cluster far from the rest (still a bitmap for the dense set: 2_000 * 64 > 3_000 + gap)
        ids = np.r_[ids[:1_000], ids[-1] + (10_000 if kind == "bitmap" else 10**12) + np.arange(1_000)]
    cuts = np.sort(rng.choice(np.arange(1, ids.size), size=30, replace=False))
    chunks = [*np.split(ids, cuts), np.array([], dtype=np.int64)]
    chunks.insert(3, ids[:0])
    builder = IdSetBuilder()
    for chunk in chunks:
        builder.add(chunk)
    assert (builder.size, builder.low, builder.high) == (ids.size, ids[0], ids[-1])
    held_as_ids = {first < 0 for first, _ in builder._pieces}  # (a chunk of one id is a bitmap of one byte)
    assert (held_as_ids == {True, False}) if cut == "gap" else ((kind == "array") in held_as_ids)
    built = builder.build()
    assert built == IdSet.from_sorted(ids) and built.kind == kind and built.size == ids.size
    np.testing.assert_array_equal(built.to_array(), ids)
    queries = _queries(rng, ids)
    np.testing.assert_array_equal(built.contains(queries), np.isin(queries, ids))
    assert builder.build() == IdSet.empty()  # the builder was emptied


@pytest.mark.parametrize("chunks", [
    [[1, 2, 3], [3, 4]],  # repeated across a chunk boundary
    [[1, 2, 5], [4, 6]],  # decreasing across a chunk boundary
    [[1, 2], [5, 4]],
])
def test_chunks_that_do_not_follow_each_other_are_refused(chunks):
    builder = IdSetBuilder()
    builder.add(np.array(chunks[0]))
    with pytest.raises(ValueError, match="strictly increasing"):
        builder.add(np.array(chunks[1]))
    assert builder.build() == IdSet.from_sorted(chunks[0])  # the refused chunk was not added


@pytest.mark.parametrize("span", [6_000, 10**12])
def test_pickling_keeps_the_set_and_its_representation(span):
    ids = _random_ids(np.random.default_rng(1), 3_000, span, 10)
    ids_set = IdSet.from_sorted(ids)
    back = pickle.loads(pickle.dumps(ids_set))
    assert back == ids_set and back.kind == ids_set.kind and back.nbytes == ids_set.nbytes
    queries = _queries(np.random.default_rng(2), ids)
    np.testing.assert_array_equal(back.contains(queries), np.isin(queries, ids))
    assert len(pickle.dumps(ids_set)) < ids_set.nbytes + 1_000


def test_a_set_cannot_be_changed():
    ids_set = IdSet.from_sorted(np.arange(100))
    with pytest.raises(AttributeError, match="immutable"):
        ids_set.size = 3
    for held in (ids_set, pickle.loads(pickle.dumps(ids_set))):
        with pytest.raises(ValueError, match="read-only"):
            held._bits[0] = 0
    source = np.arange(0, 10**6, 10**5)
    copied = IdSet.from_sorted(source)
    source[0] = 7  # the set copied the ids
    assert copied.contains(np.array([0]))[0] and not copied.contains(np.array([7]))[0]
    assert IdSet.from_sorted([1, 2]) != IdSet.from_sorted([1, 3]) and IdSet.from_sorted([1, 2]) != [1, 2]


def test_to_array_across_unpacked_pieces(monkeypatch):
    monkeypatch.setattr(id_sets, "_UNPACK_BYTES", 7)
    ids = _random_ids(np.random.default_rng(4), 500, 900, -450)
    np.testing.assert_array_equal(IdSet.from_sorted(ids).to_array(), ids)
