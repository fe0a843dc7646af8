"""The compiled game (auditing/game/kernel.py) equals the numpy reference path bit for bit."""

import logging

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game import kernel as game_kernel
from auditing.game.attack_curve import OCTAVES, octave_of_fine
from auditing.game.config import GameConfig
from auditing.game.keyed_random import STREAM_BIT, STREAM_COUNTERFACTUAL, key_word, keyed_uniform
from auditing.game.play import as_class_probabilities, play_repetition
from auditing.game.scores import resolve_score
from auditing.game.sweep import correct_at, rank_order
from auditing.game.sweep_reduce import (
    BinSpec,
    bin_index,
    boundary_bins,
    cut_bin_mask,
    exact_counts,
    histogram,
)
from labeldp.codec import encode


def _world(k: int, n: int, seed: int, decimals: int | None = None):
    """Random class probabilities (rounded to `decimals` to make tied scores), labels and scattered row ids."""
    rng = np.random.default_rng(seed)
    if k == 2:
        target, reference = rng.random(n), rng.random(n)
        if decimals is not None:
            # A reference must not be certain of a label (auditing.game.play.as_reference_probabilities).
            step = 10.0 ** -decimals
            target, reference = np.round(target, decimals), np.clip(np.round(reference, decimals), step, 1 - step)
        target, reference = as_class_probabilities(target, "t"), as_class_probabilities(reference, "r")
    else:
        target, reference = rng.dirichlet(np.ones(k), n), rng.dirichlet(np.ones(k), n)
        if decimals is not None:
            target = np.round(target, decimals)
            target[:, -1] = np.clip(1.0 - target[:, :-1].sum(axis=1), 0.0, 1.0)
            target /= target.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    row_ids = rng.permutation(n).astype(np.int64) * 104_729 - 3 * n  # unique, negative ones included
    return target, reference, labels, row_ids


def test_compiled_uniforms_are_keyed_uniform_bit_for_bit():
    ids = np.concatenate([np.arange(-5, 5), np.array([2**62, -(2**63), 2**63 - 1]),
                          np.random.default_rng(0).integers(-(2**63), 2**63 - 1, 2000)]).astype(np.int64)
    for seed, repetition, stream in [(0, 0, STREAM_COUNTERFACTUAL), (7, 99, STREAM_BIT), (2**40, 3, 5)]:
        key = key_word(seed, repetition, stream)
        got = np.array([game_kernel._uniform(np.uint64(i), key) for i in ids.view(np.uint64)])
        assert np.array_equal(got, keyed_uniform(seed, repetition, stream, ids))


def test_integer_draw_comparisons_equal_the_float_ones_at_the_edges():
    """The binary kernels compare the 53-bit word m with ceil(p * 2**53) and take b from the word's top bit;
    that must equal u < p and u < 1/2 for u = m * 2**-53, including p exactly on a uniform's value, one ulp
    either side of it, 0, 1 and subnormal p."""
    rng = np.random.default_rng(5)
    m = np.concatenate([rng.integers(0, 2**53, 5000), [0, 1, 2**52 - 1, 2**52, 2**52 + 1, 2**53 - 1]]).astype(np.uint64)
    u = m.astype(np.float64) * 2.0**-53
    for p in [u, np.nextafter(u, 2.0), np.nextafter(u, -1.0), np.zeros_like(u), np.ones_like(u),
              np.full_like(u, 5e-324), rng.random(u.size)]:
        p = np.clip(p, 0.0, 1.0)
        assert np.array_equal(m < game_kernel.threshold_bits(p), u < p)
    words = (m << np.uint64(11)) | rng.integers(0, 2**11, m.size).astype(np.uint64)  # any low 11 bits
    assert np.array_equal((words >> np.uint64(63)) == 0, u < 0.5)


