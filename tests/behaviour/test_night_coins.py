"""The night keys the game's coins: fresh coins each night for the same seed and row ids, the draws of a game without
a night unchanged, the plan's config hash the same every night, and the night recorded on the result.

The pinned digests were computed with the code before nights keyed the coins: a game without a night must draw
exactly what it drew then (stored counts, golden tests and `audit-scores` on a table without a date stay valid).
"""

import datetime as dt
import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditing.audit import play_game, run_audit
from auditing.config import GAME_FIELDS, BoundConfig, config_hash
from auditing.game.attack_curve import bootstrap_seed
from auditing.game.config import GameConfig
from auditing.game.counts import GameCounts
from auditing.game.keyed_random import (
    STREAM_BIT,
    STREAM_COUNTERFACTUAL,
    STREAM_SPLIT,
    keyed_uniform,
    night_seed,
)
from auditing.game.play import secret_bits_and_released
from auditing.game.slots import selection_half_mask
from auditing.result import AuditResult
from auditing.sinks.report.text import format_audit_result
from flows.cli import main
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError

NIGHT, NEXT = dt.date(2024, 1, 1), dt.date(2024, 1, 2)
# Before nights: keyed_uniform(7, r, stream, 1..1000) for the three streams and r = 0, 1; the game's counts, halves
# and attack curve on `_world`; its bootstrap seed; the game and config hashes of the defaults and of seed 7, R = 3.
DRAWS_BEFORE_NIGHTS = "93c39b44c44e00cba376787ecdae4ffd662d943cffbac600d3ef133a3e2c36e8"
GAME_BEFORE_NIGHTS = "611deaac353e6366a6c282dae728f2b3eebee4a09f0190cf42a288de8466b17e"
BOOTSTRAP_SEED_7 = 8339667332035870
GAME_HASHES = {"default": "c16710e5cc2fe973", "seed 7, R 3": "ce45b81dd2fa9917"}
CONFIG_HASH_DEFAULT = "2db3742e76264ec4"


def _world(n=3000):
    rng = np.random.default_rng(3)
    reference = rng.uniform(0.05, 0.95, n)
    labels = (rng.uniform(size=n) < reference).astype(np.int64)
    target = np.clip(reference + 0.3 * (labels - reference), 0.01, 0.99)
    return target, reference, labels, np.arange(1, n + 1)


def _game_digest(game: GameConfig) -> str:
    played = play_game(*_world(), game)
    digest = hashlib.sha256(played.counts.correct.tobytes())
    for half in played.halves:
        digest.update(half.correct.tobytes())
    digest.update(json.dumps(encode(played.attack_curve), sort_keys=True).encode())
    return digest.hexdigest()


def test_without_a_night_every_draw_and_hash_is_the_one_before_nights():
    ids = np.arange(1, 1001, dtype=np.int64)
    game = GameConfig(repetitions=3, seed=7)
    assert game.night is None and game.draw_seed == night_seed(7, None) == 7
    digest = hashlib.sha256()
    for stream in (STREAM_COUNTERFACTUAL, STREAM_BIT, STREAM_SPLIT):
        for repetition in (0, 1):
            digest.update(keyed_uniform(game.draw_seed, repetition, stream, ids).tobytes())
    assert digest.hexdigest() == DRAWS_BEFORE_NIGHTS
    assert _game_digest(game) == GAME_BEFORE_NIGHTS
    assert bootstrap_seed(game.draw_seed) == BOOTSTRAP_SEED_7
    assert GameConfig().game_hash() == GAME_HASHES["default"] and game.game_hash() == GAME_HASHES["seed 7, R 3"]
    assert "night" not in encode(game)
    assert config_hash(GameConfig(), BoundConfig()) == CONFIG_HASH_DEFAULT
    assert encode(run_audit(*_world(), game=GameConfig(repetitions=1, seed=7)))["coins_night"] == ""


