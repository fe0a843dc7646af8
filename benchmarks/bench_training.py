"""Non-private CatBoost training on the 800K-row train split of a synthetic 1M-row day: the project's
settings (``pipelines.training.train.CatBoostSettings()``) against CatBoost's own defaults.

Both fits use the same day, the same train split (80%, by hash of row_id) and 2 threads, and are scored on
the true labels of the test split (16%). The project's settings also pick the best iteration on the
validation split (4%), as ``labeldp-audit train`` does; the defaults run is CatBoost exactly as shipped
(only ``allow_writing_files=False``, ``thread_count``, ``random_seed``), and its test log-loss is recorded at
checkpoints along the way so a shorter defaults run can be compared too.

Prints wall and CPU seconds of ``fit`` (CPU = all threads; on 2 uncontended cores wall ~ CPU / 2) and the
load average before and after, because the 2 cores are shared with other jobs.

    .venv/bin/python benchmarks/bench_training.py --rows 1000000 --configs chosen,defaults
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labeldp.names import parse_date  # noqa: E402
from pipelines.data import splits  # noqa: E402
from pipelines.data.day import listed_day  # noqa: E402
from pipelines.data.layout import partition_listing  # noqa: E402
from pipelines.data.synth import write_synthetic_day  # noqa: E402
from pipelines.training import fitting  # noqa: E402
from pipelines.training import train as training  # noqa: E402


def log_loss(probabilities: np.ndarray, labels: np.ndarray) -> float:
    p = np.clip(probabilities[np.arange(labels.size), labels], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def timed_fit(model, *args, **kwargs) -> tuple[float, float]:
    wall, cpu = time.monotonic(), time.process_time()
    model.fit(*args, **kwargs)
    return time.monotonic() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--date", default="2024-01-01")
    parser.add_argument("--data-root", default="/tmp/labeldp-bench")
    parser.add_argument("--configs", default="chosen,defaults", help="comma list of chosen, defaults")
    parser.add_argument("--defaults-iterations", type=int, default=1000, help="CatBoost's default is 1000")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = parser.parse_args()

    from catboost import CatBoostClassifier

    date = parse_date(args.date, "--date")
    if not partition_listing(args.data_root, date).exists:
        print(f"generating {args.rows} rows for {date} under {args.data_root}", file=sys.stderr)
        write_synthetic_day(args.data_root, date, rows=args.rows)
    start = time.monotonic()
    day = training.load_day(listed_day(args.data_root, date))
    print(f"loaded {day.row_ids.size} rows in {time.monotonic() - start:.1f} s", file=sys.stderr)
    train, validation, test = (day.rows(code) for code in (splits.TRAIN, splits.VALIDATION, splits.TEST))
    x_train, y_train = day.features.iloc[train], day.labels[train]
    x_test, y_test = day.features.iloc[test], day.labels[test]
    results = []
    for config in [c.strip() for c in args.configs.split(",") if c.strip()]:
        load_before = os.getloadavg()[0]
        if config == "chosen":
            settings = training.CatBoostSettings(thread_count=args.threads)
            params = settings.params(args.seed)
            model = CatBoostClassifier(**params)
            wall, cpu = timed_fit(model, fitting.training_pool(x_train, y_train),
                                  eval_set=fitting.training_pool(day.features.iloc[validation], day.labels[validation]),
                                  use_best_model=True)
            checkpoints = {}
        elif config == "defaults":
            params = {"allow_writing_files": False, "thread_count": args.threads, "random_seed": args.seed,
                      "verbose": 100, "iterations": args.defaults_iterations}
            model = CatBoostClassifier(**params)
            # eval_set only records the test curve; use_best_model=False keeps training exactly the defaults'.
            wall, cpu = timed_fit(model, fitting.training_pool(x_train, y_train),
                                  eval_set=fitting.training_pool(x_test, y_test), use_best_model=False)
            curve = model.get_evals_result()["validation"]["Logloss"]
            checkpoints = {n: curve[n - 1] for n in (50, 100, 200, 300, 500, 1000, len(curve)) if n <= len(curve)}
        else:
            raise SystemExit(f"unknown config {config!r}")
        probabilities = model.predict_proba(fitting.training_pool(x_test))
        row = {
            "config": config, "train_rows": int(train.size), "test_rows": int(test.size),
            "trees": int(model.tree_count_), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "test_log_loss": round(log_loss(probabilities, y_test), 6),
            "learning_rate": model.get_all_params().get("learning_rate"),
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
            "params": {k: v for k, v in params.items() if k != "verbose"},
            "test_log_loss_at_iteration": {str(k): round(v, 6) for k, v in checkpoints.items()},
        }
        results.append(row)
        print(json.dumps(row), flush=True)

    print("\n| config | train rows | trees | fit wall (s) | fit CPU (s) | test log-loss | load avg before/after |")
    print("|---|---|---|---|---|---|---|")
    for row in results:
        print(f"| {row['config']} | {row['train_rows']} | {row['trees']} | {row['wall_s']} | {row['cpu_s']} | "
              f"{row['test_log_loss']:.5f} | {row['load_before']}/{row['load_after']} |")
    if len(results) == 2:
        a, b = results
        print(f"\nrelative log-loss difference {a['config']} vs {b['config']}: "
              f"{100 * (a['test_log_loss'] / b['test_log_loss'] - 1):+.2f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(math.isfinite(r["test_log_loss"]) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
