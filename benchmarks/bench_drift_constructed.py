"""Drift with a known truth (layer (a) of results/drift.md): constructed targets audited against a reference that
is off for "today", raw, after a global Platt fit and after `pipelines.reference.recalibration.fit_correction` (boost).

Per seed, one day of n audited rows plus 0.3 n held-out rows from the same law:

- features: ``segment`` (A on 30% of rows, else B or C), ``device`` (3 values) and a numeric ``x``; the true
  click probability is logit-linear, logit p(x) = -3.9 + 0.5 [A] - 0.15 [B] + {-0.25, 0, 0.25}[device] + 0.25 x
  (about 1% to 6%, mean ~2.5%); labels y ~ Bernoulli(p(x)). The held-out rows are split at random into a
  CALIBRATION half (corrects the reference) and a CONTROL half (trains the label-blind control).
- reference: the true logit shifted by d on every row ("global") or on segment A only ("segment"),
  d in {0, +-0.25, +-0.5, +-1}; then three modes: ``raw`` (the shifted reference), ``platt`` (logistic
  regression of y on the reference logit, fitted on the calibration half) and ``boost`` (`fit_correction` on the
  calibration half, features segment, device, x with segment and device categorical; default settings; since
  RECALIBRATION_VERSION 2 a global intercept step precedes the rounds, recorded as ``intercept``).
- targets on the audited rows: ``rr1`` / ``rr2``, the Bayes target of binary randomized response at eps 1 / 2
  (released label RR_eps(y), target P[y = 1 | released, x] from the TRUE p(x); true and claimed eps = eps);
  ``control``, the label-blind control: a logistic regression on one-hot segment, device and x fitted on the
  CONTROL half (never reads an audited label; true eps 0; it "flags" when its valid bound > 0); ``planted``,
  the label itself, p_target = 0.9 if y = 1 else 0.01 (true eps inf, claimed 0.5).

Audit: `auditing.audit.run_audit`, binomial, bonferroni, 95%, kappa 0, one repetition (repetition 0 decides),
log grid, game seed = the data seed. VIOLATION = `auditing.verdict.guardrail.guardrail_status` (valid bound > claim).
Per cell (n, drift kind, d, mode) over seeds: the false VIOLATION rate of rr1 and rr2, the control's flag rate,
the TRUSTED false VIOLATION rate (a false VIOLATION on a seed whose control did not flag), the planted
detection rate, each with a Clopper-Pearson 95% interval. Above ``--planted-drifted-max-n`` (default 1e5) the
planted target is audited on the undrifted reference only (its goal is stated undrifted; saves a quarter of the
audits at n = 1e6). ``--modes`` may add ``platt+boost`` (`fit_correction` boosted from the Platt-corrected logits). ``--cli-checks K`` also audits K cells of the first
seed through `labeldp-audit audit-scores` on Parquet files and checks the bound equals the in-process one.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache nohup .venv/bin/python benchmarks/bench_drift_constructed.py \
        --sizes 100000:20,1000000:5 --out /tmp/drift_constructed.jsonl > /tmp/drift_constructed.log 2>&1 &

Records go to ``--out`` (one JSON line per seed and cell; a rerun skips the (n, seed) already there), the
tables to stdout at the end (``--report-only`` prints them from ``--out`` without running anything).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from scipy.stats import beta as beta_dist

from auditing.config import BoundConfig
from auditing.game.config import GameConfig

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from auditing.audit import run_audit  # noqa: E402
from auditing.verdict.guardrail import guardrail_status  # noqa: E402
from pipelines.reference.recalibration import ReferenceCheckSkipped, recalibrated_logits  # noqa: E402

SHIFTS = (0.25, -0.25, 0.5, -0.5, 1.0, -1.0)
KINDS = ("global", "segment")
MODES = ("raw", "platt", "boost")
ALL_MODES = (*MODES, "platt+boost")
TARGETS = {"rr1": 1.0, "rr2": 2.0, "control": 0.0, "planted": 0.5}  # name -> claimed eps
TRUE_EPS = {"rr1": 1.0, "rr2": 2.0, "control": 0.0, "planted": float("inf")}
HELDOUT_FRACTION = 0.3
CATS = ["segment", "device"]
FEATURES = ["segment", "device", "x"]


# ------------------------------------------------------------------------------------------ the day


def make_day(n_rows: int, seed: int, tag: int) -> dict:
    """Features, true logits and labels of n_rows rows (rng keyed by (n_audited, seed, tag))."""
    rng = np.random.default_rng([tag, seed, 0xD1F7])
    u = rng.random(n_rows)
    segment = np.where(u < 0.3, "A", np.where(u < 0.65, "B", "C"))
    device = rng.choice(np.array(["mobile", "desktop", "tablet"]), size=n_rows, p=[0.55, 0.35, 0.10])
    x = rng.standard_normal(n_rows)
    z = (-3.9 + 0.5 * (segment == "A") - 0.15 * (segment == "B")
         + np.select([device == "mobile", device == "tablet"], [0.25, -0.25], 0.0) + 0.25 * x)
    y = (rng.random(n_rows) < expit(z)).astype(np.int64)
    frame = pd.DataFrame({"segment": pd.Categorical(segment).astype(str), "device": device.astype(str), "x": x})
    return {"frame": frame, "z": z, "y": y, "seg_a": segment == "A", "rng": rng}


def design(frame: pd.DataFrame) -> np.ndarray:
    seg, dev = frame["segment"].to_numpy(), frame["device"].to_numpy()
    return np.column_stack([np.ones(len(frame)), seg == "A", seg == "B", dev == "mobile", dev == "tablet",
                            frame["x"].to_numpy()]).astype(np.float64)


def fit_logistic(X: np.ndarray, y: np.ndarray, ridge: float = 1e-6, iterations: int = 50) -> np.ndarray:
    """Maximum-likelihood logistic regression by Newton steps (tiny ridge for stability)."""
    w = np.zeros(X.shape[1])
    w[0] = logit(min(max(y.mean(), 1e-4), 1 - 1e-4))
    for _ in range(iterations):
        p = expit(X @ w)
        grad = X.T @ (y - p) - ridge * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + ridge * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        w += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


def rr_bayes_target(p: np.ndarray, y: np.ndarray, eps: float, rng: np.random.Generator) -> np.ndarray:
    """Releases RR_eps(y) per row and returns P[y = 1 | released, x] under the true p(x)."""
    q = np.exp(eps) / (1.0 + np.exp(eps))
    keep = rng.random(y.size) < q
    released = np.where(keep, y, 1 - y)
    like1 = np.where(released == 1, q, 1 - q)  # P[released | y = 1]
    like0 = np.where(released == 1, 1 - q, q)  # P[released | y = 0]
    return p * like1 / (p * like1 + (1 - p) * like0)


# ------------------------------------------------------------------------------------------ one seed


def audit_bound(p_target, p_reference, labels, row_ids, seed: int):
    game, bound = GameConfig(repetitions=1, seed=seed, grid="log"), BoundConfig(method="binomial", strategy="bonferroni", confidence=0.95, delta=0.0, kappa=0.0)
    return run_audit(p_target, p_reference, labels, row_ids, game, bound)


def run_seed(n: int, seed: int, cli_checks: int, log, modes=MODES, planted_drifted_max_n: int = 10**18) -> list[dict]:
    n_held = round(HELDOUT_FRACTION * n)
    day = make_day(n + n_held, seed, tag=n)
    frame, z, y, seg_a, rng = day["frame"], day["z"], day["y"], day["seg_a"], day["rng"]
    audited = np.arange(n)
    held = np.arange(n, n + n_held)
    calib_mask = rng.random(n_held) < 0.5
    calib, control_rows = held[calib_mask], held[~calib_mask]

    y_a, p_a = y[audited], expit(z[audited])
    row_ids = audited.astype(np.int64)
    weights = fit_logistic(design(frame.iloc[control_rows]), y[control_rows].astype(np.float64))
    targets = {
        "rr1": rr_bayes_target(p_a, y_a, 1.0, rng),
        "rr2": rr_bayes_target(p_a, y_a, 2.0, rng),
        "control": expit(design(frame.iloc[audited]) @ weights),
        "planted": np.where(y_a == 1, 0.9, 0.01),
    }
    drifts = [("none", 0.0)] + [(kind, d) for kind in KINDS for d in SHIFTS]
    cal_frame, aud_frame = frame.iloc[calib].reset_index(drop=True), frame.iloc[audited].reset_index(drop=True)
    records, cli_done = [], 0
    for kind, d in drifts:
        shift = d * (seg_a if kind == "segment" else np.ones_like(seg_a)).astype(np.float64)
        ref_logit = z + shift
        references = {"raw": (ref_logit[audited], {})}
        ab = fit_logistic(np.column_stack([np.ones(calib.size), ref_logit[calib]]), y[calib].astype(np.float64))
        references["platt"] = (ab[0] + ab[1] * ref_logit[audited], {"platt_a": float(ab[0]), "platt_b": float(ab[1])})
        started = time.monotonic()
        try:
            boosted, record = recalibrated_logits(cal_frame, ref_logit[calib], y[calib], aud_frame, ref_logit[audited],
                                                  CATS, seed=seed)
            info = {"rounds": int(record["rounds"]), "intercept": record.get("intercept"),
                    "fit_seconds": round(time.monotonic() - started, 2),
                    "logloss_before": record["validation"]["log_loss_before"],
                    "logloss_after": record["validation"]["log_loss_after"]}
        except ReferenceCheckSkipped as exc:  # not expected at these sizes; recorded if it happens
            boosted, info = ref_logit[audited], {"skipped": exc.reason}
        references["boost"] = (boosted, info)
        if "platt+boost" in modes:  # the same correction boosted from the Platt-corrected logits
            platt_cal = ab[0] + ab[1] * ref_logit[calib]
            pb, record = recalibrated_logits(cal_frame, platt_cal, y[calib], aud_frame, references["platt"][0], CATS,
                                             seed=seed)
            references["platt+boost"] = (pb, {"rounds": int(record["rounds"])})
        references = {mode: references[mode] for mode in modes}
        for mode, (logits, info) in references.items():
            p_ref = expit(logits)
            err = logits - z[audited]
            rec = {"n": n, "seed": seed, "kind": kind, "d": d, "mode": mode, **info,
                   "ref_err_segA": float(err[seg_a[audited]].mean()), "ref_err_other": float(err[~seg_a[audited]].mean()),
                   "ref_err_maxabs": float(np.abs(err).max())}
            for name, p_t in targets.items():
                if name == "planted" and d != 0.0 and n > planted_drifted_max_n:
                    rec[f"{name}_eps"], rec[f"{name}_status"] = None, None  # only needed undrifted (time)
                    continue
                result = audit_bound(p_t, p_ref, y_a, row_ids, seed)
                status = guardrail_status(result.epsilon_lower_bound, TARGETS[name], result.max_certifiable_epsilon)
                rec[f"{name}_eps"] = result.epsilon_lower_bound
                rec[f"{name}_status"] = status
            if cli_done < cli_checks and mode in ("raw", "boost") and d in (0.0, 0.5, -0.5):
                rec["cli"] = cli_check(targets, p_ref, y_a, row_ids, seed, rec)
                cli_done += 1
            records.append(rec)
        log(f"  n={n} seed={seed} {kind:7s} d={d:+.2f}: " + "; ".join(
            f"{r['mode']} rr1 {r['rr1_eps']:.3f} rr2 {r['rr2_eps']:.3f} ctl {r['control_eps']:.3f} "
            f"pl {r['planted_eps'] if r['planted_eps'] is None else round(r['planted_eps'], 2)}"
            for r in records[-len(references):]) + f" (boost rounds {references.get('boost', [0, {}])[1].get('rounds')})")
    return records


def cli_check(targets, p_ref, labels, row_ids, seed: int, rec: dict) -> list[dict]:
    """The same audits through `labeldp-audit audit-scores` on a Parquet file; the bounds must match exactly."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    exe = ROOT / ".venv" / "bin" / "labeldp-audit"
    with tempfile.TemporaryDirectory(prefix="drift-cli-") as tmp:
        for name in ("rr1", "control"):
            path = Path(tmp) / f"{name}.parquet"
            pq.write_table(pa.table({"row_id": row_ids, "label": labels, "p_target": targets[name],
                                     "p_reference": p_ref}), path)
            cmd = [str(exe), "audit-scores", str(path), "--repetitions", "1", "--seed", str(seed), "--strategy",
                   "bonferroni", "--method", "binomial", "--confidence", "0.95", "--kappa", "0", "--grid", "log",
                   "--claimed-epsilon", str(TARGETS[name]), "--json", "--quiet"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            cli = json.loads(done.stdout)
            out.append({"target": name, "cli_eps": cli["epsilon_lower_bound"], "cli_status": cli["status"],
                        "inprocess_eps": rec[f"{name}_eps"], "inprocess_status": rec[f"{name}_status"],
                        "same": cli["epsilon_lower_bound"] == rec[f"{name}_eps"]
                        and cli["status"] == rec[f"{name}_status"]})
    return out


# ------------------------------------------------------------------------------------------ report


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    a = (1 - confidence) / 2
    lo = 0.0 if k == 0 else float(beta_dist.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta_dist.ppf(1 - a, k + 1, n - k))
    return lo, hi


def rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} [{100 * lo:.0f}-{100 * hi:.0f}%]"


