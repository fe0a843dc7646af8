"""Curator-style blind spots (issue 9, item 5): targets that leak only on a rare subpopulation (one rare value
of one categorical), built as probability vectors by benchmarks/bench_blind_spots.py and audited with
run_audit. The table with its command is in benchmarks/results/blind_spots.md.

Findings encoded here:
- a large blind spot (5% of rows, labels revealed) is reported as VIOLATION in every seed;
- below the detection floor (fewer fully exposed rows than `detection_floor_rows`) the audit never flags:
  the floor is a true necessary condition ("flagged only if at least N labels were exposed");
- the converse the issue asks for ("whenever the audit does not flag, the floor is above the leaking rows")
  does NOT hold for the floor as defined (a perfect attacker right on every guess): in the observational
  game no attacker is right on every guess about an exposed label (when the counterfactual y1 equals the
  training label y0, the bit b cannot be told), so the audit needs 8-64x the floor. Kept as a strict xfail
  so that a fix of that floor turns it into a pass;
- the game-aware floor (`auditing.exposure_floor.game_detection_floor`, total exposure with 95% power)
  satisfies it: a miss with that many totally leaking rows or more happens at most at the 5% rate.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
from scipy import stats

from auditing.audit import AuditConfig
from auditing.guardrail import VIOLATION

_SPEC = importlib.util.spec_from_file_location(
    "bench_blind_spots", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_blind_spots.py")
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)

ROWS = 40_000
SEEDS = 4
CLAIMED = 1.0
CONFIG = AuditConfig(repetitions=1)


def _cells(share=0.0, eps_leak=math.inf, leaking_rows=None):
    return [bench.judge(ROWS, share, eps_leak, seed, CLAIMED, CONFIG, leaking_rows) for seed in range(SEEDS)]


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


@pytest.mark.xfail(strict=True, reason="detection_floor_rows assumes an attacker right on every guess; in the "
                   "observational game exposed labels are guessed right only when y1 != y0 (or with odds "
                   "1/(1+M'(x)[y0]) otherwise), so the audit misses leaks of several times the floor "
                   "(benchmarks/results/blind_spots.md)")
def test_a_miss_always_has_a_floor_above_the_leaking_rows():
    floor = _cells(leaking_rows=1)[0]["floor"]
    for multiple in (2, 4, 8):
        for eps_leak in (4.0, math.inf):
            cells = _cells(eps_leak=eps_leak, leaking_rows=multiple * floor)
            assert all(c["honest"] for c in cells), (multiple, eps_leak, [c["status"] for c in cells])


def test_a_miss_has_a_game_aware_floor_above_the_totally_leaking_rows():
    """Stated margin: at the game-aware floor's 95% power, a miss with L >= floor happens with probability
    <= 5%; over the cells it may happen at most binom.isf(1e-3, cells, 0.05) times."""
    game_floor = _cells(leaking_rows=1)[0]["game_floor"]
    assert game_floor is not None and game_floor > 1
    cells = []
    for multiple in (0.5, 1.0, 1.5):
        cells += _cells(leaking_rows=max(1, round(multiple * game_floor)))
    assert all(c["game_floor"] is not None for c in cells)
    dishonest = sum(not c["honest_game"] for c in cells)
    assert dishonest <= int(stats.binom.isf(1e-3, len(cells), 0.05)), [(c["leaking"], c["status"]) for c in cells]
    assert any(c["status"] == VIOLATION for c in cells)  # the floor is not vacuous: 1.5x of it gets caught
