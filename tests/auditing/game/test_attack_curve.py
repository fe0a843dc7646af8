"""The attack curve of repetition 0 (auditing.game.attack_curve, docs/attack-curve.md): its figures against an
independent ranking of the rows, its bootstrap under the game's null, a leaking target, the compiled and the numpy
game giving the same record, determinism, and old stored counts and results without it.

The in-process vs Beam equality of the record is checked with the job's other outputs
(tests/pipelines/scoring/test_beam_scoring.py
`assert_same_as_in_process`, tests/pipelines/reference/test_controls.py); the warehouse columns in
tests/auditing/sinks/warehouse/test_rows.py and
tests/auditing/sinks/warehouse/test_migrations.py; the report panel in
tests/auditing/sinks/report/test_attack_panel.py.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from scipy import stats

from auditing.audit import audit_counts, play_game, run_audit
from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.config import BoundConfig
from auditing.game import attack_curve as ac
from auditing.game.config import GameConfig
from auditing.game.counts import COUNTS_FILE, GameCounts
from auditing.game.play import play_repetition
from auditing.game.scores import resolve_score
from auditing.records.game import AttackCurve
from auditing.result import AuditResult
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError


# ------------------------------------------------------------------------------------------ an independent ROC
def _independent_figures(scores: np.ndarray, positive: np.ndarray) -> dict:
    """The ROC of the rows themselves, written here from its definition: a point per threshold at each distinct
    score (positive where s >= threshold) plus (0, 0); TPR at FPR <= f the largest TPR of a point with FPR <= f;
    AUROC the share of (positive, negative) pairs the positive wins, ties one half."""
    pos, neg = scores[positive], scores[~positive]
    points = {(0.0, 0.0)}
    for threshold in np.unique(scores):
        points.add((float(np.sum(neg >= threshold) / neg.size), float(np.sum(pos >= threshold) / pos.size)))
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return {"points": points, "auroc": wins / (pos.size * neg.size),
            **{f"tpr_at_fpr_{str(f).replace('.', '_')}": max(t for x, t in points if x <= f) for f in (0.001, 0.01)}}


def _distinct_bin_rows(seed: int, n: int = 6000):
    """Scores s = +-2**k (one octave each, so no bin holds two distinct scores) and 0, the top ones rare, with a
    coin b that leaks through s; correct as the game defines it."""
    rng = np.random.default_rng(seed)
    k = np.clip(np.round(rng.normal(-8, 4, n)), -24, 5)
    scores = np.where(rng.random(n) < 0.05, 0.0, rng.choice([-1.0, 1.0], n) * 2.0**k)
    b0 = rng.random(n) < 1 / (1 + np.exp(-np.sign(scores) * (k + 12) / 6))  # P(b = 0) grows with s
    correct = (scores > 0) == b0
    return scores, correct, b0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_figures_equal_an_independent_ranking_of_the_rows(seed):
    scores, correct, b0 = _distinct_bin_rows(seed)
    curve = ac.attack_curve_from_rows(scores, correct, seed=seed)
    expected = _independent_figures(scores, b0)
    for name in AttackCurve.FIGURES:
        assert getattr(curve, name) == pytest.approx(expected[name], rel=1e-12, abs=1e-15), name
    assert 0.6 < curve.auroc < 0.95 and curve.tpr_at_fpr_0_01 > 0.01  # the example leaks, on rare top rows
    fpr, tpr = ac.roc_points(curve.positives, curve.negatives)
    assert set(zip(fpr.tolist(), tpr.tolist(), strict=True)) == expected["points"]  # the achievable points
    assert (curve.rows_positive, curve.rows_negative) == (int(b0.sum()), int((~b0).sum()))
    # positives iff (s > 0) == correct: the coin is recovered from the per-row outcome
    assert curve.positives[ac.OCTAVES - 1] == int(np.sum((scores == 0) & b0))
    for name in AttackCurve.FIGURES:
        assert getattr(curve, f"{name}_lower") <= getattr(curve, f"{name}_upper")


def test_the_histogram_is_signed_octaves_with_zero_on_the_negative_side():
    edges = ac.signed_edges()
    assert len(edges) == ac.SIGNED_BINS - 1 and edges[ac.OCTAVES - 1] == 0.0
    assert list(edges) == sorted(edges) and edges[-1] == 64.0 and edges[0] == -64.0
    scores = np.array([-100.0, -1.5, -2.0**-30, 0.0, -0.0, 2.0**-30, 1.0, 1.5, 100.0])
    outcomes = ac.outcomes_from_rows(scores, scores > 0)  # every guess correct: every row a positive
    positives, negatives = ac.histogram_from_outcomes(outcomes)
    assert negatives.sum() == 0
    for s in scores:  # each score lands in the bin its edges say
        i = int(np.searchsorted(edges, s, side="left" if s <= 0 else "right"))
        assert positives[i] >= 1, s
    assert positives[ac.OCTAVES - 1] == 3  # -2**-30, -0.0 and 0.0: left of the 0 edge (guess b' = 1)
    assert positives[ac.OCTAVES] == 1  # 2**-30: right of it


# ------------------------------------------------------------------------------------------ the null
NULL_TRIALS = 200


def test_under_the_null_the_auroc_interval_covers_half_and_tpr_follows_fpr():
    """Scores independent of the coin (the game's null: the model does not depend on the training label, the
    reference is correct). The 95% interval of the AUROC covers 0.5 at the nominal rate (a one-sided binomial
    test at 1% does not reject), the AUROC averages 0.5, and TPR at FPR <= 1% is about the FPR of the point it is
    read at, near 1% (the achievable points are the octave edges)."""
    covered, aurocs, tprs, fprs = 0, [], [], []
    for trial in range(NULL_TRIALS):
        rng = np.random.default_rng(10_000 + trial)
        n = 4000
        scores = rng.choice([-1.0, 1.0], n) * 2.0 ** rng.normal(-6.3, 3.0, n)
        b0 = rng.random(n) < 0.5
        curve = ac.attack_curve_from_rows(scores, (scores > 0) == b0, seed=trial)
        covered += curve.auroc_lower <= 0.5 <= curve.auroc_upper
        aurocs.append(curve.auroc)
        tprs.append(curve.tpr_at_fpr_0_01)
        fpr, _ = ac.roc_points(curve.positives, curve.negatives)
        fprs.append(fpr[fpr <= 0.01].max())
    assert stats.binomtest(covered, NULL_TRIALS, 0.95, alternative="less").pvalue >= 0.01, covered
    assert abs(np.mean(aurocs) - 0.5) < 0.005
    assert 0.005 < np.mean(tprs) < 0.015 and abs(np.mean(tprs) - np.mean(fprs)) < 0.002


# ------------------------------------------------------------------------------------------ the game
def test_a_leaking_target_separates_the_labels_and_a_label_free_one_does_not():
    rng = np.random.default_rng(4)
    n = 20_000
    x, y = gaussian_mixture(n, 2, rng)
    reference = true_posterior(x, 2)[:, 1]
    released = randomized_response(y, 2, 4.0, rng)  # randomized response at eps 4: the target is its labels
    config_game, bound = GameConfig(repetitions=1, reference_calibration="none", audit_rows="all"), BoundConfig()
    leak = run_audit(released.astype(float), reference, y, game=config_game, bound=bound).attack_curve
    assert leak.auroc_lower > 0.65 and leak.tpr_at_fpr_0_01_lower > 0.02
    # the null: a target that never saw the labels, labels drawn from a correct reference
    label_free = np.clip(0.8 * reference + 0.1 + rng.normal(0, 0.05, n), 0.01, 0.99)
    null = run_audit(label_free, reference, (rng.random(n) < reference).astype(int), game=config_game, bound=bound).attack_curve
    assert null.auroc_lower <= 0.5 <= null.auroc_upper and abs(null.auroc - 0.5) < 0.02
    assert leak.rows_positive + leak.rows_negative == null.rows_positive + null.rows_negative == n


@pytest.mark.parametrize("classes", [2, 3])
def test_the_compiled_game_and_the_numpy_game_give_the_same_record(classes):
    """The compiled pass (auditing.game.kernel.signed_outcomes) counts what play_repetition's rows give."""
    rng = np.random.default_rng(classes)
    n = 5000
    target, reference = rng.dirichlet(np.ones(classes), n), rng.dirichlet(2 * np.ones(classes), n)
    labels = np.array([rng.choice(classes, p=p) for p in reference])
    ids = rng.choice(10 * n, n, replace=False)
    game = GameConfig(repetitions=2, seed=9, reference_calibration="none", audit_rows="all")
    paper = resolve_score("paper")
    compiled = play_game(target, reference, labels, ids, game).attack_curve
    numpy_path = play_game(target, reference, labels, ids, game,
                           score_function=lambda t, r: paper(t, r)).attack_curve
    assert compiled == numpy_path
    rows = play_repetition(target, reference, labels, ids, seed=9, repetition=0, score=paper)
    assert compiled == ac.attack_curve_from_rows(rows.scores, rows.correct, seed=9)


