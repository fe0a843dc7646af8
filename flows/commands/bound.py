"""`labeldp-audit bound`: the epsilon lower bound for one (correct, guesses, m) triple."""

from __future__ import annotations

import argparse
import json

from auditing.bounds.methods import BOUND_METHODS

HELP = "compute an epsilon lower bound from an attacker's counts (a calculator)"
DESCRIPTION = """\
Turns the counts of one observational label-inference game into a lower bound on epsilon that holds with the
given confidence (paper: Thm. 16/17 for --method binomial, Alg. 3 + Gaussian-DP conversion for --method fdp).

The bound is valid only if (guesses, correct) were chosen BEFORE looking at the outcome; to pick the number
of guesses from a sweep use `audit-scores`, which corrects for the choice.

Example: labeldp-audit bound --correct 1500 --guesses 2000 --m 1000000
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("bound", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--correct", type=int, required=True, help="c: number of correct guesses")
    p.add_argument("--guesses", type=int, required=True, help="c': number of guesses made (non-abstentions)")
    p.add_argument("--m", type=int, required=True, help="number of examples in the game")
    p.add_argument("--delta", type=float, default=None,
                   help="delta of the (eps, delta) claim (default 0: label-DP claims are pure eps)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    p.add_argument("--kappa", type=float, default=0.0,
                   help="bound on |log D'(y|x) - log D(y|x)|: how far the reference's label probabilities may be "
                        "off from the truth on any row (default 0)")
    p.add_argument("--tau", default=None, help=argparse.SUPPRESS)  # removed: 0 is ignored, other values refused
    p.add_argument("--method", choices=BOUND_METHODS.names(), default="binomial",
                   help="bound method: " + BOUND_METHODS.help("binomial"))
    p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from auditing.bounds.lower_bound import epsilon_lower_bound, resolve_delta
    from auditing.bounds.params import check_counts, legacy_tau_warning

    if args.tau is not None:
        print(f"[labeldp-audit] warning: {legacy_tau_warning(args.tau, '--tau')}", file=sys.stderr, flush=True)
    check_counts(args.correct, args.guesses, args.m)
    delta = resolve_delta(args.method, args.delta)
    value = epsilon_lower_bound(args.correct, args.guesses, args.m, method=args.method, delta=delta,
                                confidence=args.confidence, kappa=args.kappa)
    out = {
        "epsilon_lower_bound": value, "method": args.method, "delta": delta, "confidence": args.confidence,
        "kappa": args.kappa, "m": args.m, "guesses": args.guesses, "correct": args.correct,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"epsilon lower bound: {value:.4f}  (valid at {args.confidence:.0%} confidence for a pre-chosen c')")
        print(f"  method={args.method} delta={delta:g} kappa={args.kappa:g}  c={args.correct} c'={args.guesses} m={args.m}")
    return 0
