"""pipelines.scoring.scoring_batches: the pass-1 accumulator carries the prior histogram through merge, save and
load; played on the background thread it equals pass 1 in line; its histograms travel narrow and come back exact,
and a background error surfaces when the accumulator is read."""

from __future__ import annotations

import numpy as np
import pytest

from auditing.game.config import GameConfig
from auditing.game.prior_histogram import PriorHistogram
from pipelines.scoring.scored_batch import RowCounts
from tests.support.ctr_priors import ctr_priors


def test_pass1_accumulator_carries_the_prior_histogram(tmp_path):
    from pipelines.scoring.scored_batch import ScoredBatch
    from pipelines.scoring.scoring_batches import Pass1Accumulator

    p = ctr_priors(3000)
    ref = np.column_stack([1 - p, p])
    parts = [ScoredBatch(f"b{i}", np.arange(i * 1000, (i + 1) * 1000), np.zeros(1000, dtype=np.int64),
                         ref[i * 1000:(i + 1) * 1000], ref[i * 1000:(i + 1) * 1000]) for i in range(3)]
    accs = []
    for part in parts:
        acc = Pass1Accumulator()
        acc._add_priors(part)
        accs.append(acc)
    merged = Pass1Accumulator().merge(accs[2]).merge(accs[0]).merge(accs[1])
    merged.save(tmp_path / "pass1.npz")
    loaded = Pass1Accumulator.load(tmp_path / "pass1.npz")
    assert loaded.prior_histogram() == PriorHistogram.from_probabilities(p)
    assert Pass1Accumulator().prior_histogram() is None


@pytest.mark.parametrize("chunk_rows, max_pending", [(65_536, 12), (1000, 3), (777, 1)])
def test_pass1_in_the_background_equals_pass1_in_line(monkeypatch, chunk_rows, max_pending):
    """Pass 1's kernel on the background thread (as the Beam job plays it) gives the same accumulator as in
    line, whatever the chunking, merge order and chunks taken back by `settle`; pickling (how Beam moves
    accumulators) waits for the pending kernels."""
    import pickle

    from pipelines.scoring import scoring_batches
    from pipelines.scoring.scored_batch import ScoredBatch
    from pipelines.scoring.scoring_batches import GameSpec, Pass1Accumulator

    monkeypatch.setattr(scoring_batches, "BACKGROUND_CHUNK_ROWS", chunk_rows)
    monkeypatch.setattr(scoring_batches, "MAX_PENDING_CHUNKS", max_pending)

    rng = np.random.default_rng(3)
    spec = GameSpec(GameConfig(repetitions=7, audit_rows="all", reference_calibration="none", seed=3))
    batches = []
    for index in range(5):
        n = 4000 + 500 * index
        p_t, p_r = rng.uniform(0.01, 0.99, n), rng.uniform(0.01, 0.99, n)
        batches.append(ScoredBatch(f"b{index}", np.arange(n, dtype=np.int64) * 7 + 100_000 * index,
                                   rng.integers(0, 2, n), np.column_stack([1 - p_t, p_t]),
                                   np.column_stack([1 - p_r, p_r]), RowCounts(rows_read=n, rows_scored=n)))
    inline = Pass1Accumulator()
    for batch in batches:
        inline.add_batch(batch, spec)
    first, second = Pass1Accumulator(), Pass1Accumulator()
    for index, batch in enumerate(batches):
        (first if index % 2 else second).add_batch(batch, spec, background=True)
    assert first._pending and second._pending  # the kernels were handed to the background thread
    moved = pickle.loads(pickle.dumps(first))
    assert moved._pending == []
    merged = Pass1Accumulator().merge(second).merge(moved)
    assert np.array_equal(merged.rows, inline.rows) and np.array_equal(merged.correct, inline.correct)
    assert merged.issues == inline.issues and np.array_equal(merged.priors, inline.priors)
    assert np.array_equal(merged.signed, inline.signed)  # repetition 0's attack-curve counts
    assert int(inline.signed.sum()) == sum(batch.rows for batch in batches)
    # 7 repetitions of every row, and the two halves of repetition 0 (together every row once more)
    assert int(merged.rows.sum()) == (7 + 1) * sum(batch.rows for batch in batches)


@pytest.mark.parametrize(("largest", "wire"), [(200, np.uint8), (524, np.uint16), (70_000, np.uint32),
                                               (1 << 40, np.int64)])
def test_pass1_histograms_travel_narrow_and_come_back_exact(largest, wire):
    """Pickled between stages and workers, the histograms take the narrowest unsigned type holding their largest
    count, and unpickle as the same int64 arrays, whatever that count."""
    import pickle

    from pipelines.scoring.scoring_batches import Pass1Accumulator

    rows = np.random.default_rng(0).integers(0, largest, (4, 300), dtype=np.int64)
    rows[0, 0] = largest
    accumulator = Pass1Accumulator(rows=rows, correct=rows // 2)
    state = accumulator.__getstate__()
    assert state["rows"].dtype == wire and state["correct"].dtype in (np.uint8, np.uint16, np.uint32, np.int64)
    moved = pickle.loads(pickle.dumps(accumulator))
    assert moved.rows.dtype == moved.correct.dtype == np.int64
    assert np.array_equal(moved.rows, rows) and np.array_equal(moved.correct, rows // 2)
    # a negative count (a bug upstream) is never wrapped into a large unsigned one
    broken = Pass1Accumulator(rows=-rows, correct=rows)
    assert np.array_equal(pickle.loads(pickle.dumps(broken)).rows, -rows)
    assert pickle.loads(pickle.dumps(Pass1Accumulator())).rows is None


def test_pass1_background_errors_surface_when_the_accumulator_is_read():
    from pipelines.scoring.scored_batch import ScoredBatch
    from pipelines.scoring.scoring_batches import GameSpec, Pass1Accumulator

    spec = GameSpec(GameConfig(repetitions=3, audit_rows="all", reference_calibration="none"))
    p = np.full(10, 0.5)
    batch = ScoredBatch("b", np.arange(10, dtype=np.int64), np.zeros(10, np.int64), np.column_stack([p, p]),
                        np.column_stack([p, p]))
    broken = Pass1Accumulator(rows=np.zeros((1, 5), np.int64), correct=np.zeros((1, 5), np.int64))
    broken.add_batch(batch, spec, background=True)  # returns before the kernel runs
    with pytest.raises(ValueError, match="histograms must be int64 arrays of 5 slots"):
        broken.settle()