def test_histograms_do_not_depend_on_threads():
    target, reference, labels, ids = _world(2, 5000, 11)
    tables = game_kernel.game_tables(target, reference, labels, ids, score="paper", power=2.0, bins=BinSpec())
    keys = game_kernel.slot_keys(11, [(r, None) for r in range(9)])
    results = []
    for threads in (None, 1, 2):
        rows = np.zeros((9, BinSpec().num_bins), np.int64)
        hits = np.zeros_like(rows)
        game_kernel.slot_histograms(tables, keys, rows, hits, threads=threads)
        results.append((rows, hits))
    assert rows.sum() == 9 * 5000
    for rows, hits in results[1:]:
        assert np.array_equal(rows, results[0][0]) and np.array_equal(hits, results[0][1])


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("score", ["paper", "log-ratio"])
def test_histograms_and_rows_equal_play_repetition(k, score):
    spec = BinSpec()
    for seed, power in [(1, 2.0), (2, 1.5), (3, 0.0)]:
        target, reference, labels, ids = _world(k, 3000, seed)
        reps = [0, 1, 17]
        keys = game_kernel.slot_keys(seed, [(r, None) for r in reps])
        tables = game_kernel.game_tables(target, reference, labels, ids, score=score, power=power, bins=spec)
        rows = np.zeros((len(reps), spec.num_bins), np.int64)
        hits = np.zeros_like(rows)
        for start, stop in [(0, 1), (1, 700), (700, 2048), (2048, 3000)]:  # chunks add up
            game_kernel.slot_histograms(tables.slice(start, stop), keys, rows, hits)
        for index, r in enumerate(reps):
            game = play_repetition(target, reference, labels, ids, seed=seed, repetition=r,
                                   score=resolve_score(score, power))
            expected_rows, expected_hits = histogram(bin_index(game.scores, spec), game.correct, spec.num_bins)
            assert np.array_equal(rows[index], expected_rows) and np.array_equal(hits[index], expected_hits)
            compiled = game_kernel.play(tables, seed, r)
            assert np.array_equal(compiled.scores, game.scores)  # bit-identical doubles
            assert np.array_equal(compiled.correct, game.correct)


@pytest.mark.parametrize("k", [2, 3])
def test_a_repetition_s_two_halves_counted_in_one_pass_equal_each_half_alone(k):
    """`slot_histograms` counts a repetition's half-0 and half-1 slots (and its all-rows slot, their sum) from one
    pass of its draws: the same histograms as each slot counted alone, wherever the slots sit, at any threads."""
    spec = BinSpec()
    target, reference, labels, ids = _world(k, 70_001, 5)
    selection = game_kernel.keyed_below_half(ids, np.uint64(12345))
    tables = game_kernel.game_tables(target, reference, labels, ids, score="paper", power=2.0, bins=spec,
                                     selection=selection)
    slots = [(3, 1), (0, None), (3, 0), (1, None), (0, 0), (0, 1), (3, None), (5, 1)]
    keys = game_kernel.slot_keys(9, slots)
    alone = [np.zeros((len(slots), spec.num_bins), np.int64) for _ in range(2)]
    for s in range(len(slots)):
        game_kernel.slot_histograms(tables, keys.subset([s]), alone[0][s:s + 1], alone[1][s:s + 1])
    assert game_kernel._paired_halves(keys)[0] == [(2, 0, 6), (4, 5, 1)]
    group = octave_of_fine(spec)
    for threads in (1, 2):
        for slot, repetition in ((6, 3), (1, 0), (7, 5)):  # in the pass of its halves (6, 1) or on its own (7)
            together = [np.zeros_like(alone[0]) for _ in range(2)]
            signed = np.zeros((OCTAVES, 2, 2), np.int64)
            game_kernel.slot_histograms(tables, keys, *together, threads=threads,
                                        signed=game_kernel.SignedCounts(slot, group, signed))
            assert np.array_equal(together[0], alone[0]) and np.array_equal(together[1], alone[1])
            assert np.array_equal(signed, game_kernel.signed_outcomes(tables, 9, repetition, group, OCTAVES))
    assert alone[0][2].sum() == selection.sum() and alone[0][0].sum() == 70_001 - selection.sum()


