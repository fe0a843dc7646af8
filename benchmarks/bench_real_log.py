"""The nightly on a real public click log with outside models: is a real VIOLATION trusted, and a private model's
verdict never trusted above its truth?

Data: the AdKDD'21 Criteo privacy-preserving ML competition sample (github.com/criteo-research/criteo-privacy-
preserving-ml-competition, ``data/X_train.csv.gz`` and ``data/y_train.csv.gz`` at commit 925f00e: 102,434 rows, 19
hashed categorical features, a click label). It carries no license: measure with it, never commit it. Pass the
directory holding the two files with ``--data``.

Per night (one shuffle seed; ``--unshuffled`` adds the file order): the rows are shuffled and split into two days
of one log (no drift beyond sampling), ingested under a dataset spec through ``labeldp-audit data ingest``. CatBoost
models are trained here, outside the registry (features as strings, seed = the shuffle seed), and registered with
``labeldp-audit models register``: the reference on all of day 1; on a random 80% of day 2 (their training
rows), the targets:

- ``nonprivate`` (150 iterations, depth 6) and ``nonprivate-deep`` (300 iterations, depth 8), claimed eps 0.5:
  real violations;
- ``rr-eps3`` (labels through randomized response at eps 3, 150 iterations, depth 6), claimed 0.5: a planted
  violation of a private model (true eps 3);
- ``rr-eps1`` (randomized response at eps 1), claimed 1: a private model at its true eps.

``--train-fraction F`` (default 0.8) is that random share of day 2. The rest is held out: all of it is the
capacity check's rows (the reference's correction fits a keyed tenth of the training rows, which leave the audit;
before 2026-11-29 it fitted half of the held-out rows), so a smaller F gives more check rows and fewer audited rows
on the same log. Nights run with another F carry it in their label. No public click log larger than
this one could be fetched here (benchmarks/results/real_log_large.md), so F is how the check rows are varied.

Then ``labeldp-audit nightly`` with the default plan settings (recalibrated reference, positive and negative
controls, bonferroni, 95%, kappa 0) and 5 repetitions, and its ``--json`` rows are read back. Per night and
model: the status, the valid bound, the breaking kappa, the trust and the capacity check's figures.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_real_log.py --data /work/realdata \\
        --seeds 0,1,2,3 --unshuffled --out benchmarks/results/real_log.md
    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_real_log.py --data /work/realdata \\
        --seeds 0,1,2,3,4,5,6,7,8,9 --unshuffled --train-fraction 0.2 --raw real_log_f0.2.jsonl
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

DAY1, DAY2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
FEATURES = [f"hash_{i}" for i in range(19)]
SPEC = {"name": "adkdd21", "label": "click", "classes": 2, "row_key": "row_id", "numeric": [],
        "categorical": FEATURES, "categorical_format": "any"}
TARGETS = {  # name: (iterations, depth, rr epsilon or None, claimed epsilon)
    "nonprivate": (150, 6, None, 0.5),
    "nonprivate-deep": (300, 8, None, 0.5),
    "rr-eps3": (150, 6, 3.0, 0.5),
    "rr-eps1": (150, 6, 1.0, 1.0),
}
TRUE_EPSILON = {"nonprivate": math.inf, "nonprivate-deep": math.inf, "rr-eps3": 3.0, "rr-eps1": 1.0}
CLI = [sys.executable, "-m", "flows.cli"]


def _read(data: Path) -> pd.DataFrame:
    x = pd.read_csv(data / "X_train.csv.gz")
    y = pd.read_csv(data / "y_train.csv.gz")
    frame = x.astype(str)
    frame["click"] = y["click"].astype(int).to_numpy()
    return frame


def _fit(frame: pd.DataFrame, labels: np.ndarray, iterations: int, depth: int, seed: int):
    from catboost import CatBoostClassifier

    model = CatBoostClassifier(iterations=iterations, depth=depth, random_seed=seed, verbose=False, thread_count=2,
                               cat_features=FEATURES, allow_writing_files=False)
    model.fit(frame[FEATURES], labels)
    return model


def _cli(*argv, check=True) -> subprocess.CompletedProcess:
    out = subprocess.run([*CLI, *[str(a) for a in argv]], capture_output=True, text=True, env=os.environ.copy())
    if check and out.returncode not in (0, 1, 4):
        raise RuntimeError(f"{argv[:2]} exited {out.returncode}: {out.stderr[-2000:]}")
    return out


def night(frame: pd.DataFrame, seed: int | None, repetitions: int, work: Path,
          train_fraction: float = 0.8, *, targets: dict | None = None, labels_for=None,
          plan_extra: dict | None = None) -> list[dict]:
    """One night (module docstring). ``targets``: name -> (iterations, depth, rr epsilon or None, claim), default
    TARGETS; ``labels_for(name, rows, labels)``: a target's training labels after randomized response (a planted
    leak rewrites some); ``plan_extra``: keys added to the nightly's plan (e.g. slices, controls)."""
    targets = TARGETS if targets is None else targets
    rng = np.random.default_rng(0 if seed is None else seed)
    order = np.arange(len(frame)) if seed is None else rng.permutation(len(frame))
    half = len(frame) // 2
    days = {DAY1: frame.iloc[order[:half]].copy(), DAY2: frame.iloc[order[half:]].copy()}
    root, files = work / "data", work / "files"
    files.mkdir(parents=True, exist_ok=True)
    spec = files / "adkdd21.json"
    spec.write_text(json.dumps(SPEC))
    for day, part in days.items():
        part.insert(0, "row_id", np.arange(len(part), dtype=np.int64) + day.toordinal() * 1_000_000)
        path = files / f"clicks-{day.isoformat()}.csv"
        part[["row_id", "click", *FEATURES]].to_csv(path, index=False)
        _cli("data", "ingest", path, "--dataset", spec, "--date", day.isoformat(), "--data-root", root)
    model_seed = 0 if seed is None else seed
    reference = _fit(days[DAY1], days[DAY1]["click"].to_numpy(), 150, 6, model_seed)
    reference.save_model(str(files / "reference.cbm"))
    common = ("--dataset", spec, "--data-root", root)
    _cli("models", "register", "--name", "reference", "--date", DAY1.isoformat(), "--file", files / "reference.cbm",
         "--claimed-epsilon", "inf", "--training-rows", "all", *common)
    day2 = days[DAY2]
    train = rng.random(len(day2)) < train_fraction
    keys = files / "training_rows.parquet"
    pd.DataFrame({"row_id": day2["row_id"].to_numpy()[train]}).to_parquet(keys, index=False)
    for name, (iterations, depth, rr, claim) in targets.items():
        labels = day2["click"].to_numpy()[train]
        if rr is not None:
            flip = rng.random(labels.size) >= math.exp(rr) / (1 + math.exp(rr))
            labels = np.where(flip, 1 - labels, labels)
        if labels_for is not None:
            labels = labels_for(name, day2[train], labels)
        model = _fit(day2[train], labels, iterations, depth, model_seed)
        model.save_model(str(files / f"{name}.cbm"))
        _cli("models", "register", "--name", name, "--date", DAY2.isoformat(), "--file", files / f"{name}.cbm",
             "--claimed-epsilon", claim, "--training-rows", keys, *common)
    plan = files / "plan.json"
    plan.write_text(json.dumps({
        "dataset": "adkdd21.json", "reference_name": "reference", "on_missing_reference": "fail",
        "on_missing_target": "fail", "audit": {"repetitions": repetitions},
        "targets": [{"name": name, "source": "registered"} for name in targets], **(plan_extra or {})}))
    started = time.monotonic()
    out = _cli("nightly", "--date", DAY2.isoformat(), "--plan", plan, "--data-root", root, "--json")
    rows = json.loads(out.stdout)
    for row in rows:
        row["exit_code"] = out.returncode
        row["night_seconds"] = round(time.monotonic() - started, 1)
    return rows


