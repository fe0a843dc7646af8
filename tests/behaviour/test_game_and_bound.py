"""The game and the bound as two configurations: the counts depend on the game's settings and inputs only, every
bound setting re-judges stored counts exactly as a fresh audit would, and the stored game reads back the same.

The truth a re-judged result is compared with is a fresh `run_audit` at the combined settings (which plays the
game again); the scoring key is compared across inputs that differ in one thing at a time."""

from __future__ import annotations

import datetime as dt
import inspect
import json

import numpy as np
import pytest

from auditing.audit import audit_counts, play_game, run_audit
from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.bounds.selection import STRATEGIES_REGISTRY
from auditing.config import BOUND_FIELDS, GAME_FIELDS, BoundConfig, config_hash, same_numbers_as_version1
from auditing.game.config import GameConfig
from auditing.game.counts import GameCounts
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.scoring.beam_request import scoring_key
from tests.support.swapped_split import SwappedSplit


def rr_world(n=6000, eps=2.0, seed=0, k=2):
    rng = np.random.default_rng(seed)
    x, y = gaussian_mixture(n, k, rng)
    released = randomized_response(y, k, eps, rng)
    return np.eye(k)[released], true_posterior(x, k), y


BOUNDS = [BoundConfig(), BoundConfig(kappa=0.3), BoundConfig(method="fdp", delta=1e-6),
          BoundConfig(strategy="split", confidence=0.99), BoundConfig(strategy="max"),
          BoundConfig(method="fdp", strategy="split", kappa=0.1)]


def test_the_two_configurations_share_no_setting():
    assert set(GAME_FIELDS).isdisjoint(BOUND_FIELDS)
    assert "night" not in GAME_FIELDS


# config_hash values computed before the settings were split into GameConfig and BoundConfig: the warehouse's
# stored rows are keyed by them (the version-1 ones by the rule of same_numbers_as_version1).
CONFIG_HASHES = [
    ({}, {}, "2db3742e76264ec4", False),
    ({"reference_calibration": "none"}, {"method": "binomial", "delta": 0.0, "kappa": 0.0}, "309b5ebb1171ce15", True),
    ({"reference_calibration": "none", "repetitions": 5, "seed": 3},
     {"method": "binomial", "delta": 0.0, "kappa": 0.0, "strategy": "split"}, "da82541087de1ad1", True),
    ({}, {"kappa": 0.1}, "44e60555666a59a8", False),
    ({"reference_calibration": "none", "audit_rows": "all", "grid": "paper"},
     {"method": "binomial", "delta": 0.0, "kappa": 0.0}, "74d2cea21f87e70b", True),
    ({"score_power": 2.0, "grid_points": 50}, {"confidence": 0.9}, "0845774b486d6129", False),
    ({}, {"method": "fdp"}, "cb4873211af0751c", False),
    ({"repetitions": 3, "seed": 11, "score": "paper"}, {"method": "fdp", "strategy": "max", "delta": 1e-6},
     "22f872414f3f691a", False),
]


@pytest.mark.parametrize(("game", "bound", "expected", "version1"), CONFIG_HASHES)
def test_config_hash_keeps_the_warehouse_keys(game, bound, expected, version1):
    game, bound = GameConfig(**game), BoundConfig(**bound)
    assert same_numbers_as_version1(game, bound) is version1
    assert config_hash(game, bound) == expected
    assert config_hash(game.with_night(dt.date(2026, 9, 2)), bound) == expected  # the night is no setting


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: f"{b.method}-{b.strategy}-{b.confidence}-{b.kappa}")
def test_every_bound_setting_rejudges_stored_counts_as_a_fresh_audit(tmp_path, bound):
    target, reference, labels = rr_world()
    game = GameConfig(repetitions=4, seed=3)
    stored = play_game(target, reference, labels, game=game)
    stored.save(tmp_path)
    fresh = run_audit(target, reference, labels, game=game, bound=bound)
    assert encode(audit_counts(GameCounts.load(tmp_path), bound)) == encode(fresh)


def test_the_game_reads_no_bound_setting():
    """The game is played from a GameConfig alone: no argument of play_game can carry a bound setting."""
    parameters = set(inspect.signature(play_game).parameters)
    assert not parameters & {*BOUND_FIELDS, "bound", "config"}
    assert set(GAME_FIELDS).isdisjoint(BOUND_FIELDS)


