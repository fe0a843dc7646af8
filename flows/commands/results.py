"""`labeldp-audit results`: reads audit verdicts back from the warehouse, read-only.

`results` lists (the latest verdict per model by default, a model's history with --model, every row with --all)
as the nightly's table, JSON or CSV; `results show MODEL` prints one verdict's every stored column. The warehouse
is opened with `auditing.sinks.warehouse.base.open_read_only`: nothing is created, migrated or written.
"""

from __future__ import annotations

import argparse
import sys

from labeldp.codec import decode, encode

HELP = "read audit verdicts back from the warehouse: latest per model, a model's history, one full record"
DESCRIPTION = """\
Reads the audit results the nightly, guardrail and backfill commands wrote to the warehouse (a DuckDB file,
by default <data-root>/warehouse.duckdb, or a postgresql:// URL). Read-only: it never creates, migrates or
writes a warehouse (a missing DuckDB file is an error; a warehouse whose schema version is newer than this
code is refused).

Every verdict ever written is a row of its own, written once: its key is the model, the model file's fingerprint,
the day, the run kind (nightly, guardrail, backfill, rejudge; "unrecorded" on rows written before the key had it),
the claimed epsilon, the audit configuration and the fingerprint of every input it judged (partition, training
rows, reference and its correction, stored game). A run on other inputs adds a row beside the others; a run on
identical inputs is recorded against the row (results show lists every run of it). By default it prints the LATEST
verdict of every model and run kind (targets and controls), newest first; --model N prints that model's history
(every row, newest first); --all prints every row; --run ID every row that run wrote or was recorded against. The
filters (--model, --since, --until, --status, --run-kind, --trust, --run) pick rows first and combine; the default
then keeps each model's newest picked row per run kind, so `--status VIOLATION` shows each model's most recent
VIOLATION, whatever a guardrail found since. The table is the nightly's: by default the decision first, then model,
date, status, run, trust, claim and bound, within 100 characters; --wide prints every column (run: the run kind;
status WEAK_PASS: a PASS on weak evidence; trust: trusted, untrusted, unchecked (reference unchecked) or accepted
(reference unchecked, accepted), '-' on rows written before per-verdict trust, and '!' after the status of a
verdict that is not trusted; '*' after the status marks a verdict whose day's partition was replaced since by other
data (data ingest --replace): "inputs replaced since", said under the table, in --json / --csv as
inputs_replaced_since and by show; the row itself never changes); --json prints the full stored rows (strict JSON:
an infinite claimed epsilon is "inf"; JSON-text columns such as result_json stay text), each with its "slices"
(null when it declared none), --csv the table's columns and the trust figures (trust, the capacity check's
epsilon_check and misfit figures, the row groups) as stored values. A verdict that declared slices (valid bounds
per slice of the audited rows, at the slices' own budget; the verdict's status is judged separately) has its
largest slice bounds listed under the table. Under it too, per verdict, the model family's evidence across nights
after that night (flagged once it reached 1/alpha; the number of nights when the listing is the model's whole
history: --model or --all without other filters) and, with --wide, repetition 0's attack ROC figures (TPR at 1% and
0.1% FPR, the AUROC, with their bootstrap intervals; descriptive, not a bound on eps); a row written before them
has no such line. --explain prints the legend of the columns, the statuses and the trust states.
--trust untrusted also lists rows written before per-verdict trust whose night was untrusted. Nothing matching
prints "no audit results match" and exits 0.

Examples:
  labeldp-audit results                                   # latest verdict per model and run kind
  labeldp-audit results --model rr-eps1                   # its history, newest first
  labeldp-audit results --all --status VIOLATION --since 2024-01-01
  labeldp-audit results --run-kind guardrail --status WEAK_PASS
  labeldp-audit results --all --status VIOLATION --trust untrusted   # VIOLATIONs the reference's misfit explains
  labeldp-audit results --warehouse postgresql://auditor@db:5432/audit --json | jq '.[0].epsilon_lower_bound'
  labeldp-audit results --model rr-eps1 --csv > rr-eps1.csv
  labeldp-audit results show rr-eps1                      # its latest verdict, every stored column
  labeldp-audit results show rr-eps1 --date 2024-01-02 --json
  labeldp-audit results show --run 20240103T010203Z-1a2b3c4d   # every verdict of that run, in full

Exit status: 0 (also when nothing matches), 2 on bad input, a missing or too new warehouse, or an unreachable
one.
"""
SHOW_DESCRIPTION = """\
Prints one verdict of MODEL in sections, its numbers rounded for people (--json prints every stored value exact):
its decision (the headline, why, the one next step, what would confirm an unconfirmed leak); the evidence (the
status and what it means, the valid eps lower bound with its confidence and settings, the claim, the largest bound
the audit could show, the selected point, the paper's statistic, the robustness to the reference and the floors);
its trust (its trust and why, the capacity check's figures: epsilon_check, a kappa-free lower bound on eps, and
the misfit the model shows on rows it never saw; what a PASS's floors are worth; the row groups: the rule, the rows
left out, how often the labels of rows sharing a group agree against independent labels); what the figures mean
for people (risk); its slices when it declared some (every slice, the largest bound first, with the slices'
budget, their count S and confidence 1 - budget / S; a slice VIOLATION is judged at that confidence, apart from
the verdict); the family's evidence across nights and the attack's ROC figures, a sentence each (none for a row
written before them); every run of it (audit_runs: the run that wrote it and each later run on identical inputs,
with what each computed; a run that computed another status or bound says so); then every stored column of
audit_results as "name: value" lines (NULL for a NULL) and how many curve points audit_curves holds for it. The
JSON-text columns (result_json, shift_diagnostic, durations) are named with their number of keys; --json prints
them whole. Without --date: the
model's latest verdict; on a date with several verdicts (run kinds, claims, audit configs), the one that finished
last (--run-kind and --config pick another; the others are listed). With --run ID: every verdict that run wrote or
was recorded against (of MODEL only, when given), each in full; --json prints them as a list.

Examples:
  labeldp-audit results show rr-eps1
  labeldp-audit results show rr-eps1 --date 2024-01-02 --json
  labeldp-audit results show --run 20240103T010203Z-1a2b3c4d
  labeldp-audit results --warehouse postgresql://auditor@db:5432/audit show rr-eps1

Exit status: 0, or 2 when no verdict matches (naming the model and date) or on bad input.
"""
FAMILY_DESCRIPTION = """\
Prints MODEL's evidence across nights: one e-value per night (the likelihood ratio of its repetition-0 guesses
against the claim at the night's kappa, with an alternative fixed from earlier nights only), and their running
mixture, a test that stays valid however often it is looked at (Ville's inequality; docs/soundness.md section
10). The family is flagged the first night the evidence reaches 1/alpha: then the nights together disprove the
claims at false-alarm rate alpha, even when no single night did. The nights are the nightly and backfill rows,
the first computed per date, in the order computed; a night with delta > 0 or an infinite claim counts as e = 1. A
later run of a night on other inputs (the day ingested again, a model registered again, other settings) is listed
under the table with what changed (--json: later_runs); it never changes the night's counts.
Valid when every night's kappa covers its reference, each row is audited at most once in the family and each
night draws fresh coins: the nightly and backfill key them by the night (the result's coins_night); a night
without one is covered only if its row ids do not repeat across days.

Examples:
  labeldp-audit results family rr-eps1
  labeldp-audit results family rr-eps1 --until 2024-02-01 --alpha 0.01 --json

Exit status: 0, or 2 when the model has no night or on bad input.
"""
# The table's columns as stored values (--csv): the table's status cell also shows kind, control outcome and
# untrusted verdicts, and its "paper mean+-std" cell is two columns here.
CSV_COLUMNS = (
    "model_id", "partition_date", "kind", "run_kind", "status", "trust", "control_passed", "untrusted_reason",
    "claimed_epsilon", "epsilon_lower_bound", "epsilon_mean", "epsilon_std", "max_certifiable_epsilon",
    "breaking_kappa", "detection_floor_rows", "exposed_rows_floor", "m", "audit_rows", "report", "trust_reason",
    "epsilon_check", "misfit_kappa_upper", "check_misfit_kappa", "check_rows", "detectability", "accepted_unchecked",
    "group_rule", "rows_excluded_groups", "group_pairs", "group_label_agreement", "group_label_agreement_expected",
    "inconclusive_reason", "run_id", "inputs_replaced_since",
)
NO_MATCH = "no audit results match"
JSON_TEXT_COLUMNS = ("result_json", "shift_diagnostic", "durations")  # `show` names these; --json prints them
UNAVAILABLE = object()  # what _read returns when the warehouse cannot be reached (the error is printed)


