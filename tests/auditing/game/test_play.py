"""The game (paper Alg. 2): chunking invariance, sampling distributions, input checks, and the probability row
checks (one pass, compiled for two classes) equal to numpy's (its keyed coins: test_keyed_random.py)."""

import numpy as np
import pytest
from scipy import stats

from auditing.game.keyed_random import STREAM_COUNTERFACTUAL, keyed_uniform
from auditing.game.play import (
    as_class_probabilities,
    as_labels,
    as_row_ids,
    duplicate_count,
    play_repetition,
    sample_counterfactual,
)
from auditing.game.scores import resolve_score
from labeldp.errors import LabelDPInputError


def make_rows(n, k, seed=0):
    rng = np.random.default_rng(seed)
    target = rng.dirichlet(np.ones(k), size=n)
    reference = rng.dirichlet(np.ones(k), size=n)
    labels = rng.integers(0, k, size=n)
    row_ids = rng.permutation(10 * n)[:n].astype(np.int64)
    return target, reference, labels, row_ids


@pytest.mark.parametrize("k", [2, 5])
def test_repetition_is_invariant_to_chunking_and_order(k):
    target, reference, labels, ids = make_rows(3000, k)
    score = resolve_score("paper")
    whole = play_repetition(target, reference, labels, ids, seed=9, repetition=4, score=score)
    for chunk in (1, 7, 1000):
        parts = [
            play_repetition(target[i:i + chunk], reference[i:i + chunk], labels[i:i + chunk], ids[i:i + chunk],
                            seed=9, repetition=4, score=score)
            for i in range(0, 3000, chunk)
        ]
        assert np.array_equal(np.concatenate([p.scores for p in parts]), whole.scores)
        assert np.array_equal(np.concatenate([p.correct for p in parts]), whole.correct)
    perm = np.random.default_rng(1).permutation(3000)
    shuffled = play_repetition(target[perm], reference[perm], labels[perm], ids[perm], seed=9, repetition=4, score=score)
    assert np.array_equal(shuffled.scores, whole.scores[perm])


def test_counterfactual_follows_reference_distribution():
    n, k = 200_000, 4
    p = np.tile([0.1, 0.2, 0.3, 0.4], (n, 1))
    y1 = sample_counterfactual(p, keyed_uniform(0, 0, STREAM_COUNTERFACTUAL, np.arange(n)))
    counts = np.bincount(y1, minlength=k)
    assert stats.chisquare(counts, p[0] * n).pvalue > 1e-3
    binary = np.column_stack([np.full(n, 0.7), np.full(n, 0.3)])
    y1b = sample_counterfactual(binary, keyed_uniform(0, 0, STREAM_COUNTERFACTUAL, np.arange(n)))
    assert abs(y1b.mean() - 0.3) < 4 * np.sqrt(0.21 / n)


def test_no_leakage_means_coin_flip_accuracy():
    # Target == reference: the released label carries no information about b; accuracy ~ 1/2.
    target, _, labels, ids = make_rows(100_000, 2, seed=3)
    rows = play_repetition(target, target, labels, ids, seed=0, repetition=0, score=resolve_score("paper"))
    assert abs(rows.correct.mean() - 0.5) < 4 * np.sqrt(0.25 / 100_000)


def test_perfect_memorisation_is_detected():
    # Target puts all mass on the training label; reference is uninformative: nearly every guess is right
    # except when y1 happens to equal y0.
    n = 20_000
    labels = np.random.default_rng(0).integers(0, 2, n)
    target = labels.astype(float)
    rows = play_repetition(as_class_probabilities(target, "t"), as_class_probabilities(np.full(n, 0.5), "r"),
                           labels, np.arange(n), seed=0, repetition=0, score=resolve_score("paper"))
    assert rows.correct.mean() > 0.7


