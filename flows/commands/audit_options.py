"""The audit-configuration options shared by `audit-scores`, `score` and `rejudge`, and the configurations they
build: the game's options (what the counts depend on) and the bound's (what turns counts into a bound)."""

from __future__ import annotations

import argparse

from auditing.methods import BOUND_METHODS
from auditing.selection import STRATEGIES_REGISTRY


def add_audit_arguments(parser) -> None:
    """The game's and the bound's options."""
    parser.add_argument("--repetitions", type=int, default=100, help="resamplings of counterfactual labels (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed keying every random choice (default 0)")
    add_bound_arguments(parser)
    parser.add_argument("--score", choices=["paper", "log-ratio"], default="paper", help="attack score (default: paper)")
    parser.add_argument("--score-power", type=float, default=2.0, help="exponent t of (1 - M'(x)[y]) (default 2)")
    parser.add_argument("--grid", choices=["log", "paper"], default="log",
                        help="guess sweep: log (100 log-spaced fractions from 0.01%% to 100%%, default) or paper (1%%..100%%)")


def add_bound_arguments(parser, *, stored: bool = False) -> None:
    """The bound's options. stored=True (`rejudge`): each defaults to the stored night's own setting."""
    night = " (default: the night's own)"
    parser.add_argument("--strategy", choices=STRATEGIES_REGISTRY.names(), default=None if stored else "bonferroni",
                        help="how the number of guesses is chosen" + (night if stored else "") + ": "
                             + STRATEGIES_REGISTRY.help(None if stored else "bonferroni"))
    parser.add_argument("--method", choices=BOUND_METHODS.names(), default=None if stored else "binomial",
                        help="bound method" + (night if stored else "") + ": "
                             + BOUND_METHODS.help(None if stored else "binomial"))
    parser.add_argument("--delta", type=float, default=None,
                        help="delta of the claim " + ("(default: the night's own; the method's default when "
                                                      "--method is given)" if stored else
                                                      "(default 0: label-DP claims are pure eps)"))
    parser.add_argument("--confidence", type=float, default=None if stored else 0.95,
                        help="confidence " + ("(default: the night's own)" if stored else "(default 0.95)"))
    parser.add_argument("--kappa", type=float, default=None if stored else 0.0,
                        help="robustness to the reference: the bound holds if no audited row's reference "
                             "probability is off from the truth by more than a factor e^kappa, "
                             "|log D'(y|x) - log D(y|x)| <= kappa ("
                             + ("default: the night's own" if stored else "default 0: the reference is exact")
                             + "; 0.7 covers click odds off by a factor 2). The binomial bound at kappa is the "
                               "bound at 0 minus kappa (delta 0)")
    parser.add_argument("--tau", default=None, help=argparse.SUPPRESS)  # removed: 0 is ignored, other values refused


def bound_config_from(args, stored=None):
    """The `BoundConfig` of the bound options; with ``stored`` (a BoundConfig), an option not given keeps its
    value there."""
    import sys
    from dataclasses import asdict

    from auditing.config import BoundConfig
    from auditing.params import legacy_tau_warning

    if getattr(args, "tau", None) is not None:
        print(f"[labeldp-audit] warning: {legacy_tau_warning(args.tau, '--tau')}", file=sys.stderr, flush=True)
    given = {name: getattr(args, name) for name in ("method", "strategy", "confidence", "delta", "kappa")}
    if stored is None:
        return BoundConfig(**given)
    merged = {**asdict(stored), **{k: v for k, v in given.items() if v is not None}}
    if given["method"] is not None and given["delta"] is None:
        merged["delta"] = None  # the new method's own default delta
    return BoundConfig(**merged)


def audit_config_from(args):
    import sys

    from auditing.config import AuditConfig
    from auditing.params import legacy_tau_warning

    if getattr(args, "tau", None) is not None:
        print(f"[labeldp-audit] warning: {legacy_tau_warning(args.tau, '--tau')}", file=sys.stderr, flush=True)
    return AuditConfig(
        method=args.method, strategy=args.strategy, confidence=args.confidence, delta=args.delta, kappa=args.kappa,
        repetitions=args.repetitions, seed=args.seed, score=args.score, score_power=args.score_power, grid=args.grid,
        audit_rows=getattr(args, "audit_rows", None) or "training",
    )
