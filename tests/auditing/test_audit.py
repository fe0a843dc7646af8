"""The audit end to end (auditing/audit.py): deterministic and seed-sensitive, its result's fields and Bonferroni
bookkeeping, counts re-judged exactly, selection strategies sound and max optimistic, the f-DP bound, and
bad input refused in the core. The worlds: randomized response on a Gaussian mixture, with its true posterior."""

import json

import numpy as np
import pytest

from auditing.audit import audit_from_counts, run_audit
from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
from auditing.bounds.selection import bonferroni_confidence
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.sweep import SweepCounts
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError


def rr_inputs(n, eps, seed, k=2):
    rng = np.random.default_rng(seed)
    x, y = gaussian_mixture(n, k, rng)
    released = randomized_response(y, k, eps, rng)
    target = np.eye(k)[released]
    return target, true_posterior(x, k), y


def test_audit_is_deterministic_and_seed_sensitive():
    target, ref, y = rr_inputs(5000, 2.0, 0)
    cfg_game, cfg_bound = GameConfig(repetitions=3, seed=5), BoundConfig()
    a = encode(run_audit(target, ref, y, game=cfg_game, bound=cfg_bound))
    b = encode(run_audit(target, ref, y, game=cfg_game, bound=cfg_bound))
    assert json.dumps(a) == json.dumps(b)
    c = encode(run_audit(target, ref, y, game=GameConfig(repetitions=3, seed=6)))
    assert c["per_repetition"] != a["per_repetition"]
    # Row order does not matter when row ids travel with the rows.
    perm = np.random.default_rng(2).permutation(5000)
    d = encode(run_audit(target[perm], ref[perm], y[perm], row_ids=perm, game=cfg_game, bound=cfg_bound))
    assert d["epsilon_lower_bound"] == a["epsilon_lower_bound"] and d["per_repetition"] == a["per_repetition"]


def test_result_fields_and_bonferroni_bookkeeping():
    target, ref, y = rr_inputs(20_000, 4.0, 1)
    result = run_audit(target, ref, y, game=GameConfig(repetitions=4))
    assert result.point_confidence == pytest.approx(bonferroni_confidence(0.95, result.grid_size))
    assert not result.optimistic and result.bound.strategy == "bonferroni" and result.bound.method == "binomial"
    assert len(result.curve) == result.grid_size and len(result.per_repetition) == 4
    assert result.epsilon_lower_bound == max(p.epsilon_lower_bound for p in result.curve)
    assert 0 < result.epsilon_lower_bound <= result.max_certifiable_epsilon
    # The paper's statistic is uncorrected, so it is at least repetition 0's corrected bound.
    assert result.per_repetition[0] >= result.epsilon_lower_bound
    optimistic = run_audit(target, ref, y, game=GameConfig(repetitions=1), bound=BoundConfig(strategy="max"))
    assert optimistic.optimistic and optimistic.epsilon_lower_bound >= result.epsilon_lower_bound


def test_audit_from_counts_reproduces_run_audit():
    target, ref, y = rr_inputs(8000, 3.0, 2)
    cfg_game, cfg_bound = GameConfig(repetitions=2, grid_points=20), BoundConfig()
    direct = run_audit(target, ref, y, game=cfg_game, bound=cfg_bound)
    guesses = np.array([[p.guesses for p in direct.curve]] * 2)
    correct0 = [p.correct for p in direct.curve]
    # Rebuild repetition 1 from a fresh run with a single repetition offset is not possible; check rep 0.
    counts = SweepCounts(m=8000, guesses=guesses[:1], correct=np.array([correct0]))
    again = audit_from_counts(counts, GameConfig(repetitions=1, grid_points=20), BoundConfig())
    assert again.epsilon_lower_bound == direct.epsilon_lower_bound
    assert again.selected_guesses == direct.selected_guesses


def test_no_evidence_gives_zero():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.05, 0.95, size=20_000)
    y = (rng.random(20_000) < p).astype(int)
    result = run_audit(p, p, y, game=GameConfig(repetitions=3))
    assert result.epsilon_lower_bound == 0.0


def test_multiclass_audit_runs():
    target, ref, y = rr_inputs(10_000, 4.0, 3, k=5)
    result = run_audit(target, ref, y, game=GameConfig(repetitions=2))
    assert result.epsilon_lower_bound > 1.0


