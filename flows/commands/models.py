"""`labeldp-audit models ...`: register a model trained elsewhere, list the registry, show one model's metadata."""

from __future__ import annotations

import argparse
import json

HELP = "register a model trained elsewhere (CatBoost, ONNX, logged predictions); list or show registered models"
DESCRIPTION = """\
The model registry lives under the data root: models/<name>/date=D/ holds the model's file and metadata.json
(see docs/model_registry.md). `train` puts the models it trains there; `models register` puts a model another
team trained there, so that the nightly audit, `score` and the guardrail treat it like any other.

Examples:
  labeldp-audit models register --name team-ctr --date 2024-01-02 --file ctr.cbm --claimed-epsilon 1 \\
      --training-rows train_keys.parquet
  labeldp-audit models list
  labeldp-audit models show team-ctr --json
"""

REGISTER_DESCRIPTION = """\
Copies FILE into models/<name>/date=D/ with a metadata.json recording its format, sha256, the claimed
epsilon and delta, the dataset spec, and which of day D's rows trained it. Everything is checked first and
nothing is written on any error (exit 2, one line naming the file, column or argument):
  - the file, by its format (--format):{formats}
  - the dataset: --dataset SPEC, default the spec day D's partition was written with; when that partition
    exists the two must agree;
  - --training-rows: 'all' (every row of day D trained the model) or a Parquet file with one integer column
    named like the dataset's row key (or row_id) listing the rows whose labels trained it; every key must be a
    row of day D (the audit plays its game on these rows);
  - a predictions table answers for the rows of one day: --predictions-for (default --date). It must hold the
    day-D model's scores of day D's rows (as a reference: the D-1 model's scores of ALL of day D's rows);
  - an ONNX graph's inputs: each fed by the dataset column of its name, or by the columns --onnx-inputs FILE
    names ({"graph input": ["column", ...]}); the graph then runs on up to 1000 rows of day D, and the share
    of their values outside each vocabulary the graph declares is reported.
Registering the same file with the same settings again does nothing; anything different under the same name
and date is refused unless --replace. --format defaults to the one whose file has FILE's suffix.

Examples:
  labeldp-audit models register --name team-ctr --date 2024-01-02 --file ctr.cbm --claimed-epsilon 1 \\
      --dataset team_clicks.json --training-rows train_keys.parquet
  labeldp-audit models register --name team-ctr-onnx --date 2024-01-02 --file ctr.onnx --claimed-epsilon 1
  labeldp-audit models register --name team-lgbm --date 2024-01-02 --file lgbm.onnx --claimed-epsilon 1 \\
      --onnx-inputs lgbm_inputs.json
  labeldp-audit models register --name team-reference --date 2024-01-01 --file scores.parquet \\
      --format predictions --claimed-epsilon inf --predictions-for 2024-01-02

Exit status: 0 on success, 2 on bad input.
"""


def _add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-root", default=None, metavar="PATH",
                        help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")


