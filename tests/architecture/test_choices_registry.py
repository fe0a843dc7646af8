"""A new bound method or selection strategy is one registered class: registering a toy one here makes it usable
by the audit, the verdict, the command line and the warehouse without editing any other file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.bounds.binomial import binomial_epsilon_lower_bound, binomial_rejects
from auditing.bounds.methods import BOUND_METHODS, BoundMethod
from auditing.bounds.selection import STRATEGIES_REGISTRY, Selection, SelectionStrategy
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.sweep import SweepCounts
from auditing.result import AuditResult
from auditing.verdict.judge import judge
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError


@dataclass(frozen=True)
class HalfBinomial(BoundMethod):
    """A deliberately weak but valid method: half the binomial bound (rejects eps iff binomial rejects 2 eps)."""

    name: ClassVar[str] = "toy-half-binomial"
    label: ClassVar[str] = "half binomial (toy)"
    description: ClassVar[str] = "half the binomial bound (a test's toy)"

    def rejects(self, correct, guesses, m, epsilon, *, delta, confidence, kappa):
        return binomial_rejects(correct, guesses, m, 2 * epsilon, delta=delta, confidence=confidence, kappa=kappa)

    def epsilon_lower_bound(self, correct, guesses, m, *, delta, confidence, kappa):
        return 0.5 * binomial_epsilon_lower_bound(correct, guesses, m, delta=delta, confidence=confidence, kappa=kappa)


@dataclass(frozen=True)
class LastPoint(SelectionStrategy):
    """A pre-registered choice: always the last grid point (all guesses), at the full confidence."""

    name: ClassVar[str] = "toy-last-point"
    label: ClassVar[str] = "last point (toy)"
    description: ClassVar[str] = "the last grid point, chosen before the game (a test's toy)"

    def point_confidence(self, confidence, grid_size):
        return confidence

    def select(self, counts, halves, *, method, confidence, delta, kappa):
        from auditing.bounds.lower_bound import pointwise_bounds

        guesses, correct = counts.guesses[0], counts.correct[0]
        curve = pointwise_bounds(correct, guesses, counts.m, method=method, delta=delta, confidence=confidence,
                                 kappa=kappa)
        index = guesses.size - 1
        return Selection(strategy=self.name, epsilon_lower_bound=float(curve[index]), valid=True,
                         point_confidence=confidence, selected_index=index, selected_guesses=int(guesses[index]),
                         selected_correct=int(correct[index]), m=counts.m, curve_guesses=guesses.copy(),
                         curve_correct=correct.copy(), curve_epsilon=curve)


@pytest.fixture
def toys():
    BOUND_METHODS.register(HalfBinomial)
    STRATEGIES_REGISTRY.register(LastPoint)
    yield
    BOUND_METHODS.unregister(HalfBinomial.name)
    STRATEGIES_REGISTRY.unregister(LastPoint.name)


def _leaky(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.3, n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    return np.where(y == 1, 0.9, 0.1), p, y


def test_unknown_choices_are_refused_with_the_known_names():
    with pytest.raises(LabelDPInputError, match=r"method must be one of \['binomial', 'fdp'\]; got 'toy"):
        BoundConfig(method="toy-half-binomial")
    with pytest.raises(LabelDPInputError, match=r"strategy must be one of \['bonferroni', 'split', 'max'\]"):
        BoundConfig(strategy="toy-last-point")


def test_a_registered_method_runs_through_the_audit_and_the_verdict(toys):
    target, reference, labels = _leaky()
    game = GameConfig(repetitions=3, seed=1)
    binomial = run_audit(target, reference, labels, game=game)
    toy = run_audit(target, reference, labels, game=game, bound=BoundConfig(method=HalfBinomial()))
    assert toy.bound.method == "toy-half-binomial"  # stored by name
    assert toy.epsilon_lower_bound == pytest.approx(binomial.epsilon_lower_bound / 2)
    verdict = judge(toy, 0.5)
    assert verdict.status == "VIOLATION"
    assert verdict.robustness.breaking_kappa == pytest.approx(2 * toy.epsilon_lower_bound - 1.0, abs=0.01)


def test_a_registered_strategy_selects_and_its_verdict_is_judged(toys):
    target, reference, labels = _leaky()
    result = run_audit(target, reference, labels, game=GameConfig(repetitions=2), bound=BoundConfig(strategy="toy-last-point"))
    assert result.selected_guesses == result.m and result.point_confidence == 0.95
    assert not result.optimistic
    verdict = judge(result, 0.1)
    assert verdict.status == ("VIOLATION" if result.epsilon_lower_bound > 0.1 else "PASS")
    # Figures that assume a max over the grid are not made up for it: the floors say they do not model it ...
    assert verdict.robustness.exposed_rows_floor is None and verdict.robustness.detection_floor_rows is None
    assert "toy-last-point" in verdict.robustness.exposed_rows_floor_note
    # ... and breaking kappa re-runs the toy's own selection on the stored counts: its bound minus kappa.
    assert verdict.robustness.breaking_kappa == pytest.approx(result.epsilon_lower_bound - 0.1, abs=0.01)


def test_the_command_line_offers_registered_choices(toys, capsys):
    from flows.cli import main

    assert main(["bound", "--correct", "900", "--guesses", "1000", "--m", "10000", "--method",
                 "toy-half-binomial", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "toy-half-binomial"
    assert out["epsilon_lower_bound"] == pytest.approx(0.5 * binomial_epsilon_lower_bound(900, 1000, 10000))


def _toy_result():
    target, reference, labels = _leaky(4000)
    result = run_audit(target, reference, labels, game=GameConfig(repetitions=2))
    return decode(AuditResult, {**encode(result), "method": HalfBinomial.name})  # the toy's name on real counts


def test_the_warehouse_stores_a_registered_method_after_reopening(toys, tmp_path):
    """The method CHECK follows the registry: a warehouse created before the toy existed accepts its rows."""
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.rows import audit_record

    path = str(tmp_path / "w.duckdb")
    BOUND_METHODS.unregister(HalfBinomial.name)
    open_warehouse(path).close()
    with pytest.raises(LabelDPInputError, match="method must be one of"):
        audit_record(judge(_toy_result(), 0.5), run_kind="nightly", model_id="toy", partition_date="2024-01-02")
    BOUND_METHODS.register(HalfBinomial)
    row, curve = audit_record(judge(_toy_result(), 0.5), run_kind="nightly", model_id="toy", partition_date="2024-01-02")
    store = open_warehouse(path)
    try:
        store.write_audit(row, curve)
        back = store.fetch_results(model_id="toy")
    finally:
        store.close()
    assert [r.method for r in back] == ["toy-half-binomial"]


def test_sweep_counts_of_a_toy_method_match_the_pointwise_rule(toys):
    counts = SweepCounts(m=1000, guesses=np.array([[10, 100, 1000]]), correct=np.array([[10, 90, 600]]))
    chosen = STRATEGIES_REGISTRY.get("bonferroni").select(counts, None, method="toy-half-binomial", confidence=0.95,
                                                          delta=0.0, kappa=0.0)
    direct = [0.5 * binomial_epsilon_lower_bound(c, g, 1000, confidence=1 - 0.05 / 3)
              for c, g in ((10, 10), (90, 100), (600, 1000))]
    assert chosen.curve_epsilon == pytest.approx(direct)