def report(records: list[dict]) -> str:
    df = pd.DataFrame(records)
    lines = []
    for target in ("rr1", "rr2", "control", "planted"):
        df[f"{target}_viol"] = df[f"{target}_status"] == "VIOLATION"
    df["planted_run"] = df["planted_status"].notna()
    df["flag"] = df["control_eps"] > 0
    df["trusted_rr1"] = df["rr1_viol"] & ~df["flag"]
    df["trusted_rr2"] = df["rr2_viol"] & ~df["flag"]
    head = ("| n | drift | d | ref | false VIOL rr eps1 | false VIOL rr eps2 | control flags | TRUSTED false VIOL "
            "eps1 | TRUSTED false VIOL eps2 | planted detected | median eps_lb rr1 / rr2 / ctl | boost rounds (median) |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    order = [("none", 0.0)] + [(k, d) for k in KINDS for d in sorted(SHIFTS)]
    for n in sorted(df["n"].unique()):
        for kind, d in order:
            for mode in ALL_MODES:
                cell = df[(df.n == n) & (df.kind == kind) & (df.d == d) & (df["mode"] == mode)]
                if cell.empty:
                    continue
                m = len(cell)
                rounds = cell["rounds"].median() if mode in ("boost", "platt+boost") and "rounds" in cell else float("nan")
                lines.append(
                    f"| {n:,} | {kind} | {d:+.2f} | {mode} | {rate(int(cell.rr1_viol.sum()), m)} | "
                    f"{rate(int(cell.rr2_viol.sum()), m)} | {rate(int(cell.flag.sum()), m)} | "
                    f"{rate(int(cell.trusted_rr1.sum()), m)} | {rate(int(cell.trusted_rr2.sum()), m)} | "
                    f"{rate(int(cell.planted_viol.sum()), int(cell.planted_run.sum())) if cell.planted_run.any() else '-'} | "
                    f"{cell.rr1_eps.median():.2f} / "
                    f"{cell.rr2_eps.median():.2f} / {cell.control_eps.median():.2f} | "
                    f"{'' if rounds != rounds else f'{rounds:.0f}'} |")
    summary = []
    for n in sorted(df["n"].unique()):
        for mode in ALL_MODES:
            sub = df[(df.n == n) & (df["mode"] == mode)]
            if sub.empty:
                continue
            worst = sub.groupby(["kind", "d"])[["trusted_rr1", "trusted_rr2"]].mean().max(axis=1)
            bad = worst[worst > 0.05]
            summary.append(f"n={n:,} {mode}: trusted false VIOLATION > 5% in {len(bad)} of {len(worst)} drift "
                           f"settings" + (f" ({', '.join(f'{k} {d:+.2f}: {100 * v:.0f}%' for (k, d), v in bad.items())})"
                                          if len(bad) else ""))
    planted0 = df[df.kind == "none"]
    summary += [f"planted detection, undrifted, n={n:,} {mode}: "
                f"{rate(int(g.planted_viol.sum()), len(g))}" for (n, mode), g in planted0.groupby(["n", "mode"])]
    clis = [c for cl in df.get("cli", pd.Series(dtype=object)).dropna() for c in cl]
    if clis:
        summary.append(f"CLI checks: {sum(c['same'] for c in clis)}/{len(clis)} audits identical (bound and status) "
                       f"through labeldp-audit audit-scores: " + "; ".join(
                           f"{c['target']} {c['cli_eps']:.4f}/{c['inprocess_eps']:.4f}" for c in clis))
    return "\n".join(lines) + "\n\n" + "\n".join(summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000:20,1000000:5", help="n:seeds pairs, comma-separated")
    parser.add_argument("--out", default="/tmp/drift_constructed.jsonl")
    parser.add_argument("--cli-checks", type=int, default=4, help="cells of seed 0 at the smallest n checked via the CLI")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--modes", default=",".join(MODES), help=f"reference modes, of {list(ALL_MODES)}")
    parser.add_argument("--planted-drifted-max-n", type=int, default=100_000,
                        help="audit the planted target on drifted references only up to this n (it is needed "
                             "undrifted; saves a quarter of the audits at larger n)")
    args = parser.parse_args()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["n"], r["seed"]))
    if not args.report_only:
        sizes = [tuple(int(v) for v in item.split(":")) for item in args.sizes.split(",")]
        started = time.monotonic()
        for i, (n, seeds) in enumerate(sizes):
            for seed in range(seeds):
                if (n, seed) in done:
                    continue
                t0 = time.monotonic()
                records = run_seed(n, seed, args.cli_checks if (i == 0 and seed == 0) else 0, log,
                                   modes=tuple(args.modes.split(",")), planted_drifted_max_n=args.planted_drifted_max_n)
                with out.open("a") as fh:
                    for r in records:
                        fh.write(json.dumps(r) + "\n")
                log(f"n={n} seed={seed}: {time.monotonic() - t0:.1f} s (total {time.monotonic() - started:.0f} s, "
                    f"load {os.getloadavg()[0]:.1f})")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    print(report(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
