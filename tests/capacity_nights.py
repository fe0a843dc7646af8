"""The capacity check's seeded nights, shared by tests/test_capacity_check.py and
tests/test_capacity_check_verdicts.py: each night a segment world of tests/segment_worlds.py (the truth, built outside
the code under test) audited at R = 1 with its check rows, and the one-sided binomial test of an exceedance rate."""

from __future__ import annotations

import numpy as np
from scipy import stats
from segment_worlds import World, night

from auditing.audit import run_audit
from auditing.config import AuditConfig
from auditing.verdict.capacity_check import CapacityCheck

CONFIDENCE = 0.95
SIGNIFICANCE = 1e-3


def audit(world: World, seed: int, **config) -> tuple[float, CapacityCheck]:
    result = run_audit(*world.audited, config=AuditConfig(repetitions=1, seed=seed, **config), check=world.check)
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