@pytest.mark.parametrize("block", [3, None])
@pytest.mark.parametrize("k", [2, 3])
def test_boundary_rows_complete_the_exact_counts(k, block, monkeypatch):
    """Pass 1 + pass 2 of the kernel give correct_at(rank_order(...)) exactly, ties (rounded scores) included,
    for whole repetitions and for the split strategy's halves of repetition 0; whatever the block the replay
    plays a bin's rows in (3: many blocks per cut bin, and blocks ending inside a bin)."""
    if block is not None:
        monkeypatch.setattr(game_kernel, "_BOUNDARY_BLOCK", block)
    spec = BinSpec(mantissa_bits=4)  # coarse bins: many rows per cut bin
    target, reference, labels, ids = _world(k, 4000, 11, decimals=2)
    selection = np.random.default_rng(5).random(ids.size) < 0.5
    slots = [(0, None), (3, None), (0, 0), (0, 1)]
    keys = game_kernel.slot_keys(4, slots)
    tables = game_kernel.game_tables(target, reference, labels, ids, score="paper", power=2.0, bins=spec,
                                     selection=selection)
    rows = np.zeros((len(slots), spec.num_bins), np.int64)
    hits = np.zeros_like(rows)
    game_kernel.slot_histograms(tables, keys, rows, hits)
    grid = np.unique(np.concatenate([np.arange(1, 60), np.geomspace(1, 1900, 40).astype(np.int64)]))
    bounds = [boundary_bins(rows[s], hits[s], grid) for s in range(len(slots))]
    found = game_kernel.boundary_rows(tables, keys, np.stack([cut_bin_mask(b, spec.num_bins) for b in bounds]))
    for s, (r, half) in enumerate(slots):
        game = play_repetition(target, reference, labels, ids, seed=4, repetition=r, score=resolve_score("paper"))
        keep = np.ones(ids.size, bool) if half is None else (selection if half == 0 else ~selection)
        expected = correct_at(game.correct[keep], rank_order(game.scores[keep], ids[keep]), grid)
        assert bounds[s].cut_bins().size > 0
        assert np.array_equal(exact_counts(bounds[s], *found.of(s)), expected)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("strategy", ["bonferroni", "split"])
@pytest.mark.parametrize("score", ["paper", "log-ratio"])
def test_run_audit_compiled_equals_numpy_path(k, strategy, score):
    target, reference, labels, ids = _world(k, 2500, 21, decimals=3)
    config_game, bound = GameConfig(repetitions=4, seed=3, score=score, grid_points=40), BoundConfig(strategy=strategy)
    compiled = encode(run_audit(target, reference, labels, ids, config_game, bound))
    numpy_path = encode(run_audit(target, reference, labels, ids, config_game, bound,
                                  score_function=resolve_score(score, config_game.score_power)))
    assert numpy_path.pop("score") == "custom"
    compiled.pop("score")
    assert compiled == numpy_path


def test_custom_score_falls_back_to_numpy_and_says_so(caplog):
    target, reference, labels, ids = _world(2, 500, 8)

    def centred(p_target, p_reference):  # not elementwise: depends on the whole batch
        s = p_target - p_reference
        return s - s.mean()

    assert not game_kernel.compiled_score(centred) and game_kernel.compiled_score("paper")
    with caplog.at_level(logging.INFO, logger="auditing.audit"):
        result = run_audit(target, reference, labels, ids, GameConfig(repetitions=2), BoundConfig(), score_function=centred)
    assert "numpy path" in caplog.text and result.score == "custom"
    grid = GameConfig().grid_for(500)
    game = play_repetition(target, reference, labels, ids, seed=0, repetition=0, score=centred)
    expected = correct_at(game.correct, rank_order(game.scores, ids), grid)
    assert [point.correct for point in result.curve] == expected.tolist()
    with caplog.at_level(logging.INFO, logger="auditing.audit"):
        caplog.clear()
        run_audit(target, reference, labels, ids, GameConfig(repetitions=1), BoundConfig())
    assert "numpy path" not in caplog.text
    with pytest.raises(Exception, match="no compiled form"):
        game_kernel.game_tables(target, reference, labels, ids, score="nope", power=2.0, bins=BinSpec())


