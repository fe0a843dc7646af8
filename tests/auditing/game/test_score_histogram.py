"""The score histogram (auditing/game/score_histogram.py) of the score panel: it counts repetition zero."""

from __future__ import annotations

import numpy as np

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.play import play_repetition
from auditing.game.score_histogram import score_histogram
from auditing.game.scores import resolve_score
from auditing.verdict.controls import (
    rr_oracle_probabilities,
)
from tests.support.control_worlds import world


def test_score_histogram_counts_repetition_zero():
    p, labels, ids = world(4, 3000)
    target = rr_oracle_probabilities(ids, labels, 2.0, seed=4)
    result = run_audit(target, p, labels, ids, GameConfig(repetitions=2, seed=5), BoundConfig())
    game = play_repetition(target, np.column_stack([1 - p, p]), labels, ids, seed=5, repetition=0,
                           score=resolve_score("paper"))
    hist = result.score_histogram
    assert hist == score_histogram(game.scores, game.correct)
    assert sum(hist.rows) == 3000 and sum(hist.correct) == int(game.correct.sum())
    assert len(hist.edges) == len(hist.rows) - 1
