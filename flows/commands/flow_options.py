"""Options shared by the commands that run Prefect flows (nightly, guardrail, backfill, demo, serve)."""

from __future__ import annotations

import json
import os


def add_common(parser) -> None:
    parser.add_argument("--data-root", default=None,
                        help="data root (default: $LABELDP_DATA_ROOT or ./.labeldp)")
    parser.add_argument("--warehouse", default=None,
                        help="DuckDB file or postgresql:// URL (default: <data-root>/warehouse.duckdb)")
    parser.add_argument("--plan", dest="plan_file", default=None,
                        help="audit plan JSON: target models, reference, audit settings (default: the built-in "
                             "plan, see infra/plans/default.json)")
    parser.add_argument("--webhook-url", default=os.environ.get("LABELDP_WEBHOOK_URL"),
                        help="POST alerts here (default: $LABELDP_WEBHOOK_URL; none: no webhook)")
    parser.add_argument("--json", action="store_true", help="print the result rows as JSON")


def prepare_environment() -> None:
    """Quiet, self-contained Prefect defaults for command-line runs (an ephemeral API unless one is set)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def print_rows(rows: list[dict], as_json: bool) -> None:
    from auditing.report.text import format_rows

    if as_json:
        print(json.dumps(rows, default=str))
    else:
        print(format_rows(rows))


def run_flow(flow_fn, **kwargs):
    """Runs a flow and returns (state, value). Bad input comes back as the original LabelDPInputError."""
    from auditing.errors import LabelDPInputError

    state = flow_fn(return_state=True, **kwargs)
    if state.is_completed():
        return state, state.result()
    try:
        state.result()
    except LabelDPInputError:
        raise
    except Exception as exc:  # the flow ended Failed: the caller decides the exit code
        return state, exc
    return state, None
