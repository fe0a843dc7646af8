"""Valid bounds per slice (auditing.slices, docs/slices.md), tested against a truth built here.

The worlds are seeded numpy simulations (tests/support/rr_slice_worlds.py): per-row click rates D(1 | x) of 1-30%
stand for the features, training labels are drawn from D, the mechanism is binary randomized response at a known
eps (per slice, for the planted leak), and the target model is the Bayes posterior P[y = 1 | released label] under
D for the mechanism it claims, the strongest attacker against RR. The reference is D itself (kappa 0 holds) or D
with moved logits (kappa computed from the construction).

The claim tested: over the S declared slices, the chance that ANY slice's valid bound exceeds the true eps is at
most the slices' budget. Over N trials the number K of trials with an exceedance must not be significantly above
budget * N: scipy.stats.binomtest(K, N, budget, alternative="greater").pvalue > SIGNIFICANCE.

The ``audit-scores`` command's slices: tests/flows/commands/test_audit_scores.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest
from scipy import stats

from auditing.audit import CheckRows, run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.result import AuditResult
from auditing.slices import SLICING_KINDS, ColumnValues, audit_slices, parse_slicing
from auditing.verdict.judge import judge
from auditing.verdict.types import INCONCLUSIVE, PASS, VIOLATION
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.rr_slice_worlds import rr_world

SIGNIFICANCE = 1e-3
BUDGET = 0.05


def exceedances(trials: int, n: int, slicings, *, game: GameConfig, bound: BoundConfig, logit_shift=0.0,
                columns_of=None) -> int:
    """Trials in which any slice's valid bound exceeds the true eps (1)."""
    above = 0
    for trial in range(trials):
        rng = np.random.default_rng(10_000 + trial)
        target, reference, y, category, kappa = rr_world(rng, n, 1.0, logit_shift=logit_shift)
        columns = {"category": category} if columns_of is None else columns_of(y, category)
        audit = audit_slices(target, reference, y, None, dataclasses.replace(game, seed=trial),
                             dataclasses.replace(bound, kappa=kappa if logit_shift else 0.0), slicings,
                             columns=columns, budget=BUDGET)
        above += any(piece.epsilon_lower_bound > 1.0 for piece in audit.slices)
    return above


