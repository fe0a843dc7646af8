"""The stored game (auditing/game/counts.py): a counts file of another layout is refused, not read as a game (the
stored game read back and re-judged: tests/behaviour/test_game_and_bound.py)."""

from __future__ import annotations

import numpy as np
import pytest

from auditing.game.counts import GameCounts
from labeldp.errors import LabelDPInputError


def test_a_counts_file_of_another_layout_is_not_read_as_a_game(tmp_path):
    np.savez(tmp_path / "counts.npz", m=np.array(3), guesses=np.ones((1, 1)), correct=np.zeros((1, 1)))
    with pytest.raises(LabelDPInputError, match="older layout"):
        GameCounts.load(tmp_path)
