"""Options shared by the commands that run Prefect flows (nightly, guardrail, backfill, demo, serve), and how
nightly, guardrail and backfill run one: after the preflight (`flows.preflight`), under a quiet terminal
(`flows.terminal`), ending with the results table, one summary line per exit code that applied
(`flows.exit_codes`) and that code."""

from __future__ import annotations

import json
import os
import sys

GRACE_SECONDS = 2.0  # after Ctrl-C or SIGTERM, the run has this long to unwind before it is ended (within 5 s)


def add_common(parser, fail_on_violation: bool = True) -> None:
    parser.add_argument("--data-root", default=None,
                        help="data root (default: $LABELDP_DATA_ROOT or ./.labeldp)")
    parser.add_argument("--warehouse", default=None,
                        help="DuckDB file or postgresql:// URL (default: <data-root>/warehouse.duckdb)")
    parser.add_argument("--create-warehouse", action="store_true",
                        help="create the DuckDB warehouse's directory when it does not exist (default: refuse, "
                             "exit 2: a mistyped path should not start an empty warehouse)")
    parser.add_argument("--plan", dest="plan_file", default=None,
                        help="audit plan JSON: target models, reference, audit settings (default: the built-in "
                             "plan, see infra/plans/default.json)")
    parser.add_argument("--webhook-url", default=os.environ.get("LABELDP_WEBHOOK_URL"),
                        help="POST alerts here (default: $LABELDP_WEBHOOK_URL; none: no webhook)")
    if fail_on_violation:
        parser.add_argument("--fail-on-violation", action="store_true",
                            help="exit 1 (and end the flow run Failed) when a verdict is VIOLATION (default: "
                                 "exit 0, the VIOLATION is in the table, the warehouse and the alerts)")
    parser.add_argument("--accept-unchecked-reference", action="store_true", default=None,
                        help="when no row of the day is held out from the audited models (nothing can check the "
                             "reference), exit by the verdicts' status instead of 4; the acceptance is recorded on "
                             "each row and the verdicts are never shown as trusted (default: the plan's "
                             "accept_unchecked_reference, false)")
    parser.add_argument("--check-only", action="store_true",
                        help="run every input check (plan, partitions, models, warehouse) and stop: exit 0 when "
                             "they pass, 2 with one line when one does not; nothing is trained, scored, registered "
                             "or written")
    parser.add_argument("--json", action="store_true", help="print the result rows as JSON")
    add_table(parser)
    add_output(parser)


def add_table(parser) -> None:
    """--wide and --explain: the results table's columns and its legend."""
    parser.add_argument("--wide", action="store_true",
                        help="every column of the results table (default: the decision first and the columns a "
                             "person reads a verdict by, within 100 characters)")
    parser.add_argument("--explain", action="store_true",
                        help="print the legend of the table's columns, statuses and trust states under it")


def add_output(parser) -> None:
    """--verbose and --quiet: how much of a run's output reaches the terminal."""
    parser.add_argument("--verbose", action="store_true",
                        help="show every line of Prefect, Beam and CatBoost (default: only progress lines; the "
                             "rest goes to <data-root>/logs/labeldp-<UTC time>.log)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines, only warnings, errors, the table and the summary (the live ones, "
                             "a CatBoost fit's time left and a Beam pass's rows per second, show only when stderr "
                             "is a terminal)")


def checked(command: str, what: str, inputs: str = "plan, partitions, models, warehouse") -> int:
    """The end of a ``--check-only`` run whose checks passed: one line, exit 0."""
    print(f"labeldp-audit {command}: --check-only: every input of {what} passed its checks ({inputs}); nothing was "
          "trained, scored or written", file=sys.stderr, flush=True)
    return 0


