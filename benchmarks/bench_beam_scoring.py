"""Benchmark: the Beam scoring job on a 1M-row partition, two models, R = 100.

Measurements, each in a fresh subprocess so that its peak resident memory (VmHWM) is its own:

- bare:      the minimal inference over all rows in one process (CatBoost on all cores): the Arrow ->
             CatBoost frame conversion (`catboost_frame`), ONE CatBoost Pool (`catboost_pool`, as the job
             shares it between the models) and both models' predict_proba on it (``bare_s``). Also reported,
             measured in the same process: the definition used before 2026-11-23, frame + two
             ``predict_proba(frame)`` calls that each build their own Pool (``bare_two_pools_s``). The
             partition read, imports and model loading are not included (the Beam job's wall time includes
             them);
- inprocess: `auditing.audit.run_audit` on the same predictions (the game + sweep the job reproduces);
- fnapi:     `pipelines.scoring.beam_scoring.score_day` on FnApiRunner (in-process, the default);
- fnapi-warm: the same job run twice in one process (as a nightly run scores its target and then its controls,
             and a backfill its days); wall_s is the second run, without the process's one-time costs
             (importing Beam, numba's start-up); the first is reported as cold_wall_s, and the fixed cost of a
             cold process as fixed_s = imports_s (the job's modules, from the child's start) + cold_wall_s - wall_s;
- dask:      the same on Beam's Dask runner against a LocalCluster of 2 worker processes (1 thread each);
             peak memory is read in each process (driver + scheduler in this one, the workers via
             `Client.run`);
- dask-warm: the same job twice on one LocalCluster, as on a long-lived cluster; wall_s is the second job (its
             workers already imported Beam, started numba and loaded the models), cold_wall_s the first.

Setup (skipped when --root already holds it): day D with --rows rows and day D-1 with --train-rows rows
(`pipelines.data.synth`); the target model is trained on the first --train-rows rows of D and the reference on
D-1, with `pipelines.training.train.CatBoostSettings` defaults (250 trees of depth 6; no validation split, so all 250
trees are kept). Only the prediction cost matters here, and it depends on the trees, not the training rows.

    .venv/bin/python benchmarks/bench_beam_scoring.py --root /tmp/beam-bench [--rows 1000000] \
        [--repetitions 100] [--modes bare,inprocess,fnapi,fnapi-warm,dask,dask-warm]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from auditing.config import BoundConfig
from auditing.game.config import GameConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.process_memory import peak_rss_mib  # noqa: E402  (after the path is set)

DAY = dt.date(2024, 5, 2)
PREVIOUS = dt.date(2024, 5, 1)
MODEL = "bench-target"


def setup(root: Path, rows: int, train_rows: int) -> None:
    from pipelines.data import schema, synth
    from pipelines.data.layout import model_dir
    from pipelines.models import registry
    from pipelines.training import train as training

    if not (root / "partitions" / f"date={DAY}").is_dir():
        synth.write_synthetic_day(root, DAY, rows=rows)
    if not (root / "partitions" / f"date={PREVIOUS}").is_dir():
        synth.write_synthetic_day(root, PREVIOUS, rows=train_rows)
    settings = training.CatBoostSettings(use_best_model=False)
    for date, seed in ((PREVIOUS, 1), (DAY, 2)):
        if model_dir(root, MODEL, date).is_dir():
            continue
        table = schema.read_partition(root, date).slice(0, train_rows)
        began = time.perf_counter()
        model, info = training.fit_catboost(training.feature_frame(table), table.column("label").to_numpy(),
                                            settings, random_seed=seed)
        print(f"trained {MODEL}@{date} on {table.num_rows} rows in {time.perf_counter() - began:.0f} s",
              file=sys.stderr)
        registry.save_model(root, MODEL, date, model, {
            "mechanism": {"name": "none", "epsilon": "inf", "delta": 0.0}, "seed": seed,
            "partition_fingerprint": schema.partition_fingerprint(root, date), "catboost_params": info.params,
            "test_metrics": {}})


def _predictions(root: Path, out: dict):
    from pipelines.data import schema
    from pipelines.models import registry
    from pipelines.models.catboost_frames import catboost_frame, catboost_pool
    from pipelines.models.handle import resolve_model

    began = time.perf_counter()
    table = schema.read_partition(root, DAY)
    out["read_s"] = time.perf_counter() - began
    target = registry.load_model(resolve_model(root, MODEL, DAY))
    reference = registry.load_model(resolve_model(root, MODEL, PREVIOUS))
    began = time.perf_counter()
    frame = catboost_frame(table)
    out["frame_s"] = time.perf_counter() - began
    threads = os.cpu_count() or 1
    # The definition before 2026-11-23: each predict_proba(frame) builds its own Pool.
    began = time.perf_counter()
    target.predict_proba(frame, thread_count=threads)
    out["predict_target_own_pool_s"] = time.perf_counter() - began
    began = time.perf_counter()
    reference.predict_proba(frame, thread_count=threads)
    out["predict_reference_own_pool_s"] = time.perf_counter() - began
    # The minimal inference: one Pool shared by both models, as the job does.
    began = time.perf_counter()
    pool = catboost_pool(frame, target)
    out["pool_s"] = time.perf_counter() - began
    began = time.perf_counter()
    p_target = target.predict_proba(pool, thread_count=threads)
    out["predict_target_s"] = time.perf_counter() - began
    began = time.perf_counter()
    p_reference = reference.predict_proba(catboost_pool(frame, reference), thread_count=threads)
    out["predict_reference_s"] = time.perf_counter() - began
    return table, p_target, p_reference


def child(mode: str, root: Path, repetitions: int, batch_size: int) -> dict:
    imports_began = time.perf_counter()

    out: dict = {"mode": mode}
    # its models record no training rows: every row is audited, and the reference is used as given
    game, bound = GameConfig(repetitions=repetitions, audit_rows="all", reference_calibration="none"), BoundConfig()
    if mode == "bare":
        from pipelines.training import train as training

        table, _, _ = _predictions(root, out)
        began = time.perf_counter()
        training.feature_frame(table)
        out["training_feature_frame_s"] = time.perf_counter() - began
        out["bare_s"] = out["frame_s"] + out["pool_s"] + out["predict_target_s"] + out["predict_reference_s"]
        out["bare_two_pools_s"] = (out["frame_s"] + out["predict_target_own_pool_s"]
                                   + out["predict_reference_own_pool_s"])
    elif mode == "inprocess":
        from auditing.audit import run_audit

        table, p_target, p_reference = _predictions(root, out)
        began = time.perf_counter()
        result = run_audit(p_target, p_reference, table.column("label").to_numpy(), table.column("row_id").to_numpy(),
                           game, bound)
        out["run_audit_s"] = time.perf_counter() - began
        out["epsilon_lower_bound"] = result.epsilon_lower_bound
    else:
        from labeldp.progress import stderr_progress
        from pipelines.scoring.beam_request import DASK_RUNNER, ScoringRequest
        from pipelines.scoring.beam_scoring import score_day

        out["imports_s"] = time.perf_counter() - imports_began

        request = ScoringRequest(str(root), DAY, MODEL, game, bound, batch_size=batch_size)
        if mode == "fnapi":
            began = time.perf_counter()
            outcome = score_day(request, [], stderr_progress("score"))
            out["wall_s"] = time.perf_counter() - began
        elif mode == "fnapi-warm":
            # The same job twice in one process, as a nightly run (target, then its controls) or a backfill
            # runs it: the first pays the process's one-time costs (importing Beam and its runner, numba's
            # start-up and kernel cache), the second does not. wall_s is the second.
            began = time.perf_counter()
            score_day(request, [], stderr_progress("score"))
            out["cold_wall_s"] = time.perf_counter() - began
            began = time.perf_counter()
            outcome = score_day(request, [], stderr_progress("score"))
            out["wall_s"] = time.perf_counter() - began
            # What a cold process pays once: the job's imports and the first job's
            # extra wall over the second (numba loading its cached kernels, CatBoost's and RunInference's lazy
            # imports, first calls).
            out["fixed_s"] = out["imports_s"] + out["cold_wall_s"] - out["wall_s"]
        else:
            from dask.distributed import Client, LocalCluster

            with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                              dashboard_address=None) as cluster:
                address = cluster.scheduler_address.replace("tcp://", "")
                args = [f"--runner={DASK_RUNNER}", f"--dask_client_address={address}"]
                if mode == "dask-warm":
                    # A long-lived cluster (scripts/ops.sh dask-scheduler / dask-worker): its workers imported
                    # Beam, started numba and loaded the models for an earlier job; wall_s is the second job.
                    began = time.perf_counter()
                    score_day(request, args, stderr_progress("score"))
                    out["cold_wall_s"] = time.perf_counter() - began
                began = time.perf_counter()
                outcome = score_day(request, args, stderr_progress("score"))
                out["wall_s"] = time.perf_counter() - began
                with Client(cluster.scheduler_address) as client:
                    out["worker_peak_rss_mib"] = sorted(client.run(peak_rss_mib).values())
        out["epsilon_lower_bound"] = outcome.result.epsilon_lower_bound
        out["timings"] = outcome.record["timings"]
        out["diagnostics"] = outcome.record["diagnostics"]
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, type=Path, help="data root (reused if it holds the data)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--train-rows", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=262_144)
    parser.add_argument("--modes", default="bare,inprocess,fnapi,dask")
    parser.add_argument("--runs", type=int, default=1, help="rounds over the modes; medians are printed")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.root, args.repetitions, args.batch_size)))
        return
    setup(args.root, args.rows, args.train_rows)
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    rounds: dict[str, list[dict]] = {}
    for _ in range(args.runs):
        for mode in args.modes.split(","):
            began = time.perf_counter()
            command = [sys.executable, __file__, "--root", str(args.root), "--repetitions", str(args.repetitions),
                       "--batch-size", str(args.batch_size), "--child", mode]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode:
                print(done.stderr[-4000:], file=sys.stderr)
                raise SystemExit(f"{mode} failed")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["process_s"] = time.perf_counter() - began
            rounds.setdefault(mode, []).append(result)
            print(json.dumps(result), flush=True)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)

    def median(mode: str, key: str) -> float:
        return statistics.median(result[key] for result in rounds[mode])

    def spread(mode: str, key: str) -> str:
        values = [result[key] for result in rounds[mode]]
        return f"{statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f}, {len(values)} runs)"

    if "bare" in rounds:
        bare = median("bare", "bare_s")
        bare_old = median("bare", "bare_two_pools_s")
        print(f"bare (frame + one Pool + both predict_proba): {spread('bare', 'bare_s')}; peak RSS "
              f"{median('bare', 'peak_rss_mib'):.0f} MiB")
        print(f"bare, old definition (frame + two predict_proba(frame), a Pool each): "
              f"{spread('bare', 'bare_two_pools_s')}")
        if "inprocess" in rounds:
            print(f"in-process run_audit (game + sweep only): {spread('inprocess', 'run_audit_s')}")
        for mode in ("fnapi", "fnapi-warm", "dask", "dask-warm"):
            if mode in rounds:
                if mode == "fnapi-warm":
                    print(f"fixed cost of a cold process (imports + first job - second job): "
                          f"{spread(mode, 'fixed_s')}; imports {spread(mode, 'imports_s')}")
                extra = ""
                if mode.startswith("dask"):
                    workers = [max(r["worker_peak_rss_mib"]) for r in rounds[mode]]
                    extra = f", largest worker {statistics.median(workers):.0f} MiB"
                per_round = [r["wall_s"] / b["bare_s"] for r, b in zip(rounds[mode], rounds["bare"], strict=False)]
                per_round_old = [r["wall_s"] / b["bare_two_pools_s"]
                                 for r, b in zip(rounds[mode], rounds["bare"], strict=False)]
                print(f"{mode}: wall {spread(mode, 'wall_s')} = {median(mode, 'wall_s') / bare:.2f} x bare "
                      f"({median(mode, 'wall_s') / bare_old:.2f} x the old bare); per round "
                      f"{', '.join(f'{x:.2f}' for x in per_round)} (median {statistics.median(per_round):.2f}; old "
                      f"bare {statistics.median(per_round_old):.2f}); peak RSS driver "
                      f"{median(mode, 'peak_rss_mib'):.0f} MiB{extra}")


if __name__ == "__main__":
    main()
