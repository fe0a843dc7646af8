"""`labeldp-audit serve`: serve the nightly deployment on a cron schedule against a Prefect server."""

from __future__ import annotations

import argparse
import os

from flows.commands.flow_options import prepare_environment

HELP = "serve the nightly audit on a cron schedule (needs a running Prefect server)"
DESCRIPTION = """\
Registers the `nightly-audit` deployment with the Prefect server named by PREFECT_API_URL and runs its
scheduled flow runs in this process until interrupted. Each run audits the day before its scheduled start.

Start a server first (infra/README.md): `prefect server start` (SQLite, one machine) or with
PREFECT_API_DATABASE_CONNECTION_URL pointing at PostgreSQL (a team), then
`export PREFECT_API_URL=http://127.0.0.1:4200/api`. For work pools and workers use infra/prefect.yaml.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cron", default="0 3 * * *", help="schedule, cron syntax in UTC (default: 03:00 daily)")
    p.add_argument("--name", default="nightly-audit", help="deployment name (default nightly-audit)")
    p.add_argument("--data-root", default=None, help="data root passed to every run")
    p.add_argument("--warehouse", default=None, help="DuckDB file or postgresql:// URL passed to every run")
    p.add_argument("--plan", dest="plan_file", default=None, help="audit plan JSON passed to every run")
    p.add_argument("--webhook-url", default=os.environ.get("LABELDP_WEBHOOK_URL"), help="alert webhook")
    p.set_defaults(func=run)


def run(args) -> int:
    from flows.plan import load_plan
    from labeldp.errors import LabelDPInputError

    if not os.environ.get("PREFECT_API_URL"):
        raise LabelDPInputError(
            "serve needs a Prefect server: start one with `prefect server start` and set "
            "PREFECT_API_URL=http://127.0.0.1:4200/api (flow.serve does not schedule against the ephemeral API)"
        )
    load_plan(args.plan_file)  # fail now, not at 03:00
    prepare_environment()
    from flows.nightly import nightly_audit

    parameters = {k: v for k, v in {"data_root": args.data_root, "warehouse": args.warehouse,
                                    "plan_file": args.plan_file, "webhook_url": args.webhook_url}.items() if v}
    nightly_audit.serve(name=args.name, cron=args.cron, parameters=parameters)
    return 0
