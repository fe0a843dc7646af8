"""The keyed coins (auditing/game/keyed_random.py): uniform, reproducible from the seed, and independent across
streams and repetitions."""

import numpy as np
from scipy import stats

from auditing.game.keyed_random import STREAM_BIT, STREAM_COUNTERFACTUAL, keyed_uniform


def test_keyed_uniform_is_uniform_and_streams_independent():
    ids = np.arange(200_000, dtype=np.int64)
    u = keyed_uniform(3, 0, STREAM_BIT, ids)
    v = keyed_uniform(3, 0, STREAM_COUNTERFACTUAL, ids)
    w = keyed_uniform(3, 1, STREAM_BIT, ids)
    assert u.min() >= 0 and u.max() < 1
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    for other in (v, w):
        assert abs(np.corrcoef(u, other)[0, 1]) < 0.01  # 4.5 standard errors at n = 2e5
    assert np.array_equal(u, keyed_uniform(3, 0, STREAM_BIT, ids))
    assert not np.array_equal(u, keyed_uniform(4, 0, STREAM_BIT, ids))
