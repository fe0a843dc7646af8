"""A whole night at a real day's size, timed stage by stage: `labeldp-audit nightly` (the real command: preflight,
Prefect flow, Beam on FnApiRunner, DuckDB, reports) on a synthetic day of --rows rows, with two registered targets
and the night's controls.

    .venv/bin/python benchmarks/bench_night.py --rows 10000000 --work /tmp/night [--iterations 100] [--setup-only]
        [--train-rows 2000000]

Setup, not timed (the model owners' cost): two synthetic days; the D-1 reference trained non-privately here;
two targets trained outside the tool on day D's train split and registered with their training keys (a
non-private CatBoost model claiming eps 0.5, and one trained on half of those rows claiming eps 8), so the
night has held-out rows to recalibrate the reference on and to check the verdicts with. With --train-rows the
reference is registered like the targets, and each of the three models records all of its training rows but is
fitted on a keyed sample of at most that many of them (`sampled_models`): the night's work is the same, the
setup's training is not hours. A day above 1e7 rows is written in chunks of 5e6 (`bench_big_day.write_day`).

Timed: the night, in this process, with each step the flow runs wrapped in a timer (the functions
`flows/nightly.py` runs as Prefect tasks, and inside the reference's preparation its two parts). Printed: each
stage's total seconds and calls, its share of the night and its peak RSS (this process's, over the stage's calls),
and peak RSS of this process and of its children. The
stages nest: scoring a model includes its shift diagnostic, which is also shown on its own line.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.process_memory import peak_rss_mib, reset_peak_rss  # noqa: E402  (after the path is set)

D0, D1 = dt.date(2026, 10, 1), dt.date(2026, 10, 2)
TIMES: dict[str, list[float]] = defaultdict(list)
NESTED = "  - within "  # a stage inside another one (not added to the night's total twice)


# the night's stages in the order the flow runs them (a nested stage sorts under its parent)
CHUNK_ABOVE = 10_000_000  # a larger day is written in chunks (bench_big_day.write_day); up to it, one call

ORDER = ["preflight", "check_partition", "ensure_reference", "ensure_target", "prepare_reference", "ensure_control",
         "score_target", "judge_control", "publish"]


def peak_mib() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return own, children


PEAKS: dict[str, float] = defaultdict(float)  # each stage's peak RSS of this process (MiB), over its calls
_OPEN: list[float] = []  # the running peak of each stage open around the current call (nested stages)


def timed(module, name: str, label: str | None = None):
    """Wraps ``module.name`` so that each call's wall time is added to TIMES[label] and its peak RSS (this
    process; VmHWM reset at the call's start, the enclosing stages' peaks carried over) to PEAKS[label]."""
    original = getattr(module, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if _OPEN:
            _OPEN[-1] = max(_OPEN[-1], peak_rss_mib())
        reset_peak_rss()
        _OPEN.append(0.0)
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TIMES[label or name].append(time.perf_counter() - began)
            peak = max(_OPEN.pop(), peak_rss_mib())
            PEAKS[label or name] = max(PEAKS[label or name], peak)
            if _OPEN:
                _OPEN[-1] = max(_OPEN[-1], peak)

    setattr(module, name, wrapper)


def setup(work: Path, rows: int, iterations: int, train_rows: int | None = None) -> tuple[Path, Path]:
    """Two synthetic days, the D-1 reference, two registered targets; returns (data root, plan file).
    ``train_rows``: fit the three models on a keyed sample of at most that many of their training rows
    (`sampled_models`), for days too large to train on whole here."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from catboost import CatBoostClassifier

    from benchmarks.bench_big_day import write_day
    from flows import steps
    from flows.plan import AuditPlan, RegisteredTarget
    from pipelines.data import schema, splits
    from pipelines.data.day import listed_day
    from pipelines.models.registration import register_model
    from pipelines.training import train as training

    root = work / "data"
    for day in (D0, D1):
        if not (root / "partitions" / f"date={day.isoformat()}").exists():
            began = time.perf_counter()
            write_day(root, day, rows, chunk_above=CHUNK_ABOVE)
            print(f"setup: day {day} ({rows:,} rows) in {time.perf_counter() - began:.0f} s", flush=True)
    files = work / "files"
    files.mkdir(exist_ok=True)
    plan = work / "plan.json"
    names = ("team-a", "team-b")
    if train_rows is not None:
        sampled_models(root, files, names, iterations, train_rows)
    else:
        began = time.perf_counter()
        steps.ensure_reference(listed_day(root, D1), AuditPlan(targets=(RegisteredTarget("team-a"),),
                                                   catboost_iterations=iterations), progress=print)
        print(f"setup: reference in {time.perf_counter() - began:.0f} s", flush=True)
    if plan.exists() and all((root / "models" / name).exists() for name in names):
        return root, plan  # set up by an earlier run: the day is not read again (it would count in the peak)
    table = schema.read_partition(root, D1)
    ids = table.column(schema.ROW_ID).to_numpy()
    train = splits.split_of(ids) == splits.TRAIN
    targets = ((names[0], np.flatnonzero(train), 0.5), (names[1], np.flatnonzero(train)[::2], 8.0))
    for name, rows_index, claim in targets:
        if (root / "models" / name).exists():
            continue
        began = time.perf_counter()
        part = table.take(pa.array(rows_index))
        model = CatBoostClassifier(iterations=iterations, depth=6, thread_count=2, random_seed=1,
                                   allow_writing_files=False, verbose=False)
        model.fit(training.feature_frame(part), part.column(schema.LABEL).to_numpy(),
                  cat_features=schema.CATEGORICAL_COLUMNS)
        model.save_model(str(files / f"{name}.cbm"))
        pq.write_table(pa.table({"row_id": np.sort(ids[rows_index])}), files / f"{name}-keys.parquet")
        register_model(root, name, D1, files / f"{name}.cbm", fmt="catboost", claimed_epsilon=claim, dataset=None,
                       training_rows=files / f"{name}-keys.parquet")
        print(f"setup: {name} trained on {rows_index.size:,} rows and registered in "
              f"{time.perf_counter() - began:.0f} s", flush=True)
    del table
    write_plan(plan, names, iterations)
    return root, plan