def test_the_same_inputs_give_the_same_record_and_the_seed_only_moves_the_bootstrap():
    scores, correct, _ = _distinct_bin_rows(7)
    first = ac.attack_curve_from_rows(scores, correct, seed=3)
    again = ac.attack_curve_from_rows(scores, correct, seed=3)
    assert first == again and json.dumps(encode(first)) == json.dumps(encode(again))
    other = ac.attack_curve_from_rows(scores, correct, seed=4)
    assert other.bootstrap_seed != first.bootstrap_seed == ac.bootstrap_seed(3)
    assert (other.auroc, other.tpr_at_fpr_0_01) == (first.auroc, first.tpr_at_fpr_0_01)
    assert (other.auroc_lower, other.auroc_upper) != (first.auroc_lower, first.auroc_upper)
    assert first.bootstrap_seed < 2**53 and (first.bootstrap_confidence, first.bootstrap_resamples) == (0.95, 1000)
    assert decode(AttackCurve, json.loads(json.dumps(encode(first)))) == first


def test_no_positive_or_no_negative_gives_no_figures():
    scores = np.array([0.5, -0.25, 0.125])
    curve = ac.attack_curve_from_rows(scores, scores > 0, seed=0)  # every coin 0: no negative
    assert curve.rows_negative == 0 and curve.rows_positive == 3
    assert all(getattr(curve, f"{name}{part}") is None for name in AttackCurve.FIGURES
               for part in ("", "_lower", "_upper"))
    assert decode(AttackCurve, encode(curve)) == curve


