"""`labeldp-audit nightly`: the nightly audit of one day, every target model of the plan."""

from __future__ import annotations

import argparse
import sys

from flows.commands.flow_options import add_common, prepare_environment, print_rows, run_flow

HELP = "run the nightly audit of one day (train/load, score with Beam, audit, warehouse, report, alert)"
DESCRIPTION = """\
For day D (default: yesterday, UTC): validates partitions/date=D, makes sure the reference (D-1 checkpoint)
and each target model of the plan exist (training them when missing), scores them with the Beam job,
computes valid epsilon lower bounds, writes one warehouse row per model, renders an HTML report per model,
and alerts on VIOLATION (and on DATA_MISSING / AUDIT_FAILED). Prints the resulting rows.

Exit status: 0 when every target was audited (whatever the statuses), 1 when the flow failed, 2 on bad input.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("nightly", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--date", default=None, help="partition date YYYY-MM-DD (default: yesterday, UTC)")
    p.add_argument("--models", default=None, help="comma-separated subset of the plan's targets")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    prepare_environment()
    from flows.nightly import nightly_audit

    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    _, value = run_flow(nightly_audit, date=args.date, data_root=args.data_root, warehouse=args.warehouse,
                        plan_file=args.plan_file, models=models, webhook_url=args.webhook_url)
    if isinstance(value, Exception):
        print(f"labeldp-audit nightly: failed: {value}", file=sys.stderr)
        return 1
    print_rows(value, args.json)
    return 0
