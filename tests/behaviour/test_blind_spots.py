"""Curator-style blind spots: targets that leak only on a rare subpopulation (one rare value
of one categorical), built as probability vectors by benchmarks/bench_blind_spots.py and audited with
run_audit. The table with its command is in benchmarks/results/blind_spots.md.

Findings encoded here:
- a large blind spot (5% of rows, labels revealed) is reported as VIOLATION in every seed;
- below the detection floor (fewer fully exposed rows than `detection_floor_rows`) the audit never flags:
  the floor is a true necessary condition ("fewer than N correct guesses can never flag it");
- the converse the issue asks for ("whenever the audit does not flag, the floor is above the leaking rows")
  does NOT hold for the perfect-attacker floor `detection_floor_rows` (an attacker right on every guess): in
  the observational game no attacker is right on every guess about an exposed label (when the counterfactual
  y1 equals the training label y0, the bit b cannot be told), so the audit misses leaks of 2-8x that floor.
  Asserted as the documented counter-example;
- it holds for the game-aware floor `exposed_rows_floor` (auditing.verdict.exposure_floor: total exposure, 95% power),
  the figure the warehouse, the report's PASS sentence and the CLI state: a miss with that many totally leaking
  rows or more happens at most at the 5% rate (a stated binomial margin), and below it the promise holds
  trivially.
"""

from __future__ import annotations

import math

from scipy import stats

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.verdict.types import VIOLATION
from tests.support.benchmark_scripts import benchmark

bench = benchmark("bench_blind_spots")

ROWS = 40_000
SEEDS = 4
CLAIMED = 1.0
CONFIG_game, CONFIG_bound = GameConfig(repetitions=1), BoundConfig()


def _cells(share=0.0, eps_leak=math.inf, leaking_rows=None, seeds=SEEDS):
    return [bench.judge(ROWS, share, eps_leak, seed, CLAIMED, CONFIG_game, CONFIG_bound, leaking_rows) for seed in range(seeds)]


def test_large_blind_spot_is_flagged():
    cells = _cells(share=0.05)
    assert all(c["status"] == VIOLATION for c in cells)
    assert all(c["leaking"] == 2000 for c in cells)


def test_below_the_detection_floor_the_audit_never_flags():
    floor = _cells(leaking_rows=1)[0]["floor"]
    assert floor is not None and floor > 1
    for count in (max(1, floor // 4), floor - 1):
        cells = _cells(leaking_rows=count)
        assert not any(c["status"] == VIOLATION for c in cells), count
        assert all(c["honest"] for c in cells)  # missed, and the floor is above the leaking rows


def test_the_perfect_attacker_floor_does_not_keep_the_promise():
    """The documented counter-example: with 2, 4 and 8 times the perfect-attacker floor of totally leaking
    rows, the audit misses although that floor is at or below the leaking rows (measured: every cell missed;
    asserted: at least half of them, far from the chance of a fluke)."""
    floor = _cells(leaking_rows=1)[0]["floor"]
    cells = [c for multiple in (2, 4, 8) for c in _cells(leaking_rows=multiple * floor)]
    assert all(c["floor"] == floor and c["leaking"] >= floor for c in cells)
    dishonest = sum(not c["honest"] for c in cells)
    assert dishonest >= len(cells) // 2, [(c["leaking"], c["status"]) for c in cells]


def test_whenever_the_audit_does_not_flag_the_exposed_rows_floor_is_above_the_leaking_rows():
    """The promise of item 5 with the game-aware floor. Below it a miss keeps the promise by definition; at
    and above it (1, 1.25, 1.5 and 2 times the floor, 8 seeds each) a miss breaks it, which at the floor's 95%
    power happens with probability <= 5% per cell: over the cells at most binom.isf(1e-3, cells, 0.05) times
    (a false failure about once in 1000 runs). The floor is not vacuous: the audit flags at and above it."""
    game_floor = _cells(leaking_rows=1)[0]["game_floor"]
    assert game_floor is not None and game_floor > 1
    below = [c for multiple in (0.25, 0.5) for c in _cells(leaking_rows=round(multiple * game_floor))]
    assert all(c["honest_game"] for c in below)
    cells = [c for multiple in (1.0, 1.25, 1.5, 2.0)
             for c in _cells(leaking_rows=round(multiple * game_floor), seeds=8)]
    assert all(c["game_floor"] is not None and c["leaking"] >= c["game_floor"] * 0.9 for c in cells)
    dishonest = sum(not c["honest_game"] for c in cells)
    assert dishonest <= int(stats.binom.isf(1e-3, len(cells), 0.05)), [(c["leaking"], c["status"]) for c in cells]
    assert sum(c["status"] == VIOLATION for c in cells) >= 0.9 * len(cells)
