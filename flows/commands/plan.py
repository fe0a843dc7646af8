"""`labeldp-audit plan ...`: check a plan file and print it resolved; print the generated JSON Schemas."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math

from auditing.config import config_hash
from auditing.verdict.power import (  # no scipy until a plan is computed
    DEFAULT_GUESS_SHARE,
    FAMILY_NIGHTS,
    MATCHED_SHARE,
    MEASURED_NIGHTS,
    REAL_MODEL_GUESS_SHARE,
)

HELP = "check a plan file and print it with every default filled in; print the plan's JSON Schema"
DESCRIPTION = """\
A plan (JSON) says what the nightly audit runs: its targets, the reference, the audit settings, the controls,
the dataset. Its JSON Schema is generated from the code that reads it and the registries (mechanisms, bound
methods, strategies, ...), and checked in as infra/plans/plan.schema.json for editors and CI; every command
that reads a plan (nightly, guardrail, backfill, serve) validates it the same way.

Examples:
  labeldp-audit plan check infra/plans/default.json
  labeldp-audit plan check team-plan.json --json
  labeldp-audit plan schema > plan.schema.json
  labeldp-audit plan schema --dataset
"""

CHECK_DESCRIPTION = """\
Validates FILE and prints the plan as the nightly audit will run it, every default filled in: the dataset
(name, spec file, fingerprint), the reference, each target with its source and claimed epsilon, the controls,
the audit settings and their config hash, the runner's settings. Nothing is read from the data root.

A bad plan prints one line naming the file and the path of the first bad key, e.g.
  plan.json: audit.repetitons: unknown field; did you mean repetitions?
  plan.json: targets[1].mechanism must be one of ['none', 'rr', ...]; got 'magic'
and nothing on stdout.

