"""Nightly controls and the score panel's histogram (item 6), without Prefect.

- The positive control (randomized response at a known eps_c) is detected (valid bound above its
  pre-registered floor) and never above eps_c, over many seeds; the negative control (a copy of the
  reference) gives 0. Statistical claims are checked against the binomial tail: over N independent seeds an
  event of probability <= 5% happens more than `allowed(N)` times with probability < 0.1%.
- The game's expected curve (the floor's input) equals the mean of simulated repetitions.
- The Beam job on a registered RR-label oracle equals run_audit on the same arrays (counts, result, score
  histogram exactly; the expected curve to float round-off).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

import numpy as np
import pytest
from scipy import stats

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.play import play_repetition
from auditing.game.score_histogram import score_histogram
from auditing.game.scores import resolve_score
from auditing.game.sweep import correct_at, rank_order
from auditing.verdict.controls import (
    FLOOR_POWER,
    NEGATIVE,
    NEGATIVE_CONFIDENCE,
    POSITIVE,
    check_control,
    check_control_epsilon,
    positive_control_floor,
    rr_keep_probability,
    rr_oracle_probabilities,
)
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data.day import listed_day

logging.getLogger("apache_beam").setLevel(logging.ERROR)

SEEDS = 60
ROWS = 20_000


def allowed(trials: int, rate: float = 0.05, tail: float = 1e-3) -> int:
    """The count an event of probability `rate` exceeds over `trials` independent trials with prob < `tail`."""
    return int(stats.binom.isf(tail, trials, rate))


def world(seed: int, n: int = ROWS):
    """Reference probabilities and labels drawn from them (kappa = 0 holds exactly), unique sparse row ids."""
    rng = np.random.default_rng(1000 + seed)
    p = rng.beta(1.0, 3.0, size=n)
    labels = (rng.random(n) < p).astype(np.int64)
    ids = rng.choice(10 * n, size=n, replace=False).astype(np.int64)
    return p, labels, ids


def test_rr_oracle_is_randomized_response_at_eps_c():
    ids = np.arange(200_000, dtype=np.int64)
    labels = (ids % 3).astype(np.int64)
    for k, eps in ((2, 2.0), (3, 1.0)):
        y = labels % k
        probs = rr_oracle_probabilities(ids, y, eps, seed=7, num_classes=k)
        q = rr_keep_probability(eps, k)
        assert np.allclose(probs.sum(axis=1), 1.0) and np.allclose(probs.max(axis=1), q)
        released = probs.argmax(axis=1)
        kept = (released == y).mean()
        assert abs(kept - q) < 4 * np.sqrt(q * (1 - q) / ids.size)
        # each other class equally likely: the likelihood ratio of any output is at most e^eps
        for other in range(1, k):
            share = ((released - y) % k == other).mean()
            assert abs(share - (1 - q) / (k - 1)) < 4 * np.sqrt(q * (1 - q) / ids.size)
        assert np.array_equal(probs, rr_oracle_probabilities(ids, y, eps, seed=7, num_classes=k))
        assert not np.array_equal(probs, rr_oracle_probabilities(ids, y, eps, seed=8, num_classes=k))


def test_control_epsilon_must_be_positive():
    for bad in (0, -1, float("inf"), float("nan"), "x", None):
        with pytest.raises(LabelDPInputError, match=r"positive_epsilon|epsilon"):
            check_control_epsilon(bad)


@pytest.mark.parametrize(("eps_c", "strategy", "method", "seeds"), [
    (2.0, "bonferroni", "binomial", SEEDS), (1.0, "bonferroni", "binomial", SEEDS), (2.0, "split", "binomial", SEEDS),
    (2.0, "bonferroni", "fdp", SEEDS // 2),
])
def test_positive_control_detected_and_never_above_eps_c_over_many_seeds(eps_c, strategy, method, seeds):
    """Stated margins: P[eps_lb <= floor] <= 1 - FLOOR_POWER = 0.1% (the floor's pre-registered power) and
    P[eps_lb > eps_c] <= 5% (the bound's validity at 95%); over the seeds each may happen at most
    allowed(seeds, rate) times (a 1e-3 binomial tail). Measured (100 seeds each, 20K rows): 0 below the floor
    in all four settings; above eps_c 0 times for bonferroni, 2 times for split."""
    below_floor = above_eps = 0
    floors = []
    for seed in range(seeds):
        p, labels, ids = world(seed)
        target = rr_oracle_probabilities(ids, labels, eps_c, seed=seed)
        config_game, bound = GameConfig(repetitions=1, seed=seed), BoundConfig(strategy=strategy, method=method, delta=1e-5 if method == "fdp" else None)
        result = run_audit(target, p, labels, ids, config_game, bound, expected_curve=True)
        check = check_control(POSITIVE, result, eps_c)
        floors.append(check.floor)
        below_floor += result.epsilon_lower_bound <= check.floor
        above_eps += result.epsilon_lower_bound > eps_c
        if check.floor > 0:
            assert check.passed == (check.floor < result.epsilon_lower_bound <= eps_c)
    assert np.median(floors) > 0.2 * eps_c  # the floor is informative at this m, not a vacuous 0
    assert below_floor <= allowed(seeds, 1 - FLOOR_POWER), f"{below_floor} of {seeds} seeds below the floor"
    assert above_eps <= allowed(seeds), f"{above_eps} of {seeds} seeds above eps_c = {eps_c}"


def test_negative_control_gives_zero_over_many_seeds():
    """A copy of the reference: every score is 0, guesses are fair coins; P[eps_lb > 0] <= 5% (validity), and the
    control, judged at 99.9%, fails a correct night at most once in a thousand."""
    positive = failed = 0
    for seed in range(SEEDS):
        p, labels, ids = world(seed, 5000)
        result = run_audit(p, p, labels, ids, GameConfig(repetitions=1, seed=seed), BoundConfig())
        check = check_control(NEGATIVE, result)
        positive += result.epsilon_lower_bound > 0.0
        failed += not check.passed
        assert check.passed or result.epsilon_lower_bound > 0.0  # stricter than the audit's 95%
        assert result.score_histogram.rows[0] == 5000  # every |score| is 0: the lowest bin
    assert positive <= allowed(SEEDS)
    assert failed <= allowed(SEEDS, rate=1 - NEGATIVE_CONFIDENCE)


def test_negative_control_fails_for_a_model_that_leaks():
    """The control can fail for what it guards: a model that is not a copy of the reference (broken plumbing,
    e.g. the target's file scored as the control) shows evidence at 99.9%."""
    p, labels, ids = world(3, 20_000)
    leaky = run_audit(rr_oracle_probabilities(ids, labels, 3.0, seed=0), p, labels, ids, GameConfig(repetitions=1), BoundConfig())
    check = check_control(NEGATIVE, leaky)
    assert not check.passed and "plumbing is broken" in check.message and "99.9%" in check.message


def test_the_capacity_check_sees_a_wrong_reference_the_label_blind_control_used_to():
    """What the retired label-blind control measured, the capacity check measures with the model itself: a model
    that knows day D's click rates but never read an audited label (true eps 0), a reference that halves every
    row's click odds. Its VIOLATION of a claim of 0 is real evidence of misfit, not of leakage: the check rows
    (same law, never seen) show the same accuracy, so epsilon_check stays 0, and the misfit it sees (lower
    confidence) is within what kappa = 0.7 covers."""
    from auditing.audit import CheckRows

    rng = np.random.default_rng(21)
    n = 100_000
    labels = (rng.random(n) < 0.02).astype(np.int64)
    target, reference = np.full(n, 0.02), np.full(n, 0.01)
    ids = np.arange(n, dtype=np.int64)
    check_labels = (rng.random(n // 5) < 0.02).astype(np.int64)
    rows = CheckRows(np.full(n // 5, 0.02), np.full(n // 5, 0.01), check_labels, ids[: n // 5] + n)
    wrong = run_audit(target, reference, labels, ids, GameConfig(repetitions=1), BoundConfig(), check=rows)
    capacity = wrong.capacity_check
    assert wrong.epsilon_lower_bound > 0.3 and capacity.epsilon_check == 0.0 and not capacity.vouches_for(0.0)
    assert 0.0 < capacity.check_misfit_kappa < 0.7 and capacity.sees_misfit(0.0) and not capacity.sees_misfit(0.7)


def test_failing_controls_say_why():
    p, labels, ids = world(0, 5000)
    leaky = run_audit(rr_oracle_probabilities(ids, labels, 4.0, seed=0), p, labels, ids,
                      GameConfig(repetitions=1), BoundConfig(), expected_curve=True)
    # the same leakage judged as a control of a smaller eps_c: the bound exceeds eps_c
    check = check_control(POSITIVE, leaky, 0.5)
    assert not check.passed and "exceeds the control's true eps_c" in check.message
    # a control at a tiny eps_c has no power at this m: floor 0, which fails it
    weak = run_audit(rr_oracle_probabilities(ids, labels, 0.01, seed=0), p, labels, ids,
                     GameConfig(repetitions=1), BoundConfig(), expected_curve=True)
    check = check_control(POSITIVE, weak, 0.01)
    assert not check.passed and check.floor == 0.0 and "no power" in check.message
    # a non-private model judged as the negative control
    check = check_control(NEGATIVE, leaky)
    assert not check.passed and "> 0" in check.message
    # no expected curve recorded: floor 0, never a silent pass
    assert positive_control_floor(dataclasses.replace(leaky, expected_correct=None))["floor"] == 0.0


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


# ------------------------------------------------------------------------------------------ Beam job

DAY, PREVIOUS = dt.date(2024, 5, 2), dt.date(2024, 5, 1)


def _register_reference(root, date, seed=0):
    """A tiny CatBoost reference fitted on every row of ``date`` (registered as 'reference')."""
    from catboost import CatBoostClassifier

    from pipelines.data import schema, splits
    from pipelines.models import registry
    from pipelines.training import train as training

    table = schema.read_partition(root, date)
    frame = training.feature_frame(table)
    labels = table.column(schema.LABEL).to_numpy()
    params = {"iterations": 12, "depth": 4, "learning_rate": 0.3, "max_ctr_complexity": 1, "thread_count": 1,
              "random_seed": seed, "allow_writing_files": False, "verbose": False}
    model = CatBoostClassifier(**params)
    model.fit(frame, labels, cat_features=schema.CATEGORICAL_COLUMNS)
    registry.save_model(root, "reference", date, model, {
        "mechanism": {"name": "none", "epsilon": "inf", "delta": 0.0}, "seed": seed,
        "partition_fingerprint": schema.partition_fingerprint(root, date), "catboost_params": params,
        "test_metrics": {}, "training_rows": {"split": splits.scheme(), "label_splits": ["train"],
                                              "unread_row_ids": [], "rows": None}})
    return model


@pytest.fixture(scope="module")
def beam_world(tmp_path_factory):
    from pipelines.data import schema, splits, synth
    from pipelines.training import train as training

    root = tmp_path_factory.mktemp("controls-root")
    for date in (PREVIOUS, DAY):
        synth.write_synthetic_day(root, date, rows=6000, rows_per_file=2000)
    reference = _register_reference(root, PREVIOUS)
    table = schema.read_partition(root, DAY)
    ids = table.column(schema.ROW_ID).to_numpy().astype(np.int64)
    train = splits.split_of(ids) == splits.TRAIN
    return {"root": root, "ids": ids[train], "labels": table.column(schema.LABEL).to_numpy().astype(np.int64)[train],
            "p_reference": reference.predict_proba(training.feature_frame(table))[train],
            "fingerprint": schema.partition_fingerprint(root, DAY)}


def test_beam_positive_control_equals_run_audit(beam_world):
    """The RR-label oracle registered as a model goes through the Beam job's ModelHandler path and gives the
    in-process result on the same (train) rows: counts and result exactly, the expected curve to round-off."""
    from pipelines.models.handle import resolve_model
    from pipelines.reference import controls
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    root, day = beam_world["root"], DAY
    oracle = controls.ensure_positive_control(listed_day(root, day), "control-positive", 2.0, 3)
    metadata = oracle.metadata
    assert controls.is_oracle(metadata) and oracle.artifact.name == "oracle.json"
    assert metadata["training_rows"]["rows"] == beam_world["ids"].size
    again = controls.ensure_positive_control(listed_day(root, day), "control-positive", 2.0, 3)
    assert again.metadata["created_at"] == metadata["created_at"]  # reused, not rewritten
    config_game, bound = GameConfig(repetitions=3, seed=1, grid_points=40), BoundConfig()
    outcome = score_day(ScoringRequest(data_root=str(root), date=DAY, model="control-positive", game=config_game, bound=bound,
                                       reference="reference", batch_size=1500, expected_curve=True))
    p_target = rr_oracle_probabilities(beam_world["ids"], beam_world["labels"], 2.0, seed=3)
    expected = encode(run_audit(p_target, beam_world["p_reference"], beam_world["labels"], beam_world["ids"],
                                config_game, bound, expected_curve=True))
    got = encode(outcome.result)
    got_curve, want_curve = got.pop("expected_correct"), expected.pop("expected_correct")
    assert got == expected  # score_histogram included
    assert got_curve["guesses"] == want_curve["guesses"]
    assert np.allclose(got_curve["correct"], want_curve["correct"], rtol=1e-9, atol=1e-6)
    check = check_control(POSITIVE, outcome.result, 2.0)
    assert check.epsilon_lower_bound <= 2.0 and check.floor > 0

    # the negative control: a copy of the reference, through the CatBoost handler, gives 0
    controls.ensure_negative_control(listed_day(root, day), "control-negative",
                                     resolve_model(root, "reference", PREVIOUS))
    negative = score_day(ScoringRequest(data_root=str(root), date=DAY, model="control-negative", game=config_game, bound=bound,
                                        reference="reference", batch_size=1500))
    assert negative.result.epsilon_lower_bound == 0.0 and check_control(NEGATIVE, negative.result).passed
    assert negative.result.score_histogram.rows[0] == beam_world["ids"].size
