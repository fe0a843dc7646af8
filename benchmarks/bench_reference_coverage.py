"""How often does a valid bound exceed the claimed eps, over game seeds, with the reference M' and with the true
click probability as the reference? (paper_table.md: a split bound above the claim in one cell.)

For one registered target of a synthetic day (``pipelines.data.synth``, whose ``oracle/`` holds the true P(click | x)),
audits repetition 0 under ``--seeds`` game seeds (``GameConfig.seed`` 0..seeds-1: fresh counterfactual labels,
coin flips and split halves each time) with the registered reference M' and, separately, with the oracle as the
reference (kappa = 0 exactly: the counterfactual labels then have the true labels' law). Counts the seeds whose
valid bound (95%, binomial, delta 0, kappa 0) exceeds the claimed eps. A valid procedure exceeds the model's true
eps in at most 5% of seeds, so at most 5% of seeds exceed the claim of a mechanism that keeps it; a clearly
higher rate with M' than with the oracle measures the reference's miscalibration (kappa > 0).

    .venv/bin/python benchmarks/bench_reference_coverage.py --data-root /tmp/table/data500k --date 2024-01-02 \
        --model lp1st-nc-eps0.1 --reference reference --reference-date 2024-01-01 --seeds 400 --strategies split
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from auditing.config import BoundConfig
from auditing.game.config import GameConfig

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from auditing.audit import run_audit  # noqa: E402
from labeldp.names import parse_date  # noqa: E402
from pipelines.data import schema  # noqa: E402
from pipelines.models import registry  # noqa: E402
from pipelines.models.catboost_frames import catboost_frame, catboost_pool  # noqa: E402
from pipelines.models.handle import resolve_model  # noqa: E402
from pipelines.scoring import audit_rows  # noqa: E402


def oracle_probabilities(root: str, date, row_ids: np.ndarray) -> np.ndarray:
    import pyarrow.parquet as pq

    path = Path(root) / "oracle" / f"date={date.isoformat()}" / "p_click.parquet"
    oracle = pq.read_table(path).to_pandas().set_index("row_id")["p_click"]
    return oracle.reindex(row_ids).to_numpy(dtype=np.float64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", required=True)
    parser.add_argument("--date", required=True, help="the target's partition date")
    parser.add_argument("--model", required=True)
    parser.add_argument("--reference", default="reference")
    parser.add_argument("--reference-date", required=True)
    parser.add_argument("--claimed-epsilon", type=float, default=None, help="default: the model's registered eps")
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--strategies", default="bonferroni,split")
    parser.add_argument("--grid", default="log")
    args = parser.parse_args()
    day, reference_day = parse_date(args.date, "--date"), parse_date(args.reference_date, "--reference-date")

    table = schema.read_partition(args.data_root, day)
    target_model = resolve_model(args.data_root, args.model, day)
    target, metadata = registry.load_model(target_model), target_model.meta
    reference = registry.load_model(resolve_model(args.data_root, args.reference, reference_day))
    claimed = args.claimed_epsilon if args.claimed_epsilon is not None else registry.claimed_epsilon(metadata)
    table = table.filter(audit_rows.row_selection("training", metadata).mask(table.column("row_id").to_numpy()))
    ids = table.column("row_id").to_numpy()
    labels = table.column("label").to_numpy().astype(np.int64)
    frame = catboost_frame(table)
    p_target = target.predict_proba(catboost_pool(frame, target))[:, 1]
    references = {"M'": reference.predict_proba(catboost_pool(frame, reference))[:, 1],
                  "oracle": oracle_probabilities(args.data_root, day, ids)}
    mean_reference = references["M'"].mean()
    print(f"{args.model}@{day}, claimed eps {claimed:g}: {ids.size} audited rows (training), mean label "
          f"{labels.mean():.4f}, mean M' {mean_reference:.4f}, mean oracle "
          f"{references['oracle'].mean():.4f}; {args.seeds} seeds, 95%, binomial, delta 0, kappa 0, {args.grid} grid")
    for name, p_reference in references.items():
        for strategy in args.strategies.split(","):
            started = time.monotonic()
            bounds = []
            for seed in range(args.seeds):
                game, bound = GameConfig(repetitions=1, seed=seed, score="paper", grid=args.grid, audit_rows="training"), BoundConfig(method="binomial", strategy=strategy, confidence=0.95, delta=0.0, kappa=0.0)
                bounds.append(run_audit(p_target, p_reference, labels, ids, game, bound).epsilon_lower_bound)
            bounds = np.asarray(bounds)
            over = int(np.sum(bounds > claimed))
            rate = over / bounds.size
            half = 1.96 * math.sqrt(max(rate * (1 - rate), 1e-12) / bounds.size)
            print(f"reference {name:6s} {strategy:10s}: bound > {claimed:g} in {over}/{bounds.size} seeds "
                  f"({100 * rate:.1f}% +- {100 * half:.1f}), bound > 0 in {int(np.sum(bounds > 0))}; max "
                  f"{bounds.max():.3f}; seed 0 {bounds[0]:.3f}  [{time.monotonic() - started:.0f} s]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
