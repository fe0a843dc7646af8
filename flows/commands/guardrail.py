"""`labeldp-audit guardrail`: audit a release candidate against its claimed epsilon."""

from __future__ import annotations

import argparse
import sys

from flows.commands.flow_options import add_common, prepare_environment, print_rows, run_flow

HELP = "audit a release candidate; exits 1 on VIOLATION (the valid bound exceeds the claimed epsilon)"
DESCRIPTION = """\
Audits the registered model --model of day --date against the reference (the D-1 checkpoint) and compares
the VALID epsilon lower bound with --claimed-epsilon:
  VIOLATION     the bound exceeds the claim: the claim is disproved at the audit's confidence (exit 1)
  INCONCLUSIVE  even a perfect attacker could not have exceeded the claim at this size (exit 0, say so)
  PASS          no evidence of a violation; this is not a proof of privacy (exit 0)
The row is written to the warehouse and a report is rendered either way.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("guardrail", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="registered model name (models/<name>/date=D)")
    p.add_argument("--date", required=True, help="partition date YYYY-MM-DD the candidate was trained on")
    p.add_argument("--claimed-epsilon", required=True, type=float, help="the epsilon the release claims")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    prepare_environment()
    from flows.nightly import GuardrailViolation, release_guardrail

    _, value = run_flow(release_guardrail, model=args.model, claimed_epsilon=args.claimed_epsilon, date=args.date,
                        data_root=args.data_root, warehouse=args.warehouse, plan_file=args.plan_file,
                        webhook_url=args.webhook_url)
    if isinstance(value, GuardrailViolation):
        print_rows([value.row], args.json)
        print(f"labeldp-audit guardrail: {value}", file=sys.stderr)
        return 1
    if isinstance(value, Exception):
        print(f"labeldp-audit guardrail: failed: {value}", file=sys.stderr)
        return 1
    print_rows([value], args.json)
    return 0
