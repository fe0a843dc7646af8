"""Drift through the real nightly (benchmarks/results/drift.md, layer b): synthetic days whose second day's
click odds moved, trained models, the `labeldp-audit nightly` command, with the raw D-1 reference and with the
reference recalibrated on the day.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_drift.py \
        [--rows 200000] [--nights 3] [--shifts none,global:0.7,segment:C9:1.0] [--root DIR]

For each shift and night k: a world with its own generator seed; day D0 as generated, day D1 shifted
(`pipelines.data.synth.DayShift`: a global click-logit shift, or a shift of the rows holding C9's most popular
value). The plan's targets (RR at eps 1 claiming 1, LP-1ST at eps 2 claiming 2, a non-private model claiming
0.5) and the controls are audited twice on D1: `reference_calibration: none` (the paper's raw M') and
`boost`. Read back from the warehouse: each row's valid bound, status and its trust (the `trust` column: the
per-verdict capacity check, docs/soundness.md section 8). A trusted false VIOLATION is a VIOLATION, trusted, of a
target whose claim is its true eps; the planted violation must stay a trusted VIOLATION.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

D0, D1 = dt.date(2026, 9, 1), dt.date(2026, 9, 2)
TARGETS = [
    {"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0},
    {"name": "lp-1st-eps2", "mechanism": "lp-1st", "epsilon": 2.0},
    {"name": "planted-violation", "mechanism": "none", "epsilon": "inf", "claimed_epsilon": 0.5},
]
TRUE_EPS = {"rr-eps1": 1.0, "lp-1st-eps2": 2.0}  # targets whose claim is their true eps


def parse_shift(text: str):
    from pipelines.data.synth import DayShift, SegmentShift

    if text == "none":
        return None
    kind, *rest = text.split(":")
    if kind == "global":
        return DayShift(logit=float(rest[0]))
    if kind == "segment":
        column, amount = rest
        return DayShift(segments=(SegmentShift(column=column, rank=0, logit=float(amount)),))
    raise SystemExit(f"--shifts: unknown shift {text!r} (none, global:X, segment:Cj:X)")


def plan_file(path: Path, calibration: str, iterations: int, repetitions: int) -> str:
    path.write_text(json.dumps({
        "targets": TARGETS, "catboost_iterations": iterations,
        "audit": {"repetitions": repetitions, "reference_calibration": calibration},
    }))
    return str(path)


def run_night(root: Path, plan: str) -> float:
    env = {**os.environ, "LABELDP_DATA_ROOT": str(root)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "flows.cli", "nightly", "--date", D1.isoformat(), "--plan", plan],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def read_rows(root: Path, config_hash: str) -> list[dict]:
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as store:
        return [r.to_dict() for r in store.fetch_results(since=D1, until=D1) if r.audit_config_hash == config_hash]


def summarise(rows: list[dict]) -> dict:
    by = {r["model_id"]: r for r in rows}
    out = {}
    for name in (*TRUE_EPS, "planted-violation", "control-positive", "control-negative"):
        if name in by:
            row = by[name]
            out[name] = {"eps_lb": row["epsilon_lower_bound"], "status": row["status"], "trust": row["trust"],
                         "epsilon_check": row["epsilon_check"], "misfit_kappa_upper": row["misfit_kappa_upper"]}
    out["false_violations"] = [n for n, eps in TRUE_EPS.items() if n in by and by[n]["epsilon_lower_bound"] > eps]
    out["trusted_false_violations"] = [n for n in out["false_violations"]
                                       if by[n]["status"] == "VIOLATION" and by[n]["trust"] == "trusted"]
    out["untrusted_verdicts"] = sorted(n for n, row in by.items() if row["trust"] != "trusted")
    out["positive_above_truth"] = "control-positive" in by and by["control-positive"]["epsilon_lower_bound"] > 2.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--shifts", default="none,global:0.7,segment:C9:1.0")
    parser.add_argument("--iterations", type=int, default=60, help="CatBoost iterations of every trained model")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--calibrations", default="none,boost", help="reference calibrations to run (none, boost)")
    parser.add_argument("--root", default=None)
    parser.add_argument("--out", default=None, help="write the per-night records as JSON here")
    args = parser.parse_args()

    from auditing.config import config_hash
    from flows.plan import load_plan
    from pipelines.data.synth import DEFAULT_SEED, write_synthetic_day

    base = Path(args.root or tempfile.mkdtemp(prefix="labeldp-bench-drift-"))
    calibrations = [c.strip() for c in args.calibrations.split(",") if c.strip()]
    records = []
    for shift_text in args.shifts.split(","):
        shift = parse_shift(shift_text)
        for night in range(args.nights):
            root = base / f"{shift_text.replace(':', '_')}-{night}"
            seed = DEFAULT_SEED + 1000 * (night + 1)
            if not (root / "partitions").is_dir():
                write_synthetic_day(root, D0, rows=args.rows, seed=seed)
                write_synthetic_day(root, D1, rows=args.rows, seed=seed, shift=shift)
            for calibration in calibrations:
                plan = plan_file(base / f"plan-{calibration}.json", calibration, args.iterations, args.repetitions)
                seconds = run_night(root, plan)
                loaded = load_plan(plan)
                rows = read_rows(root, config_hash(loaded.game, loaded.bound))
                record = {"shift": shift_text, "night": night, "seed": seed, "calibration": calibration,
                          "seconds": round(seconds, 1), **summarise(rows)}
                records.append(record)
                print(json.dumps(record), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(records, indent=1))
    print("\nshift / calibration: trusted false VIOLATIONs, untrusted verdicts, planted trusted VIOLATION")
    for shift_text in args.shifts.split(","):
        for calibration in calibrations:
            cell = [r for r in records if r["shift"] == shift_text and r["calibration"] == calibration]
            trusted_false = sum(len(r["trusted_false_violations"]) for r in cell)
            any_false = sum(len(r["false_violations"]) for r in cell)
            untrusted = sum(len(r["untrusted_verdicts"]) for r in cell)
            planted = sum(r.get("planted-violation", {}).get("status") == "VIOLATION"
                          and r.get("planted-violation", {}).get("trust") == "trusted" for r in cell)
            print(f"{shift_text:>22} {calibration:>6}: trusted false {trusted_false}/{2 * len(cell)} (any false "
                  f"{any_false}), untrusted verdicts {untrusted}, planted trusted VIOLATION {planted}/{len(cell)}")


if __name__ == "__main__":
    main()
