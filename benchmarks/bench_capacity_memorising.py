"""The capacity check against private models that memorise their training rows while their outputs on unseen rows do
not follow the day (tests/support/memorising_worlds.py; the truth built outside the code): the pooled rule (the
check before strata, written in tests/support/capacity_nights.py from its description) against the stratified rule
of the product.

Per night: 110,000 rows, a uniformly random 10,000 of them check rows, the rest the target's training rows; the
reference as given (no correction: the case of `audit-scores` and of registered models whose reference is not
corrected); binomial, bonferroni, 95%, kappa 0, repetition 0, coins keyed by the night. The target: randomized
response at eps 1 on the training labels (claim 1: every VIOLATION is false), memorising its noisy positives (+3 in
logit), the reference's odds moved by a label-free factor per segment (sd 1 in logit) on every row; the log-ratio
score unless stated. Real leaks: the same learner on the true labels.

Each cell: nights whose audit said VIOLATION and the rule vouched (epsilon_check > claim), of all nights, with its
95% Clopper-Pearson interval and the one-sided binomial test's p-value against 5%.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_capacity_memorising.py --nights 120 \\
        --out benchmarks/results/capacity_memorising.md
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditing.audit import audit_counts, play_game
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from tests.support.capacity_nights import pooled_epsilon_check
from tests.support.memorising_worlds import memorising_night

BASE = dict(clicks_only=True, factor_sd=1.0)
WORLDS = {  # label: (world, score, claim)
    "global under-prediction 0.7": (dict(shift=0.7), "log-ratio", 1.0),
    "global under-prediction 1.0": (dict(shift=1.0), "log-ratio", 1.0),
    "under-prediction 1.5 on half the segments": (dict(shift=1.5, segment_share=0.5), "log-ratio", 1.0),
    "global over-prediction 0.7": (dict(shift=-0.7), "log-ratio", 1.0),
    "over-confident reference (x1.6), +0.5": (dict(shift=0.5, confidence=1.6), "log-ratio", 1.0),
    "under-confident reference (x0.6), +0.5": (dict(shift=0.5, confidence=0.6), "log-ratio", 1.0),
    "1% clicks, under-prediction 1.0": (dict(shift=1.0, click_rate=0.01), "log-ratio", 1.0),
    "5 classes, under-prediction 1.0": (dict(shift=1.0, classes=5, click_rate=0.05), "log-ratio", 1.0),
    "paper score, under-prediction 1.0": (dict(shift=1.0), "paper", 1.0),
    "real leak (non-private), under-prediction 1.0": (dict(shift=1.0, epsilon=math.inf), "log-ratio", 1.0),
    "real leak (non-private), paper score": (dict(shift=1.0, epsilon=math.inf), "paper", 1.0),
}


def _cell(count: int, total: int) -> str:
    lo, hi = stats.binomtest(count, total).proportion_ci(0.95)
    p = stats.binomtest(count, total, 0.05, alternative="greater").pvalue
    return f"{count}/{total} ({100 * count / total:.0f}%, {100 * lo:.0f}-{100 * hi:.0f}%; p={p:.2g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nights", type=int, default=120)
    parser.add_argument("--rows", type=int, default=110_000)
    parser.add_argument("--check-rows", type=int, default=10_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    started = time.monotonic()
    lines = [f"Memorising worlds: {args.nights} nights each, {args.rows:,} rows, {args.check_rows:,} random check "
             "rows (command and setting: benchmarks/bench_capacity_memorising.py).", "",
             "| world | VIOLATIONs (audit alone) | vouched: pooled rule | vouched: stratified rule |",
             "|---|---|---|---|"]
    import datetime as dt

    for label, (world, score, claim) in WORLDS.items():
        violations = pooled = stratified = 0
        for seed in range(args.nights):
            night = memorising_night(9000 + seed, rows=args.rows, check_share=args.check_rows / args.rows,
                                     **BASE, **world)
            config_game, bound = GameConfig(repetitions=1, seed=seed, score=score, reference_calibration="none"), BoundConfig()
            game = play_game(*night.audited, game=config_game.with_night(dt.date(2026, 1, 1) + dt.timedelta(seed)),
                             check=night.check)
            result = audit_counts(game, bound)
            violation = result.epsilon_lower_bound > claim
            violations += violation
            pooled += violation and pooled_epsilon_check(game.check) > claim
            stratified += violation and result.capacity_check.epsilon_check > claim
        lines.append(f"| {label} | {_cell(violations, args.nights)} | {_cell(pooled, args.nights)} | "
                     f"{_cell(stratified, args.nights)} |")
        print(lines[-1], file=sys.stderr, flush=True)
    lines += ["", f"{time.monotonic() - started:.0f} s."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