def _add_target(parser: argparse.ArgumentParser, *, default) -> None:
    parser.add_argument("--warehouse", default=default, metavar="W",
                        help="DuckDB file or postgresql:// URL (default: <data-root>/warehouse.duckdb)")
    parser.add_argument("--data-root", default=default, metavar="R",
                        help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp); also where run reports are")


def register(subparsers) -> None:
    from auditing.sinks.report.wording import TRUST_SHORT
    from auditing.sinks.warehouse.schema import STORED_RUN_KINDS
    from auditing.verdict.types import STATUSES
    from flows.commands.flow_options import add_table

    p = subparsers.add_parser("results", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    # Both forms in the usage line (argparse would show the optional ACTION as if it were required).
    indent = " " * len(f"usage: {p.prog} ")
    p.usage = (f"{p.prog} [--warehouse W] [--data-root R] [--model N] [--since D] [--until D]\n"
               f"{indent}[--status {{{','.join(STATUSES)}}}]\n"
               f"{indent}[--trust {{{','.join(TRUST_SHORT.values())}}}]\n"
               f"{indent}[--run-kind {{{','.join(STORED_RUN_KINDS)}}}]\n"
               f"{indent}[--run ID] [--all] [--json | --csv] [--wide] [--explain]\n"
               f"       {p.prog} show MODEL [--date D] [--run-kind K] [--config HASH] [--json] [--warehouse W]\n"
               f"{indent}     [--data-root R]\n"
               f"       {p.prog} show [MODEL] --run ID [--json] [--warehouse W] [--data-root R]\n"
               f"       {p.prog} family MODEL [--until D] [--alpha A] [--json] [--warehouse W] [--data-root R]")
    _add_target(p, default=None)
    p.add_argument("--model", default=None, metavar="N", help="one model's history (every row, newest first)")
    p.add_argument("--since", default=None, metavar="D", help="first partition date, YYYY-MM-DD (default: all)")
    p.add_argument("--until", default=None, metavar="D", help="last partition date, YYYY-MM-DD (default: all)")
    p.add_argument("--status", default=None, choices=STATUSES, help="only rows with this verdict status")
    p.add_argument("--run-kind", default=None, choices=STORED_RUN_KINDS,
                   help="only rows written by this kind of run ('unrecorded': rows written before the key had it)")
    p.add_argument("--trust", default=None, choices=tuple(TRUST_SHORT.values()),
                   help="only verdicts of this trust (unchecked: reference unchecked; accepted: reference unchecked, "
                        "accepted; untrusted includes rows written before per-verdict trust whose night was)")
    p.add_argument("--run", default=None, metavar="ID",
                   help="only the rows this run wrote or was recorded against (its run id)")
    p.add_argument("--all", action="store_true", help="every matching row, not only each model's latest")
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the full stored rows as a JSON list")
    output.add_argument("--csv", action="store_true", help="CSV: a header and one line per row")
    add_table(p)
    actions = p.add_subparsers(dest="results_action", metavar="ACTION")
    s = actions.add_parser("show", help="one verdict's full record", description=SHOW_DESCRIPTION,
                           prog=f"{p.prog} show",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("show_model", metavar="MODEL", nargs="?", default=None,
                   help="model name (as stored in model_id); optional with --run")
    s.add_argument("--date", default=None, metavar="D", help="its partition date, YYYY-MM-DD (default: the latest)")
    s.add_argument("--run-kind", dest="show_run_kind", default=None, choices=STORED_RUN_KINDS, metavar="K",
                   help=f"the verdict of this kind of run, when a date has several ({', '.join(STORED_RUN_KINDS)})")
    s.add_argument("--config", default=None, metavar="HASH", help="the audit config hash, when a date has several")
    s.add_argument("--run", dest="show_run", default=None, metavar="ID",
                   help="every verdict this run wrote or was recorded against, in full")
    # SUPPRESS: given before `show` (results --warehouse W show M), the value given there stays.
    s.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="the record as a JSON object")
    _add_target(s, default=argparse.SUPPRESS)
    f = actions.add_parser("family", help="a model family's evidence across nights (anytime-valid)",
                           description=FAMILY_DESCRIPTION, prog=f"{p.prog} family",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    f.add_argument("family_model", metavar="MODEL", help="model name (as stored in model_id)")
    f.add_argument("--until", dest="family_until", default=None, metavar="D",
                   help="only nights up to this partition date, YYYY-MM-DD (default: all)")
    f.add_argument("--alpha", type=float, default=0.05, metavar="A",
                   help="false-alarm rate of the family's test: flagged once the evidence reaches 1/A (default 0.05)")
    f.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="the test as a JSON object")
    _add_target(f, default=argparse.SUPPRESS)
    p.set_defaults(func=run, read_only=True)


def run(args) -> int:
    if args.results_action == "show":
        return _show(args)
    if args.results_action == "family":
        return _family(args)
    return _list(args)


def _family(args) -> int:
    import json

    from auditing.sinks.family import family_of, family_rows, later_runs
    from auditing.sinks.report.text import later_run_line
    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_name, parse_date

    model = check_name(args.family_model, "MODEL")
    until = parse_date(args.family_until, "--until") if args.family_until is not None else None
    if not 0.0 < args.alpha < 1.0:
        raise LabelDPInputError(f"--alpha must be in (0, 1); got {args.alpha!r}")
    rows = _read(args, lambda wh: wh.fetch_results(model_id=model))
    if rows is UNAVAILABLE:
        return 2
    nights = family_rows(rows, model, until)
    if not nights:
        raise LabelDPInputError(f"no nightly or backfill verdict of model {model}"
                                + (f" up to {until}" if until is not None else ""))
    test = family_of(rows, model, until=until, alpha=args.alpha)
    later = later_runs(rows, model, until)
    if getattr(args, "json", False):
        print(json.dumps({"model_id": model, **encode(test), "later_runs": encode(later)},
                         allow_nan=False, indent=1))
        return 0
    print(f"{model}: {test.sentence()}")
    print("partition_date  claimed_eps  kappa  check_e     check_evid  confirmed  kappa_e     kappa_evid  "
          "not counted because")
    for row, night in zip(nights, test.nights, strict=True):
        print(f"{night.partition_date.isoformat()}  {row.claimed_epsilon:>11g}  {row.kappa:>5g}  "
              f"{night.check_e_value:<10.4g}  {night.check_evidence:<10.4g}  {'yes' if night.confirmed else 'no':<9}  "
              f"{night.e_value:<10.4g}  {night.evidence:<10.4g}  {night.check_reason or night.reason or '-'}")
    for run in later:
        print(later_run_line(run.first, run.later, run.changed))
    return 0


def _read(args, fn):
    """fn(the warehouse opened read-only); UNAVAILABLE (after one line on stderr) when it cannot be reached."""
    from auditing.sinks.warehouse import WarehouseUnavailable
    from auditing.sinks.warehouse.base import open_read_only

    try:
        with open_read_only(args.warehouse, data_root=args.data_root) as warehouse:
            return fn(warehouse)
    except WarehouseUnavailable as exc:
        print(f"labeldp-audit results: error: warehouse unavailable: {' '.join(str(exc).split())}", file=sys.stderr)
        return UNAVAILABLE


def _replaced_of(data_root):
    """row -> when the day's partition it judged was replaced since (`pipelines.data.schema.replaced_since`: the
    day's small record under the data root, read once per day), None when it was not."""
    from labeldp.names import resolve_data_root
    from pipelines.data import schema

    root = resolve_data_root(data_root)
    seen: dict = {}

    def replaced(row) -> str | None:
        key = (row.partition_date, row.partition_fingerprint)
        if key not in seen:
            seen[key] = schema.replaced_since(root, row.partition_date, row.partition_fingerprint)
        return seen[key]

    return replaced


def _report_of(data_root):
    """row -> the path of its run report when that page exists under the data root, else None."""
    from auditing.sinks.report import run_report_path

    def report(row) -> str | None:
        path = run_report_path(data_root, row)
        return str(path) if path.is_file() else None

    return report


def _list(args) -> int:
    import csv
    import json

    from auditing.sinks.report.text import format_rows, stored_rows_for_table
    from auditing.sinks.report.wording import TRUST_SHORT
    from auditing.verdict.types import PASS
    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_name, parse_date
    from pipelines.models.registry import jsonable

    model = check_name(args.model, "--model") if args.model is not None else None
    since = parse_date(args.since, "--since") if args.since is not None else None
    until = parse_date(args.until, "--until") if args.until is not None else None
    if since is not None and until is not None and since > until:
        raise LabelDPInputError(f"--since ({since}) must not be after --until ({until})")
    trust = None if args.trust is None else {word: state for state, word in TRUST_SHORT.items()}[args.trust]
    def read(wh):
        found = wh.fetch_verdicts(model_id=model, since=since, until=until, status=args.status,
                                  run_kind=args.run_kind, trust=trust, run_id=args.run,
                                  latest=not (args.all or model is not None or args.run is not None))
        return found, wh.slices_of(found)

    read_back = _read(args, read)
    if read_back is UNAVAILABLE:
        return 2
    rows, slices = read_back
    if not rows and not (args.json or args.csv):
        print(NO_MATCH)
        return 0
    if not rows:
        print(NO_MATCH, file=sys.stderr)  # stdout still holds a valid (empty) document
    replaced = _replaced_of(args.data_root)
    if args.json:
        listed = stored_rows_for_table(rows, slices=slices, replaced=replaced)
        print(json.dumps([jsonable({**v.row.to_dict(), "slices": encode(v.slices),
                                    "inputs_replaced_since": v.inputs_replaced}) for v in listed], allow_nan=False))
    elif args.csv:
        report = _report_of(args.data_root)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            cells = {**jsonable(row.to_dict()), "report": report(row), "inputs_replaced_since": replaced(row)}
            writer.writerow(["" if cells[name] is None else cells[name] for name in CSV_COLUMNS])
    else:
        from auditing.sinks.family import night_numbers

        # A night's place in its family needs the model's whole history: counted only when the listing is one.
        whole = (args.all or model is not None) and not any(
            (since, until, args.status, args.run_kind, args.trust))
        print(format_rows(stored_rows_for_table(rows, _report_of(args.data_root),
                                                lambda row: _weak_pass(row) if row.status == PASS else None,
                                                slices, night_numbers(rows) if whole else None, replaced),
                          wide=args.wide, explain=args.explain))
    return 0


def _weak_pass(row) -> bool | None:
    """The table's weak-PASS mark of a PASS stored before WEAK_PASS was a status (not a stored column):
    ``auditing.verdict.robustness.is_weak_pass`` on the row's stored floors, with whether the game-aware floor was
    computable for its result and claim. None when the stored result cannot tell (a row written by an older
    version)."""
    import json

    from auditing.result import AuditResult
    from auditing.verdict.exposure_floor import exposed_floor_unavailable
    from auditing.verdict.robustness import is_weak_pass
    from labeldp.errors import LabelDPInputError

    try:
        result = decode(AuditResult, json.loads(row.result_json), "result")
        computed = exposed_floor_unavailable(result, row.claimed_epsilon) is None
    except (LabelDPInputError, KeyError, TypeError, ValueError):
        return None
    return is_weak_pass(row.status, row.detection_floor_rows, row.m, row.exposed_rows_floor, computed)


def _show(args) -> int:
    import json

    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_name, parse_date

    listing = [name for name, given in (("--model", args.model), ("--since", args.since), ("--until", args.until),
                                        ("--status", args.status), ("--run-kind", args.run_kind),
                                        ("--trust", args.trust), ("--all", args.all), ("--csv", args.csv), ("--wide", args.wide),
                                        ("--explain", args.explain),
                                        ("--run", args.run)) if given]
    if listing:
        raise LabelDPInputError(f"{', '.join(listing)} apply to the list (results ...), not to results show; "
                                "give show MODEL [--date D] [--run-kind K] [--config HASH] [--json], or show [MODEL] "
                                "--run ID")
    if args.show_run is not None:
        return _show_run(args)
    if args.show_model is None:
        raise LabelDPInputError("results show needs MODEL, or --run ID")
    model = check_name(args.show_model, "MODEL")
    date = parse_date(args.date, "--date") if args.date is not None else None
    run_kind = args.show_run_kind

    def record(wh):
        from auditing.sinks.family import night_numbers

        day, history = date, None
        if day is None:
            latest = wh.fetch_verdicts(model_id=model, run_kind=run_kind)
            if not latest:
                return None
            day = latest[0].partition_date
            history = latest if run_kind is None else None
        rows = wh.fetch_verdicts(model_id=model, since=day, until=day, run_kind=run_kind)
        if args.config is not None:
            rows = [r for r in rows if r.audit_config_hash == args.config]
        if not rows:
            return None
        nights = None  # the night's place in its family, from the model's whole history
        if rows[0].family_evidence is not None:
            history = history if history is not None else wh.fetch_results(model_id=model)
            nights = night_numbers(history).get((model, rows[0].partition_date))
        return (rows[0], len(wh.fetch_curve(rows[0])), rows[1:], wh.fetch_slices(rows[0]), nights,
                wh.fetch_runs(rows[0]))

    found = _read(args, record)
    if found is UNAVAILABLE:
        return 2
    if found is None:
        on = f"on {date}" if date is not None else "on any date"
        which = "".join(f" {what} {value}" for what, value in (("of run kind", run_kind),
                                                                ("with audit config", args.config)) if value)
        raise LabelDPInputError(f"no audit result for model {model} {on}{which}")
    replaced = _replaced_of(args.data_root)
    if args.json:
        print(json.dumps({**_show_json(*found), "inputs_replaced_since": replaced(found[0])}, allow_nan=False,
                         indent=2))
        return 0
    _print_record(*found, replaced=replaced(found[0]))
    return 0


def _show_json(row, points, others, stored, nights, runs) -> dict:
    """One verdict as `results show --json` prints it: every column, its curve's size, its slices and its runs."""
    from auditing.sinks.listing import ListedSlices
    from pipelines.models.registry import jsonable

    slices = ListedSlices.of_stored(row, stored)
    return jsonable({**row.to_dict(), "curve_points": points, "slices": encode(slices),
                     "runs": runs})


def _show_run(args) -> int:
    """`results show [MODEL] --run ID`: every verdict of that run, in full (the model's only, when given)."""
    import json

    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_name

    model = None if args.show_model is None else check_name(args.show_model, "MODEL")
    if args.date is not None or args.show_run_kind is not None or args.config is not None:
        raise LabelDPInputError("--date, --run-kind and --config pick one verdict of MODEL; with --run every verdict "
                                "of the run is shown")

    def records(wh):
        rows = wh.fetch_verdicts(model_id=model, run_id=args.show_run)
        return [(row, len(wh.fetch_curve(row)), [], wh.fetch_slices(row), None, wh.fetch_runs(row)) for row in rows]

    found = _read(args, records)
    if found is UNAVAILABLE:
        return 2
    if not found:
        raise LabelDPInputError(f"no audit result of run {args.show_run}" + (f" for model {model}" if model else ""))
    replaced = _replaced_of(args.data_root)
    if args.json:
        print(json.dumps([{**_show_json(*item), "inputs_replaced_since": replaced(item[0])} for item in found],
                         allow_nan=False, indent=2))
        return 0
    for index, item in enumerate(found):
        if index:
            print()
        print(f"# {index + 1} of {len(found)}: {item[0].model_id} {item[0].partition_date.isoformat()} "
              f"{item[0].run_kind}")
        _print_record(*item, replaced=replaced(item[0]))
    return 0


def _print_record(row, points, others, stored, nights, runs, replaced: str | None = None) -> None:
    """One verdict as `results show` prints it, in sections (decision, evidence, trust, risk, slices, family, the
    attack, its runs, then every stored column), numbers rounded for people; ``replaced``: when its day's partition
    was replaced since."""
    from auditing.sinks.listing import ListedSlices, stored_attack_confidence

    slices = ListedSlices.of_stored(row, stored)
    model = row.model_id
    from auditing.sinks.report.text import (
        attack_line,
        family_line,
        run_lines,
        show_decision_lines,
        show_evidence_lines,
        show_heading,
        show_number,
        slice_table_lines,
        slices_design_text,
        trust_block_lines,
    )
    from auditing.sinks.report.wording import SLICE_VIOLATION_MEANING, claim_words, inputs_replaced_sentence

    print(show_heading(row))
    if replaced:
        print(f"inputs_replaced_since: {replaced} ({inputs_replaced_sentence(row.partition_fingerprint, replaced)})")
    print("decision:")
    print("\n".join(show_decision_lines(row)))
    print("evidence:")
    print("\n".join(show_evidence_lines(row)))
    print("trust: (the verdict's trust, its capacity check and row groups, in words)")
    print("\n".join("  " + line for line in trust_block_lines(row)))
    print("risk:")
    print(f"  {row.risk_headline or 'not recorded (a row written before the risk figures)'}")
    if slices is None:
        print("slices: none declared")
    else:
        print(f"slices: {slices_design_text(slices)}; claim {claim_words(row.claimed_epsilon)} (every slice, "
              "the largest bound first)")
        print("\n".join(slice_table_lines(slices, row.claimed_epsilon, limit=None, title=None)))
        print(f"  design: {slices.design}")
        print(f"  {SLICE_VIOLATION_MEANING}")
    family = family_line(row, nights)
    print("family:")
    print(f"  {family or 'none (not a night of a family, or a row written before the family evidence)'}")
    attack = attack_line(row, stored_attack_confidence(row))
    if attack:
        print("attack:")
        print(f"  {attack}")
    print(f"runs: {len(runs)} (audit_runs: the run that wrote the row, then each run on identical inputs)")
    print("\n".join("  " + line for line in run_lines(row, runs)))
    if others:
        listed = "; ".join(f"{r.run_kind}, claim {show_number(r.claimed_epsilon)}, config {r.audit_config_hash}"
                           for r in others)
        print(f"other_verdicts_that_date: {listed} (results show {model} --date "
              f"{row.partition_date.isoformat()} --run-kind K --config HASH)")
    print("record: (every stored column, rounded; --json prints them exact)")
    for name, value in row.to_dict().items():
        outline = _json_object(value) if name in JSON_TEXT_COLUMNS else None
        if outline is None:
            print(f"  {name}: {show_number(value)}")
        else:
            print(f"  {name}: (JSON of {len(outline)} keys; --json prints it whole)")
    print(f"  curve_points: {points}")


def _json_object(value):
    """The JSON object a stored text column holds, None when it holds none (NULL, or text that is not one)."""
    import json

    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