Exit status: 0 when the plan is valid, 2 when it is not.
"""

SCHEMA_DESCRIPTION = """\
Prints the JSON Schema (draft 2020-12) of a plan file, or of a dataset spec file with --dataset, generated
from the code and the registries as they are now. --write rewrites the checked-in copies
infra/plans/plan.schema.json and infra/datasets/dataset.schema.json (after adding a mechanism, a method, a
strategy or a plan key; a test fails while they are stale).
"""


_NEVER = dt.datetime.min.replace(tzinfo=dt.UTC)  # a row with no timestamp sorts first
BUILTIN_HOLDOUT = 0.16  # pipelines.data.splits.FRACTIONS[TEST]: the built-in split's held-out share
POWER_DESCRIPTION = f"""\
What the capacity check can confirm for a plan, a day's size, a holdout share and a claim: the gap above the claim
a night confirms with 90% power, the gap a family confirms within --nights nights, and whether a perfect attacker
could ever be vouched for. The check rows are the day's held-out rows, all of them; when the plan recalibrates the
reference, its correction fits a tenth of the other rows, which leave the audit. Planning figures under stated
assumptions (the leak shows on a share of the rows where the model is as sharp as randomized response, the
reference's misfit buys nothing): see docs/decisions.md, "Planning the holdout".

Two shares drive the figures: the guess share (the share of the check rows the check guesses on at its threshold,
where a leak can show) and the matched share (the share of those guesses the check's matching keeps). Without
--from-warehouse both are assumptions: --guess-share (default {DEFAULT_GUESS_SHARE:g}) and a matched share of {MATCHED_SHARE:g}. The default
guess share is optimistic: an overfitted CatBoost model on real features guessed on about 1.3% of the check rows
(docs/soundness.md, section 8.9), so the figures at a share of {REAL_MODEL_GUESS_SHARE:.0%} are printed beside the default's. With
--from-warehouse both shares are measured: the median over each target's last --measured-nights stored nights
(nightly and backfill) of what its capacity check recorded (check guesses over check rows; matched check guesses
over check guesses), per target at its claim; the output names the nights and the figures.

Beside the holdout asked for, the same day is planned at holdouts of 10% to 50% (other_holdouts in --json): the
gap shrinks while the check rows limit the check and stops once the audited rows do. On a real log a larger
holdout also takes training rows from the model, so its leak shrinks too (docs/soundness.md, section 8.9).

Examples:
  labeldp-audit plan power --rows 50000 --holdout 0.2 --claimed-epsilon 1
  labeldp-audit plan power --rows 50000 --holdout 0.2 --from-warehouse
  labeldp-audit plan power --rows 100000 --holdout 0.2 --from-warehouse --model rr-eps1 --claimed-epsilon 0.5 --json

Exit status: 0, or 2 on bad input (also: --from-warehouse and a target with no stored night whose capacity check
measured the shares).
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("plan", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="plan_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: _no_subcommand(p))

    check = sub.add_parser("check", help="validate a plan file and print it resolved", description=CHECK_DESCRIPTION,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("file", metavar="FILE", help="the plan JSON file")
    check.add_argument("--json", action="store_true", help="print the resolved plan as JSON")
    check.set_defaults(func=run_check, read_only=True)

    schema = sub.add_parser("schema", help="print the plan's (or a dataset spec's) JSON Schema",
                            description=SCHEMA_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    schema.add_argument("--dataset", action="store_true", help="the dataset spec's schema instead of the plan's")
    schema.add_argument("--write", action="store_true",
                        help="rewrite the checked-in infra/plans/plan.schema.json and "
                             "infra/datasets/dataset.schema.json instead of printing")
    schema.set_defaults(func=run_schema, read_only=True)

    power = sub.add_parser("power", help="what gap above a claim a night, and a family, can confirm",
                           description=POWER_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    power.add_argument("--plan", dest="plan_file", default=None, metavar="FILE",
                       help="the plan (default infra/plans/default.json): its confidence and reference correction")
    power.add_argument("--rows", type=int, required=True, help="rows of a day")
    power.add_argument("--holdout", type=float, default=None,
                       help=f"share of the day no audited model trains on (default {BUILTIN_HOLDOUT:g}, the built-in "
                            "split's test share)")
    power.add_argument("--claimed-epsilon", type=float, default=None,
                       help="the claim (default: each finite claim of the plan's targets; with --from-warehouse each "
                            "target's, a registered target's from its latest stored night)")
    power.add_argument("--guess-share", type=float, default=None,
                       help="share of the check rows the check guesses on at its threshold, where the leak shows: a "
                            f"planning assumption (default {DEFAULT_GUESS_SHARE:g}, optimistic: a real model's is "
                            f"nearer {REAL_MODEL_GUESS_SHARE:g}, docs/soundness.md 8.9; the default's figures are "
                            f"printed with those at {REAL_MODEL_GUESS_SHARE:g}); not with --from-warehouse")
    power.add_argument("--nights", type=int, default=FAMILY_NIGHTS,
                       help=f"nights the family has to confirm a leak in (default {FAMILY_NIGHTS})")
    power.add_argument("--from-warehouse", action="store_true",
                       help="take the guess and matched shares from what the capacity check measured on the stored "
                            "nights of the plan's targets (or --model's): the median of the latest --measured-nights")
    power.add_argument("--model", default=None, metavar="NAME",
                       help="with --from-warehouse: this model's stored nights instead of the plan's targets")
    power.add_argument("--measured-nights", type=int, default=MEASURED_NIGHTS, metavar="N",
                       help=f"with --from-warehouse: the latest stored nights to take the median of (default "
                            f"{MEASURED_NIGHTS})")
    power.add_argument("--warehouse", default=None, metavar="W",
                       help="with --from-warehouse: DuckDB file or postgresql:// URL (default: "
                            "<data-root>/warehouse.duckdb)")
    power.add_argument("--data-root", default=None, metavar="R",
                       help="with --from-warehouse: data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")
    power.add_argument("--json", action="store_true", help="print the figures as JSON")
    power.set_defaults(func=run_power, read_only=True)


def run_power(args) -> int:
    import json

    from auditing.sinks.report.text import power_lines
    from auditing.verdict.power import power_plan, rows_of_day, with_holdouts
    from flows.preflight import plan_for
    from labeldp.codec import encode
    from labeldp.errors import LabelDPInputError
    from pipelines.data.splits import CORRECTION_SHARE

    plan = plan_for(args.plan_file)
    holdout = BUILTIN_HOLDOUT if args.holdout is None else args.holdout
    if not 0.0 <= holdout < 1.0:
        raise LabelDPInputError(f"--holdout must be in [0, 1); got {holdout!r}")
    if args.rows < 1:
        raise LabelDPInputError(f"--rows must be a whole number >= 1; got {args.rows!r}")
    share = CORRECTION_SHARE if plan.game.reference_calibration != "none" else 0.0
    audited, check = rows_of_day(args.rows, holdout, share)
    settings = {"confidence": plan.bound.confidence, "nights": args.nights}
    if args.from_warehouse:
        pairs = [(p, None) for p in _measured_plans(args, plan, audited, check, settings)]
    else:
        given = {name: flag for name, flag in (("--model", args.model), ("--warehouse", args.warehouse),
                                               ("--data-root", args.data_root)) if flag is not None}
        if given or args.measured_nights != MEASURED_NIGHTS:
            raise LabelDPInputError(f"{', '.join(given) or '--measured-nights'} apply only with --from-warehouse")
        claims = ([args.claimed_epsilon] if args.claimed_epsilon is not None
                  else sorted({t.claimed_epsilon for t in plan.targets if t.claimed_epsilon is not None
                               and math.isfinite(t.claimed_epsilon)}))
        if not claims:
            raise LabelDPInputError("--claimed-epsilon: the plan's targets claim no finite epsilon; give the claim")
        assumed = DEFAULT_GUESS_SHARE if args.guess_share is None else args.guess_share
        pairs = [(power_plan(audited, check, claim, guess_share=assumed, **settings),
                  # the default is optimistic: the figures nearer a real model's share go beside it
                  power_plan(audited, check, claim, guess_share=REAL_MODEL_GUESS_SHARE, **settings)
                  if args.guess_share is None else None) for claim in claims]
    # what other holdout shares of the same day would confirm, beside the plan's own (the first of each pair)
    pairs = [(with_holdouts(p, args.rows, holdout, share), nearer) for p, nearer in pairs]
    if args.json:
        print(json.dumps([encode(p) for pair in pairs for p in pair if p is not None], indent=1))
    else:
        print("\n".join(line for p, nearer in pairs for line in power_lines(p, nearer)))
    return 0


def _measured_plans(args, plan, audited: int, check: int, settings: dict) -> list:
    """One plan per target (or --model) at the shares its stored nights' capacity checks measured."""
    from auditing.sinks.family import family_members
    from auditing.sinks.stored_shares import stored_night_shares
    from auditing.sinks.warehouse import WarehouseUnavailable
    from auditing.sinks.warehouse.base import open_read_only
    from auditing.verdict.power import measured_power_plan, measured_shares
    from labeldp.errors import LabelDPInputError
    from labeldp.names import check_name

    if args.guess_share is not None:
        raise LabelDPInputError("--guess-share and --from-warehouse: give one (the warehouse's nights measure the "
                                "guess share)")
    if args.measured_nights < 1:
        raise LabelDPInputError(f"--measured-nights must be a whole number >= 1; got {args.measured_nights!r}")
    if args.model is not None:
        targets = [(check_name(args.model, "--model"), args.claimed_epsilon)]
    else:
        targets = [(t.name, t.claimed_epsilon if args.claimed_epsilon is None else args.claimed_epsilon)
                   for t in plan.targets]
    hash_of_plan = config_hash(plan.game, plan.bound)
    try:
        with open_read_only(args.warehouse, data_root=args.data_root) as warehouse:
            stored = {name: warehouse.fetch_results(model_id=name) for name, _ in targets}
    except WarehouseUnavailable as exc:
        raise LabelDPInputError(f"--from-warehouse: warehouse unavailable: {' '.join(str(exc).split())}") from exc
    nights = {name: stored_night_shares(stored[name], name, hash_of_plan) for name, _ in targets}
    missing = [name for name, _ in targets if not nights[name]]
    if missing:
        raise LabelDPInputError(
            f"--from-warehouse: no stored night (nightly or backfill) of {', '.join(missing)} whose capacity check "
            "measured the shares (check rows, check guesses, matched guesses); run a nightly with held-out check "
            "rows first" + ("" if args.model is not None else ", or give --model NAME for a model that has one"))
    plans = []
    for name, claim in targets:
        if claim is None:  # a registered target's claim: its latest night's (`nights` holds one, so a row does)
            claim = max(family_members(stored[name], name),
                        key=lambda r: (r.partition_date, r.finished_at or r.started_at or _NEVER)).claimed_epsilon
        if math.isfinite(claim):
            shares = measured_shares(name, nights[name], args.measured_nights)
            plans.append(measured_power_plan(audited, check, claim, shares, **settings))
    if not plans:
        raise LabelDPInputError("--claimed-epsilon: the targets claim no finite epsilon; give the claim")
    return plans


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def resolved(plan, path: str) -> dict:
    """The plan as the nightly audit runs it: `encode(plan)` plus what it derives (the dataset's
    fingerprint, the recalibrated reference's name, the audit's config hash, the controls it runs)."""
    from labeldp.codec import encode

    data = encode(plan)
    dataset = data.pop("dataset")
    return {
        "plan": path,
        "dataset": {"name": dataset["name"], "spec": dataset["source"], "fingerprint": plan.dataset.fingerprint()},
        "reference_name": data.pop("reference_name"),
        "calibrated_reference_name": plan.calibrated_reference_name,
        "on_missing_reference": data.pop("on_missing_reference"),
        "on_missing_target": data.pop("on_missing_target"),
        "targets": data.pop("targets"),
        "controls": {**data.pop("controls"), "runs": [spec.name for spec in plan.control_specs()]},
        "audit": {**data.pop("audit"), "config_hash": config_hash(plan.game, plan.bound)},
        **data,
    }


def _value(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return json.dumps(list(value))
    return str(value)


def _text(view: dict) -> str:
    dataset = view["dataset"]
    lines = [f"plan {view['plan']}: valid",
             f"dataset    {dataset['name']} ({dataset['spec']}; {dataset['fingerprint']})",
             f"reference  {view['reference_name']} (on_missing_reference {view['on_missing_reference']}; "
             f"recalibrated as {view['calibrated_reference_name']})",
             f"targets    {len(view['targets'])} (on_missing_target {view['on_missing_target']})"]
    width = max(len(t["name"]) for t in view["targets"])
    for target in view["targets"]:
        claim = target["claimed_epsilon"]
        if target["source"] == "registered":
            detail = f"claimed_epsilon {_value(claim) if claim is not None else '(the registered claim)'}"
        else:
            detail = (f"mechanism {target['mechanism']}, epsilon {_value(target['epsilon'])}, "
                      f"claimed_epsilon {_value(claim)}")
            if target.get("catboost"):
                detail += ", catboost " + ", ".join(f"{key} {_value(value)}" for key, value in target["catboost"].items())
        lines.append(f"  {target['name']:<{width}}  {target['source']:<10}  {detail}")
    controls = view["controls"]
    lines.append("controls   " + (", ".join(controls["runs"]) + f" (positive_epsilon {controls['positive_epsilon']})"
                                  if controls["enabled"] else "disabled"))
    lines.append(f"audit      config hash {view['audit']['config_hash']}")
    settings = {key: value for key, value in view["audit"].items() if key != "config_hash"}
    width = max(len(key) for key in settings)
    lines += [f"  {key:<{width}}  {_value(value)}" for key, value in settings.items()]
    lines.append("slices     " + (", ".join(view["slices"]) + " (own budget "
                                  + (_value(view["slice_budget"]) if view["slice_budget"] is not None
                                     else "1 - confidence") + ")" if view["slices"] else "none declared"))
    runner = ("seed", "batch_size", "catboost_iterations", "beam_args")
    lines.append("runner     " + ", ".join(f"{key} {_value(view[key])}" for key in runner))
    return "\n".join(lines)


def run_check(args) -> int:
    from flows.plan import load_plan

    view = resolved(load_plan(args.file), args.file)
    print(json.dumps(view, indent=2) if args.json else _text(view))
    return 0


def run_schema(args) -> int:
    from flows.plan import plan_schema, plan_shape
    from flows.plan_schema import (
        DATASET_SCHEMA_FILE,
        PLAN_SCHEMA_FILE,
        SETTINGS_DOC_FILE,
        dataset_schema,
        schema_text,
        settings_doc,
        write_schema,
        write_text,
    )

    if args.write:
        for schema, path in ((plan_schema(), PLAN_SCHEMA_FILE), (dataset_schema(), DATASET_SCHEMA_FILE)):
            write_schema(schema, path)
            print(path)
        write_text(settings_doc(plan_shape()), SETTINGS_DOC_FILE)
        print(SETTINGS_DOC_FILE)
        return 0
    print(schema_text(dataset_schema() if args.dataset else plan_schema()), end="")
    return 0
