"""The capacity check against a private model that memorises its training rows while its outputs on unseen rows do
not follow the day, with a reference that misfits in one direction (tests/support/memorising_worlds.py: the truth built
outside the code under test). The check compared pooled accuracies before (assumption T of docs/soundness.md
section 8.6); the memorising model guesses "trained" on the clicks it memorised and either way elsewhere, so the
pooled rule vouched for false VIOLATIONs on most such nights. The stratified rule compares like with like: a
trusted false VIOLATION, and epsilon_check above the truth, stay within the stated rate (one-sided binomial test),
and real leaks are still vouched for."""

from __future__ import annotations

import math

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from tests.support.capacity_nights import not_above_rate, pooled_epsilon_check
from tests.support.memorising_worlds import memorising_night

# A model memorising its rare positives, with a label-free per-segment move of its odds either way; the
# log-ratio score weighs both directions alike, so that unseen rows are guessed either way.
MEMORISING = dict(clicks_only=True, factor_sd=1.0, rows=44_000, check_share=4_000 / 44_000)
SCORE = "log-ratio"


def _nights(trials: int, claim: float, score: str = SCORE, seed0: int = 0, **world) -> np.ndarray:
    """(audit bound, epsilon_check, matched check guesses) per night at R = 1 with the reference as given."""
    out = []
    for seed in range(seed0, seed0 + trials):
        night = memorising_night(5000 + seed, **world)
        config_game, bound = GameConfig(repetitions=1, seed=seed, score=score, reference_calibration="none"), BoundConfig()
        result = run_audit(*night.audited, game=config_game, bound=bound, check=night.check)
        check = result.capacity_check
        out.append((result.epsilon_lower_bound, check.epsilon_check, check.matched_check_guesses or 0))
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize(("label", "world"), [
    ("global under-prediction by 1.0", dict(shift=1.0)),
    ("under-prediction by 1.5 on half of the segments", dict(shift=1.5, segment_share=0.5)),
    ("over-prediction by 0.7", dict(shift=-0.7)),
    ("an over-confident reference", dict(shift=0.5, confidence=1.6)),
])
def test_trusted_false_violations_stay_within_the_rate_when_the_model_memorises(label, world):
    """The private model (randomized response at eps 1, claim 1): its VIOLATIONs are false, and the check vouches
    for at most the stated share of them; epsilon_check alone exceeds the true eps at most at the stated rate."""
    trials = 60
    results = _nights(trials, 1.0, **MEMORISING, **world)
    violations = results[:, 0] > 1.0
    trusted = int((violations & (results[:, 1] > 1.0)).sum())
    assert not_above_rate(trusted, trials), (label, trusted, trials)
    assert not_above_rate(int((results[:, 1] > 1.0).sum()), trials), label


@pytest.mark.slow
def test_the_pooled_rule_fails_where_the_stratified_one_holds():
    """The control: on the same nights the pooled rule vouches for most false VIOLATIONs (the construction breaks
    assumption T), while the stratified rule vouches for none of them."""
    from auditing.audit import play_game
    from auditing.verdict.capacity_check import capacity_check

    pooled = stratified = 0
    trials = 12
    for seed in range(trials):
        night = memorising_night(5000 + seed, shift=1.0, **MEMORISING)
        game = play_game(*night.audited, game=GameConfig(repetitions=1, seed=seed, score=SCORE, reference_calibration="none"), check=night.check)
        pooled += pooled_epsilon_check(game.check) > 1.0
        stratified += capacity_check(game.check, confidence=0.95).epsilon_check > 1.0
    assert pooled >= trials // 2, pooled
    assert stratified <= 2, stratified


@pytest.mark.slow
@pytest.mark.parametrize("score", ["paper", SCORE])
def test_real_leaks_of_a_memorising_model_are_vouched_for(score):
    """The same learner without the noise (a real leak, claim 1) on a misfit day: vouched for on >= 90% of nights."""
    trials = 20
    results = _nights(trials, 1.0, score=score, epsilon=math.inf, shift=1.0, **MEMORISING)
    trusted = int(((results[:, 0] > 1.0) & (results[:, 1] > 1.0)).sum())
    assert trusted >= 0.9 * trials, (score, trusted)
