"""Benchmark: the Beam scoring job with a registered ONNX target on a 1M-row day of an outside dataset.

The target is a CatBoost model trained by "another team" on a numeric click log (five float features), exported
to ONNX and registered (`pipelines.models.registration`); the reference is that team's D-1 CatBoost model,
registered as ``.cbm``. Measurements, each in a fresh subprocess (peak resident memory, VmHWM, is its own):

- bare:       the minimal inference of both models over all rows in one process: the float32 feature matrix
              and one onnxruntime ``session.run`` of the probability tensor (the job's session,
              `pipelines.models.formats.onnx_session.make_session`, all cores; the faster of one call on all rows and one
              call per --batch-size rows) for the target, the CatBoost frame, Pool and
              ``predict_proba`` for the reference (``bare_s``). The partition read, imports and model loading
              are not included (the Beam job's wall time includes them);
- fnapi:      `pipelines.scoring.beam_scoring.score_day` on FnApiRunner (in-process, the default), the first job of
              the process (``wall_s``);
- fnapi-warm: the same job twice in one process; ``wall_s`` is the second (as a nightly run scores its
              targets and controls one after the other), ``cold_wall_s`` the first.

Target: the job within 2x of bare (the same target as the CatBoost job, benchmarks/results/beam_scoring.md).

    .venv/bin/python benchmarks/bench_onnx_scoring.py --root /tmp/onnx-bench [--rows 1000000] \
        [--repetitions 100] [--runs 3] [--modes bare,fnapi,fnapi-warm]
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
TARGET, REFERENCE = "team-onnx", "team-reference"
SPEC = {"name": "bench_numeric", "label": "clicked", "classes": 2, "row_key": "impression_id",
        "numeric": ["f1", "f2", "f3", "f4", "f5"], "categorical": [], "numeric_type": "float64"}
TRAIN_ROWS = 200_000


def _day(date: dt.date, rows: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(date.toordinal())
    f = rng.normal(size=(rows, 5))
    f[rng.random((rows, 5)) < 0.03] = np.nan
    logit = -2.0 + 0.9 * np.nan_to_num(f[:, 0]) - 0.6 * np.nan_to_num(f[:, 1]) + 0.3 * np.nan_to_num(f[:, 2] * f[:, 3])
    clicked = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int8)
    columns = {"impression_id": date.toordinal() * 10_000_000 + np.arange(rows, dtype=np.int64), "clicked": clicked}
    columns.update({f"f{i + 1}": f[:, i] for i in range(5)})
    return pa.table(columns)


def setup(root: Path, rows: int) -> None:
    from catboost import CatBoostClassifier

    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.layout import model_dir, partition_listing
    from pipelines.data.schema import write_partition
    from pipelines.models.formats.registry import model_format
    from pipelines.models.registration import register_model

    spec = spec_from_dict(SPEC, "bench_numeric.json")
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    for date, name, fmt, suffix in ((PREVIOUS, REFERENCE, "catboost", "cbm"), (DAY, TARGET, "onnx", "onnx")):
        if not partition_listing(root, date).exists:
            write_partition(root, date, _day(date, rows), dataset=spec)
        if model_dir(root, name, date).is_dir():
            continue
        table = _day(date, TRAIN_ROWS)
        model = CatBoostClassifier(iterations=250, depth=6, random_seed=1, verbose=False)
        began = time.perf_counter()
        model.fit(table.select(SPEC["numeric"]).to_pandas(), table.column("clicked").to_numpy())
        print(f"trained {name}@{date} on {table.num_rows} rows in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        path = files / f"{name}.{suffix}"
        model.save_model(str(path), format="onnx" if suffix == "onnx" else "cbm")
        register_model(root, name, date, path, fmt=model_format(fmt), claimed_epsilon=float("inf"), dataset=spec)


def child(mode: str, root: Path, repetitions: int, batch_size: int) -> dict:

    out: dict = {"mode": mode}
    if mode == "bare":
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from pipelines.data import schema
        from pipelines.data.dataset_spec import dataset_of
        from pipelines.models import registry
        from pipelines.models.catboost_frames import catboost_frame, catboost_pool
        from pipelines.models.formats.onnx import recorded_output
        from pipelines.models.formats.onnx_session import make_session
        from pipelines.models.handle import resolve_model

        dataset = dataset_of(root, DAY)
        table = dataset.to_internal(schema.read_partition(root, DAY))
        # The session the job uses: onnxruntime on the graph up to the recorded probability tensor (CatBoost's
        # export ends in a ZipMap, which would turn 1M rows into 1M Python dicts).
        target = resolve_model(root, TARGET, DAY)
        output = recorded_output(target.meta)
        session = make_session(target.artifact.read_bytes(), output, os.cpu_count() or 1)
        reference = registry.load_model(resolve_model(root, REFERENCE, PREVIOUS))
        threads = os.cpu_count() or 1
        began = time.perf_counter()
        matrix = np.column_stack([pc.cast(table.column(n), pa.float32()).to_numpy(zero_copy_only=False)
                                  for n in dataset.numeric])
        out["matrix_s"] = time.perf_counter() - began
        name = session.get_inputs()[0].name
        began = time.perf_counter()
        session.run([output], {name: matrix})
        out["predict_target_one_call_s"] = time.perf_counter() - began
        began = time.perf_counter()
        for start in range(0, matrix.shape[0], batch_size):  # as the job calls it, one batch at a time
            session.run([output], {name: matrix[start:start + batch_size]})
        out["predict_target_batches_s"] = time.perf_counter() - began
        # The baseline is the faster way of the two, so that the job's ratio is not flattered.
        out["predict_target_s"] = min(out["predict_target_one_call_s"], out["predict_target_batches_s"])
        began = time.perf_counter()
        frame = catboost_frame(table, dataset)
        pool = catboost_pool(frame, reference)
        out["frame_pool_s"] = time.perf_counter() - began
        began = time.perf_counter()
        reference.predict_proba(pool, thread_count=threads)
        out["predict_reference_s"] = time.perf_counter() - began
        out["bare_s"] = out["matrix_s"] + out["predict_target_s"] + out["frame_pool_s"] + out["predict_reference_s"]
    else:
        from pipelines.scoring.beam_request import ScoringRequest
        from pipelines.scoring.beam_scoring import score_day

        game, bound = GameConfig(repetitions=repetitions, audit_rows="all", reference_calibration="none"), BoundConfig()
        request = ScoringRequest(str(root), DAY, TARGET, game, bound, reference=REFERENCE, reference_date=PREVIOUS,
                                 batch_size=batch_size)
        runs = 2 if mode == "fnapi-warm" else 1
        walls = []
        for _ in range(runs):
            began = time.perf_counter()
            outcome = score_day(request, [])
            walls.append(time.perf_counter() - began)
        out["wall_s"] = walls[-1]
        if runs == 2:
            out["cold_wall_s"] = walls[0]
        out["epsilon_lower_bound"] = outcome.result.epsilon_lower_bound
        out["m"] = outcome.counts.m
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("/tmp/onnx-bench"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=262_144)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="bare,fnapi,fnapi-warm")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.root, args.repetitions, args.batch_size)))
        return 0
    setup(args.root, args.rows)
    results: dict[str, list[dict]] = {}
    for run in range(args.runs):
        for mode in args.modes.split(","):
            done = subprocess.run([sys.executable, __file__, "--root", str(args.root), "--repetitions",
                                   str(args.repetitions), "--batch-size", str(args.batch_size), "--child", mode],
                                  capture_output=True, text=True, check=True)
            record = json.loads(done.stdout.strip().splitlines()[-1])
            results.setdefault(mode, []).append(record)
            print(f"run {run + 1} {mode}: {json.dumps(record)}", file=sys.stderr, flush=True)
    bare = statistics.median(r["bare_s"] for r in results.get("bare", [])) if "bare" in results else None
    summary = {"rows": args.rows, "repetitions": args.repetitions, "runs": args.runs, "bare_median_s": bare}
    for mode, records in results.items():
        if mode == "bare":
            continue
        wall = statistics.median(r["wall_s"] for r in records)
        summary[f"{mode}_median_s"] = wall
        summary[f"{mode}_ratio_to_bare"] = None if not bare else wall / bare
        summary[f"{mode}_peak_rss_mib_max"] = max(r["peak_rss_mib"] for r in records)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