def register(subparsers) -> None:
    from pipelines.models.formats.registry import format_names, model_format

    registrable = format_names(registrable_only=True)
    formats = "".join(f"\n      {name:<12} {model_format(name).description}" for name in registrable)
    p = subparsers.add_parser("models", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="models_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: _no_subcommand(p))

    r = sub.add_parser("register", help="register a model file trained elsewhere",
                       description=REGISTER_DESCRIPTION.replace("{formats}", formats),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--name", required=True, help="registry name (letters, digits, '.', '_', '-')")
    r.add_argument("--date", required=True, metavar="D", help="the model's day D (YYYY-MM-DD): it is audited on "
                   "day D's rows and may have read their labels")
    r.add_argument("--file", required=True, metavar="FILE", help="the model file (.cbm, .onnx) or predictions table "
                   "(.parquet)")
    r.add_argument("--claimed-epsilon", required=True, metavar="E",
                   help="the label-DP epsilon the team claims, >= 0, or inf for no claim")
    r.add_argument("--delta", default="0", metavar="D", help="the claimed delta, in [0, 1) (default 0)")
    r.add_argument("--format", choices=registrable, default=None,
                   help="the file's format (default: from its suffix)")
    r.add_argument("--dataset", default=None, metavar="SPEC",
                   help="dataset spec JSON (default: the spec of day D's partition, else the built-in Criteo one)")
    r.add_argument("--training-rows", default="all", metavar="all|FILE",
                   help="'all' (default) or a Parquet file of the row keys whose labels trained the model")
    r.add_argument("--predictions-for", default=None, metavar="D",
                   help="predictions format: the day whose rows the table scores (default --date)")
    r.add_argument("--onnx-inputs", default=None, metavar="FILE",
                   help="ONNX: a JSON file naming the dataset columns that feed each graph input, in order "
                        "(default: each input is fed by the column of its name)")
    r.add_argument("--replace", action="store_true",
                   help="replace a different registration of the same name and date")
    _add_root(r)
    r.set_defaults(func=run_register, writes_data_root=True)

    ls = sub.add_parser("list", help="list the registered models", description="Lists every models/<name>/date=D/ "
                        "of the data root: source (trained or registered), format, claim, dataset, training rows.")
    ls.add_argument("--json", action="store_true", help="print a JSON list")
    _add_root(ls)
    ls.set_defaults(func=run_list, read_only=True)

    show = sub.add_parser("show", help="print one model's metadata",
                          description="Prints a model's metadata.json (default: its latest date).")
    show.add_argument("name", help="registry name")
    show.add_argument("--date", default=None, metavar="D", help="the model's date (default: its latest)")
    show.add_argument("--json", action="store_true", help="print the whole metadata as JSON")
    _add_root(show)
    show.set_defaults(func=run_show, read_only=True)


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _number(text: str, flag: str) -> float:
    from labeldp.errors import LabelDPInputError

    try:
        return float(text)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"{flag} must be a number (or inf); got {text!r}") from None


def run_register(args) -> int:
    from pathlib import Path

    from labeldp.names import check_name, parse_date, resolve_data_root
    from pipelines.data.dataset_spec import load_spec
    from pipelines.models.registration import ALL_ROWS, format_for_file, register_model

    name = check_name(args.name, "--name")
    date = parse_date(args.date, "--date")
    predictions_for = parse_date(args.predictions_for, "--predictions-for") if args.predictions_for else None
    epsilon, delta = _number(args.claimed_epsilon, "--claimed-epsilon"), _number(args.delta, "--delta")
    root = resolve_data_root(args.data_root)
    fmt = args.format or format_for_file(args.file)
    dataset = load_spec(args.dataset) if args.dataset else None
    rows = ALL_ROWS if args.training_rows == ALL_ROWS else Path(args.training_rows)
    registration = register_model(root, name, date, Path(args.file), fmt=fmt, claimed_epsilon=epsilon, delta=delta,
                                  dataset=dataset, training_rows=rows, predictions_for=predictions_for,
                                  onnx_inputs=Path(args.onnx_inputs) if args.onnx_inputs else None,
                                  replace=args.replace)
    record = registration.metadata
    trained = record.training_rows
    on = "every row of the day" if trained.kind_name == ALL_ROWS else f"{trained.rows} listed rows"
    done = "already registered (unchanged)" if registration.already_registered else "registered"
    print(f"{done} {record.format_name} model {name}@{date.isoformat()} claiming eps {record.mechanism.epsilon} "
          f"delta {record.mechanism.delta}, dataset {record.dataset.name}, trained on {on}: "
          f"{root / 'models' / name / f'date={date.isoformat()}'}")
    probe = record.onnx.probe if record.onnx else None
    if probe and probe.outside_vocabulary:
        shares = ", ".join(f"{item.column} {100 * item.outside_share:.1f}% (of {item.vocabulary} known "
                           f"to its {item.operator})" for item in probe.outside_vocabulary)
        print(f"probe: of {probe.rows} rows of the day, outside the graph's vocabulary: {shares}")
    return 0


def _cell(value) -> str:
    return "-" if value is None else str(value)


def run_list(args) -> int:
    from labeldp.names import resolve_data_root
    from pipelines.models.registration import list_models

    root = resolve_data_root(args.data_root)
    models = list_models(root)
    if args.json:
        print(json.dumps(models, indent=2, sort_keys=True))
        return 0
    if not models:
        print(f"no models under {root / 'models'}")
        return 0
    header = ("NAME", "DATE", "SOURCE", "FORMAT", "EPSILON", "DELTA", "DATASET", "TRAINING ROWS")
    keys = ("name", "date", "source", "format", "claimed_epsilon", "delta", "dataset", "training_rows")
    table = [header] + [tuple(_cell(m[k]) for k in keys) for m in models if "error" not in m]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    for m in models:
        if "error" in m:
            print(f"{m['name']}  {m['date']}  unreadable: {m['error']}")
    return 0


def run_show(args) -> int:
    from labeldp.codec import encode
    from labeldp.names import check_name, parse_date, resolve_data_root
    from pipelines.models.metadata import DEFAULT_FORMAT, or_none
    from pipelines.models.registration import show_model

    name = check_name(args.name, "NAME")
    date = parse_date(args.date, "--date") if args.date else None
    metadata = show_model(resolve_data_root(args.data_root), name, date)
    if args.json:
        print(json.dumps(encode(metadata), indent=2, sort_keys=True))
        return 0
    mechanism, record = metadata.mechanism, metadata.training_rows
    lines = [("model", metadata.id),
             ("source", metadata.origin), ("format", or_none(metadata.format) or DEFAULT_FORMAT),
             ("file", metadata.artifact_name), ("fingerprint", or_none(metadata.fingerprint)),
             ("mechanism", f"{mechanism.name}  epsilon {encode(mechanism)['epsilon']}  delta {mechanism.delta}"),
             ("dataset", metadata.dataset.name if metadata.dataset else None), ("classes", or_none(metadata.classes)),
             ("features", len(metadata.feature_schema)),
             ("inputs", "; ".join(f"{item.name} ({item.type}) <- {', '.join(item.columns)}"
                                  for item in metadata.onnx.inputs) if metadata.onnx else None),
             ("training", f"{record.kind_name if record else None} "
                          f"({_cell(or_none(record.rows) if record else None)} rows)"),
             ("predicts", metadata.predictions_for.isoformat() if metadata.predictions_for else None),
             ("created", metadata.created_at)]
    for label, value in lines:
        if value is not None:
            print(f"{label:<12}{value}")
    return 0
