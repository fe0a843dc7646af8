"""`labeldp-audit guardrail`: audit a release candidate against its claimed epsilon."""

from __future__ import annotations

import argparse
import sys

from flows.commands.flow_options import add_common, checked, execute, outcome_of
from flows.exit_codes import help_text

# A field whose option has another name (flows.cli.flags_of): the candidate registered as the library's `file`.
FLAGS = {"file": "--model-file"}
HELP = "audit a release candidate; exits 1 on VIOLATION (the valid bound exceeds the claimed epsilon)"
DESCRIPTION = """\
Audits a release candidate of day --date against the reference (the D-1 checkpoint) and compares the VALID
epsilon lower bound with --claimed-epsilon (the statuses and the exit status each gives: below). The row is
written to the warehouse and a report is rendered either way, as the guardrail's own verdict (run kind
"guardrail", with its claim): it never replaces a nightly's row, report or control models.

A VIOLATION blocks the release only when it is trusted: the capacity check, the candidate itself playing the
game on rows of the day it never saw, must find more evidence than the reference's misfit explains.

The candidate is either a registered model (--model NAME) or a model file straight from another team's
pipeline (--model-file F --format catboost|onnx, with --onnx-inputs MAP for a graph whose input names are not
the dataset's columns), which is registered first under the name
candidate-<first 12 hex digits of its sha256>-rows-<first 8 hex digits of its training keys' sha256, or all>:
once per file and training rows (the same file with other training rows is another candidate, beside the first;
a guardrail of a registered candidate leaves it as it is, whatever the claim; nothing is trained). Its training
rows are required: --training-rows FILE, a Parquet file of the row keys whose labels trained it (hold out a
random share of the day when training it: the day's other rows then recalibrate and check the reference, and the
split is tested before it can vouch for a VIOLATION), or --training-rows all (every row of day D trained it:
nothing can check the reference, and a VIOLATION is an unconfirmed leak, exit 4, unless
--accept-unchecked-reference, recorded and never shown as trusted). Every input is checked before the candidate is
registered or anything runs; bad input exits 2 with one line.

Example:
  labeldp-audit guardrail --model-file release.onnx --format onnx --claimed-epsilon 2 --date 2024-01-02 \\
      --training-rows release-training-keys.parquet --plan my-plan.json
"""
EPILOG = help_text() + ("\nA release pipeline blocks on any non-zero status: 1 is a disproved claim; 2, 3 and 4 mean\n"
                        "there is no trusted verdict in the warehouse.")


def register(subparsers) -> None:
    p = subparsers.add_parser("guardrail", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="registered model name (models/<name>/date=D)")
    which.add_argument("--model-file", help="a candidate model file to register and audit")
    p.add_argument("--format", default="catboost",
                   help="format of --model-file (a registered format: catboost, onnx, ...; default catboost)")
    p.add_argument("--onnx-inputs", default=None, metavar="FILE",
                   help="with --model-file of an ONNX graph: a JSON file naming the dataset columns that feed each "
                        "graph input (docs/model_registry.md)")
    p.add_argument("--training-rows", default=None, metavar="FILE|all",
                   help="with --model-file (required): a Parquet file of the row keys that trained it (the day's "
                        "other rows then check the reference), or 'all' (nothing can check the reference)")
    p.add_argument("--date", required=True, help="partition date YYYY-MM-DD the candidate was trained on")
    p.add_argument("--claimed-epsilon", required=True, type=float, help="the epsilon the release claims")
    add_common(p, fail_on_violation=False)  # a release gate always fails on VIOLATION
    p.set_defaults(func=run, writes_data_root=True)


