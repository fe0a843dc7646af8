"""`labeldp-audit validate-rr`: audit randomized response at known epsilons (paper Sec. 6.6 / App. 11)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from auditing.bounds.methods import BOUND_METHODS

HELP = "validate the audit on randomized response at known epsilons (true eps vs lower bound)"
DESCRIPTION = """\
Runs the paper's randomized-response validation: k-class Gaussian mixture data, k-ary randomized response at
each epsilon (the mechanism's output is what the attacker sees), counterfactual labels from the true
posterior (truth) or from a logistic-regression proxy trained on disjoint data (proxy). Prints true eps
against the valid lower bound (repetition 0, pre-registered guess fraction, delta = 0; --method binomial, the
paper's Thm. 17, or fdp, Alg. 3 on the (eps, 0) trade-off curve, which is randomized response's own) and
the paper's statistic (mean +- std over repetitions, same fraction). A valid bound must not exceed the true
eps except with probability about 1 - confidence.
"""


def _floats(text: str) -> list[float]:
    return [float(t) for t in text.split(",") if t.strip()]


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def register(subparsers) -> None:
    p = subparsers.add_parser("validate-rr", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200_000, help="examples per dataset (paper: 1000000; default 200000)")
    p.add_argument("--classes", type=_ints, default=[2, 5, 10], help="comma-separated k values (default 2,5,10)")
    p.add_argument("--epsilons", type=_floats, default=[0.5, 1, 2, 4, 8], help="true epsilons (default 0.5,1,2,4,8)")
    p.add_argument("--fractions", type=_floats, default=[0.001, 0.01],
                   help="pre-registered fractions of examples the attacker guesses on (default 0.001,0.01)")
    p.add_argument("--counterfactual", default="truth,proxy", help="truth, proxy or both (default truth,proxy)")
    p.add_argument("--repetitions", type=int, default=20, help="resamplings of counterfactual labels (paper: 100; default 20)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument("--method", choices=BOUND_METHODS.names(), default="binomial",
                   help="bound method, at delta = 0: " + BOUND_METHODS.help("binomial"))
    p.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    p.set_defaults(func=run)


def run(args) -> int:
    from auditing.bounds.params import check_confidence
    from auditing.bounds.rr_validation import rows_as_dicts, validate_randomized_response
    from labeldp.errors import LabelDPInputError

    check_confidence(args.confidence)
    sources = [s.strip() for s in args.counterfactual.split(",") if s.strip()]
    if not sources or any(s not in ("truth", "proxy") for s in sources):
        raise LabelDPInputError(f"--counterfactual must list truth and/or proxy; got {args.counterfactual!r}")
    if args.rows < 1000:
        raise LabelDPInputError(f"--rows must be >= 1000; got {args.rows}")
    if args.repetitions < 1:
        raise LabelDPInputError(f"--repetitions must be >= 1; got {args.repetitions}")
    if any(k < 2 for k in args.classes):
        raise LabelDPInputError(f"--classes must all be >= 2; got {args.classes}")
    if any(not (e > 0) for e in args.epsilons):
        raise LabelDPInputError(f"--epsilons must all be > 0; got {args.epsilons}")
    rows = []
    total = len(args.classes) * len(args.epsilons) * len(sources)
    start = time.monotonic()
    done = 0
    for k in args.classes:
        for source in sources:
            for eps in args.epsilons:
                rows += validate_randomized_response(
                    rows=args.rows, classes=k, epsilon=eps, counterfactual=source, fractions=args.fractions,
                    repetitions=args.repetitions, seed=args.seed, confidence=args.confidence, method=args.method,
                )
                done += 1
                print(f"[validate-rr] {done}/{total} k={k} {source} eps={eps:g} "
                      f"({time.monotonic() - start:.0f}s)", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows_as_dicts(rows)))
        return 0
    method = BOUND_METHODS.get(args.method).label
    print(f"Randomized response audit: n={args.rows}, {args.repetitions} repetitions, {method}, delta=0, "
          f"confidence {args.confidence:.0%}")
    print(f"{'k':>3} {'counterf.':>9} {'guesses':>8} {'true eps':>8} {'valid eps_lb':>12} {'paper mean +- std':>18} {'exceeds':>7}")
    for r in rows:
        flag = "YES" if r.valid_lower_bound > r.epsilon else ""
        print(f"{r.classes:>3} {r.counterfactual:>9} {r.guess_fraction:>8.2%} {r.epsilon:>8g} "
              f"{r.valid_lower_bound:>12.3f} {r.paper_mean:>10.3f} +- {r.paper_std:<5.3f} {flag:>7}")
    print("valid eps_lb: repetition 0 at the pre-registered fraction. 'exceeds' marks a bound above the true eps "
          f"(expected in about {1 - args.confidence:.0%} of independent rows).")
    return 0
