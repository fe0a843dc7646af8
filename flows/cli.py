"""The `labeldp-audit` command line.

Each subcommand lives in its own module under `flows/commands/` and exposes
`register(subparsers) -> None`, which adds its parser and sets `func=handler` as a default. Command modules
import heavy libraries (Beam, CatBoost, Prefect) inside their handlers, so `--help` stays fast.

Bad input (`LabelDPInputError`) prints one line to stderr and exits with status 2, never a traceback; the
library names the field it is about (``model``, ``claimed_epsilon``), and `error_text` puts the command's flag
there: a field is the destination of the command's option (``--claimed-epsilon`` for ``claimed_epsilon``), read
from its parser, and a command module's ``FLAGS`` names the few whose option is called otherwise (e.g.
``{"file": "--model-file"}``; `labeldp.errors`). Ctrl-C
prints "interrupted" and exits 130, SIGTERM "terminated" and 143 (`flows.terminal.Stop`). A read-only command
(``read_only`` among its parser's defaults: results, models list / show, plan check / schema) whose stdout is
closed early (``results --json | head``) ends quietly with 0. For nightly, guardrail and backfill the exit
status is a contract (`flows.exit_codes`): an unexpected crash there exits 4 (no trusted result), never 1,
which means VIOLATION.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from flows import exit_codes, terminal
from labeldp import progress
from labeldp.errors import LabelDPInputError

# Order here is the order in `labeldp-audit --help`.
COMMAND_MODULES = [
    "flows.commands.bound",
    "flows.commands.risk",
    "flows.commands.audit_scores",
    "flows.commands.validate_rr",
    "flows.commands.data",
    "flows.commands.train",
    "flows.commands.models",
    "flows.commands.score",
    "flows.commands.report",
    "flows.commands.results",
    "flows.commands.nightly",
    "flows.commands.spool",
    "flows.commands.plan",
    "flows.commands.guardrail",
    "flows.commands.backfill",
    "flows.commands.rejudge",
    "flows.commands.serve",
    "flows.commands.demo",
]
# Commands whose exit status is the contract of flows.exit_codes.
CONTRACT_COMMANDS = ("nightly", "guardrail", "backfill")
# field -> flag where every command's option has another name or none: the rest is read from the parser.
COMMON_FLAGS = {"data_root": "--data-root", "date": "--date"}


def _parsers_of(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[argparse.ArgumentParser]:
    """The parser and the (nested) subparsers ``args`` went through, outermost first."""
    path = [parser]
    while True:
        sub = next((a for a in path[-1]._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = None if sub is None else getattr(args, sub.dest, None)
        if name not in (sub.choices if sub is not None else {}):
            return path
        path.append(sub.choices[name])


def flags_of(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> dict[str, str]:
    """The field -> flag mapping of the command ``args`` runs: each option's destination and its long flag (from
    the parsers it went through: a flag declared once, where its option is), then `COMMON_FLAGS`, then its
    module's ``FLAGS`` for a field whose option has another name (the guardrail's ``file`` is ``--model-file``)."""
    derived = {}
    for each in _parsers_of(parser or build_parser(), args):
        for action in each._actions:
            longs = [flag for flag in action.option_strings if flag.startswith("--")]
            if longs and action.dest != "help":
                derived[action.dest] = longs[0]
    module = sys.modules.get(getattr(getattr(args, "func", None), "__module__", None) or "")
    return {**COMMON_FLAGS, **derived, **getattr(module, "FLAGS", {})}


def command_of(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> str:
    """The program and the (sub)command ``args`` runs, as its messages name it: ``labeldp-audit data ingest``."""
    return _parsers_of(parser or build_parser(), args)[-1].prog


def error_text(args: argparse.Namespace, exc: LabelDPInputError,
               parser: argparse.ArgumentParser | None = None) -> str:
    """The line printed for bad input: "labeldp-audit <command> [<subcommand>]: error: <message>", the message
    naming the command's flags where the library named their fields."""
    return f"{command_of(args, parser)}: error: {exc.for_flags(flags_of(args, parser))}"


def _command_module(name: str) -> str:
    """The module of a subcommand: its name with - as _ (``audit-scores``: flows.commands.audit_scores)."""
    return f"flows.commands.{name.replace('-', '_')}"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone (a run imports only its own command's module:
    each one costs its imports)."""
    modules = [_command_module(command)] if _command_module(command or "") in COMMAND_MODULES else COMMAND_MODULES
    parser = argparse.ArgumentParser(
        prog="labeldp-audit",
        description=(
            "Observational auditing of label differential privacy (Kalemaj et al., 'Observational Auditing "
            "of Label Privacy'). Turns an attacker's guesses about which label a model was trained on into "
            "statistically valid lower bounds on epsilon."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in modules:
        importlib.import_module(module_name).register(subparsers)
    return parser


def _recover(args) -> None:
    """Before a command writes under its data root: finishes what processes killed mid-write left behind there
    (`labeldp.files.recover_interrupted`), saying what it did on stderr."""
    from labeldp.files import recover_interrupted
    from labeldp.names import resolve_data_root

    root = resolve_data_root(getattr(args, "data_root", None))
    if root.is_dir():
        for line in recover_interrupted(root):
            print(f"[labeldp-audit] recovered after an interrupted run: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the usage of the (sub)command they were given to, not the top level's
        _parsers_of(parser, args)[-1].error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from pipelines import silence_false_beam_warnings

    silence_false_beam_warnings()  # before a command imports Beam
    # Live progress (a fit's time left, a pass's rows per second) for someone watching: on a terminal, not --quiet.
    progress.set_live(not getattr(args, "quiet", False) and sys.stderr.isatty())
    read_only = getattr(args, "read_only", False)
    try:
        with terminal.terminate_like_interrupt():
            if getattr(args, "writes_data_root", False):
                _recover(args)
            code = int(args.func(args) or 0)
            if read_only:
                sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
            return code
    except LabelDPInputError as exc:
        print(error_text(args, exc, parser), file=sys.stderr)
        return exit_codes.BAD_INPUT
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`terminal.Terminated`)
        stop = terminal.stop_for(exc, wait=0.0) or terminal.INTERRUPT
        print(f"{command_of(args, parser)}: {stop.word}", file=sys.stderr)
        return stop.code
    except BrokenPipeError:
        if not read_only:
            raise
        terminal.discard_fd()  # stdout's reader has what it wanted (`results --json | head`)
        return exit_codes.OK
    except Exception as exc:
        if args.command not in CONTRACT_COMMANDS:
            raise
        import traceback

        traceback.print_exc()
        print(f"labeldp-audit {args.command}: exit {exit_codes.UNTRUSTED}: failed before the run started: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return exit_codes.UNTRUSTED


if __name__ == "__main__":
    sys.exit(main())