def test_two_nights_with_one_seed_and_the_same_row_ids_draw_independent_coins():
    """Criteo's row ids restart at 1 every day: the night alone must make the coins fresh."""
    n = 100_000
    ids = np.arange(1, n + 1, dtype=np.int64)
    first, second = night_seed(0, NIGHT), night_seed(0, NEXT)
    assert len({0, first, second}) == 3 and all(0 <= s < 2**63 for s in (first, second))
    tolerance = 4.5 * np.sqrt(0.25 / n)  # 4.5 binomial standard errors of an agreement rate near 1/2
    for stream in (STREAM_COUNTERFACTUAL, STREAM_BIT, STREAM_SPLIT):
        a, b = keyed_uniform(first, 0, stream, ids), keyed_uniform(second, 0, stream, ids)
        assert abs(np.mean((a < 0.5) == (b < 0.5)) - 0.5) < tolerance, stream
        assert abs(np.corrcoef(a, b)[0, 1]) < 4.5 / np.sqrt(n), stream
    # the game's own draws: the secret bit, the counterfactual label (agreeing at p^2 + (1 - p)^2 if independent)
    p = 0.3
    reference = np.column_stack([np.full(n, 1 - p), np.full(n, p)])
    labels = np.zeros(n, dtype=np.int64)
    (bit_a, released_a), (bit_b, released_b) = (
        secret_bits_and_released(reference, labels, ids, seed=GameConfig(night=night).draw_seed, repetition=0)
        for night in (NIGHT, NEXT))
    assert abs(np.mean(bit_a == bit_b) - 0.5) < tolerance
    counterfactual_a, counterfactual_b = released_a[bit_a & bit_b], released_b[bit_a & bit_b]
    agree, k = p**2 + (1 - p) ** 2, counterfactual_a.size
    assert abs(np.mean(counterfactual_a == counterfactual_b) - agree) < 4.5 * np.sqrt(agree * (1 - agree) / k)
    halves = [selection_half_mask(ids, GameConfig(night=night).draw_seed) for night in (NIGHT, NEXT)]
    assert abs(np.mean(halves[0] == halves[1]) - 0.5) < tolerance
    # the same night and seed draw the same coins again (a re-run of a night reproduces it)
    assert night_seed(0, NIGHT) == first and night_seed(1, NIGHT) != first
    # every draw of the game moves: its counts, halves and attack curve
    assert len({_game_digest(GameConfig(repetitions=3, seed=7, night=night)) for night in (None, NIGHT, NEXT)}) == 3


def test_the_config_hash_never_depends_on_the_night_and_the_game_hash_does():
    from pipelines.scoring.beam_request import scoring_key

    game = GameConfig(repetitions=2, seed=3)
    results = [run_audit(*_world(2000), game=game.with_night(night)) for night in (None, NIGHT, NEXT)]
    assert {r.config_hash for r in results} == {config_hash(game, BoundConfig())}
    assert [encode(r)["coins_night"] for r in results] == ["", "2024-01-01", "2024-01-02"]
    assert [r.game.night for r in results] == [None, NIGHT, NEXT]
    assert "night" not in GAME_FIELDS
    hashes = {game.game_hash(), game.with_night(NIGHT).game_hash(), game.with_night(NEXT).game_hash()}
    assert len(hashes) == 3
    lineage = {"model": {"fingerprint": "sha256:m"}, "reference": {"fingerprint": "sha256:r"},
               "partition": {"fingerprint": "sha256:p", "dataset_fingerprint": "sha256:d"}, "rows": {}}
    keys = {scoring_key(game.with_night(night), lineage, None, expected_curve=False, capacity_check=True)
            for night in (None, NIGHT, NEXT)}
    assert len(keys) == 3  # a stored game of another night is never reused


def test_the_result_and_the_stored_game_record_the_night(tmp_path):
    result = run_audit(*_world(2000), game=GameConfig(repetitions=2, seed=7).with_night(NIGHT))
    assert result.game.night == NIGHT and encode(result)["coins_night"] == "2024-01-01"
    record = json.loads(json.dumps(encode(result)))
    assert record["coins_night"] == "2024-01-01" and decode(AuditResult, record) == result
    older = {key: value for key, value in record.items() if key != "coins_night"}  # a result_json before nights
    assert decode(AuditResult, older).game.night is None
    text = format_audit_result(decode(AuditResult, record))
    assert "seed=7  night=2024-01-01" in text
    assert "night=" not in format_audit_result(decode(AuditResult, older))
    # the stored game keeps its night (counts.npz), and a stored game reads back equal
    game = play_game(*_world(2000), GameConfig(repetitions=2, seed=7, night=NIGHT))
    game.save(tmp_path)
    assert GameCounts.load(tmp_path).game == game.game
    assert GameConfig(**encode(game.game)) == game.game and encode(game.game)["night"] == "2024-01-01"


def test_a_night_must_be_a_date():
    with pytest.raises(LabelDPInputError, match="night"):
        GameConfig(night="2024-02-30")
    with pytest.raises(LabelDPInputError, match="night"):
        GameConfig(night=dt.datetime(2024, 1, 1, 12))
    with pytest.raises(TypeError, match="night"):
        night_seed(0, "2024-01-01")