def test_score_codes_equal_the_numpy_bins_and_signs():
    """The game tables' codes (one compiled pass over the scores' bits) are bin_index(s) << 1 | (s > 0) for
    every score, signed zeros, subnormals, the window's edges and infinities included, at several bin specs."""
    from auditing.game.kernel import score_codes
    from auditing.game.sweep_reduce import BinSpec, bin_index

    rng = np.random.default_rng(8)
    scores = np.concatenate([rng.normal(0, 1, 5000) * 10.0 ** rng.integers(-45, 8, 5000),
                             [0.0, -0.0, 5e-324, -5e-324, 2.0 ** -40, 2.0 ** 6, -2.0 ** 6, np.inf, -np.inf]])
    table = np.column_stack([scores, -scores[::-1]])
    for spec in (BinSpec(), BinSpec(mantissa_bits=10), BinSpec(mantissa_bits=3, min_exponent=-5, max_exponent=2)):
        expected = ((bin_index(table, spec) << 1) | (table > 0)).astype(np.int32)
        assert np.array_equal(score_codes(table, spec), expected)


@pytest.mark.parametrize("k", [2, 3, 7])
def test_the_compiled_paper_score_codes_equal_the_numpy_score_s_codes(k):
    """The default score (paper, power 2) is computed in the kernel: the same codes as numpy's doubles, edge
    values included (0, 1, subnormals, equal probabilities), at two bin resolutions."""
    from auditing.game.kernel import _paper_squared_codes, score_codes
    from auditing.game.scores import paper_score
    from auditing.game.sweep_reduce import BinSpec

    rng = np.random.default_rng(k)
    p_target, p_reference = rng.random((20_000, k)), rng.random((20_000, k))
    p_target[:5], p_reference[5:10], p_target[10:15] = 0.0, 1.0, 1e-310
    p_reference[15:20] = p_target[15:20]
    for bins in (BinSpec(), BinSpec(mantissa_bits=4)):
        codes = np.empty(p_target.shape, np.int32)
        threshold = np.empty(20_000 if k == 2 else 0, np.uint64)
        assert _paper_squared_codes(p_target, p_reference, bins.pattern_shift, bins.low_code, bins.num_bins - 1,
                                    codes, threshold) == 0
        assert np.array_equal(codes, score_codes(paper_score(p_target, p_reference, 2.0), bins))
        if k == 2:  # a binary model's thresholds come from the same pass
            assert np.array_equal(threshold, game_kernel.threshold_bits(p_reference[:, 1]))


@pytest.mark.parametrize("k", [2, 3])
def test_compiled_abs_scores_are_numpys_bit_for_bit(k):
    """The boundary pass's |scores| of the paper's score at power 2 (compiled) are the doubles of the numpy score
    function the in-process game ranks by, for rows in any order and repeated."""
    from auditing.game.scores import paper_score

    target, reference, labels, ids = _world(k, 5000, 17)
    tables = game_kernel.game_tables(target, reference, labels, ids, score="paper", power=2.0, bins=BinSpec())
    rows = np.random.default_rng(2).integers(0, 5000, 3000)
    expected = np.abs(paper_score(target[rows], reference[rows], 2.0))
    got = tables.abs_scores_of_rows(rows)
    assert got.dtype == np.float64 and got.shape == (3000, k)
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))
    other = game_kernel.game_tables(target, reference, labels, ids, score="paper", power=1.5, bins=BinSpec())
    assert np.array_equal(other.abs_scores_of_rows(rows), np.abs(paper_score(target[rows], reference[rows], 1.5)))
