"""The compiled steps of the prior histogram (auditing/game/prior_buckets.py): odds in float32, then each log-odds
counted in its bucket, NaN and +inf in the overflow bucket, -inf in the underflow one. That the two steps around
numpy's log count exactly `PriorHistogram.bucket_of`'s buckets: tests/auditing/game/test_prior_histogram.py."""

import numpy as np

from auditing.game.prior_buckets import count_buckets, odds32


def test_odds_are_computed_on_the_probability_rounded_to_float32():
    p = np.array([0.5, 0.2, 0.0, 0.1 + 1e-12])
    out = np.empty(p.size, np.float32)
    odds32(p, out)
    x = p.astype(np.float32)
    np.testing.assert_array_equal(out, x / (np.float32(1) - x))
    assert out[0] == 1.0 and out[2] == 0.0


def test_each_log_odds_is_counted_once_in_its_bucket_shifted_by_one():
    low, inv_width, interior = np.float32(-2.0), np.float32(1.0), 4  # buckets [-2, -1), ..., [1, 2) plus the ends
    log_odds = np.array([-2.0, -1.5, 0.0, 1.99, 2.0, 50.0, -2.5, -50.0, np.nan, np.inf, -np.inf], np.float32)
    counts = np.zeros(interior + 2, np.int64)
    count_buckets(log_odds, low, inv_width, interior, counts)
    # index 0: below low (-2.5, -50, -inf); 1..4: the interior buckets; 5: from low + interior up, NaN and +inf
    assert counts.tolist() == [3, 2, 0, 1, 1, 4]
    count_buckets(log_odds[:1], low, inv_width, interior, counts)  # adds to the counts given
    assert counts[1] == 3 and counts.sum() == log_odds.size + 1