def test_a_scoring_request_keys_its_game_by_the_day_it_scores():
    from pipelines.scoring.beam_request import ScoringRequest

    request = ScoringRequest("data", NEXT, "m", GameConfig(seed=4), BoundConfig(), night=NEXT)
    assert request.game == GameConfig(seed=4).with_night(NEXT)
    assert ScoringRequest("data", NEXT, "m").game.night is None
    with pytest.raises(ValueError, match="night 2024-01-01 is not the scored day 2024-01-02"):
        ScoringRequest("data", NEXT, "m", night=NIGHT)


@pytest.fixture
def scores_file(tmp_path):
    target, reference, labels, ids = _world(2000)
    path = tmp_path / "scored.parquet"
    pq.write_table(pa.table({"row_id": ids.astype(np.int64), "label": labels.astype(np.int8),
                             "p_target": target, "p_reference": reference}), path)
    return path


def test_audit_scores_takes_a_night_and_refuses_a_bad_one(capsys, scores_file):
    code = main(["audit-scores", str(scores_file), "--repetitions", "2", "--night", "2024-13-01", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--night" in err and "2024-13-01" in err
    assert main(["audit-scores", str(scores_file), "--repetitions", "2", "--night", "2024-01-01", "--quiet",
                 "--json"]) == 0
    with_night = json.loads(capsys.readouterr().out)
    assert main(["audit-scores", str(scores_file), "--repetitions", "2", "--quiet", "--json"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert with_night["coins_night"] == "2024-01-01" and without["coins_night"] == ""
    assert with_night["config_hash"] == without["config_hash"]
    expected = run_audit(*_world(2000), game=GameConfig(repetitions=2, reference_calibration="none").with_night(NIGHT))
    assert with_night == json.loads(json.dumps(encode(expected)))
    with pytest.raises(SystemExit):
        main(["audit-scores", "--help"])
    assert "fresh coins" in " ".join(capsys.readouterr().out.split())  # the help says why a night matters


def test_the_flows_score_each_night_keyed_by_its_day(monkeypatch, tmp_path):
    """The nightly, backfill, guardrail and controls all score through `flows.steps.score_target`."""
    from types import SimpleNamespace

    from flows import steps
    from pipelines.scoring import beam_request

    asked = {}

    class Asked(Exception):
        pass

    def request(**kwargs):
        asked.update(kwargs)
        raise Asked

    monkeypatch.setattr(beam_request, "ScoringRequest", request)
    from flows.plan import default_plan

    plan = default_plan()
    with pytest.raises(Asked):
        steps.score_target(SimpleNamespace(root=tmp_path, date=NEXT), SimpleNamespace(name="m"),
                           SimpleNamespace(name="r", date=NIGHT), plan)
    assert asked["night"] == asked["date"] == NEXT


def test_nights_on_restarted_row_ids_whose_coins_were_not_keyed_by_the_night_enter_no_family():
    """Row ids that restart every day (Criteo's line numbers) with one seed: a game keyed by the seed alone draws the
    same coins every night, which breaks the family's product (docs/soundness.md section 10.1, condition 2); such
    nights are left out of both tests, naming why, while the same nights keyed by their days count."""
    from auditing.verdict.family_evidence import NightCounts, family_evidence

    rng = np.random.default_rng(5)
    unkeyed, keyed = [], []
    for t in range(4):
        day = NIGHT + dt.timedelta(days=t)
        reference = rng.uniform(0.05, 0.95, 3000)
        labels = (rng.uniform(size=3000) < reference).astype(np.int64)
        target = np.clip(reference + 0.3 * (labels - reference), 0.01, 0.99)
        ids = np.arange(1, 3001)  # the same ids every night
        seed_alone = run_audit(target, reference, labels, ids, game=GameConfig(repetitions=1, seed=7))
        by_night = run_audit(target, reference, labels, ids, game=GameConfig(repetitions=1, seed=7).with_night(day))
        unkeyed.append(NightCounts.of_result(day, 0.5, seed_alone))
        keyed.append(NightCounts.of_result(day, 0.5, by_night))
    left_out = family_evidence(unkeyed)
    assert all(n.reason and "keyed by the seed alone" in n.reason for n in left_out.nights)
    assert left_out.evidence == 1.0 and left_out.check_evidence == 1.0 and left_out.counted == 0
    counted = family_evidence(keyed)
    assert all(n.reason is None for n in counted.nights) and counted.evidence != 1.0