SCENARIOS = {
    "binomial, bonferroni, exact reference": (BoundConfig(), 0.0),
    "binomial, split, exact reference": (BoundConfig(strategy="split"), 0.0),
    "binomial, bonferroni, reference off by 0.3 in logit": (BoundConfig(), 0.3),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_slices_of_a_compliant_model_exceed_the_truth_at_most_at_their_budget(name):
    bound, shift = SCENARIOS[name]
    trials = 60
    above = exceedances(trials, 8_000, ["column:category:top=5", "prior-deciles", "shown-label"],
                        game=GameConfig(repetitions=1), bound=bound, logit_shift=shift)
    pvalue = stats.binomtest(above, trials, BUDGET, alternative="greater").pvalue
    assert pvalue > SIGNIFICANCE, f"{name}: {above} of {trials} trials had a slice above the true eps"


@pytest.mark.slow
def test_slicing_by_the_training_label_manufactures_evidence():
    """The harness can fail: slices of the training label (refused by parse_slicing, built here by hand) exceed
    the true eps of a compliant model in most trials, which is why they are refused."""
    trials = 20
    above = exceedances(trials, 8_000, [ColumnValues("trained", None, ("0", "1"))], game=GameConfig(repetitions=1),
                        bound=BoundConfig(),
                        columns_of=lambda y, category: {"trained": y})
    assert stats.binomtest(above, trials, BUDGET, alternative="greater").pvalue < SIGNIFICANCE, above


def test_a_leak_confined_to_one_slice_is_caught_while_the_global_bound_stays_under_the_claim():
    """RR at eps 1 everywhere but on 5% of the rows, where the mechanism does not randomize (eps 20): the model's
    outputs have the same size everywhere, so the global sweep mixes the leaky rows with the compliant ones."""
    target, reference, y, category, _ = rr_world(np.random.default_rng(0), 100_000, 1.0, leak_eps=20.0)
    config_game, config_bound = GameConfig(repetitions=1), BoundConfig()
    result = run_audit(target, reference, y, None, config_game, config_bound)
    result = dataclasses.replace(result, slices=audit_slices(target, reference, y, None, config_game, config_bound,
                                                             ["column:category:top=20"], columns={"category": category}))
    verdict = judge(result, 1.0)
    assert verdict.status == PASS and result.epsilon_lower_bound < 1.0
    assert [(s.name, s.status) for s in verdict.slice_violations] == [("category=0", VIOLATION)]
    assert verdict.slices[0].name == "category=0" and verdict.slices[0].confidence == pytest.approx(1 - 0.05 / 20)


def test_a_slice_too_small_for_any_bound_says_so():
    target, reference, y, _, _ = rr_world(np.random.default_rng(1), 5_000, 1.0)
    tiny = np.where(np.arange(5_000) < 12, 1, 0)
    result = dataclasses.replace(run_audit(target, reference, y), slices=audit_slices(
        target, reference, y, None, GameConfig(repetitions=1), BoundConfig(), ["column:tiny=1"], columns={"tiny": tiny}))
    (piece,) = judge(result, 2.0).slices
    assert piece.rows == 12 and piece.status == INCONCLUSIVE and piece.note.startswith("too small")


def test_slices_replay_the_global_game_and_round_trip():
    target, reference, y, _, _ = rr_world(np.random.default_rng(2), 20_000, 1.0)
    ids = np.arange(20_000) * 7 + 3
    config_game, config_bound = GameConfig(repetitions=1, seed=5), BoundConfig()
    audit = audit_slices(target, reference, y, ids, config_game, config_bound, ["shown-label", "prior-deciles"])
    shown = [s for s in audit.slices if s.slicing == "shown-label"]
    assert sum(s.rows for s in shown) == 20_000 and audit.declared == len(audit.slices) == 12
    # a slice that holds every row is the global game at the slices' confidence
    whole = audit_slices(target, reference, y, ids, config_game, config_bound, ["column:all=x"], columns={"all": np.full(20_000, "x")})
    alone = run_audit(target, reference, y, ids, config_game, BoundConfig(confidence=whole.confidence))
    assert whole.slices[0].epsilon_lower_bound == alone.epsilon_lower_bound
    result = dataclasses.replace(alone, slices=audit)
    assert decode(AuditResult, json.loads(json.dumps(encode(result)))) == result
    assert audit_slices(target, reference, y, ids, config_game, config_bound, ["shown-label", "prior-deciles"]) == audit


def test_check_rows_are_sliced_with_the_audited_rows():
    target, reference, y, category, _ = rr_world(np.random.default_rng(3), 30_000, 1.0)
    audited, check = np.arange(30_000) < 24_000, np.arange(30_000) >= 24_000
    ids = np.arange(30_000)
    audit = audit_slices(target[audited], reference[audited], y[audited], ids[audited], GameConfig(repetitions=1), BoundConfig(),
                         ["column:category=0,1"], columns={"category": category[audited]},
                         check=CheckRows(target[check], reference[check], y[check], ids[check]),
                         check_columns={"category": category[check]})
    for piece, value in zip(audit.slices, (0, 1), strict=True):
        assert piece.check_rows == int((category[check] == value).sum())
        assert piece.capacity_check.checked and piece.capacity_check.check_rows == piece.check_rows


@pytest.mark.parametrize("text, expected", [
    ("column:C9", "column:C9:top=10"), ("column:C9:top=3", "column:C9:top=3"), ("column:C9=a,b", "column:C9=a,b"),
    ("group:market", "group:market"), ("prior-deciles", "prior-deciles"), ("shown-label", "shown-label")])
def test_slicing_texts(text, expected):
    assert parse_slicing(text).spec == expected


@pytest.mark.parametrize("text, needle", [
    ("column:label", "training label"), ("column:y:top=2", "training label"), ("deciles", "must be one of"),
    ("column:C9:top=0", "positive integer"), ("column:", "expected column:NAME"), ("shown-label:1", "no argument"),
    ("group:", "expected group:NAME")])
def test_bad_slicing_texts_are_refused(text, needle):
    with pytest.raises(LabelDPInputError, match=needle):
        parse_slicing(text, label_column="y" if ":y:" in text else "label")


def test_the_registry_lists_every_kind():
    assert SLICING_KINDS.names() == ("column", "group", "prior-deciles", "shown-label")


def test_slices_replay_the_nights_coins():
    """With a night, a slice holding every row is still the global game (the same keyed coins)."""
    import datetime as dt

    target, reference, y, _, _ = rr_world(np.random.default_rng(5), 10_000, 1.0)
    night = dt.date(2024, 5, 2)
    config_game, config_bound = GameConfig(repetitions=1), BoundConfig()
    whole = audit_slices(target, reference, y, None, config_game.with_night(night), config_bound, ["column:all=x"], columns={"all": np.full(10_000, "x")})
    alone = run_audit(target, reference, y, None, config_game.with_night(night),
                      BoundConfig(confidence=whole.confidence))
    other = run_audit(target, reference, y, None, config_game, BoundConfig(confidence=whole.confidence))
    assert whole.slices[0].epsilon_lower_bound == alone.epsilon_lower_bound
    assert whole.slices[0].selected_correct == alone.selected_correct != other.selected_correct


# Each slice's (name, rows, check rows, eps_lb, c', c) on the world of the test below, computed by the slice audit
# before slices were bounded from counts (it played each slice and bounded it from its rows in one step).
BOUNDED_FROM_ROWS = {
    "bonferroni": [("category=0", 1727, 325, 1.334203689137212, 154, 139),
                   ("category=4", 1677, 322, 0.24892404477245278, 150, 106),
                   ("shown label 0", 9166, 1848, 0.1545588943840669, 1184, 700),
                   ("shown label 1", 834, 152, 0.7060429902188254, 834, 606)],
    "split, kappa 0.3": [("category=0", 1727, 325, 0.9717685095570852, 85, 75),
                         ("category=4", 1677, 322, 0.0, 81, 54),
                         ("shown label 0", 9166, 1848, 0.0, 1, 1),
                         ("shown label 1", 834, 152, 0.5138139668958863, 418, 311)],
}


def test_slices_bounded_from_stored_counts_equal_the_bounds_from_rows(tmp_path):
    """count_slices, stored and loaded, then bound_slices: the numbers the slice audit gave when it bounded each
    slice from its rows, at either bound setting, from the same counts (no slice played again)."""
    from auditing.config import BoundConfig
    from auditing.slices import SliceCounts, bound_slices, count_slices

    target, reference, y, category, _ = rr_world(np.random.default_rng(11), 12_000, 1.0, leak_eps=8.0, categories=6)
    audited = np.arange(12_000) < 10_000
    ids = np.arange(12_000) * 5 + 2
    game = GameConfig(repetitions=3, seed=2)
    counts = count_slices(target[audited], reference[audited], y[audited], ids[audited], game,
                          ["column:category:top=2", "shown-label"], columns={"category": category[audited]},
                          check=CheckRows(target[~audited], reference[~audited], y[~audited], ids[~audited]),
                          check_columns={"category": category[~audited]})
    assert all(piece.game.game.repetitions == 1 for piece in counts.slices)
    counts.save(tmp_path)
    loaded = SliceCounts.load(tmp_path)
    assert SliceCounts.load(tmp_path / "elsewhere") is None
    for name, bound in (("bonferroni", BoundConfig()), ("split, kappa 0.3", BoundConfig(strategy="split", kappa=0.3))):
        audit = bound_slices(loaded, bound)
        assert [(s.name, s.rows, s.check_rows, s.epsilon_lower_bound, s.selected_guesses, s.selected_correct)
                for s in audit.slices] == BOUNDED_FROM_ROWS[name], name
        assert audit == bound_slices(counts, bound)
        assert all(s.capacity_check is not None and s.capacity_check.checked for s in audit.slices)
    with pytest.raises(LabelDPInputError, match="valid selection strategy"):
        bound_slices(loaded, BoundConfig(strategy="max"))


def test_the_days_statistics_gathered_batch_by_batch_equal_those_of_the_whole_day():
    """The value counts and the prior's exact deciles (a count per order-preserving bin, then the values of the bins
    holding the ranks) fix the same slices whatever the batches, ties and empty batches included."""
    from auditing.slices import DECILES, DayStatistics, SliceRows, day_statistics, lower_quantile_ranks

    for n in (1, 2, 3, 9, 10, 11, 99, 12_345):
        values = np.random.default_rng(n).random(n)
        assert np.array_equal(np.sort(values)[lower_quantile_ranks(n)], np.quantile(values, DECILES, method="lower"))
    rng = np.random.default_rng(0)
    n = 50_000
    prior = np.round(rng.uniform(0.01, 0.3, n), 3)  # many ties
    reference = np.column_stack([1 - prior, prior])
    category = rng.integers(0, 40, n).astype(str)

    def rows(a, b):
        return SliceRows(reference[a:b], np.zeros(b - a, np.int64), np.arange(a, b), {"c": category[a:b]}, 1)

    slicings = [parse_slicing(s) for s in ("column:c:top=5", "prior-deciles", "group:c", "shown-label")]
    whole = day_statistics(slicings, rows(0, n))
    gathered = DayStatistics(slicings)
    cuts = [0, 0, 1, 777, 20_000, 20_001, n]
    for a, b in itertools.pairwise(cuts):
        gathered.add(rows(a, b))
    assert gathered.needs_second_pass
    for a, b in itertools.pairwise(cuts):
        gathered.add_again(rows(a, b))
    found = gathered.result()
    assert found[("values", "c")] == whole[("values", "c")]
    assert np.array_equal(found[("prior",)][0], whole[("prior",)][0]) and found[("prior",)][1] == whole[("prior",)][1]
    assert [s.fixed(found) for s in slicings] == [s.fixed(whole) for s in slicings]
    assert len(slicings[1].fixed(found).slices(rows(0, n), None)) == 10
    # Merged as a runner merges the job's accumulators: one per batch, in any order, both passes.
    for order in (list(range(len(cuts) - 1)), [5, 2, 0, 4, 1, 3]):
        first = [DayStatistics(slicings) for _ in order]
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            first[i].add(rows(a, b))
        merged = first[order[0]]
        for i in order[1:]:
            merged.merge(first[i])
        second = [merged.again() for _ in order]
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            second[i].add_again(rows(a, b))
        again = second[order[0]]
        for i in order[1:]:
            again.merge(second[i])
        result = again.result()
        assert result[("values", "c")] == whole[("values", "c")]
        assert np.array_equal(result[("prior",)][0], whole[("prior",)][0])
        assert [s.fixed(result) for s in slicings] == [s.fixed(whole) for s in slicings]
