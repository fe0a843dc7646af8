"""`labeldp-audit nightly`: the nightly audit of one day, every target model of the plan; `--drain-only` writes
the results an earlier run spooled."""

from __future__ import annotations

import argparse
import sys

from flows.commands.flow_options import add_common, checked, execute, outcome_of
from flows.exit_codes import help_text

HELP = "run the nightly audit of one day (train/load, score with Beam, audit, warehouse, report, alert)"
DESCRIPTION = """\
For day D (default: yesterday, UTC): validates partitions/date=D, makes sure the reference (D-1 checkpoint)
and each target model of the plan exist (training them when missing), scores them with the Beam job,
computes valid epsilon lower bounds, writes one warehouse row per model, renders an HTML report per model,
and alerts on VIOLATION (and on DATA_MISSING / AUDIT_FAILED). Prints the resulting rows.

Every input (plan, partition, models, warehouse) is checked first, in about a second; bad input exits 2 with one
line and writes nothing. Progress lines go to stderr; Prefect's, Beam's and CatBoost's own lines go to
<data-root>/logs/labeldp-<UTC time>.log (--verbose shows them), whose path is printed when the run fails.
When the warehouse cannot be reached the rows are spooled under <data-root>/spool (exit 3), each payload
recording the warehouse it is meant for (backend and address, no credentials). Each nightly run first writes
the payloads meant for its own warehouse and leaves the others in place with a warning; `labeldp-audit nightly
--drain-only` does only that, and exits 2, writing and removing nothing, when every payload is meant for
another warehouse.

"""
EPILOG = help_text()


def register(subparsers) -> None:
    p = subparsers.add_parser("nightly", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--date", default=None, help="partition date YYYY-MM-DD (default: yesterday, UTC)")
    p.add_argument("--models", default=None, help="comma-separated subset of the plan's targets")
    p.add_argument("--drain-only", action="store_true",
                   help="only write the spooled results meant for this warehouse (exit 0 when none of them is left, "
                        "2 when the spool holds only results meant for another warehouse, 3 when this one still "
                        "cannot be reached)")
    p.add_argument("--include-unaddressed", action="store_true",
                   help="with --drain-only: also write the results spooled by an older labeldp-audit, which did not "
                        "record their warehouse, to this one")
    add_common(p)
    p.set_defaults(func=run, writes_data_root=True)


def run(args) -> int:
    from flows import preflight, steps
    from flows.exit_codes import Outcome
    from labeldp.names import parse_date, resolve_data_root

    root = resolve_data_root(args.data_root)
    if args.include_unaddressed and not args.drain_only:
        from labeldp.errors import LabelDPInputError

        raise LabelDPInputError("--include-unaddressed applies to --drain-only only")
    if args.drain_only:
        if args.check_only:  # the drain's one input
            for warning in preflight.check_warehouse(root, args.warehouse, args.create_warehouse):
                print(f"labeldp-audit nightly: warning: {warning}", file=sys.stderr, flush=True)
            return checked("nightly", "the drain", "the warehouse")
        return drain_only(root, args)
    day = parse_date(args.date, "--date") if args.date else steps.default_audit_date()
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    plan = preflight.plan_for(args.plan_file, models)
    try:
        warnings = preflight.check_run(root, [day], plan, args.warehouse, args.create_warehouse)
    except steps.DataMissingError as exc:  # alerted as the flow would (a data problem, never a violation)
        for spec in plan.targets if not args.check_only else ():
            steps.send_failure_alert(root, "DATA_MISSING", spec.name, day, str(exc), args.webhook_url)
        raise
    for warning in warnings:
        print(f"labeldp-audit nightly: warning: {warning}", file=sys.stderr, flush=True)
    if args.check_only:
        return checked("nightly", day.isoformat())

    def start():
        from flows.nightly import nightly_audit

        return outcome_of(nightly_audit, lambda rows: Outcome(rows=rows, fail_on_violation=args.fail_on_violation),
                          date=day.isoformat(), data_root=str(root), warehouse=args.warehouse,
                          plan_file=args.plan_file, models=models, webhook_url=args.webhook_url,
                          fail_on_violation=args.fail_on_violation,
                          accept_unchecked_reference=args.accept_unchecked_reference)

    return execute(args, "nightly", root, start)


def drain_only(root, args) -> int:
    """Writes the spooled results meant for this warehouse (`auditing.sinks.warehouse.drain_spool`); no flow, no
    Prefect. Exit 2, nothing written or removed, when the spool holds results and none is meant for it."""
    from auditing.sinks.report import text
    from auditing.sinks.warehouse import default_spool_dir, describe_target, destination, drain_spool
    from flows import exit_codes, preflight
    from labeldp.errors import LabelDPInputError

    preflight.check_warehouse(root, args.warehouse, args.create_warehouse)  # bad input: exit 2; down: below
    spool = default_spool_dir(root)
    report = drain_spool(args.warehouse, spool, data_root=root, include_unaddressed=args.include_unaddressed)
    others = text.spool_elsewhere_lines(report.elsewhere, spool)
    if report.unaddressed:
        others.append(text.spool_unaddressed_line(report.unaddressed, spool))
    if others and not (report.written or report.remaining):
        here = destination(args.warehouse, root)
        where = describe_target(str(args.warehouse)) if args.warehouse else here.address
        raise LabelDPInputError(f"--warehouse {where}: no spooled result is meant for it; " + "; ".join(others))
    print(f"[labeldp-audit] wrote {len(report.written)} spooled result(s) from {spool} to the warehouse",
          file=sys.stderr, flush=True)
    for line in others:
        print(f"labeldp-audit nightly: warning: {line}", file=sys.stderr)
    for path in report.rejected:
        print(f"labeldp-audit nightly: warning: {path}: not a valid spooled result; kept for a person to read",
              file=sys.stderr)
    if report.remaining:
        reason = str(report.error).strip().splitlines()[0]
        print(f"labeldp-audit nightly: exit {exit_codes.NOT_IN_WAREHOUSE}: {report.remaining} result(s) still "
              f"in {spool}: {reason}", file=sys.stderr)
        return exit_codes.NOT_IN_WAREHOUSE
    return exit_codes.OK
