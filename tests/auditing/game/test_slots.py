"""The game's slots (auditing/game/slots.py): the compiled selection half is exactly the keyed uniform below one half."""

import numpy as np
import pytest


@pytest.mark.parametrize("seed", [0, 7, 2**62 + 5])
def test_the_compiled_selection_half_equals_the_keyed_uniform_below_one_half(seed):
    from auditing.game.keyed_random import STREAM_SPLIT, keyed_uniform
    from auditing.game.slots import selection_half_mask

    rng = np.random.default_rng(seed % 1000)
    for ids in (np.arange(100_000), rng.integers(-2**62, 2**62, 50_000), np.arange(5, dtype=np.int32),
                np.zeros(0, np.int64)):
        assert np.array_equal(selection_half_mask(ids, seed), keyed_uniform(seed, 0, STREAM_SPLIT, ids) < 0.5)