@pytest.mark.parametrize(
    "values, needle",
    [
        (np.array([0.2, 1.2, -0.1]), "2 row"),
        (np.array([0.2, np.nan, 0.3]), "NaN"),
        (np.array([[0.5, 0.6], [0.5, 0.5]]), "do not sum to 1"),
        (np.zeros((3, 2, 2)), "dims"),
    ],
)
def test_bad_probabilities_name_argument_and_count(values, needle):
    with pytest.raises(LabelDPInputError, match=needle) as exc:
        as_class_probabilities(values, "p_target")
    assert "p_target" in str(exc.value)


def test_bad_labels_and_ids():
    with pytest.raises(LabelDPInputError, match=r"2 row.*outside the classes 0\.\.1"):
        as_labels(np.array([0, 1, 2, -1]), 2)
    with pytest.raises(LabelDPInputError, match="not whole numbers"):
        as_labels(np.array([0.0, 0.5]), 2)
    with pytest.raises(LabelDPInputError, match="1 duplicate"):
        as_row_ids(np.array([1, 2, 2]), 3)
    with pytest.raises(LabelDPInputError, match="has 2 rows; expected 3, the number of rows in the labels"):
        as_class_probabilities(np.array([0.1, 0.2]), "p_reference", n=3)


@pytest.mark.parametrize("order", ["increasing", "decreasing", "shuffled", "sorted with a repeat"])
def test_duplicate_count_is_n_minus_the_distinct_ids(order):
    """The uniqueness check takes a shortcut for increasing ids; every order counts duplicates as np.unique does."""
    rng = np.random.default_rng(3)
    ids = np.sort(rng.choice(10**12, 50_000, replace=False)).astype(np.int64) - 5 * 10**11
    ids = {"increasing": ids, "decreasing": ids[::-1], "shuffled": rng.permutation(ids),
           "sorted with a repeat": np.sort(np.concatenate([ids[:-1], ids[:1]]))}[order]
    assert duplicate_count(ids) == ids.size - np.unique(ids).size
    for repeats in ([7], [0, 0, 49_998], [123, 124, 125, 126]):
        with_repeats = ids.copy()
        with_repeats[repeats] = with_repeats[-1]
        expected = ids.size - np.unique(with_repeats).size
        assert expected > 0 and duplicate_count(with_repeats) == expected
        with pytest.raises(LabelDPInputError, match=f"row_ids: {expected} duplicate value"):
            as_row_ids(with_repeats, ids.size)
    assert duplicate_count(ids[:1]) == 0 and duplicate_count(ids[:0]) == 0
    assert duplicate_count(np.array([5, 5], dtype=np.int64)) == 1


