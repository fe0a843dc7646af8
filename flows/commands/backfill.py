"""`labeldp-audit backfill`: nightly audits over a date range, idempotent and resumable."""

from __future__ import annotations

import argparse
import sys

from flows.commands.flow_options import add_common, prepare_environment, print_rows, run_flow

HELP = "run nightly audits for every day in a range (skips days already in the warehouse)"
DESCRIPTION = """\
Runs the nightly audit for each day from --start to --end (inclusive). Days whose rows are already in the
warehouse for every target (same audit configuration) are skipped, so re-running after a failure resumes
without redoing completed days; --force redoes them (the warehouse upsert keeps one row per key).
--concurrency bounds how many days run at once (default 1: training and scoring use both cores).
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("backfill", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--start", required=True, help="first partition date YYYY-MM-DD")
    p.add_argument("--end", required=True, help="last partition date YYYY-MM-DD (inclusive)")
    p.add_argument("--concurrency", type=int, default=1, help="days audited at once (default 1)")
    p.add_argument("--force", action="store_true", help="re-audit days that are already in the warehouse")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from auditing.errors import LabelDPInputError

    if args.concurrency < 1:  # before Prefect starts (the flow checks again: deployments call it directly)
        raise LabelDPInputError(f"--concurrency must be a whole number >= 1; got {args.concurrency}")
    prepare_environment()
    from flows.nightly import backfill

    _, value = run_flow(backfill, start=args.start, end=args.end, data_root=args.data_root,
                        warehouse=args.warehouse, plan_file=args.plan_file, webhook_url=args.webhook_url,
                        force=args.force, concurrency=args.concurrency)
    if isinstance(value, Exception):
        print(f"labeldp-audit backfill: failed: {value}", file=sys.stderr)
        return 1
    for day in value:
        print(f"{day['date']}: {day['outcome']}")
    print_rows([r for day in value for r in day["rows"]], args.json)
    return 0
