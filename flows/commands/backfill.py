"""`labeldp-audit backfill`: nightly audits over a date range, idempotent and resumable."""

from __future__ import annotations

import argparse
import sys
import textwrap

from auditing.sinks.report.text import BACKFILL_SKIP_RULE
from flows.commands.flow_options import add_common, checked, execute, outcome_of
from flows.exit_codes import help_text

HELP = "run nightly audits for every day in a range (skips the days every target has its verdict of)"
DESCRIPTION = textwrap.fill(
    "Runs the nightly audit for each day from --start to --end (inclusive); its rows are its own (run kind "
    f"\"backfill\"), beside any nightly's or guardrail's verdict of the same day. Skipping: {BACKFILL_SKIP_RULE}. So "
    "re-running after a failure resumes without redoing completed days; a verdict is never replaced (a run on "
    "identical inputs only records itself, one on other inputs adds a row beside it).", 112) + """
--concurrency bounds how many days run at once (default 1: training and scoring use both cores).
Every day's partition and models are checked before the first day starts; bad input exits 2 with one line.
Prints one line per day, then every row.
"""
EPILOG = help_text() + "\nWith mixed days, the first of 2, 3, 4, 1 that applied to any day wins."


def register(subparsers) -> None:
    p = subparsers.add_parser("backfill", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--start", required=True, help="first partition date YYYY-MM-DD")
    p.add_argument("--end", required=True, help="last partition date YYYY-MM-DD (inclusive)")
    p.add_argument("--concurrency", type=int, default=1, help="days audited at once (default 1)")
    p.add_argument("--force", action="store_true", help="audit every day, also those the skip rule skips")
    add_common(p)
    p.set_defaults(func=run, writes_data_root=True)


def run(args) -> int:
    import datetime as dt

    from flows import preflight
    from flows.exit_codes import Outcome
    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date, resolve_data_root

    if args.concurrency < 1:  # before Prefect starts (the flow checks again: deployments call it directly)
        raise LabelDPInputError(f"--concurrency must be a whole number >= 1; got {args.concurrency}")
    first, last = parse_date(args.start, "--start"), parse_date(args.end, "--end")
    if last < first:
        raise LabelDPInputError(f"--end ({last}) is before --start ({first})")
    root = resolve_data_root(args.data_root)
    plan = preflight.plan_for(args.plan_file)
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    for warning in preflight.check_run(root, days, plan, args.warehouse, args.create_warehouse):
        print(f"labeldp-audit backfill: warning: {warning}", file=sys.stderr, flush=True)
    if args.check_only:
        return checked("backfill", f"{first.isoformat()}..{last.isoformat()}")

    def start():
        from flows.nightly import backfill

        return outcome_of(backfill, lambda summary: Outcome.of_days(summary, args.fail_on_violation),
                          start=first.isoformat(), end=last.isoformat(), data_root=str(root),
                          warehouse=args.warehouse, plan_file=args.plan_file, webhook_url=args.webhook_url,
                          force=args.force, concurrency=args.concurrency, fail_on_violation=args.fail_on_violation,
                          accept_unchecked_reference=args.accept_unchecked_reference)

    return execute(args, "backfill", root, start)
