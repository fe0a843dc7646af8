"""End-to-end nightly audit of one 1M-row day, one target model, reference present (target: under
10 minutes on 2 cores). Prints the time of each stage and peak memory of this process and its children.

    .venv/bin/python benchmarks/bench_nightly.py [--rows 1000000] [--repetitions 100] [--data-root DIR]

Setup (not timed): two synthetic days and the D-1 reference, trained non-privately. Timed: the steps the
nightly flow runs for one target (the same functions `flows/nightly.py` wraps as Prefect tasks): partition
check, training the target (LP-1ST at eps 4), Beam scoring + audit on FnApiRunner, publishing (DuckDB row,
HTML report).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from auditing.game.config import GameConfig
from flows import steps
from flows.plan import AuditPlan, TargetSpec
from pipelines.data.day import listed_day
from pipelines.data.synth import write_synthetic_day

D0, D1 = "2026-09-01", "2026-09-02"


def peak_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--data-root", default=None)
    args = parser.parse_args()
    root = Path(args.data_root or tempfile.mkdtemp(prefix="labeldp-bench-nightly-"))
    spec = TargetSpec("lp-1st-eps4", "lp-1st", 4.0)
    plan = AuditPlan(targets=(spec,), game=GameConfig(repetitions=args.repetitions))
    date = steps.parse_day(D1)

    t = time.perf_counter()
    for day in (D0, D1):
        write_synthetic_day(root, steps.parse_day(day), rows=args.rows)
    reference = steps.ensure_reference(listed_day(root, date), plan, progress=print)
    print(f"setup (2 synthetic days + reference training, not timed): {time.perf_counter() - t:.0f} s")

    stages = {}
    t0 = time.perf_counter()
    partition = steps.check_partition(root, date)
    stages["check partition"] = time.perf_counter() - t0
    t = time.perf_counter()
    target = steps.ensure_target(partition, spec, plan, progress=print)
    stages["train target (lp-1st, eps 4)"] = time.perf_counter() - t
    t = time.perf_counter()
    record = steps.score_target(partition, target, reference, plan, progress=print)
    stages[f"Beam scoring + audit (R = {args.repetitions}, FnApiRunner)"] = time.perf_counter() - t
    t = time.perf_counter()
    row = steps.publish(root, date, spec, record, warehouse=None, run_kind="nightly").row
    stages["publish (DuckDB + report)"] = time.perf_counter() - t
    total = time.perf_counter() - t0

    print(f"\nrows={args.rows} repetitions={args.repetitions} data root {root}")
    for name, seconds in stages.items():
        print(f"  {name:<48} {seconds:7.1f} s")
    print(f"  {'total':<48} {total:7.1f} s")
    own, children = peak_mib()
    print(f"  peak RSS: this process {own:.0f} MiB, largest child {children:.0f} MiB")
    print(f"  result: {row.status} eps_lb {row.epsilon_lower_bound:.3f} (valid, {row.confidence:.0%}, "
          f"{row.strategy}, {row.method}, delta={row.delta:g}) vs claimed {row.claimed_epsilon:g}")


if __name__ == "__main__":
    main()
