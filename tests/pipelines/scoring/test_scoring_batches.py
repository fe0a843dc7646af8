"""pipelines.scoring.scoring_batches: the pass-1 accumulator carries the prior histogram through merge, save and load."""

from __future__ import annotations

import numpy as np

from auditing.game.prior_histogram import PriorHistogram
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