def test_stored_game_round_trips_with_check_rows_groups_and_expected_curve(tmp_path):
    from auditing.audit import CheckRows
    from auditing.game.row_groups import RowGroups

    target, reference, labels = rr_world(n=8000, seed=2)
    check = CheckRows(target[6000:], reference[6000:], labels[6000:], np.arange(6000, 8000))
    groups = RowGroups(rule="declared", columns=("user",), rows_excluded=3, excluded_with_day=2,
                       excluded_with_inputs=1)
    game = play_game(target[:6000], reference[:6000], labels[:6000], game=GameConfig(repetitions=2),
                     expected_curve=True, check=check, row_groups=groups)
    game.save(tmp_path)
    back = GameCounts.load(tmp_path)
    assert back.game == game.game and back.row_groups == groups and back.expected_correct == game.expected_correct
    assert all(np.array_equal(getattr(back.check, f), getattr(game.check, f)) for f in back.check._FIELDS)
    for bound in BOUNDS[:3]:
        assert encode(audit_counts(back, bound)) == encode(audit_counts(game, bound))


def test_a_halves_strategy_on_a_table_with_an_empty_half_is_refused_at_bound_time():
    target, reference, labels = rr_world(n=1, seed=4)
    game = play_game(target, reference, labels, game=GameConfig(repetitions=2))
    assert game.halves is None  # one row: one half is empty, and the other strategies still work
    assert audit_counts(game, BoundConfig()).m == 1
    with pytest.raises(LabelDPInputError, match="split strategy needs audited rows in both halves"):
        audit_counts(game, BoundConfig(strategy="split"))


@pytest.fixture()
def swapped_split():
    STRATEGIES_REGISTRY.register(SwappedSplit)
    yield SwappedSplit.name
    STRATEGIES_REGISTRY.unregister(SwappedSplit.name)


def test_a_second_halves_strategy_is_a_bound_setting_of_the_same_game(swapped_split):
    target, reference, labels = rr_world(n=20_000, eps=4.0, seed=5)
    game = play_game(target, reference, labels, game=GameConfig(repetitions=2))
    split = audit_counts(game, BoundConfig(strategy="split"))
    swapped = audit_counts(game, BoundConfig(strategy=swapped_split))
    assert swapped.selected_m == split.split_halves.selection.m  # bounded on the other half
    assert swapped.epsilon_lower_bound > 0 and swapped.bound.strategy == swapped_split
    fresh = run_audit(target, reference, labels, game=GameConfig(repetitions=2), bound=BoundConfig(strategy=swapped_split))
    assert encode(swapped) == encode(fresh)


LINEAGE = {"model": {"fingerprint": "sha256:m"}, "reference": {"fingerprint": "sha256:r"},
           "partition": {"fingerprint": "sha256:p", "dataset_fingerprint": "sha256:d"},
           "rows": {"check_rows": {"rows": "held out"}, "excluded": None}}
AUDITED = {"audit_rows": "training", "training_rows": {"kind": "keys", "fingerprint": "sha256:k"}}


def _key(game=None, lineage=None, audited=None, **kw):
    options = {"expected_curve": False, "capacity_check": True, **kw}
    return scoring_key(game or GameConfig(), lineage or LINEAGE, AUDITED if audited is None else audited, **options)


def _changed(path: tuple[str, ...], value):
    lineage = json.loads(json.dumps(LINEAGE))
    node = lineage
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return lineage


GAME_CHANGES = {"repetitions": 7, "seed": 1, "score": "log-ratio", "score_power": 1.0, "grid": "paper",
                "grid_points": 50, "grid_min_fraction": 1e-3, "reference_calibration": "none"}


def test_the_scoring_key_changes_with_everything_the_counts_depend_on():
    base = _key()
    assert set(GAME_CHANGES) | {"audit_rows"} == set(GAME_FIELDS)
    changed = {f"game.{name}": _key(GameConfig(**{name: value})) for name, value in GAME_CHANGES.items()}
    changed["game.audit_rows"] = _key(GameConfig(audit_rows="all", reference_calibration="none"), audited={})
    for path, value in ((("model", "fingerprint"), "sha256:m2"), (("reference", "fingerprint"), "sha256:r2"),
                        (("partition", "fingerprint"), "sha256:p2"),
                        (("partition", "dataset_fingerprint"), "sha256:d2"),
                        (("rows", "check_rows"), {"rows": "other"}), (("rows", "excluded"), {"fingerprint": "x"})):
        changed[".".join(path)] = _key(lineage=_changed(path, value))
    changed["training rows"] = _key(audited={**AUDITED, "training_rows": {"kind": "keys", "fingerprint": "sha256:k2"}})
    changed["expected curve"] = _key(expected_curve=True)
    changed["capacity check"] = _key(capacity_check=False)
    assert base not in changed.values()
    assert len(set(changed.values())) == len(changed), "two different inputs share a key"


def test_the_scoring_key_ignores_every_bound_setting_and_the_runner():
    game = GameConfig(repetitions=5)
    for bound in BOUNDS:
        assert config_hash(game, bound) != config_hash(game, BoundConfig()) or bound == BoundConfig()
        assert _key(game) == _key(GameConfig(repetitions=5))
    other_runner = {**LINEAGE, "runner": {"runner": "DaskRunner"}, "code_version": {"git_commit": "abc"}}
    assert _key(lineage=other_runner) == _key()