def summarise(rows: list[dict], label: str) -> list[dict]:
    out = []
    for row in rows:
        if row.get("kind") != "target":
            continue
        name = row["model_id"]
        out.append({"night": label, "model": name, "status": row["status"],
                    "eps_lb": row["epsilon_lower_bound"], "claim": row["claimed_epsilon"],
                    "true_eps": TRUE_EPSILON[name], "breaking_kappa": row.get("breaking_kappa"),
                    # rows written before per-verdict trust say "untrusted_reason" only
                    "trust": row.get("trust") or ("untrusted" if row.get("untrusted_reason") else "trusted"),
                    "epsilon_check": row.get("epsilon_check"),
                    "misfit_kappa_upper": row.get("misfit_kappa_upper"),
                    "check_misfit_kappa": row.get("check_misfit_kappa"), "exit_code": row["exit_code"],
                    "rows_excluded_groups": row.get("rows_excluded_groups"),
                    "group_label_agreement": row.get("group_label_agreement"),
                    "group_label_agreement_expected": row.get("group_label_agreement_expected")})
    return out


def table(results: list[dict]) -> str:
    def fmt(v):
        return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) and math.isfinite(v) else str(v))

    keys = ["night", "model", "status", "trust", "eps_lb", "claim", "true_eps", "breaking_kappa", "epsilon_check",
            "misfit_kappa_upper", "check_misfit_kappa", "exit_code"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(r[k]) for k in keys) + " |" for r in results]
    real = [r for r in results if r["status"] == "VIOLATION" and r["true_eps"] > r["claim"]
            and (r["breaking_kappa"] or 0) >= 0.3]
    false = [r for r in results if r["eps_lb"] > r["true_eps"]]
    lines += ["", f"Real VIOLATIONs (true eps above the claim, breaking kappa >= 0.3) trusted: "
              f"{sum(r['trust'] == 'trusted' for r in real)} of {len(real)}.",
              f"Verdicts whose valid bound exceeds the model's true eps: {len(false)} "
              f"(trusted: {sum(r['trust'] == 'trusted' for r in false)}) of {len(results)}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="directory with X_train.csv.gz and y_train.csv.gz")
    parser.add_argument("--seeds", default="0,1,2,3", help="shuffle seeds, comma-separated")
    parser.add_argument("--unshuffled", action="store_true", help="also the file's own order")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--raw", type=Path, help="append every night's JSON rows here")
    parser.add_argument("--train-fraction", type=float, default=0.8,
                        help="share of day 2 the targets train on; the rest are held out (default 0.8)")
    args = parser.parse_args()
    frame = _read(args.data)
    nights = [int(s) for s in args.seeds.split(",") if s] + ([None] if args.unshuffled else [])
    results = []
    for seed in nights:
        label = "unshuffled" if seed is None else f"shuffle {seed}"
        if args.train_fraction != 0.8:
            label += f", train {args.train_fraction:g}"
        with tempfile.TemporaryDirectory() as work:
            rows = night(frame, seed, args.repetitions, Path(work), args.train_fraction)
        if args.raw:
            with args.raw.open("a") as f:
                f.write(json.dumps({"night": label, "rows": rows}) + "\n")
        results += summarise(rows, label)
        print(table(results), flush=True)
    if args.out:
        args.out.write_text(table(results) + "\n")


if __name__ == "__main__":
    main()