def prepare_environment() -> None:
    """Quiet, self-contained Prefect defaults for command-line runs (an ephemeral API unless one is set)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def print_rows(rows: list, as_json: bool, stream=None, *, wide: bool = False, explain: bool = False) -> None:
    """A run's rows (`auditing.sinks.listing.ListedVerdict`, `SkippedTarget`): the table (``wide``: every column;
    ``explain``: with its legend), or with ``as_json`` their records as one JSON list."""
    from auditing.sinks.report.text import format_rows
    from labeldp.codec import encode

    stream = stream or sys.stdout
    text = json.dumps(encode(rows)) if as_json else format_rows(rows, wide=wide, explain=explain)
    print(text, file=stream, flush=True)


def run_flow(flow_fn, **kwargs):
    """Runs a flow and returns (state, value). Bad input comes back as the original LabelDPInputError."""
    from labeldp.errors import LabelDPInputError

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


def outcome_of(flow_fn, to_outcome, **kwargs):
    """Runs a flow; its `Outcome`: ``to_outcome(value)`` of a Completed run, the one carried by a Failed run's
    `OutcomeFailed`. Bad input (LabelDPInputError) and any other failure are raised."""
    from flows.exit_codes import OutcomeFailed

    _, value = run_flow(flow_fn, **kwargs)
    if isinstance(value, OutcomeFailed):
        return value.outcome
    if isinstance(value, BaseException):
        raise value
    return to_outcome(value)


def execute(args, command: str, root, start) -> int:
    """Runs ``start()`` (imports and runs the flow, returns its `Outcome`) under a quiet terminal; prints the
    table and the summary (or the stop); returns the exit code, after which nothing more reaches the terminal
    (`terminal.rest_to_log`). Call it after the preflight passed."""
    from flows import terminal

    term = terminal.Terminal(terminal.debug_log_path(root), verbose=args.verbose, quiet=args.quiet)
    servers: list = []
    code = _execute(args, command, root, start, term, servers)
    terminal.rest_to_log(term.log_path)
    stop = terminal.stop_requested()
    if stop is not None and code == stop.code:
        # Stopped: the run has unwound and said so; the interpreter's exit would still wait for Prefect (its events
        # worker, its temporary API) and for threads a stopped job left running. End now, as the grace period would.
        terminal.end_now(stop, servers)
    return code


def _execute(args, command: str, root, start, term, servers: list) -> int:
    import time

    from flows import exit_codes, terminal
    from flows.cli import flags_of
    from labeldp.errors import LabelDPInputError

    began = time.time()
    said: list[str] = []

    def stopped(stop) -> None:
        if not said:
            said.append(stop.word)
            term.say(f"labeldp-audit {command}: {stop.word}")

    def force(stop) -> None:  # the run did not unwind within the grace period
        stopped(stop)
        terminal.remove_tmp_dirs(root, began)
        terminal.end_now(stop, servers)

    with term, terminal.StopWatch(GRACE_SECONDS, force):
        try:
            removed = terminal.remove_leftovers(root)
            if removed:
                term.say(f"[labeldp-audit] removed {len(removed)} temporary director(ies) left by an "
                         f"interrupted run: {', '.join(removed)}")
            os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")  # into the debug log, not the terminal
            prepare_environment()
            servers.append(terminal.start_prefect_api(term.log_file))
            outcome = start()
            stop = terminal.stop_requested()
            if stop is not None:  # the flow ended anyway (a stop landing as it finished): the stop decides
                raise terminal.Terminated() if stop is terminal.TERMINATE else KeyboardInterrupt()
        except LabelDPInputError as exc:
            term.drain()
            term.say(f"labeldp-audit {command}: error: {exc.for_flags(flags_of(args))}")
            term.say(f"labeldp-audit {command}: debug log: {term.log_path}")
            return exit_codes.BAD_INPUT
        except BaseException as exc:  # Ctrl-C, SIGTERM, or a crash: never exit 1 (a scheduler reads VIOLATION)
            stop = terminal.stop_for(exc)  # the first signal received, whatever a library made of its exception
            term.drain()
            if stop is not None:
                stopped(stop)
                return stop.code
            if not isinstance(exc, Exception):
                raise
            import traceback

            term.log_file.write(traceback.format_exc())
            term.say(f"labeldp-audit {command}: failed: {type(exc).__name__}: {exc}")
            term.say(f"labeldp-audit {command}: exit {exit_codes.UNTRUSTED}: "
                     f"{exit_codes.MEANINGS[exit_codes.UNTRUSTED]}; debug log: {term.log_path}")
            return exit_codes.UNTRUSTED
        term.drain()
        try:
            if outcome.days is not None and not args.json:
                for day in outcome.days:
                    term.say(f"{day.date.isoformat()}: {day.summary}", stdout=True)
            if outcome.rows or args.json:
                print_rows(outcome.rows, args.json, stream=term.out, wide=getattr(args, "wide", False),
                           explain=getattr(args, "explain", False))
        except BrokenPipeError:  # stdout's reader went away (`nightly | head`): the outcome's code stands
            term.drop_stdout()
        drain = exit_codes.drain_command(root, args.warehouse)
        for line in exit_codes.summary_lines(outcome, command, drain):
            term.say(line)
        code = outcome.exit_code()
        if code not in (exit_codes.OK, exit_codes.VIOLATION):
            term.say(f"labeldp-audit {command}: debug log: {term.log_path}")
        return code