def _register_candidate(args, partition, plan, check_only: bool = False) -> str:
    """Registers --model-file after the other inputs passed (bad input fails here, in a second, with exit 2), once
    per identity (`candidate_name`: the file and its training rows). A candidate registered before is used as it is
    (its registered claim kept: the guardrail judges --claimed-epsilon); one registered on a partition of the day
    that was replaced since is registered again on the day's rows. ``check_only``: checks it as a registration
    would, and as the run would check the registered candidate, registering nothing. ``partition``: the day's
    handle (`pipelines.data.day.Day`), under whose data root the candidate is registered."""
    from pathlib import Path

    from labeldp.errors import LabelDPInputError
    from pipelines.models.formats.registry import model_format
    from pipelines.models.registration import candidate_name, find_registered, register_model

    fmt = model_format(args.format, "--format")
    path = Path(args.model_file)
    if not path.is_file():
        raise LabelDPInputError(f"--model-file: {path} is not a file")
    root, day = partition.root, partition.date
    training_rows = args.training_rows if args.training_rows == "all" else Path(args.training_rows)
    name = candidate_name(root, day, path, training_rows, plan.dataset)
    existing = find_registered(root, name, day)
    claim = (args.claimed_epsilon, 0.0) if existing is None else (existing.mechanism.epsilon, existing.mechanism.delta)
    replaced = existing is not None and existing.partition_fingerprint != partition.fingerprint
    registration = register_model(root, name, day, path, fmt=fmt, claimed_epsilon=claim[0], delta=claim[1],
                                  dataset=plan.dataset, training_rows=training_rows,
                                  onnx_inputs=Path(args.onnx_inputs) if args.onnx_inputs else None, replace=replaced,
                                  check_only=check_only)
    if check_only:
        from flows import preflight

        preflight.check_candidate_metadata(registration.metadata, partition, plan)
        return name
    done = "is registered already (the same file and training rows)" if registration.already_registered else (
        "registered again on the day's replaced partition" if replaced else "registered")
    print(f"[labeldp-audit] {path} as {name}@{day.isoformat()} ({registration.metadata.format_name}): {done}",
          file=sys.stderr, flush=True)
    return name


def run(args) -> int:
    from flows import preflight
    from flows.exit_codes import Outcome
    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_claim, check_name, parse_date, resolve_data_root
    from pipelines.data.day import listed_day

    root = resolve_data_root(args.data_root)
    day = parse_date(args.date, "--date")
    if args.model is not None:
        check_name(args.model, "--model")
        if args.onnx_inputs:
            raise LabelDPInputError("--onnx-inputs maps the inputs of a --model-file; a registered --model keeps "
                                    "the mapping it was registered with")
    check_claim(args.claimed_epsilon, "--claimed-epsilon")
    if args.model_file is not None and args.training_rows is None:
        raise LabelDPInputError(
            "--training-rows: a candidate file needs its training rows: a Parquet file of the row keys whose labels "
            "trained it (hold out a random share of the day when training: the other rows then check the "
            "reference), or 'all' when every row of the day trained it (nothing can check the reference then)")
    if args.model is not None and args.training_rows is not None:
        raise LabelDPInputError("--training-rows goes with --model-file; a registered --model keeps the training "
                                "rows it was registered with")
    plan = preflight.plan_for(args.plan_file)
    warnings = preflight.check_run(root, [day], plan, args.warehouse, args.create_warehouse, targets=False)
    partition = listed_day(root, day)  # checked by check_run: its files, listed once for what follows
    model = args.model if args.model else _register_candidate(args, partition, plan, check_only=args.check_only)
    if args.model or not args.check_only:
        preflight.check_candidate(partition, model, plan)
    for warning in warnings:
        print(f"labeldp-audit guardrail: warning: {warning}", file=sys.stderr, flush=True)
    if args.check_only:
        return checked("guardrail", f"{model}@{day.isoformat()}", "plan, partition, reference, candidate, warehouse")

    def start():
        from flows.nightly import release_guardrail

        return outcome_of(release_guardrail, lambda row: Outcome(rows=[row], fail_on_violation=True), model=model,
                          claimed_epsilon=args.claimed_epsilon, date=day.isoformat(), data_root=str(root),
                          warehouse=args.warehouse, plan_file=args.plan_file, webhook_url=args.webhook_url,
                          fail_on_violation=True,
                          accept_unchecked_reference=args.accept_unchecked_reference)

    return execute(args, "guardrail", root, start)