# ------------------------------------------------------------------------------------------ stored records
def test_counts_and_results_stored_before_the_attack_curve_still_load(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    p = rng.uniform(0.05, 0.95, n)
    config_game, bound = GameConfig(repetitions=2, reference_calibration="none", audit_rows="all"), BoundConfig()
    game = play_game(p, p, (rng.random(n) < p).astype(int), game=config_game)
    assert game.attack_curve is not None
    game.save(tmp_path)
    assert GameCounts.load(tmp_path).attack_curve == game.attack_curve
    # counts.npz as the code before the attack curve wrote it: its records have no such key
    with np.load(tmp_path / COUNTS_FILE) as data:
        arrays = {name: data[name] for name in data.files}
    records = json.loads(str(arrays["records"]))
    del records["attack_curve"]
    arrays["records"] = np.array(json.dumps(records, sort_keys=True))
    np.savez(tmp_path / COUNTS_FILE, **arrays)
    old = GameCounts.load(tmp_path)
    assert old.attack_curve is None and np.array_equal(old.counts.correct, game.counts.correct)
    result = audit_counts(old, bound)
    fresh = audit_counts(game, bound)
    assert result.attack_curve is None and encode(result)["attack_curve"] == {}
    assert {**encode(result), "attack_curve": None} == {**encode(fresh), "attack_curve": None}  # the rest
    # a stored result without the field (or with it empty) reads as not recorded
    stored = encode(fresh)
    assert decode(AuditResult, {k: v for k, v in stored.items() if k != "attack_curve"}).attack_curve is None
    assert decode(AuditResult, {**stored, "attack_curve": {}}).attack_curve is None
    assert decode(AuditResult, json.loads(json.dumps(stored))) == fresh
    with pytest.raises(LabelDPInputError, match=r"attack_curve: unknown field\(s\) \['colour'\]"):
        decode(AuditResult, {**stored, "attack_curve": {**stored["attack_curve"], "colour": 1}})
    assert encode(dataclasses.replace(fresh, attack_curve=None))["attack_curve"] == {}


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("call", "message"), [
    (lambda: ac.attack_curve(np.ones(5), np.ones(ac.SIGNED_BINS), seed=0), "positives: expected counts of shape"),
    (lambda: ac.attack_curve(np.ones(ac.SIGNED_BINS), -np.ones(ac.SIGNED_BINS), seed=0), "negatives: .*>= 0"),
    (lambda: ac.attack_curve(np.full(ac.SIGNED_BINS, 0.5), np.ones(ac.SIGNED_BINS), seed=0), "whole numbers"),
    (lambda: ac.attack_curve(np.ones(ac.SIGNED_BINS), np.ones(ac.SIGNED_BINS), seed=0, resamples=0), "resamples"),
    (lambda: ac.attack_curve(np.ones(ac.SIGNED_BINS), np.ones(ac.SIGNED_BINS), seed=0, confidence=1.0),
     "confidence"),
    (lambda: ac.attack_curve(np.ones(ac.SIGNED_BINS), np.ones(ac.SIGNED_BINS), seed=-1), "seed"),
    (lambda: ac.outcomes_from_rows([0.1, np.nan], [True, False]), "scores: 1 NaN"),
    (lambda: ac.outcomes_from_rows([0.1, 0.2], [1, 0]), "correct must be booleans"),
    (lambda: ac.outcomes_from_rows([0.1, 0.2], [True]), "scores and correct"),
    (lambda: ac.histogram_from_outcomes(np.zeros((3, 2, 2))), "outcomes: expected counts of shape"),
])
def test_bad_input_is_refused_naming_the_argument(call, message):
    with pytest.raises(LabelDPInputError, match=message):
        call()
