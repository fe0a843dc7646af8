"""The valid eps_lb of the same models on the same day, auditing every row (``audit_rows all``) versus only the
rows whose labels entered training (``audit_rows training``), with the Beam job (FnApiRunner).

Run the demo first (it synthesizes the two days and trains the reference and the three targets), then this:

    labeldp-audit demo --data-root /tmp/trust-a/demo
    python benchmarks/bench_audit_rows.py --data-root /tmp/trust-a/demo --date 2026-11-02

Prints one line per (model, audit_rows) with m, the valid eps_lb (95%, Bonferroni over the grid, binomial,
delta 0, kappa 0, R = 20 as the default plan), the paper's mean over repetitions, breaking_kappa and the detection
floor for the model's claim.
"""

from __future__ import annotations

import argparse
import time

from auditing.config import BoundConfig
from auditing.game.config import GameConfig

MODELS = (("planted-violation", 0.5), ("lp-1st-eps2", 2.0), ("rr-eps1", 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", required=True)
    parser.add_argument("--date", required=True)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--method", choices=["binomial", "fdp"], default="binomial")
    parser.add_argument("--models", nargs="*", default=[name for name, _ in MODELS])
    args = parser.parse_args()

    from auditing.verdict.guardrail import guardrail_status
    from auditing.verdict.robustness import verdict_robustness
    from labeldp.names import parse_date
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    date = parse_date(args.date, "--date")

    print(f"{'model':<18} {'claimed':>7} {'audit_rows':<10} {'m':>7} {'eps_lb':>7} {'paper mean':>10} "
          f"{'status':<12} {'breaking_kappa':>14} {'floor':>6} {'seconds':>7}")
    for model, claimed in MODELS:
        if model not in args.models:
            continue
        for audit_rows in ("all", "training"):
            game, bound = GameConfig(repetitions=args.repetitions, audit_rows=audit_rows), BoundConfig(method=args.method)
            began = time.perf_counter()
            outcome = score_day(ScoringRequest(args.data_root, date, model, game, bound, reference="reference"), [])
            seconds = time.perf_counter() - began
            result = outcome.result
            status = guardrail_status(result.epsilon_lower_bound, claimed, result.max_certifiable_epsilon)
            trust = verdict_robustness(result, claimed, status)
            floor = trust["detection_floor_rows"]
            print(f"{model:<18} {claimed:>7g} {audit_rows:<10} {result.m:>7} {result.epsilon_lower_bound:>7.4f} "
                  f"{result.epsilon_mean:>10.4f} {status:<12} {trust['breaking_kappa']:>14.4g} "
                  f"{'-' if floor is None else floor:>6} {seconds:>7.1f}", flush=True)
    delta = bound.delta
    print(f"valid eps_lb: 95% confidence, bonferroni over the grid, {args.method}, delta {delta:g}, kappa 0, "
          f"R = {args.repetitions}; "
          "paper mean: the paper's optimistic statistic.")


if __name__ == "__main__":
    main()
