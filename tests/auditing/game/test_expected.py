"""The game's expected curve (auditing/game/expected.py), the positive control's floor input: the mean of simulated
repetitions."""

from __future__ import annotations

import numpy as np

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.play import play_repetition
from auditing.game.scores import resolve_score
from auditing.game.sweep import correct_at, rank_order
from auditing.verdict.controls import (
    rr_oracle_probabilities,
)
from tests.support.control_worlds import world


def test_expected_curve_equals_the_mean_of_simulated_repetitions():
    p, labels, ids = world(3, 4000)
    target = rr_oracle_probabilities(ids, labels, 1.5, seed=3)
    config_game, bound = GameConfig(repetitions=1, grid="paper"), BoundConfig()
    record = run_audit(target, p, labels, ids, config_game, bound, expected_curve=True).expected_correct
    grid = np.asarray(record.guesses)
    score = resolve_score("paper")
    reps = 300
    total = np.zeros(grid.size)
    sq = np.zeros(grid.size)
    for r in range(reps):
        game = play_repetition(np.column_stack([1 - target[:, 1], target[:, 1]]), np.column_stack([1 - p, p]),
                               labels, ids, seed=11, repetition=r, score=score)
        c = correct_at(game.correct, rank_order(game.scores, ids), grid)
        total += c
        sq += c.astype(float) ** 2
    mean = total / reps
    sd = np.sqrt(np.maximum(sq / reps - mean**2, 0.25))
    # The expectation uses a soft cut inside one |score| bin: allow 5 standard errors plus 1% of c'.
    assert np.all(np.abs(mean - np.asarray(record.correct)) <= 5 * sd / np.sqrt(reps) + 0.01 * grid)
