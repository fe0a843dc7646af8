"""`labeldp-audit rejudge`: judge a scored night (or a range of nights) again at other bound settings."""

from __future__ import annotations

import argparse
import sys

from flows.commands.audit_options import add_bound_arguments
from flows.commands.flow_options import add_table
from flows.exit_codes import help_text

HELP = "judge scored nights again at other bound settings (kappa, method, delta, confidence, strategy), in a moment"
DESCRIPTION = """\
Re-judges the stored games of a night that the nightly or a backfill scored, at other bound settings: the bound
method, the selection strategy, the confidence, delta and kappa. The game (its counts over every repetition and
both halves of repetition 0, the capacity check's histograms, the controls' expected curves) is what the night
stored under sweeps/; nothing is trained, scored or read from the partition, and neither Beam nor Prefect is
started: a night takes about a second. The controls are judged again first and decide each verdict's trust as on
the night; each verdict is written to the warehouse with its report, as run kind "rejudge" beside the night's
own verdicts (which it never replaces: settings chosen after seeing a night are a second look, not the
pre-registered verdict). Options not given keep the night's own setting. A target's slices go with it: each
slice is bounded again from the counts stored beside its game, at the night's slice budget, and a line says
whose slices were carried (and whose could not be: a game stored before slice counts were kept).

Examples:
  labeldp-audit rejudge --date 2026-11-02 --kappa 0.3
  labeldp-audit rejudge --date 2026-11-01 --until 2026-11-07 --method fdp --json
  labeldp-audit rejudge --date 2026-11-02 --model rr-eps1 --strategy split --confidence 0.99

A day without a stored night (never scored, or scored before nights were stored) is an error naming it; with
--until, such days are listed and the others re-judged.
"""
EPILOG = help_text()


def register(subparsers) -> None:
    p = subparsers.add_parser("rejudge", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--date", required=True, help="the night to re-judge (YYYY-MM-DD), or the first of a range")
    p.add_argument("--until", default=None, help="the last night of a range (inclusive; default: --date only)")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="re-judge only this target (repeatable; default: every target; the controls always)")
    p.add_argument("--run-kind", choices=["nightly", "backfill"], default=None,
                   help="which stored night when a day has both (default: the latest written)")
    add_bound_arguments(p, stored=True)
    p.add_argument("--data-root", default=None, help="data root (default: $LABELDP_DATA_ROOT or ./.labeldp)")
    p.add_argument("--warehouse", default=None,
                   help="DuckDB file or postgresql:// URL (default: <data-root>/warehouse.duckdb)")
    p.add_argument("--fail-on-violation", action="store_true",
                   help="exit 1 when a re-judged verdict is a trusted VIOLATION (default: exit 0, it is in the table "
                        "and the warehouse)")
    p.add_argument("--json", action="store_true", help="print the result rows as JSON")
    add_table(p)
    p.set_defaults(func=run, writes_data_root=True)


def run(args) -> int:
    import datetime as dt
    import time

    from auditing.sinks.report.text import rejudged_slices_lines
    from flows import exit_codes
    from flows.commands.audit_options import bound_config_from
    from flows.commands.flow_options import print_rows
    from flows.exit_codes import Outcome
    from flows.rejudge import read_night, rejudge_night, sliced_targets
    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date, resolve_data_root

    first = parse_date(args.date, "--date")
    last = parse_date(args.until, "--until") if args.until else first
    if last < first:
        raise LabelDPInputError(f"--until ({last}) is before --date ({first})")
    root = resolve_data_root(args.data_root)
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    nights, missing = [], []
    for day in days:  # every night and every setting checked before anything is written
        try:
            night = read_night(root, day, args.run_kind)
        except LabelDPInputError as exc:
            if len(days) == 1:
                raise
            missing.append(f"{day.isoformat()}: {exc}")
            continue
        nights.append((night, bound_config_from(args, night.bound)))
    if not nights:
        raise LabelDPInputError("no stored night in the range:\n  " + "\n  ".join(missing))
    outcome = Outcome(fail_on_violation=args.fail_on_violation)
    for night, bound in nights:
        started = time.monotonic()
        day_outcome = rejudge_night(root, night, bound, warehouse=args.warehouse, models=tuple(args.model),
                                    progress=lambda message: None)
        print(f"[rejudge] {night.date.isoformat()} ({night.run_kind}): {len(day_outcome.rows)} verdict(s) at "
              f"{bound.method}, {bound.strategy}, {bound.confidence:g} confidence, delta {bound.delta:g}, kappa "
              f"{bound.kappa:g} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        for line in rejudged_slices_lines(*sliced_targets(root, night, tuple(args.model))):
            print(f"[rejudge] {night.date.isoformat()}: {line}", file=sys.stderr, flush=True)
        outcome = outcome.merge(day_outcome)
    for line in missing:
        print(f"[rejudge] skipped {line}", file=sys.stderr, flush=True)
    print_rows(outcome.rows, args.json, wide=args.wide, explain=args.explain)
    for line in exit_codes.summary_lines(outcome, "rejudge", exit_codes.drain_command(root, args.warehouse)):
        print(line, file=sys.stderr, flush=True)
    return outcome.exit_code()
