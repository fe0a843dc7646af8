"""`labeldp-audit spool list | discard`: the results waiting in <data-root>/spool for their warehouse."""

from __future__ import annotations

import argparse
import sys

HELP = "list the results waiting in the spool for their warehouse, or discard some (asks first)"
DESCRIPTION = """\
When the warehouse cannot be reached, a run spools each result to <data-root>/spool, addressed to that warehouse
(docs/warehouse.md); the next nightly run on it, or `labeldp-audit nightly --drain-only`, writes them.

  spool list      every payload: its file, model, day, run kind, claim, status, bound, run id and the warehouse
                  it is meant for; files a drain set aside (*.json.rejected) with why (--json: one object each)
  spool discard   removes payloads for good: FILE... (as `spool list` names them) or --all; asks for confirmation
                  (y) unless --yes, and refuses without a terminal to ask on. Before a file is removed, its whole
                  content is appended to <data-root>/logs/spool-discarded.jsonl (one JSON line each: when, the file,
                  what it held), and a line says what was discarded.

Exit status: 0; 2 on bad input (a file not in the spool, nothing to discard, no confirmation).
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("spool", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="spool_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: _no_subcommand(p))
    ls = sub.add_parser("list", help="list the spooled results", description=DESCRIPTION,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ls.add_argument("--json", action="store_true", help="one JSON object per file")
    _add_root(ls)
    ls.set_defaults(func=run_list, read_only=True)
    discard = sub.add_parser("discard", help="remove spooled results for good (their content kept in the log)",
                             description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    discard.add_argument("files", nargs="*", metavar="FILE", help="spool files to discard (names or paths)")
    discard.add_argument("--all", action="store_true", help="every file of the spool")
    discard.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    _add_root(discard)
    discard.set_defaults(func=run_discard)


def _add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-root", default=None, metavar="PATH",
                        help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _spool(args):
    from auditing.sinks.warehouse import default_spool_dir
    from labeldp.names import resolve_data_root

    root = resolve_data_root(args.data_root)
    return root, default_spool_dir(root)


def run_list(args) -> int:
    import json

    from auditing.sinks.report.text import spool_item_line
    from auditing.sinks.warehouse.spool import spooled_payloads
    from labeldp.codec import encode

    _root, spool = _spool(args)
    items = spooled_payloads(spool)
    if args.json:
        print(json.dumps(encode(items), default=str))
        return 0
    print(f"{len(items)} file(s) in {spool}")
    for item in items:
        print(spool_item_line(item))
    return 0


def run_discard(args) -> int:
    from pathlib import Path

    from auditing.sinks.report.text import spool_item_line
    from auditing.sinks.warehouse.spool import discard_payloads, spooled_payloads
    from labeldp.errors import LabelDPInputError

    root, spool = _spool(args)
    items = {item.path.name: item for item in spooled_payloads(spool)}
    if args.all == bool(args.files):
        raise LabelDPInputError("spool discard takes FILE... or --all (one of them)")
    if args.all:
        chosen = list(items.values())
    else:
        unknown = [name for name in args.files if Path(name).name not in items]
        if unknown:
            raise LabelDPInputError(f"not in the spool {spool}: {', '.join(unknown)} (see `spool list`)")
        chosen = [items[Path(name).name] for name in args.files]
    if not chosen:
        raise LabelDPInputError(f"the spool {spool} is empty: nothing to discard")
    for item in chosen:
        print(spool_item_line(item))
    if not args.yes:
        if not sys.stdin.isatty():
            raise LabelDPInputError(f"discarding {len(chosen)} file(s) needs a confirmation: pass --yes")
        answer = input(f"discard these {len(chosen)} file(s) for good? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("nothing discarded")
            return 0
    log_path = root / "logs" / "spool-discarded.jsonl"
    removed = discard_payloads(chosen, log_path)
    print(f"discarded {len(removed)} file(s); their content is in {log_path}")
    return 0
