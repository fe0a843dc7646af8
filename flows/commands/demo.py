"""`labeldp-audit demo`: the nightly pipeline end to end from nothing, on synthetic data."""

from __future__ import annotations

import argparse
import sys
import time

from flows.commands.flow_options import add_output, add_table, execute, outcome_of

HELP = "run the whole nightly pipeline from nothing on synthetic days (the README's main job)"
DESCRIPTION = """\
Synthesizes two Criteo-like days (D0 = --start, D1 = the day after) under the data root if they are missing, then
runs the nightly audit of D1 with the built-in plan: the reference is trained non-privately on D0 (the paper's M'),
three targets are trained on D1 (LP-1ST at eps 2, RR at eps 1, and a planted violation: a non-private model with
its own capacity to memorise its labels, deeper trees and no best-iteration pick, that claims eps 0.5), the
reference is recalibrated on a tenth of D1's training rows, the night's controls (positive, negative) run, and
each model is scored with the Beam job (FnApiRunner), audited (a VIOLATION is trusted when the capacity check on
the held-out rows vouches for it), written to the DuckDB warehouse, and reported. Prints the results table, the
warehouse and the reports.
Re-running reuses models and scores that are still valid.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", default=None, help="data root (default: $LABELDP_DATA_ROOT or ./.labeldp)")
    p.add_argument("--start", default="2026-11-01", help="reference day D0 (default 2026-11-01)")
    p.add_argument("--rows", type=int, default=200_000, help="rows per synthetic day (default 200000)")
    p.add_argument("--json", action="store_true", help="print the result rows as JSON")
    add_table(p)
    add_output(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import datetime as dt

    from labeldp.errors import LabelDPInputError
    from labeldp.names import parse_date, resolve_data_root
    from pipelines.data.layout import partition_listing

    if args.rows < 10_000:
        raise LabelDPInputError(f"--rows must be >= 10000 for a meaningful audit; got {args.rows}")
    root = resolve_data_root(args.data_root)
    d0 = parse_date(args.start, "--start")
    d1 = d0 + dt.timedelta(days=1)
    start = time.monotonic()

    def say(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    from pipelines.data.synth import write_synthetic_day

    for day in (d0, d1):
        if partition_listing(root, day).exists:
            say(f"[demo] partition {day} present")
            continue
        say(f"[demo] synthesizing {args.rows} rows for {day}")
        write_synthetic_day(root, day, rows=args.rows)
    say(f"[demo] nightly audit of {d1} (training and scoring take a few minutes on 2 cores)")
    args.warehouse = None  # the data root's DuckDB file

    def audit():
        from flows.exit_codes import Outcome
        from flows.nightly import nightly_audit

        return outcome_of(nightly_audit, lambda rows: Outcome(rows=rows), date=d1.isoformat(), data_root=str(root))

    code = execute(args, "demo", root, audit)  # the nightly's quiet terminal, table, summary and exit code
    if not args.json:
        print(f"\nwarehouse: {root / 'warehouse.duckdb'} (tables audit_results, audit_curves)")
        print(f"reports:   {root / 'reports'}")
        print(f"done in {time.monotonic() - start:.0f} s")
    return code
