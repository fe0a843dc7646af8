"""The game-aware floor (auditing/verdict/exposure_floor.py): the fewest totally exposed labels with which the audit
flags a claim at the stated power, or why there is none. The verdict's figures built from it:
tests/auditing/verdict/test_robustness.py; the floor against measured detection: tests/behaviour/test_blind_spots.py."""

import dataclasses

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.verdict.exposure_floor import (
    exposed_floor_note,
    exposed_floor_unavailable,
    exposed_rows_floor,
    game_detection_floor,
    undetectable_note,
)
from labeldp.errors import LabelDPInputError


@pytest.fixture(scope="module")
def quiet_result():
    """A binary audit of 8,000 rows where nothing leaks (the target is the reference)."""
    rng = np.random.default_rng(4)
    reference = rng.beta(1.0, 3.0, 8_000)
    labels = (rng.random(reference.size) < reference).astype(np.int64)
    return run_audit(reference, reference, labels, game=GameConfig(repetitions=1))


def test_a_larger_claim_or_more_power_needs_more_exposed_labels(quiet_result):
    floors = [game_detection_floor(quiet_result, claim) for claim in (0.25, 0.5, 1.0)]
    assert 0 < floors[0] <= floors[1] <= floors[2] <= quiet_result.m and floors[0] < floors[2]
    assert game_detection_floor(quiet_result, 0.5, power=0.5) <= floors[1]
    assert exposed_rows_floor(quiet_result, 0.5) == floors[1] and exposed_floor_note(quiet_result, 0.5, floors[1]) is None
    assert game_detection_floor(quiet_result, float("inf")) is None


def test_a_claim_no_exposure_reaches_says_so(quiet_result):
    claim = 0.999 * quiet_result.max_certifiable_epsilon  # certifiable by a perfect attacker, not by this game
    assert exposed_floor_unavailable(quiet_result, claim) is None
    assert exposed_rows_floor(quiet_result, claim) is None
    assert exposed_floor_note(quiet_result, claim, None) == undetectable_note() and "below 95%" in undetectable_note()
    assert "below 80%" in undetectable_note(0.8)


def test_why_a_result_has_no_floor(quiet_result):
    assert "INCONCLUSIVE" in exposed_floor_unavailable(quiet_result, quiet_result.max_certifiable_epsilon)
    no_prior = dataclasses.replace(quiet_result, prior_histogram=None)
    assert "prior_histogram" in exposed_floor_unavailable(no_prior, 0.5) and exposed_rows_floor(no_prior, 0.5) is None
    short = dataclasses.replace(quiet_result, m=quiet_result.m + 1)
    assert "prior_histogram holds 8000 rows but the audit has m = 8001" in exposed_floor_unavailable(short, 0.5)
    split = dataclasses.replace(quiet_result, bound=BoundConfig(strategy="split"))
    assert exposed_floor_unavailable(split, 0.5).startswith("split strategy")
    with pytest.raises(LabelDPInputError, match="strategy 'split' is not supported"):
        game_detection_floor(split, 0.5)