def write_plan(plan: Path, names, iterations: int) -> None:
    plan.write_text(json.dumps({"targets": [{"name": name, "source": "registered"} for name in names],
                                "catboost_iterations": iterations}))


def sampled_models(root: Path, files: Path, names, iterations: int, train_rows: int) -> None:
    """The reference (``reference`` at D-1) and the two targets registered with their whole training rows
    recorded (the reference: D-1's train split; team-a: D's; team-b: every other row of D's), each fitted on the
    keyed sample of at most ``train_rows`` of them (`schema.read_keyed_sample`), every day read in batches.

    The audit's work is that of models trained on every recorded row (the same rows scored, audited, grouped
    and checked); only the models' fits are cheaper. A recorded row the model did not fit carries no more
    signal than a held-out one, so the targets' eps_lb is, if anything, lower than for a full fit."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from catboost import CatBoostClassifier

    from auditing.game.row_groups import in_sorted
    from pipelines.data import schema, splits
    from pipelines.data.dataset_spec import dataset_of
    from pipelines.data.day import listed_day
    from pipelines.models.registration import register_model
    from pipelines.training import train as training

    def train_ids(day: dt.date) -> np.ndarray:
        ids = np.concatenate([batch.column(0).to_numpy() for batch in schema.iter_partition_batches(
            listed_day(root, day), 1 << 20, columns=[schema.ROW_ID], check_unique=False)])
        return ids[splits.split_of(ids) == splits.TRAIN]  # in the partition's order

    models = [("reference", D0, None, np.inf)]
    models += [(names[0], D1, slice(None), 0.5), (names[1], D1, slice(None, None, 2), 8.0)]
    for name, day, rows, claim in models:
        if (root / "models" / name).exists():
            continue
        began = time.perf_counter()
        recorded = train_ids(day)
        if rows is not None:
            recorded = recorded[rows]
        recorded = np.sort(recorded)
        keep = np.sort(recorded.astype(np.uint64))
        dataset = dataset_of(root, day)
        part, _, _ = schema.read_keyed_sample(listed_day(root, day), dataset, train_rows,
                                             among=lambda ids, keep=keep: in_sorted(ids.astype(np.uint64), keep))
        model = CatBoostClassifier(iterations=iterations, depth=6, thread_count=2, random_seed=1,
                                   allow_writing_files=False, verbose=False)
        model.fit(training.feature_frame(part), part.column("label").to_numpy(),
                  cat_features=list(dataset.categorical))
        model.save_model(str(files / f"{name}.cbm"))
        pq.write_table(pa.table({"row_id": recorded}), files / f"{name}-keys.parquet")
        register_model(root, name, day, files / f"{name}.cbm", fmt="catboost",
                       claimed_epsilon=claim, dataset=None,
                       training_rows=files / f"{name}-keys.parquet")
        print(f"setup: {name}@{day} fitted on {part.num_rows:,} of its {recorded.size:,} recorded training rows "
              f"and registered in {time.perf_counter() - began:.0f} s", flush=True)
    write_plan(files.parent / "plan.json", names, iterations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--work", required=True, help="working directory (data root under it; reused if present)")
    parser.add_argument("--iterations", type=int, default=100, help="CatBoost iterations of the setup's models")
    parser.add_argument("--train-rows", type=int, default=None,
                        help="fit the reference and the targets on a keyed sample of at most this many of their "
                             "training rows (recorded whole); for days too large to train on whole here")
    parser.add_argument("--out", default=None, help="also write the stage table as JSON here")
    parser.add_argument("--setup-only", action="store_true",
                        help="only build the days and models; run the night in a fresh process afterwards, so that "
                             "its peak RSS is the night's own and not the setup's training")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    root, plan = setup(work, args.rows, args.iterations, args.train_rows)
    if args.setup_only:
        print(f"setup done under {work}; now run the night (the same command without --setup-only)")
        return

    from flows import preflight, steps
    from flows.cli import main as cli
    from pipelines.reference import recalibration
    from pipelines.scoring import row_grouping

    for name in ("check_partition", "ensure_reference", "ensure_target", "ensure_control", "judge_control",
                 "publish"):
        timed(steps, name)
    timed(steps, "shift_diagnostic", f"{NESTED}score_target: shift diagnostic")
    timed(steps, "score_target", "score_target (Beam job + audit + shift diagnostic)")
    timed(preflight, "check_targets", "preflight: targets")
    timed(preflight, "check_reference", "preflight: reference")
    timed(steps, "prepare_reference", "prepare_reference (all)")
    timed(recalibration, "recalibrate_reference", f"{NESTED}prepare_reference: recalibration (trains the correction)")
    timed(row_grouping, "night_exclusion", f"{NESTED}prepare_reference: grouped rows")

    began = time.perf_counter()
    with contextlib.suppress(SystemExit):
        code = cli(["nightly", "--date", D1.isoformat(), "--plan", str(plan), "--data-root", str(root)])
    night = time.perf_counter() - began
    own, children = peak_mib()
    # each stage resets VmHWM, and the kernel's ru_maxrss follows that reset: the night's peak is the stages' largest
    own = max([own, *PEAKS.values()])
    print(f"\nnightly exit {code}; the night took {night:.1f} s at {args.rows:,} rows "
          f"({night / args.rows * 1e6:.2f} s per 1e6 rows); peak RSS {own:,.0f} MiB (this process), "
          f"{children:,.0f} MiB (largest child)\n")
    print("| stage | calls | seconds | share of the night | peak RSS of the process in the stage |\n|---|---|---|---|---|")
    for stage, values in sorted(TIMES.items(), key=lambda item: ORDER.index(item[0].split(":")[0].split(" (")[0]
                                                                            .replace(NESTED, ""))):
        print(f"| {stage} | {len(values)} | {sum(values):.1f} | {sum(values) / night:.0%} | {PEAKS[stage]:,.0f} MiB |")
    other = night - sum(sum(v) for k, v in TIMES.items() if not k.startswith(NESTED))
    print(f"| other: the local Prefect server's start, flow and task orchestration, the results table | | "
          f"{other:.1f} | {other / night:.0%} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": args.rows, "night_s": night, "exit": code,
                                              "peak_rss_mib": own, "peak_rss_children_mib": children,
                                              "stages": {k: [len(v), sum(v), PEAKS[k]] for k, v in TIMES.items()}},
                                             indent=1))


if __name__ == "__main__":
    main()