@pytest.mark.parametrize("k", [2, 3, 5, 12])
def test_row_checks_equal_the_numpy_expressions_row_by_row(k):
    """`probability_row_checks` (compiled for two classes, numpy otherwise) flags exactly the rows the numpy
    expressions flag: a value NaN, +-inf or outside [0, 1], a sum off 1 by more than the tolerance (sums placed on
    both sides of it, where the order of the additions decides), certain rows and rows without any prediction;
    C- and Fortran-ordered alike (numpy's own sum adds in another order for a Fortran array of 3+ classes)."""
    from auditing.game.play import SUM_TOLERANCE, certain_rows, probability_row_checks

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), 4000)
    p[:400] *= 1.0 + SUM_TOLERANCE * rng.choice([-1.0, 1.0], (400, 1)) * (1.0 + rng.uniform(-1e-12, 1e-12, (400, 1)))
    p[400:800, 0] += 1.0 - p[400:800].sum(axis=1) + rng.choice([-1.0, 1.0], 400) * SUM_TOLERANCE
    p[800:900] = np.eye(k)[rng.integers(0, k, 100)]  # certain
    p[900:950] = np.nan  # no prediction
    p[950:960, 0] = -0.0
    cells = 960 * k + rng.integers(0, (4000 - 960) * k, 60)
    p.flat[cells] = rng.choice([np.nan, np.inf, -np.inf, -1e-9, 1.0 + 1e-9, 0.0, 1.0], 60)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(p).all(axis=1) | (p < 0.0).any(axis=1) | (p > 1.0).any(axis=1)
        bad |= ~(np.abs(p.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    found = probability_row_checks(p)
    assert 0 < bad[:800].sum() < 800  # the boundary rows fall on both sides
    np.testing.assert_array_equal(found[0], bad)
    np.testing.assert_array_equal(found[1], certain_rows(p))
    np.testing.assert_array_equal(found[2], np.isnan(p).all(axis=1))
    fortran = np.asfortranarray(p)
    with np.errstate(invalid="ignore"):
        bad_fortran = ~np.isfinite(fortran).all(axis=1) | (fortran < 0.0).any(axis=1) | (fortran > 1.0).any(axis=1)
        bad_fortran |= ~(np.abs(fortran.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    np.testing.assert_array_equal(probability_row_checks(fortran)[0], bad_fortran)


def test_probability_checks_count_the_rows_numpy_counts():
    """The one-pass row checks (NaN rows, rows out of [0, 1], certain rows) name the counts the plain numpy
    expressions give, for 1-D and k-column inputs, Fortran-ordered ones too."""
    from auditing.game.play import as_class_probabilities, as_reference_probabilities

    rng = np.random.default_rng(4)
    for k in (2, 3, 5):
        p = rng.dirichlet(np.ones(k), 2000)
        cells = rng.integers(0, p.size, 40)
        p.flat[cells[:10]] = np.nan
        p.flat[cells[10:20]] = rng.choice([-0.5, 1.5, np.inf], 10)
        nan_rows = int(np.isnan(p).any(axis=1).sum())
        with pytest.raises(LabelDPInputError, match=rf"p_target: {nan_rows} row\(s\) contain NaN"):
            as_class_probabilities(np.asfortranarray(p), "p_target")
        p[np.isnan(p)] = 0.25
        out = int(((p < 0) | (p > 1)).any(axis=1).sum())
        with pytest.raises(LabelDPInputError, match=rf"p_target: {out} row\(s\) have probabilities outside"):
            as_class_probabilities(p, "p_target")
        q = rng.dirichlet(np.ones(k), 2000)
        q[rng.integers(0, 2000, 30)] = np.eye(k)[0]
        certain = int(((q <= 0) | (q >= 1)).any(axis=1).sum())
        with pytest.raises(LabelDPInputError, match=rf"p_reference: {certain} row\(s\) give a class probability"):
            as_reference_probabilities(q, "p_reference")
    tiny = np.full(100, 0.3)
    tiny[:4] = 1e-17  # 1 - p rounds to 1.0: certain once the binary column is stacked, as before
    with pytest.raises(LabelDPInputError, match=r"p_reference: 4 row\(s\)"):
        as_reference_probabilities(tiny, "p_reference")


def test_a_binary_model_s_rows_are_stacked_and_checked_in_one_pass_as_numpy_would():
    """`as_class_probabilities` of a 1-D array: the rows [1 - p, p] of numpy's doubles, and the same NaN,
    out-of-range and certain-row counts as the per-row checks of the stacked array."""
    from auditing.game.play import _binary_rows, _checked_probabilities, _row_flags

    rng = np.random.default_rng(3)
    p = rng.random(50_000)
    p[:4] = [0.0, 1.0, 5e-324, 1.0 - 2.0**-53]
    clean, certain = _checked_probabilities(p, "p", None, "")
    assert clean.shape == (50_000, 2) and np.array_equal(clean, np.column_stack([1.0 - p, p]))
    assert certain == 3 == _row_flags(clean)[2]  # 1 - 5e-324 rounds to 1

    p[10:13], p[20:25], p[30] = np.nan, -0.5, 1.5
    stacked = np.empty((p.size, 2))
    assert _binary_rows(p, stacked) == _row_flags(np.column_stack([1.0 - p, p])) == (3, 6, 9)
    with pytest.raises(Exception, match="p: 3 row"):
        as_class_probabilities(p, "p")
