"""Test log-loss by label-DP mechanism and epsilon on a synthetic day: the shape of the paper's Table 5
(Criteo log-loss of LP-1ST, LP-1ST with a domain prior, LP-1ST with noise correction, LP-2ST; plus ALIBI and
PATE, which the paper audits too).

Setup: two synthetic days D-1 and D of ``--rows`` rows each (``pipelines.data.synth``); the reference M' is a
non-private model of day D-1 (the domain prior); every cell trains on day D's train split (privatized train
+ validation labels) with the project's CatBoost settings and is scored on day D's test split against the
true labels. Cells marked "(const)" are degenerate runs: every privatized label was the same class, so the
model is a constant (``pipelines.training.train``), the paper's "did not produce meaningful outcomes".

    .venv/bin/python benchmarks/bench_mechanism_table.py --rows 200000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labeldp.names import parse_date  # noqa: E402
from labeldp.progress import stderr_progress  # noqa: E402
from pipelines.data import splits  # noqa: E402
from pipelines.data.day import listed_day  # noqa: E402
from pipelines.data.layout import partition_listing  # noqa: E402
from pipelines.data.synth import write_synthetic_day  # noqa: E402
from pipelines.training import train as training  # noqa: E402
from pipelines.training.mechanisms import get_mechanism, mechanism_names  # noqa: E402

EPSILONS = (math.inf, 8.0, 4.0, 2.0, 1.0, 0.1)
# (row label, mechanism, prior)
ROWS = (
    ("LP-1ST (uniform prior = RR)", "lp-1st", "uniform"),
    ("LP-1ST (domain prior)", "lp-1st", "reference"),
    ("LP-1ST (noise correction)", "lp-1st-nc", "uniform"),
    ("LP-2ST (stage 1: uniform prior)", "lp-2st", "uniform"),
    ("ALIBI (domain prior)", "alibi", "reference"),
    ("PATE (20 teachers, 1000 queries)", "pate", "uniform"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="rows per synthetic day (paper: 1M)")
    parser.add_argument("--date", default="2024-01-02", help="day D (the reference uses D-1)")
    parser.add_argument("--data-root", default="/tmp/labeldp-table")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mechanisms", default=None,
                        help="comma list of the rows' mechanisms to run, from " + ",".join(mechanism_names()))
    parser.add_argument("--epsilons", default=None, help="comma list, e.g. inf,8,1")
    parser.add_argument("--json", default=None, help="also write the cells to this JSON file")
    args = parser.parse_args()

    date = parse_date(args.date)
    previous = training.reference_date(date)
    for day in (previous, date):
        if not partition_listing(args.data_root, day).exists:
            print(f"generating {args.rows} rows for {day}", file=sys.stderr)
            write_synthetic_day(args.data_root, day, rows=args.rows)
    settings = training.CatBoostSettings()
    epsilons = EPSILONS if not args.epsilons else tuple(float(e) for e in args.epsilons.split(","))
    wanted = None if not args.mechanisms else set(args.mechanisms.split(","))
    for name in wanted or ():
        get_mechanism(name, "--mechanisms")   # refuses an unknown name with the list of known ones
    progress = stderr_progress("train")

    progress(f"reference: non-private model of {previous}")
    reference = training.train_model(training.load_day(listed_day(args.data_root, previous)), "none", math.inf,
                                     seed=args.seed, settings=settings).model
    target = training.load_day(listed_day(args.data_root, date))
    started = time.monotonic()
    plain = training.train_model(target, "none", math.inf, seed=args.seed, settings=settings)
    cells = [{"row": "non-private", "mechanism": "none", "prior": None, "epsilon": "inf",
              **{k: plain.metrics[k] for k in ("test_log_loss", "test_accuracy", "train_seconds", "degenerate")}}]
    progress(f"non-private: test log-loss {plain.metrics['test_log_loss']:.5f}")
    test = target.rows(splits.TEST)
    reference_metrics = training.evaluate(reference.predict_proba(target.features.iloc[test]), target.labels[test])
    progress(f"reference (non-private model of {previous}) on day {date}'s test split: test log-loss "
             f"{reference_metrics['test_log_loss']:.5f}")
    for label, mechanism, prior in ROWS:
        if wanted and mechanism not in wanted:
            continue
        for epsilon in epsilons:
            if math.isinf(epsilon) and get_mechanism(mechanism).identity_at_infinity:
                metrics = plain.metrics   # eps = inf releases the labels unchanged: identical to 'none'
            else:
                options = training.MechanismOptions(prior=prior)
                metrics = training.train_model(target, mechanism, epsilon, seed=args.seed, settings=settings,
                                               options=options, reference_model=reference).metrics
            cells.append({"row": label, "mechanism": mechanism, "prior": prior,
                          "epsilon": "inf" if math.isinf(epsilon) else epsilon,
                          **{k: metrics[k] for k in ("test_log_loss", "test_accuracy", "train_seconds",
                                                     "degenerate")}})
            progress(f"{label} eps={epsilon:g}: test log-loss {metrics['test_log_loss']:.5f}"
                     + (" (degenerate)" if metrics["degenerate"] else ""))

    header = ["eps=" + ("inf" if math.isinf(e) else f"{e:g}") for e in epsilons]
    print(f"\nTest log-loss, synthetic day {date} ({args.rows} rows; train split {plain.metrics['train_rows']}, "
          f"test {plain.metrics['test_rows']}); constant-rate log-loss {plain.metrics['test_log_loss_constant']:.4f}; "
          f"reference M' (non-private, day {previous}) scored on day {date}: "
          f"{reference_metrics['test_log_loss']:.4f}; total {time.monotonic() - started:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| mechanism | " + " | ".join(header) + " |")
    print("|---|" + "---|" * len(header))
    for label, _mechanism, _prior in ROWS:
        row = [c for c in cells if c["row"] == label]
        if not row:
            continue
        values = [f"{c['test_log_loss']:.4f}" + (" (const)" if c["degenerate"] else "") for c in row]
        print(f"| {label} | " + " | ".join(values) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(cells, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
