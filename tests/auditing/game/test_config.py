"""The game's configuration (auditing/game/config.py): validated on construction, a stable digest, and the grid
of a keyed half. That the night keys the draws and the game hash: tests/behaviour/test_night_coins.py."""

import datetime as dt

import numpy as np
import pytest

from auditing.game.config import GameConfig, digest
from labeldp.errors import LabelDPInputError


def test_the_digest_is_sixteen_hex_and_ignores_key_order():
    assert digest({"a": 1, "b": [2, 3]}) == digest({"b": [2, 3], "a": 1})
    assert len(digest({"a": 1})) == 16 and digest({"a": 1}) != digest({"a": 2})


def test_every_row_audited_needs_a_raw_reference_and_bad_settings_are_refused():
    assert GameConfig(audit_rows="all", reference_calibration="none").audit_rows == "all"
    with pytest.raises(LabelDPInputError, match="audit_rows 'all' cannot be combined with reference_calibration"):
        GameConfig(audit_rows="all")
    for bad in (dict(repetitions=0), dict(score="best"), dict(grid_min_fraction=0.0), dict(audit_rows="some")):
        with pytest.raises(LabelDPInputError, match=next(iter(bad))):
            GameConfig(**bad)


def test_a_night_given_as_text_is_parsed_and_keys_the_hash():
    game = GameConfig(night="2024-01-02")
    assert game.night == dt.date(2024, 1, 2) and game == GameConfig().with_night(dt.date(2024, 1, 2))
    assert game.game_hash() != GameConfig().game_hash() and game.with_night(None).game_hash() == GameConfig().game_hash()


def test_a_half_grid_is_one_list_of_fractions_whatever_the_half_s_size():
    game = GameConfig(grid_points=30, grid_min_fraction=1e-3)
    small, large = game.half_grid(50), game.half_grid(50_000)
    assert small.size == large.size == 30  # not de-duplicated: index g is one fraction in both halves
    assert small[0] == 1 and small[-1] == 50 and large[-1] == 50_000 and np.all(np.diff(small) >= 0)
    assert GameConfig(grid="paper").half_grid(200).tolist() == list(range(2, 201, 2))
    assert GameConfig().half_grid(0).size == 0
