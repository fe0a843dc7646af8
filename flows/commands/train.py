"""`labeldp-audit train`: train a label-DP CatBoost model for one day and register it."""

from __future__ import annotations

import argparse
import json
import math

from labeldp.codec import encode
from labeldp.progress import no_progress, stderr_progress

HELP = "train a label-DP CatBoost click model for one day and register it under models/<name>/date=D/"
DESCRIPTION = """\
Trains the model under audit for day D on partitions/date=D (paper Sec. 6.4): the mechanism privatizes the
labels of the train and validation splits (80% + 4%, by a hash of row_id), CatBoost is fitted on them, and the
test split (16%) is scored against its true labels. The model and its metadata (mechanism, claimed epsilon,
delta, seed, partition fingerprint, CatBoost parameters, test log-loss and accuracy, code version) are written
atomically to <data-root>/models/<model-name>/date=D/.

The reference M' for day D is the day D-1 checkpoint of --reference-name (paper Sec. 6.2). It is the domain
prior of lp-1st / lp-2st / alibi (with --prior reference) and the audit needs it, so it is resolved here:
when missing it is trained without privacy on partitions/date=D-1 (--on-missing-reference train, default),
or the command fails saying how to create it (fail), or, for mechanisms that do not need a prior, the
command goes on without it (skip; e.g. for the first day of data).

Mechanisms (all guarantees per replaced label; they imply the same eps for the add/remove SIM-DP the
paper audits):
{mechanisms}

Examples:
  labeldp-audit data synth --start 2024-01-01 --end 2024-01-02 --rows 200000
  labeldp-audit train --date 2024-01-02 --mechanism lp-1st --epsilon 4
  labeldp-audit train --date 2024-01-02 --mechanism rr --epsilon 1 --model-name rr-1 --seed 7
  labeldp-audit train --date 2024-01-02 --mechanism none --epsilon inf --on-missing-reference skip

Exit status: 0 on success, 2 on bad input (a message naming the argument, file or column).
"""


