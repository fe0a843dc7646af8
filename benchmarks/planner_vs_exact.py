"""Does the power planner's night figure hold under the check's own exact test? (docs/decisions.md, planning)

`auditing.verdict.power.power_plan` gives the gap above the claim at which a night's capacity check vouches with
90% power, from the test's normal approximation. This draws the planner's own model (the bound half's guesses right
sigmoid(claim + gap) of the time, the matched check guesses right half the time, the planner's guess counts) and
counts how often the exact test (`auditing.bounds.misfit_test.check_p_value`, what epsilon_check is computed
from) rejects the claim at that gap. Seeded; the truth is the binomial draw, outside the planner.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/planner_vs_exact.py [--trials 400]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from auditing.bounds.misfit_test import check_p_value
from auditing.verdict.power import _guesses, power_plan, rows_of_day

CASES = (  # (day rows, holdout share, claim, guess share)
    (51_000, 0.2, 1.0, 0.1),
    (51_000, 0.2, 0.5, 0.1),
    (100_000, 0.2, 0.25, 0.013),
    (100_000, 0.2, 0.5, 0.013),
    (30_000, 0.16, 1.0, 0.1),
    (1_000_000, 0.2, 1.0, 0.01),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261129)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| day rows | holdout | claim | guess share | bound / check guesses | planned night gap | exact test's power "
          "at that gap (95% CI) |")
    print("|---|---|---|---|---|---|---|")
    for rows, holdout, claim, share in CASES:
        audited, check = rows_of_day(rows, holdout, 0.1)
        plan = power_plan(audited, check, claim, guess_share=share)
        n_b, n_h = _guesses(audited, check, share)
        if plan.night_gap is None:
            print(f"| {rows:,} | {holdout} | {claim} | {share} | {n_b:,} / {n_h:,} | none | - |")
            continue
        q = 1.0 / (1.0 + math.exp(-(claim + plan.night_gap)))
        c_b = rng.binomial(n_b, q, args.trials)
        c_h = rng.binomial(n_h, 0.5, args.trials)
        hits = sum(check_p_value(int(b), n_b, int(h), n_h, claim + 2e-5) <= 0.05 for b, h in zip(c_b, c_h, strict=True))

        low, high = stats.binomtest(hits, args.trials).proportion_ci(0.95, method="exact")
        print(f"| {rows:,} | {holdout} | {claim} | {share} | {n_b:,} / {n_h:,} | +{plan.night_gap:.3f} | "
              f"{hits / args.trials:.1%} ({low:.1%}-{high:.1%}) |")


if __name__ == "__main__":
    main()
