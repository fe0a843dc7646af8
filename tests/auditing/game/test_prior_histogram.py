"""auditing.game.prior_histogram: the compiled histogram counts bucket_of's buckets, whatever the batching."""

from __future__ import annotations

import json

import numpy as np
from scipy.special import expit

from auditing.game.prior_histogram import PriorHistogram
from labeldp.codec import decode, encode
from tests.support.ctr_priors import ctr_priors


def test_the_compiled_histogram_counts_the_buckets_bucket_of_assigns():
    """`from_probabilities` (compiled steps around numpy's float32 log) counts exactly `bucket_of`'s buckets:
    bucket edges and their neighbouring doubles, 0, 1, NaN, infinities, negatives, values above 1, subnormals,
    float32 and strided input."""
    rng = np.random.default_rng(1)
    edges = expit(PriorHistogram.LOW + PriorHistogram.WIDTH * np.arange(PriorHistogram.INTERIOR + 1))
    p = np.concatenate([rng.random(50_000), edges, np.nextafter(edges, 0), np.nextafter(edges, 1),
                        [0.0, 1.0, -0.0, -1.0, 2.0, np.nan, np.inf, -np.inf, 1e-300, 1 - 1e-16, 5e-324, 1.1e-7],
                        rng.random(1000) ** 40, 1 - rng.random(1000) ** 30])
    for values in (p, p.astype(np.float32), p[::3]):
        counts = PriorHistogram.from_probabilities(values).counts
        assert np.array_equal(counts, np.bincount(PriorHistogram.bucket_of(values), minlength=PriorHistogram.BUCKETS))
        assert counts[0] > 0 and counts[-1] > 0 and counts.sum() == values.size


def test_histogram_is_the_same_however_rows_are_batched():
    p = ctr_priors(10_000)
    whole = PriorHistogram.from_probabilities(p)
    rng = np.random.default_rng(0)
    order = rng.permutation(p.size)
    cuts = np.sort(rng.choice(p.size, 7, replace=False))
    merged = PriorHistogram.empty()
    for chunk in reversed(np.split(order, cuts)):
        merged = merged.merge(PriorHistogram.from_probabilities(p[chunk]))
    assert np.array_equal(merged.counts, whole.counts)
    assert decode(PriorHistogram, json.loads(json.dumps(encode(whole)))).counts.tolist() == whole.counts.tolist()