def _epsilon(text: str) -> float:
    value = float(text)  # "inf" parses; argparse reports a ValueError as a usage error (exit 2)
    if math.isnan(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 or inf; got {text!r}")
    return value


def register(subparsers) -> None:
    from pipelines.training.mechanisms import help_table, mechanism_names

    description = DESCRIPTION.replace("{mechanisms}", help_table())   # one line per registered mechanism
    p = subparsers.add_parser("train", help=HELP, description=description,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--date", required=True, help="the partition day D to train on (YYYY-MM-DD)")
    p.add_argument("--mechanism", required=True, choices=mechanism_names(), help="label-DP mechanism (see above)")
    p.add_argument("--epsilon", required=True, type=_epsilon,
                   help="claimed epsilon, > 0, or inf for no privacy (e.g. 8, 4, 2, 1, 0.1, inf)")
    p.add_argument("--model-name", default=None,
                   help="registry name (default: <mechanism>-eps<epsilon>, e.g. lp-1st-eps4)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of every random choice (mechanism and CatBoost); recorded (default 0)")
    p.add_argument("--data-root", default=None,
                   help="data root (default: $LABELDP_DATA_ROOT, else ./.labeldp)")
    ref = p.add_argument_group("reference model M' (the day D-1 checkpoint)")
    ref.add_argument("--reference-name", default="reference", help="registry name of the reference (default reference)")
    ref.add_argument("--on-missing-reference", choices=("train", "fail", "skip"), default="train",
                     help="when reference@D-1 is missing: train it non-privately on day D-1 (default), fail, "
                          "or skip it (only for mechanisms that do not use it as prior)")
    mech = p.add_argument_group("mechanism parameters")
    mech.add_argument("--prior", choices=("reference", "uniform"), default="reference",
                      help="prior of lp-1st, lp-2st (stage 1) and alibi: the reference's predictions (domain "
                           "prior, default) or uniform (lp-1st with a uniform prior is exactly rr)")
    mech.add_argument("--delta", type=float, default=1e-5, help="delta of pate's (eps, delta) (default 1e-5)")
    mech.add_argument("--stage-one-fraction", type=float, default=0.5,
                      help="lp-2st: share of rows privatized in stage 1 (default 0.5)")
    mech.add_argument("--alibi-rounds", type=int, default=1,
                      help="alibi: posterior rounds; round r>=2 uses round r-1's model as prior (default 1)")
    mech.add_argument("--pate-teachers", type=int, default=20, help="pate: number of teachers (default 20)")
    mech.add_argument("--pate-queries", type=int, default=1000,
                      help="pate: student rows labelled by noisy votes; eps is split over them (default 1000)")
    cb = p.add_argument_group("CatBoost settings (defaults suit 2 cores; see benchmarks/results/training.md)")
    cb.add_argument("--iterations", type=int, default=None, help="boosting iterations")
    cb.add_argument("--learning-rate", type=float, default=None, help="learning rate")
    cb.add_argument("--depth", type=int, default=None, help="tree depth")
    cb.add_argument("--max-ctr-complexity", type=int, default=None,
                    help="max categorical combinations (1 = none, ~3x faster than CatBoost's 4)")
    cb.add_argument("--thread-count", type=int, default=None, help="CatBoost threads (default 2)")
    cb.add_argument("--no-best-model", action="store_true",
                    help="keep all iterations instead of the best one on the (privatized) validation split")
    cb.add_argument("--catboost-param", action="append", default=[], metavar="KEY=JSON",
                    help="any other CatBoost parameter, value as JSON (repeatable), e.g. border_count=64")
    p.add_argument("--json", action="store_true", help="print the registered metadata as JSON")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr (the live one, a fit's iterations and time left, shows only "
                        "when stderr is a terminal)")
    p.set_defaults(func=run, writes_data_root=True)


def _extra_params(items: list[str]) -> dict:
    from labeldp.errors import LabelDPInputError

    extra = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LabelDPInputError(f"--catboost-param must look like KEY=JSON (e.g. border_count=64); got {item!r}")
        try:
            extra[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            extra[key.strip()] = value  # a bare word such as Bernoulli
    return extra


def run(args) -> int:
    from labeldp.names import check_name, parse_date, resolve_data_root
    from pipelines.data.day import listed_day
    from pipelines.training import fitting
    from pipelines.training import train as training

    date = parse_date(args.date, "--date")
    root = resolve_data_root(args.data_root)
    if args.model_name is not None:
        check_name(args.model_name, "--model-name")
    check_name(args.reference_name, "--reference-name")
    settings = fitting.settings_from(iterations=args.iterations, learning_rate=args.learning_rate,
                                      depth=args.depth, max_ctr_complexity=args.max_ctr_complexity,
                                      thread_count=args.thread_count,
                                      use_best_model=False if args.no_best_model else None,
                                      extra=_extra_params(args.catboost_param) or None)
    options = training.MechanismOptions(prior=args.prior, delta=args.delta,
                                        stage_one_fraction=args.stage_one_fraction, alibi_rounds=args.alibi_rounds,
                                        pate_teachers=args.pate_teachers, pate_queries=args.pate_queries)
    directory, metadata = training.train_and_register(
        listed_day(root, date), args.mechanism, args.epsilon, model_name=args.model_name, seed=args.seed,
        settings=settings, options=options, reference_name=args.reference_name,
        on_missing_reference=args.on_missing_reference,
        progress=no_progress if args.quiet else stderr_progress("train"))
    if args.json:
        print(json.dumps(encode(metadata), indent=2, sort_keys=True))
        return 0
    metrics = metadata.test_metrics  # the training's own report (`pipelines.training.train.evaluate`)
    mechanism = encode(metadata.mechanism)  # the claim as stored (an infinite epsilon is "inf")
    print(f"model      {directory}")
    print(f"mechanism  {mechanism['name']}  epsilon {mechanism['epsilon']}  delta {mechanism['delta']}  "
          f"seed {metadata.seed}")
    print(f"guarantee  {mechanism['guarantee']}")
    print(f"test       log-loss {metrics['test_log_loss']:.5f}  accuracy {metrics['test_accuracy']:.5f}  "
          f"({metrics['test_rows']} rows; constant-rate log-loss {metrics['test_log_loss_constant']:.5f})")
    print(f"trained    {metrics['train_rows']} rows in {metrics['train_seconds']:.1f} s"
          + (f"; best iteration {metrics['best_iteration']}" if metrics["best_iteration"] is not None else ""))
    if metrics["degenerate"]:
        print(f"warning    {metrics['degenerate']}")
    return 0
