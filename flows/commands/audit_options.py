"""The audit-configuration options shared by `audit-scores` and `score`, and the AuditConfig they build."""

from __future__ import annotations

import argparse

from auditing.methods import BOUND_METHODS
from auditing.selection import STRATEGIES_REGISTRY


def add_audit_arguments(parser) -> None:
    parser.add_argument("--repetitions", type=int, default=100, help="resamplings of counterfactual labels (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed keying every random choice (default 0)")
    parser.add_argument("--strategy", choices=STRATEGIES_REGISTRY.names(), default="bonferroni",
                        help="how the number of guesses is chosen: " + STRATEGIES_REGISTRY.help("bonferroni"))
    parser.add_argument("--method", choices=BOUND_METHODS.names(), default="binomial",
                        help="bound method: " + BOUND_METHODS.help("binomial"))
    parser.add_argument("--delta", type=float, default=None, help="delta of the claim (default 0: label-DP claims are pure eps)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence (default 0.95)")
    parser.add_argument("--kappa", type=float, default=0.0,
                        help="robustness to the reference: the bound holds if no audited row's reference "
                             "probability is off from the truth by more than a factor e^kappa, "
                             "|log D'(y|x) - log D(y|x)| <= kappa (default 0: the reference is exact; 0.7 covers "
                             "click odds off by a factor 2). The binomial bound at kappa is the bound at 0 "
                             "minus kappa (delta 0)")
    parser.add_argument("--tau", default=None, help=argparse.SUPPRESS)  # removed: 0 is ignored, other values refused
    parser.add_argument("--score", choices=["paper", "log-ratio"], default="paper", help="attack score (default: paper)")
    parser.add_argument("--score-power", type=float, default=2.0, help="exponent t of (1 - M'(x)[y]) (default 2)")
    parser.add_argument("--grid", choices=["log", "paper"], default="log",
                        help="guess sweep: log (100 log-spaced fractions from 0.01%% to 100%%, default) or paper (1%%..100%%)")


def audit_config_from(args):
    import sys

    from auditing.audit import AuditConfig
    from auditing.params import legacy_tau_warning

    if getattr(args, "tau", None) is not None:
        print(f"[labeldp-audit] warning: {legacy_tau_warning(args.tau, '--tau')}", file=sys.stderr, flush=True)
    return AuditConfig(
        method=args.method, strategy=args.strategy, confidence=args.confidence, delta=args.delta, kappa=args.kappa,
        repetitions=args.repetitions, seed=args.seed, score=args.score, score_power=args.score_power, grid=args.grid,
        audit_rows=getattr(args, "audit_rows", None) or "training",
    )
