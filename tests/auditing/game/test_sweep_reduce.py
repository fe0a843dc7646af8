"""Exact sweep counts from merged histograms + boundary rows equal the in-process ranking, for any chunking."""

import numpy as np
import pytest

from auditing.game.sweep import correct_at, guess_grid, rank_key, rank_order
from auditing.game.sweep_reduce import (
    BinSpec,
    RankedCounts,
    bin_index,
    boundary_bins,
    cut_bin_mask,
    exact_counts,
    histogram,
)
from labeldp.errors import LabelDPInputError


def tied_scores(rng, n):
    """Scores with many exact ties: few distinct magnitudes, both signs, zeros, -0.0, tiny and huge values."""
    levels = np.concatenate(([0.0, -0.0, 1e-300, 5e-13, 2.0**-40, 1e3, np.inf], np.round(rng.uniform(-1, 1, 40), 3)))
    s = rng.choice(levels, size=n)
    s[: n // 3] = rng.normal(scale=0.01, size=n // 3)  # plus a continuous part
    return rng.permutation(s)


def reduce_in_chunks(scores, ids, correct, grid, spec, cuts):
    """What the Beam job does: per-chunk histograms merged by addition, then the cut bins' rows per chunk."""
    bins_all = []
    rows = np.zeros(spec.num_bins, dtype=np.int64)
    hits = np.zeros(spec.num_bins, dtype=np.int64)
    for chunk in np.split(np.arange(scores.size), cuts):
        b = bin_index(scores[chunk], spec)
        r, h = histogram(b, correct[chunk], spec.num_bins)
        rows += r
        hits += h
        bins_all.append(b)
    bounds = boundary_bins(rows, hits, grid)
    mask = cut_bin_mask(bounds, spec.num_bins)
    picked = [np.flatnonzero(mask[b]) + start
              for b, start in zip(bins_all, np.concatenate(([0], cuts)), strict=True)]
    keep = np.concatenate(picked)[::-1]  # any order
    return exact_counts(bounds, bin_index(scores[keep], spec), np.abs(scores[keep]), ids[keep], correct[keep]), bounds


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mantissa_bits", [0, 3, 8])
def test_exact_counts_equal_in_process_for_many_chunkings(seed, mantissa_bits):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4000))
    scores = tied_scores(rng, n)
    ids = rng.permutation(np.arange(n, dtype=np.int64) * 7 + 2**40)
    correct = rng.random(n) < 0.6
    spec = BinSpec(mantissa_bits=mantissa_bits)
    for grid in (guess_grid(n), guess_grid(n, kind="paper"), np.arange(1, n + 1)):
        expected = correct_at(correct, rank_order(scores, ids), grid)
        for _ in range(4):
            cuts = np.sort(rng.choice(np.arange(1, n + 1), size=int(rng.integers(0, 8)), replace=True))
            got, _ = reduce_in_chunks(scores, ids, correct, grid, spec, cuts)
            assert np.array_equal(got, expected)


def test_bin_index_is_monotone_and_clipped():
    spec = BinSpec(mantissa_bits=4, min_exponent=-3, max_exponent=2)
    x = np.sort(np.concatenate(([0.0, 1e-300, 0.1, 0.125, 0.126, 1.0, 3.99, 4.0, 1e9, np.inf],
                                np.random.default_rng(0).uniform(0, 5, 1000))))
    b = bin_index(x, spec)
    assert np.all(np.diff(b) >= 0)
    assert b[0] == 0 and b[-1] == spec.num_bins - 1 and spec.num_bins == 5 * 16 + 2
    assert bin_index(np.array([0.1]), spec)[0] == 0  # below 2**-3: underflow
    assert bin_index(np.array([0.125]), spec)[0] == 1  # first window bin
    assert bin_index(np.array([-2.5]), spec)[0] == bin_index(np.array([2.5]), spec)[0]
    assert bin_index(np.array([-0.0]), spec)[0] == bin_index(np.array([0.0]), spec)[0] == 0


def test_boundaries_by_hand():
    # bins 0..3, ranked from bin 3 down: bin 3 has 2 rows (1 correct), bin 2 none, bin 1 three (2), bin 0 one (0)
    b = boundary_bins(np.array([1, 3, 0, 2]), np.array([0, 2, 0, 1]), np.array([1, 2, 3, 5, 6]))
    assert b.bin.tolist() == [3, 3, 1, 1, 0]
    assert b.rows_above.tolist() == [0, 0, 2, 2, 5]
    assert b.correct_above.tolist() == [0, 0, 1, 1, 3]
    assert b.take.tolist() == [1, 2, 1, 3, 1]
    assert b.complete.tolist() == [False, True, False, True, True]
    assert b.cut_bins().tolist() == [1, 3] and b.boundary_rows() == 5