@pytest.mark.slow
def test_soundness_of_valid_strategies_and_optimism_of_max():
    """200 seeded randomized-response audits at eps = 1 with counterfactuals from the true posterior (D' = D).
    The valid strategies may exceed the true eps in at most 5% of runs plus 3 standard errors (0.096); the
    paper's max over the sweep is expected to exceed it more often (measured: 8% vs 0%), which shows that
    this test can tell an optimistic selection from a valid one."""
    eps, n, trials = 1.0, 4000, 200
    exceed = {"bonferroni": 0, "split": 0, "max": 0}
    means = {s: 0.0 for s in exceed}
    for seed in range(trials):
        target, ref, y = rr_inputs(n, eps, seed)
        for strategy in exceed:
            cfg_game, cfg_bound = GameConfig(repetitions=1, seed=seed, grid_points=50, grid_min_fraction=1e-3), BoundConfig(strategy=strategy)
            value = run_audit(target[:, 1], ref[:, 1], y, game=cfg_game, bound=cfg_bound).epsilon_lower_bound
            exceed[strategy] += value > eps
            means[strategy] += value / trials
    limit = 0.05 + 3 * np.sqrt(0.05 * 0.95 / trials)
    assert exceed["bonferroni"] / trials <= limit
    assert exceed["split"] / trials <= limit
    assert exceed["max"] > exceed["bonferroni"]
    assert means["bonferroni"] > 0.3  # informative, not trivially 0


def test_fdp_allows_delta_0_and_kappa_is_recorded():
    """The f-DP method audits the (eps, delta) curve itself, so pure eps (delta = 0) is allowed."""
    assert BoundConfig(method="fdp", delta=1e-5).delta == 1e-5 and BoundConfig(method="fdp").delta == 0.0  # the default: claims are pure eps
    target, ref, y = rr_inputs(5000, 3.0, 8)
    for method in ("binomial", "fdp"):
        at_zero = run_audit(target, ref, y, game=GameConfig(repetitions=1), bound=BoundConfig(method=method, delta=0.0))
        shifted = run_audit(target, ref, y, game=GameConfig(repetitions=1), bound=BoundConfig(method=method, delta=0.0, kappa=0.4))
        assert shifted.bound.kappa == 0.4 and at_zero.bound.kappa == 0.0 and at_zero.epsilon_lower_bound > 0.4
        # same game (kappa never changes a draw), bound shifted down by kappa (delta = 0)
        assert [p.correct for p in shifted.curve] == [p.correct for p in at_zero.curve]
        assert shifted.epsilon_lower_bound == pytest.approx(at_zero.epsilon_lower_bound - 0.4, abs=3e-4)


def test_a_reference_certain_of_a_label_is_refused_in_the_core():
    target, ref, y = rr_inputs(1000, 2.0, 9)
    for value in (0.0, 1.0):
        bad = ref[:, 1].copy()
        bad[[3, 7, 11]] = value
        with pytest.raises(LabelDPInputError, match=r"p_reference: 3 row\(s\) give a class probability of exactly 0 or 1"):
            run_audit(target[:, 1], bad, y, game=GameConfig(repetitions=1))
    multi = ref.copy()
    multi[5] = [1.0, 0.0]
    with pytest.raises(LabelDPInputError, match=r"p_reference: 1 row\(s\)"):
        run_audit(target, multi, y, game=GameConfig(repetitions=1))
    # the target may be certain (it is the model under test); only the reference is refused
    assert run_audit(target, ref, y, game=GameConfig(repetitions=1)).m == 1000


def test_split_with_an_empty_half_says_what_it_needs():
    ids = np.arange(3, dtype=np.int64)
    from auditing.game.slots import selection_half_mask

    seed = next(s for s in range(100) if len(set(selection_half_mask(ids, s))) == 1)  # all rows in one half
    for score in ("paper", None):  # the compiled kernel and the numpy path (custom score)
        kwargs = {} if score else {"score_function": lambda t, r: t - r}
        with pytest.raises(LabelDPInputError, match=r"split strategy needs audited rows in both halves.*3 row\(s\)"
                                                    r".*--strategy bonferroni"):
            run_audit(np.full(3, 0.5), np.full(3, 0.4), np.array([0, 1, 1]), ids,
                      GameConfig(repetitions=1, seed=seed), BoundConfig(strategy="split"), **kwargs)


def test_length_mismatch_and_class_mismatch():
    with pytest.raises(LabelDPInputError, match="p_reference: has 5 rows; expected 4, the number of rows in p_target"):
        run_audit(np.full(4, 0.5), np.full(5, 0.5), np.zeros(4, int))
    with pytest.raises(LabelDPInputError, match="classes"):
        run_audit(np.full((4, 3), 1 / 3), np.full(4, 0.5), np.zeros(4, int))


def test_fdp_audit_end_to_end():
    target, ref, y = rr_inputs(20_000, 4.0, 5)
    result = run_audit(target, ref, y, game=GameConfig(repetitions=2, grid_points=30), bound=BoundConfig(method="fdp"))
    assert result.bound.method == "fdp" and result.bound.delta == 0.0  # the default: pure eps
    assert 0.5 < result.epsilon_lower_bound < 4.0
    assert result.epsilon_lower_bound == max(p.epsilon_lower_bound for p in result.curve)
