"""Benchmark: scoring a day of 1M rows with ONNX models on categorical columns, against the same models' logged
predictions, and the Beam job against bare onnxruntime inference.

An ads-like dataset (``bench_ads``: five float features, 3% missing; categoricals ``country`` and ``campaign`` as
words, ``device``, ``slot`` and ``segment`` as integer ids, stored as text like every categorical). Two models trained
"elsewhere" on 200K rows of another day, each exported by its stack's own exporter and registered as ONNX:

- ``skl``: a scikit-learn pipeline (ColumnTransformer: OneHotEncoders on the words and the ids, passthrough
  numerics; HistGradientBoostingClassifier, 100 trees) exported by skl2onnx with one input per column (strings,
  int64 ids, floats);
- ``lgbm``: a LightGBM classifier (100 trees, 31 leaves) with the ids as native categoricals, exported by onnxmltools
  as one float matrix, registered with a mapping file;

and each model's logged predictions on the day (its own onnxruntime run on the log's columns), registered as a
predictions table (``<model>-logged``). The reference is a constant table of predictions (the same for every
job, and next to free), so the jobs differ only by the target. Modes, each in a fresh subprocess:

- ``bare-<model>``: the minimal inference of the target in one process on the day's rows as read: building the
  graph's named inputs from the typed columns (`pipelines.models.formats.onnx_feeds.input_feeds`, ``feeds_s``)
  and onnxruntime's ``session.run`` on all cores (``run_s``; the faster of one call on all rows and one call per
  --batch-size rows). The partition read, imports and the session are not included;
- ``job-<target>``: `pipelines.scoring.beam_scoring.score_day` on FnApiRunner, R = --repetitions, audit_rows all,
  for an ONNX target or its logged predictions (``wall_s``, rows per second = rows / wall_s).

    .venv/bin/python benchmarks/bench_onnx_categorical.py --root /tmp/onnx-categorical-bench [--rows 1000000] \
        [--repetitions 100] [--runs 3] [--modes bare-skl,job-skl,job-skl-logged,bare-lgbm,job-lgbm,job-lgbm-logged]
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

DAY = dt.date(2024, 6, 2)
PREVIOUS = dt.date(2024, 6, 1)
NUMERIC = ["f1", "f2", "f3", "f4", "f5"]
WORDS = ["country", "campaign"]
IDS = ["device", "slot", "segment"]
SPEC = {"name": "bench_ads", "label": "clicked", "classes": 2, "row_key": "impression_id", "numeric": NUMERIC,
        "categorical": WORDS + IDS, "numeric_type": "float64"}
COUNTRIES = ["fr", "de", "us", "jp", "br", "in", "es", "it"]
CAMPAIGNS = ["spring", "summer", "autumn", "winter", "sale", "brand"]
TRAIN_ROWS = 200_000
MODES = "bare-skl,job-skl,job-skl-logged,bare-lgbm,job-lgbm,job-lgbm-logged"


def _log(date: dt.date, rows: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(date.toordinal())
    f = rng.normal(size=(rows, 5))
    f[rng.random((rows, 5)) < 0.03] = np.nan
    country, campaign = rng.integers(0, len(COUNTRIES), rows), rng.integers(0, len(CAMPAIGNS), rows)
    device, slot, segment = rng.integers(1, 5, rows), rng.integers(100, 140, rows), rng.integers(0, 50, rows)
    segment_effect = np.sin(np.arange(50) * 0.7)[segment]
    logit = (-2.0 + 0.9 * np.nan_to_num(f[:, 0]) - 0.6 * np.nan_to_num(f[:, 1]) + 0.4 * (country == 2)
             + 0.3 * (device == 3) + 0.2 * ((slot % 7) == 0) + 0.5 * segment_effect)
    columns = {"impression_id": date.toordinal() * 10_000_000 + np.arange(rows, dtype=np.int64),
               "clicked": (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)}
    columns.update({name: f[:, i] for i, name in enumerate(NUMERIC)})
    columns.update({"country": np.array(COUNTRIES)[country], "campaign": np.array(CAMPAIGNS)[campaign],
                    "device": device, "slot": slot, "segment": segment})
    return pa.table(columns)


def _skl(train):
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    columns = ColumnTransformer([("words", OneHotEncoder(handle_unknown="ignore"), WORDS),
                                 ("ids", OneHotEncoder(handle_unknown="ignore"), IDS),
                                 ("numbers", "passthrough", NUMERIC)], sparse_threshold=0)
    model = Pipeline([("columns", columns), ("trees", HistGradientBoostingClassifier(max_iter=100, random_state=0))])
    model.fit(train.select(NUMERIC + WORDS + IDS).to_pandas(), train.column("clicked").to_numpy())
    types = ([(n, FloatTensorType([None, 1])) for n in NUMERIC] + [(n, StringTensorType([None, 1])) for n in WORDS]
             + [(n, Int64TensorType([None, 1])) for n in IDS])
    return convert_sklearn(model, initial_types=types, options={id(model): {"zipmap": False}}, target_opset=17)


def _skl_feeds(table) -> dict:
    import numpy as np

    feeds = {n: table.column(n).to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, 1) for n in NUMERIC}
    feeds.update({n: table.column(n).to_numpy(zero_copy_only=False).astype(object).reshape(-1, 1) for n in WORDS})
    feeds.update({n: table.column(n).to_numpy().astype(np.int64).reshape(-1, 1) for n in IDS})
    return feeds


def _lgbm(train):
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    model = lightgbm.LGBMClassifier(n_estimators=100, num_leaves=31, random_state=0, verbose=-1)
    model.fit(train.select(NUMERIC + IDS).to_pandas(), train.column("clicked").to_numpy(), categorical_feature=IDS)
    return convert_lightgbm(model, initial_types=[("input", FloatTensorType([None, len(NUMERIC + IDS)]))],
                            zipmap=False, target_opset=15)


def _lgbm_feeds(table) -> dict:
    import numpy as np

    return {"input": np.column_stack([table.column(n).to_numpy(zero_copy_only=False).astype(np.float32)
                                      for n in NUMERIC + IDS])}


def setup(root: Path, rows: int) -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.layout import model_dir, partition_listing
    from pipelines.data.schema import write_partition
    from pipelines.models.registration import register_model

    spec = spec_from_dict(SPEC, "bench_ads.json")
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    day = _log(DAY, rows)
    if not partition_listing(root, DAY).exists:
        write_partition(root, DAY, day, dataset=spec)
    ids = day.column("impression_id")
    if not model_dir(root, "reference", PREVIOUS).is_dir():
        path = files / "reference.parquet"
        pq.write_table(pa.table({"impression_id": ids, "prob_1": np.full(rows, 0.12)}), path)
        register_model(root, "reference", PREVIOUS, path, fmt="predictions", claimed_epsilon=float("inf"),
                       dataset=spec, predictions_for=DAY)
    train = _log(PREVIOUS, TRAIN_ROWS)
    mapping = files / "lgbm_inputs.json"
    mapping.write_text(json.dumps({"input": NUMERIC + IDS}))
    for name, export, feeds, inputs in (("skl", _skl, _skl_feeds, None), ("lgbm", _lgbm, _lgbm_feeds, mapping)):
        if model_dir(root, name, DAY).is_dir():
            continue
        began = time.perf_counter()
        path = files / f"{name}.onnx"
        onnx.save_model(export(train), str(path))
        print(f"trained and exported {name} in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        register_model(root, name, DAY, path, fmt="onnx", claimed_epsilon=float("inf"), dataset=spec,
                       onnx_inputs=inputs)
        p = ort.InferenceSession(str(path)).run(["probabilities"], feeds(day))[0].astype(np.float64)
        logged = files / f"{name}-logged.parquet"
        pq.write_table(pa.table({"impression_id": ids, "prob_0": p[:, 0], "prob_1": p[:, 1]}), logged)
        register_model(root, f"{name}-logged", DAY, logged, fmt="predictions", claimed_epsilon=float("inf"),
                       dataset=spec)


def child(mode: str, root: Path, repetitions: int, batch_size: int) -> dict:
    out: dict = {"mode": mode, "load_1min": os.getloadavg()[0]}  # the machine is shared: a loaded round shows here
    kind, target = mode.split("-", 1)
    if kind == "bare":
        from pipelines.data import schema
        from pipelines.data.dataset_spec import dataset_of
        from pipelines.models.formats.onnx_feeds import input_feeds
        from pipelines.models.formats.onnx_session import make_session
        from pipelines.models.handle import resolve_model

        dataset = dataset_of(root, DAY)
        table = dataset.to_internal(schema.read_partition(root, DAY))
        model = resolve_model(root, target, DAY)
        part = model.meta.onnx
        session = make_session(model.artifact.read_bytes(), part.output, os.cpu_count() or 1)
        began = time.perf_counter()
        feeds = input_feeds(part.inputs, table, model.id)
        out["feeds_s"] = time.perf_counter() - began
        began = time.perf_counter()
        session.run([part.output], feeds)
        out["run_one_call_s"] = time.perf_counter() - began
        began = time.perf_counter()
        for start in range(0, table.num_rows, batch_size):  # as the job calls it, one batch at a time
            session.run([part.output], {name: array[start:start + batch_size] for name, array in feeds.items()})
        out["run_batches_s"] = time.perf_counter() - began
        out["run_s"] = min(out["run_one_call_s"], out["run_batches_s"])
        out["bare_s"] = out["feeds_s"] + out["run_s"]
        out["rows"] = table.num_rows
    else:
        from pipelines.scoring.beam_request import ScoringRequest
        from pipelines.scoring.beam_scoring import score_day

        game, bound = GameConfig(repetitions=repetitions, audit_rows="all", reference_calibration="none"), BoundConfig()
        request = ScoringRequest(str(root), DAY, target, game, bound, reference="reference", reference_date=PREVIOUS,
                                 batch_size=batch_size)
        began = time.perf_counter()
        outcome = score_day(request, [])
        out["wall_s"] = time.perf_counter() - began
        out["rows"] = outcome.counts.m
        out["epsilon_lower_bound"] = outcome.result.epsilon_lower_bound
        out["correct_sum"] = int(outcome.counts.correct.sum())
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path("/tmp/onnx-categorical-bench"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=262_144)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default=MODES)
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
    summary: dict = {"rows": args.rows, "repetitions": args.repetitions, "runs": args.runs}
    for mode, records in results.items():
        seconds = statistics.median(r["bare_s" if mode.startswith("bare") else "wall_s"] for r in records)
        summary[mode] = {"median_s": round(seconds, 3), "rows_per_s": round(records[0]["rows"] / seconds),
                         "peak_rss_mib_max": round(max(r["peak_rss_mib"] for r in records))}
        if mode.startswith("bare"):
            summary[mode]["feeds_median_s"] = round(statistics.median(r["feeds_s"] for r in records), 3)
            summary[mode]["run_median_s"] = round(statistics.median(r["run_s"] for r in records), 3)
        else:
            summary[mode]["epsilon_lower_bound"] = records[0]["epsilon_lower_bound"]
    for model in ("skl", "lgbm"):
        bare, job = summary.get(f"bare-{model}"), summary.get(f"job-{model}")
        if bare and job:
            job["ratio_to_bare"] = round(job["median_s"] / bare["median_s"], 2)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
