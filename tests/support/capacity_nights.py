"""The capacity check's seeded nights, shared by tests/auditing/verdict/test_capacity_check.py and
tests/behaviour/test_capacity_check_verdicts.py: each night a segment world of tests/support/segment_worlds.py
(the truth, built outside
the code under test) audited at R = 1 with its check rows, and the one-sided binomial test of an exceedance rate."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from auditing.audit import run_audit
from auditing.config import split_settings
from auditing.verdict.capacity_check import CapacityCheck
from tests.support.segment_worlds import World, night

CONFIDENCE = 0.95
SIGNIFICANCE = 1e-3


def audit(world: World, seed: int, **config) -> tuple[float, CapacityCheck]:
    game, bound = split_settings({"repetitions": 1, "seed": seed, **config})
    result = run_audit(*world.audited, game=game, bound=bound, check=world.check)
    return result.epsilon_lower_bound, result.capacity_check


def nights(trials: int, **world) -> np.ndarray:
    """(audit bound, epsilon_check) per night, data and game seeds varying."""
    out = []
    for seed in range(trials):
        bound, check = audit(night(1000 + seed, **world), seed)
        out.append((bound, check.epsilon_check))
    return np.array(out)


def not_above_rate(count: int, trials: int) -> bool:
    """The one-sided binomial test does not reject 'the rate is at most 1 - confidence'."""
    return stats.binomtest(count, trials, 1 - CONFIDENCE, alternative="greater").pvalue > SIGNIFICANCE


def pooled_epsilon_check(histograms, confidence: float = 0.95) -> float:
    """The rule the strata replaced, written here from its description (docs/soundness.md section 8.6): one
    threshold planned on the selection half's pooled accuracy and the check's guess count, then the exact test on
    the pooled counts of every kind of view."""
    from scipy import stats

    from auditing.bounds.misfit_test import exact_epsilon_lower
    from auditing.game.sweep import guess_grid
    from auditing.game.sweep_reduce import boundary_bins

    def top(name):  # guesses per threshold bin, all strata pooled
        pooled = getattr(histograms, name).sum(axis=0)
        return np.flip(np.cumsum(np.flip(pooled)))

    sel, sel_c, bound, bound_c, check, check_c = (top(n) for n in (
        "selection_rows", "selection_correct", "bound_rows", "bound_correct", "check_rows", "check_correct"))
    rows = histograms.selection_rows.sum(axis=0)
    grid = guess_grid(int(rows.sum()), kind="log", points=100, min_fraction=1e-4)
    candidates = np.unique(boundary_bins(rows, histograms.selection_correct.sum(axis=0), grid).bin)[::-1]
    z = stats.norm.isf(1 - confidence)

    def planned(k):
        p = (sel_c[k] + 0.5) / (sel[k] + 1)
        se = math.sqrt(1 / ((sel[k] + 1) * p * (1 - p)) + 4 / (check[k] + 1))
        return math.log(p / (1 - p)) - z * se if check[k] else -math.inf

    k = max(candidates, key=planned)
    return exact_epsilon_lower(int(bound_c[k]), int(bound[k]), int(check_c[k]), int(check[k]), 1 - confidence)