def test_exact_counts_detects_lost_or_duplicated_rows():
    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=500), 1)
    ids = np.arange(500, dtype=np.int64)
    correct = rng.random(500) < 0.5
    spec = BinSpec(mantissa_bits=1)
    bins = bin_index(scores, spec)
    bounds = boundary_bins(*histogram(bins, correct, spec.num_bins), guess_grid(500))
    keep = np.flatnonzero(cut_bin_mask(bounds, spec.num_bins)[bins])
    assert keep.size == bounds.boundary_rows() > 0
    expected = correct_at(correct, rank_order(scores, ids), guess_grid(500))
    assert np.array_equal(exact_counts(bounds, bins[keep], scores[keep], ids[keep], correct[keep]), expected)
    with pytest.raises(RuntimeError, match="disagree with the histogram"):
        exact_counts(bounds, bins[keep[1:]], scores[keep[1:]], ids[keep[1:]], correct[keep[1:]])
    dup = np.concatenate((keep, keep[:1]))
    with pytest.raises(RuntimeError, match="disagree with the histogram"):
        exact_counts(bounds, bins[dup], scores[dup], ids[dup], correct[dup])


def test_bad_inputs_name_the_argument():
    with pytest.raises(LabelDPInputError, match="mantissa_bits"):
        BinSpec(mantissa_bits=30)
    with pytest.raises(LabelDPInputError, match="min_exponent"):
        BinSpec(min_exponent=3, max_exponent=3)
    with pytest.raises(LabelDPInputError, match="grid values"):
        boundary_bins(np.array([1, 2]), np.array([0, 1]), np.array([4]))


@pytest.mark.parametrize("seed", range(4))
def test_rank_key_orders_like_rank_order(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    scores = tied_scores(rng, n)
    ids = rng.permutation(np.arange(n, dtype=np.int64) * 3 - 1000)  # negative ids too
    primary, secondary = rank_key(np.abs(scores), ids)
    assert np.array_equal(np.lexsort((secondary, primary)), rank_order(scores, ids))


def ranked_counts(scores, ids, correct, grid, spec, chunk_sizes, rng):
    """`RankedCounts` fed the cut bins' rows in rank order, split into chunks of the given sizes, with rows of
    uncut bins mixed in (ignored)."""
    b = bin_index(scores, spec)
    rows, hits = histogram(b, correct, spec.num_bins)
    bounds = boundary_bins(rows, hits, grid)
    keep = np.flatnonzero(cut_bin_mask(bounds, spec.num_bins, margin=1)[b])
    order = keep[rank_order(scores[keep], ids[keep])]
    counter = RankedCounts(bounds)
    start = 0
    while start < order.size:
        part = order[start:start + int(rng.choice(chunk_sizes))]
        counter.add(b[part], np.abs(scores[part]), ids[part], correct[part])
        start += part.size
    return counter.counts()


@pytest.mark.parametrize("seed", range(6))
def test_ranked_counts_equal_in_process(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 5000))
    scores = tied_scores(rng, n)
    if seed == 0:
        scores[:] = 0.0  # one bin, every grid point cut inside it: the negative control's case
    ids = rng.permutation(np.arange(n, dtype=np.int64) * 5 + 7)
    correct = rng.random(n) < 0.5
    spec = BinSpec(mantissa_bits=int(rng.choice([0, 3, 8])))
    for grid in (guess_grid(n), np.arange(1, n + 1)):
        expected = correct_at(correct, rank_order(scores, ids), grid)
        for sizes in ((1,), (1, 2, 3), (17, 400), (n,)):
            assert np.array_equal(ranked_counts(scores, ids, correct, grid, spec, sizes, rng), expected)


def test_ranked_counts_refuse_rows_out_of_order_lost_or_repeated():
    rng = np.random.default_rng(5)
    n = 500
    scores = np.zeros(n)
    ids = np.arange(n, dtype=np.int64)
    correct = rng.random(n) < 0.5
    spec = BinSpec()
    b = bin_index(scores, spec)
    rows, hits = histogram(b, correct, spec.num_bins)
    bounds = boundary_bins(rows, hits, guess_grid(n))
    order = rank_order(scores, ids)

    swapped = order.copy()
    swapped[[10, 11]] = swapped[[11, 10]]
    counter = RankedCounts(bounds)
    with pytest.raises(RuntimeError, match="out of rank order"):
        counter.add(b[swapped], scores[swapped], ids[swapped], correct[swapped])

    counter = RankedCounts(bounds)  # chunks fed in the wrong order
    counter.add(b[order[250:]], scores[order[250:]], ids[order[250:]], correct[order[250:]])
    with pytest.raises(RuntimeError, match="out of rank order"):
        counter.add(b[order[:250]], scores[order[:250]], ids[order[:250]], correct[order[:250]])

    counter = RankedCounts(bounds)  # a row lost
    lost = np.delete(order, 100)
    counter.add(b[lost], scores[lost], ids[lost], correct[lost])
    with pytest.raises(RuntimeError, match="disagree with the histogram"):
        counter.counts()
