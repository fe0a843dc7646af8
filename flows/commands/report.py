"""`labeldp-audit report`: renders a model's trend report (HTML) from the warehouse and prints its path."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "render a model's trend report (HTML) from the warehouse"
DESCRIPTION = """\
Reads the model's audit results from the warehouse (a DuckDB file, by default <data-root>/warehouse.duckdb,
or a postgresql:// URL) and writes a self-contained HTML page: the valid epsilon lower bound per night
against the claimed epsilon, VIOLATION nights marked, a table of nights and the latest lineage.
Prints the path of the page. At the default path it also rewrites <data-root>/reports/index.html, the page
across models (every run writes it too): every model, its latest decision per run kind, its family's state, its
flagged slices and links to each report.

Example: labeldp-audit report --model rr-eps1 --since 2024-01-01
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="model name (as stored in the warehouse's model_id)")
    p.add_argument("--since", default=None, help="first partition date to include, YYYY-MM-DD (default: all)")
    p.add_argument("--until", default=None, help="last partition date to include, YYYY-MM-DD (default: all)")
    p.add_argument("--warehouse", default=None,
                   help="DuckDB file or postgresql:// URL (default: <data-root>/warehouse.duckdb)")
    p.add_argument("--data-root", default=None,
                   help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")
    p.add_argument("--output", default=None,
                   help="HTML file to write (default: <data-root>/reports/<model>/trend.html)")
    p.set_defaults(func=run)


def run(args) -> int:
    from auditing.sinks.report import render_trend_report, trend_report_path, write_report
    from auditing.sinks.warehouse import WarehouseUnavailable, describe_target, open_warehouse
    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_name, parse_date

    model = check_name(args.model, "--model")
    since = parse_date(args.since, "--since") if args.since else None
    until = parse_date(args.until, "--until") if args.until else None
    try:
        with open_warehouse(args.warehouse, data_root=args.data_root, create=False) as warehouse:
            rows = warehouse.fetch_results(model_id=model, since=since, until=until)
    except WarehouseUnavailable as exc:
        print(f"labeldp-audit report: error: warehouse unavailable: {exc}", file=sys.stderr)
        return 1
    if not rows:
        where = describe_target(str(args.warehouse)) if args.warehouse else "the default warehouse"
        window = "".join([f" since {since}" if since else "", f" until {until}" if until else ""])
        raise LabelDPInputError(f"--model {model}: no audit results in {where}{window}")
    output = args.output or trend_report_path(args.data_root, model)
    try:
        path = write_report(render_trend_report(rows, model), output)
    except OSError as exc:
        raise LabelDPInputError(f"--output {output}: cannot write the report ({exc})") from None
    print(path)
    if args.output is None:  # the page across models links the trend report it now has
        from flows.steps import write_index

        write_index(Path(path).parents[2], args.warehouse)
    return 0
