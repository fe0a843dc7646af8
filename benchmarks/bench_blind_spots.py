"""Curator-style blind spots: targets that leak only on a rare subpopulation.

The curator attack (Wang et al. 2024, "Curator Attack: When Blackbox Differential Privacy Auditing Loses Its
Power", arXiv:2411.16516) makes a black-box auditor pass a mechanism that leaks only on rare events. Here the
rare event is a single rare value of one categorical feature, held by a share f of the audited rows (5% down to
0.005%). A target equals the reference M' (no leakage) on every other row and, on the rare rows, reveals the
label:

- partially: randomized response at eps_leak (`auditing.verdict.controls.rr_oracle_probabilities`), a real violation
  of any claim below eps_leak;
- totally: probability 1 on the true label (no privacy at all on those rows).

For each cell the audit (run_audit on arrays: the game of paper Alg. 2, binomial bounds Thm. 17, Bonferroni
selection at 95%, kappa = 0, which holds exactly since labels are drawn from M') judges the claim, and the
detection floor (`auditing.verdict.robustness.detection_floor_rows`, item 3) says how many fully exposed labels the
audit needs. The check: whenever the audit does NOT report VIOLATION, the floor is above the number of
leaking rows, i.e. the audit never claims more sensitivity than it has (the floor is about fully exposed
labels; a partial leak exposes less per row, so a miss with floor <= leaking rows there is reported, not
hidden). Both floors are tabled: the perfect-attacker floor (fails the check) and the game-aware
`auditing.verdict.exposure_floor.exposed_rows_floor` at 95% power (the figure the warehouse, report and CLI state
next to a PASS; keeps it).

    .venv/bin/python benchmarks/bench_blind_spots.py [--rows 160000] [--seeds 5] [--claimed 1]

prints a Markdown table (benchmarks/results/blind_spots.md holds the recorded one with its command).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.verdict.controls import rr_oracle_probabilities
from auditing.verdict.exposure_floor import exposed_rows_floor
from auditing.verdict.guardrail import guardrail_status
from auditing.verdict.robustness import detection_floor_rows
from auditing.verdict.types import VIOLATION

SHARES = (0.05, 0.01, 0.001, 0.0001, 0.00005)
STRENGTHS = (2.0, 4.0, 8.0, math.inf)  # eps_leak of the rare rows' randomized response; inf: total


def blind_spot_world(rows: int, share: float, eps_leak: float, seed: int, leaking_rows: int | None = None):
    """(p_target, p_reference, labels, row_ids, leaking rows) of one blind-spot target (module docstring);
    ``leaking_rows`` overrides round(share * rows)."""
    rng = np.random.default_rng(seed)
    p_reference = rng.beta(1.0, 3.0, size=rows)  # click probabilities, mean 0.25
    labels = (rng.random(rows) < p_reference).astype(np.int64)
    row_ids = rng.choice(20 * rows, size=rows, replace=False).astype(np.int64)
    leaking = np.zeros(rows, dtype=bool)
    count = leaking_rows if leaking_rows is not None else max(1, round(share * rows))
    leaking[rng.choice(rows, size=count, replace=False)] = True  # the rows holding the rare category value
    target = np.column_stack([1.0 - p_reference, p_reference])
    if math.isinf(eps_leak):
        target[leaking] = np.eye(2)[labels[leaking]]
    else:
        target[leaking] = rr_oracle_probabilities(row_ids[leaking], labels[leaking], eps_leak, seed=seed)
    return target, p_reference, labels, row_ids, int(leaking.sum())


def judge(rows: int, share: float, eps_leak: float, seed: int, claimed: float, config_game: GameConfig, bound: BoundConfig,
          leaking_rows: int | None = None) -> dict:
    target, reference, labels, ids, leaking = blind_spot_world(rows, share, eps_leak, seed, leaking_rows)
    result = run_audit(target, reference, labels, ids, config_game, bound)
    status = guardrail_status(result.epsilon_lower_bound, claimed, result.max_certifiable_epsilon)
    floor = detection_floor_rows(result, claimed)
    game_floor = exposed_rows_floor(result, claimed)  # the verdict's game-aware floor
    return {"status": status, "eps_lb": result.epsilon_lower_bound, "floor": floor, "leaking": leaking,
            "honest": status == VIOLATION or floor is None or floor > leaking, "game_floor": game_floor,
            "honest_game": status == VIOLATION or game_floor is None or game_floor > leaking}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=160_000, help="audited rows (default 160000: the train "
                        "split of a 200K-row day)")
    parser.add_argument("--seeds", type=int, default=5, help="independent worlds per cell (default 5)")
    parser.add_argument("--claimed", type=float, default=1.0, help="the claimed epsilon (default 1)")
    args = parser.parse_args(argv)
    config_game, bound = GameConfig(repetitions=1), BoundConfig()
    print(f"# rows {args.rows}, claimed eps {args.claimed:g}, {args.seeds} seeds per cell; audit: {bound.method}, "
          f"{bound.strategy}, confidence {bound.confidence:.0%}, delta {bound.delta:g}, kappa {bound.kappa:g}, "
          f"grid {config_game.grid} {config_game.grid_points} points", file=sys.stderr)
    print("| rare share | leaking rows | leak on them | VIOLATION (of seeds) | median valid eps_lb | detection floor "
          "(rows) | missed with floor <= leaking rows | game-aware floor (95% power) | missed with game-aware floor "
          "<= leaking rows |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    started = time.monotonic()
    dishonest_total = 0
    for share in SHARES:
        for eps_leak in STRENGTHS:
            cells = [judge(args.rows, share, eps_leak, seed, args.claimed, config_game, bound) for seed in range(args.seeds)]
            flagged = sum(c["status"] == VIOLATION for c in cells)
            dishonest = sum(not c["honest"] for c in cells)
            dishonest_total += dishonest
            floors = sorted({c["floor"] for c in cells}, key=lambda v: -1 if v is None else v)
            game = [c["game_floor"] for c in cells]
            game_text = "none" if None in game else f"{min(game):,}-{max(game):,}"
            leak = "total (label revealed)" if math.isinf(eps_leak) else f"RR at eps {eps_leak:g}"
            print(f"| {share:.3%} | {cells[0]['leaking']:,} | {leak} | {flagged}/{len(cells)} | "
                  f"{float(np.median([c['eps_lb'] for c in cells])):.3f} | "
                  f"{', '.join('none' if f is None else f'{f:,}' for f in floors)} | {dishonest} | {game_text} | "
                  f"{sum(not c['honest_game'] for c in cells)} |", flush=True)
    print(f"\n# {time.monotonic() - started:.1f} s; cells where the audit missed and its floor was not above the "
          f"leaking rows: {dishonest_total}", file=sys.stderr)

    # How many TOTALLY leaking rows does the audit actually need? A ladder of multiples of the floor.
    floor = cells[0]["floor"]
    print(f"\n| totally leaking rows | multiple of the detection floor ({floor}) | VIOLATION (of seeds) | median "
          "valid eps_lb | game-aware floor (95% power) |")
    print("|---:|---:|---:|---:|---:|")
    for multiple in (1, 2, 4, 8, 16, 32, 64):
        count = multiple * floor
        cells = [judge(args.rows, 0.0, math.inf, seed, args.claimed, config_game, bound, leaking_rows=count)
                 for seed in range(args.seeds)]
        flagged = sum(c["status"] == VIOLATION for c in cells)
        game = [c["game_floor"] for c in cells]
        print(f"| {count:,} | {multiple} | {flagged}/{len(cells)} | "
              f"{float(np.median([c['eps_lb'] for c in cells])):.3f} | {min(game):,}-{max(game):,} |", flush=True)
    print(f"# total {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
