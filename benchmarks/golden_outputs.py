"""Golden outputs: run the tool's whole path on small seeded synthetic days and write every number it produces in a
normalised form, so two commits can be compared with ``diff -r`` (a refactoring must leave counts, bounds,
verdicts, warehouse rows and reports identical apart from run ids, timestamps and paths).

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/golden_outputs.py --out /tmp/golden-a
    (check out the other commit)
    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/golden_outputs.py --out /tmp/golden-b
    diff -r /tmp/golden-a /tmp/golden-b   (with --models-from WORK-A --work WORK-B for the second run: the same
                                          model files, since CatBoost's files differ between trainings)

What runs (about 6 minutes on 2 cores): two synthetic days of 30,000 rows; `labeldp-audit nightly` with three
plans (the defaults; the split strategy with kappa 0.1; the f-DP method with delta 1e-6 and the raw reference),
each with a trained RR target, an LP-1ST target and a planted violation and the controls; `audit-scores` on a
seeded CSV at two settings. What is written per (model, date, audit config hash): the sweep counts (every array
of counts.npz), the audit result (result.json's ``result``), the warehouse rows (audit_results and
audit_curves, without run ids, timestamps, durations, paths and code versions), the HTML report with those
masked, and the ``--json`` rows of each command.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

D0, D1 = dt.date(2026, 9, 1), dt.date(2026, 9, 2)
TARGETS = [
    {"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0},
    {"name": "lp-1st-eps2", "mechanism": "lp-1st", "epsilon": 2.0},
    {"name": "planted", "mechanism": "none", "epsilon": "inf", "claimed_epsilon": 0.5},
]
PLANS = {
    "defaults": {},
    "split-kappa": {"strategy": "split", "kappa": 0.1, "repetitions": 5},
    "fdp-raw": {"method": "fdp", "delta": 1e-6, "reference_calibration": "none", "repetitions": 5},
}
# Columns and keys whose values differ between runs of the same inputs.
VOLATILE = {"run_id", "flow_run_id", "started_at", "finished_at", "durations", "written_at", "timings", "model_uri",
            "code_version", "report", "spool_path", "uri", "inserted_at", "scored_rows", "output_dir"}
CLI = [sys.executable, "-m", "flows.cli"]


def _scrub(value):
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in VOLATILE else _scrub(v)) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _dump(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_scrub(value), indent=1, sort_keys=True, default=str) + "\n")


def _run(args: list[str], root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LABELDP_DATA_ROOT": str(root), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True)
    print(f"  {' '.join(args[:3])} ... exit {done.returncode}", flush=True)
    if done.returncode == 2:
        print(done.stderr[-2000:], flush=True)
    return done


def _mask_html(text: str, root: Path) -> str:
    text = text.replace(str(root), "<root>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?", "<time>", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)
    text = re.sub(r"\b\d{8}T\d{6}Z-[0-9a-f]{8}\b", "<run-id>", text)  # the report's run id (time and random part)
    text = re.sub(r"\b\d+\.\d+\.\d+\+[0-9a-f]{12}(-dirty)?", "<code>", text)
    text = re.sub(r"\b\d+(\.\d+)? ?s\b", "<secs>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "<time>", text)
    return text


def collect(root: Path, out: Path) -> None:
    """Every number under ``root`` (sweeps, warehouse, reports), keyed by what it is, not where it was written."""
    for counts in sorted(root.glob("sweeps/*/date=*/*/counts.npz")):
        record = json.loads((counts.parent / "result.json").read_text())
        result = record["result"]
        name = f"{counts.parts[-4]}/{counts.parts[-3]}/{result['config_hash']}"
        with np.load(counts) as data:
            arrays = {k: data[k].tolist() for k in sorted(data.files)}
        _dump(out / "sweeps" / name / "counts.json", arrays)
        _dump(out / "sweeps" / name / "result.json", result)
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as store:
        rows = store.fetch_results(since=dt.date(2000, 1, 1), until=dt.date(2100, 1, 1))
        for row in rows:
            key = f"{row.model_id}/{row.partition_date}/{row.run_kind}/{row.audit_config_hash}"
            _dump(out / "warehouse" / key / "row.json", row.to_dict())
            _dump(out / "warehouse" / key / "curve.json", store.fetch_curve(row))
    for page in sorted(root.glob("reports/**/*.html")):
        target = out / "reports" / page.relative_to(root / "reports")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_mask_html(page.read_text(), root))


def _scores_table(path: Path, rows: int = 20_000, seed: int = 7) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    p_ref = np.clip(rng.beta(1, 12, rows), 1e-6, 1 - 1e-6)
    labels = (rng.random(rows) < p_ref).astype(np.int64)
    p_target = np.clip(p_ref + 0.25 * (labels - p_ref) * rng.random(rows), 1e-6, 1 - 1e-6)
    check = rng.random(rows) < 0.2
    pq.write_table(pa.table({"row_id": np.arange(rows, dtype=np.int64), "p_target": p_target,
                             "p_reference": p_ref, "label": labels, "check": check}), path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="directory to write the normalised outputs to")
    parser.add_argument("--work", type=Path, default=None, help="working directory (default: a temporary one)")
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--models-from", type=Path, default=None,
                        help="a work directory of an earlier run: its partitions and trained models are copied, so "
                             "both runs audit byte-identical model files (CatBoost's files differ between trainings)")
    args = parser.parse_args()
    from pipelines.data.synth import write_synthetic_day

    work = args.work or Path(tempfile.mkdtemp(prefix="labeldp-golden-"))
    root = work / "root"
    if args.models_from is not None and not (root / "partitions").is_dir():
        import shutil

        for part in ("partitions", "models"):
            shutil.copytree(args.models_from / "root" / part, root / part)
    if not (root / "partitions").is_dir():
        for day in (D0, D1):
            write_synthetic_day(root, day, rows=args.rows)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    for name, audit in PLANS.items():
        plan = work / f"plan-{name}.json"
        plan.write_text(json.dumps({"targets": TARGETS, "catboost_iterations": 30, "audit": audit}))
        done = _run(["nightly", "--date", D1.isoformat(), "--plan", str(plan), "--json"], root)
        _dump(out / "commands" / f"nightly-{name}.json",
              {"exit": done.returncode, "rows": _json_rows(done.stdout)})
    scores = work / "scores.parquet"
    _scores_table(scores)
    for name, extra in (("defaults", []), ("split-fdp", ["--strategy", "split", "--method", "fdp", "--kappa", "0.05"])):
        done = _run(["audit-scores", str(scores), "--repetitions", "5", "--claimed-epsilon", "0.5",
                     "--check-column", "check", "--json", *extra], root)
        _dump(out / "commands" / f"audit-scores-{name}.json", {"exit": done.returncode, "rows": _json_rows(done.stdout)})
    collect(root, out)
    print(f"wrote {out}")


def _json_rows(stdout: str):
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return {"unparsed": stdout[-2000:]}


if __name__ == "__main__":
    main()
