"""A real-feature world: the capacity check, the decision and the family's confirmation measured where the truth is
known and the features are a real click log's.

Data: the AdKDD'21 Criteo privacy-preserving ML competition sample (github.com/criteo-research/criteo-privacy-
preserving-ml-competition, ``data/X_train.csv.gz`` and ``data/y_train.csv.gz`` at commit 925f00e: 102,434 rows, 19
hashed categorical features, a click label). It carries no license: measure with it, never commit it. Pass the
directory holding the two files with ``--data``.

The world:

- an oracle: CatBoost fitted to the log's real labels on its real features (its probability is the truth);
- day d: ``--rows`` feature vectors resampled from the log (seeded), labels drawn from the oracle with the day's
  drift: a shift of the click logit, drawn per day from N(0, ``--drift``), on the rows whose ``hash_3`` value is in
  a random third of its values (a segment the day moves);
- the reference of night d: CatBoost trained on day d - 1 (labels of the day before), recalibrated on night d's
  correction rows as the nightly does (`pipelines.reference.recalibration.fit_correction`);
- night d's rows: a random 80% trains the targets. With ``--correction training`` (the nightly's rule since
  2026-11-29, the default) the keyed tenth of those rows the nightly would take (`pipelines.data.splits.
  correction_share`) recalibrates the reference and leaves the audit, the rest of the 80% are the audited rows and
  the other 20% are all check rows; with ``--correction heldout`` (the rule before) every training row is audited and
  of the other 20% half recalibrates the reference, half are the check rows;
- the targets, trained on the 80%: CatBoost on randomized-response labels at eps 0.5, 1, 2 and 3 (claims at
  their true eps: every VIOLATION is false), CatBoost on the true labels (non-private; claimed 1: a real leak),
  CatBoost on randomized response at eps 3 claimed 1 (a planted leak), and the memorising stand-in of
  tests/support/memorising_worlds.py on these features (randomized response at eps 1 whose positives it memorises, the
  reference's odds moved by a label-free factor per ``hash_7`` value; claimed 1), and the same stand-in memorising
  the true labels (``memorising-nonprivate``, claimed 1: a real leak), and an overfitted CatBoost on the true
  labels (``nonprivate-deep``: depth 10, five times the rounds, little regularisation; claimed 1: a real leak of
  the kind an overfitted production model has);
- each target is audited in process (`auditing.audit.run_audit`, repetition 0 decides, the coins keyed by the
  night) with its check rows, judged (`auditing.verdict.judge.judge`) and entered in its family, one coin seed per
  family (``--families`` families per target over the same nights).

Printed and written to ``--out``: per target, the share of nights with a VIOLATION, a trusted one (the decision
act), and epsilon_check above the truth (with the one-sided binomial test against 5%); for leaks, the share of
families confirmed on their first night, within 3 and within 7 nights; for compliant targets, the share of
families ever confirmed over all nights (and its 95% Clopper-Pearson interval).

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_real_world.py --data /work/realdata \\
        --nights 31 --rows 100000 --families 8 --out benchmarks/results/real_world.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats

from auditing.game.config import GameConfig

FEATURES = [f"hash_{i}" for i in range(19)]
DAY0 = dt.date(2026, 11, 1)
TARGETS = {  # name: (randomized-response eps or None, claim, kind)
    "rr-eps0.5": (0.5, 0.5, "compliant"),
    "rr-eps1": (1.0, 1.0, "compliant"),
    "rr-eps2": (2.0, 2.0, "compliant"),
    "rr-eps3": (3.0, 3.0, "compliant"),
    "memorising-eps1": (1.0, 1.0, "compliant"),
    "nonprivate": (None, 1.0, "leak"),
    "rr-eps3-claims-1": (3.0, 1.0, "leak"),
    "memorising-nonprivate": (None, 1.0, "leak"),
    "nonprivate-deep": (None, 1.0, "leak"),
}


def _read(data: Path) -> pd.DataFrame:
    frame = pd.read_csv(data / "X_train.csv.gz").astype(str)
    frame["click"] = pd.read_csv(data / "y_train.csv.gz")["click"].astype(int).to_numpy()
    return frame


# ``nonprivate-deep``'s CatBoost: deeper trees, more rounds and less regularisation than the other models, so that it
# fits its training rows' labels the way an overfitted production model does (a leak its outputs carry).
DEEP = {"depth": 10, "l2_leaf_reg": 0.5, "iterations_factor": 5}


def _fit(frame: pd.DataFrame, labels: np.ndarray, seed: int, iterations: int, depth: int = 6,
         l2_leaf_reg: float = 3.0):
    from catboost import CatBoostClassifier

    model = CatBoostClassifier(iterations=iterations, depth=depth, l2_leaf_reg=l2_leaf_reg, random_seed=seed,
                               verbose=False, thread_count=2, cat_features=FEATURES, allow_writing_files=False)
    model.fit(frame[FEATURES], labels)
    return model


def _logits(model, frame: pd.DataFrame) -> np.ndarray:
    return np.asarray(model.predict(frame[FEATURES], prediction_type="RawFormulaVal"), dtype=np.float64)


def _rr(labels: np.ndarray, eps: float, rng) -> np.ndarray:
    flip = rng.random(labels.size) >= math.exp(eps) / (1 + math.exp(eps))
    return np.where(flip, 1 - labels, labels)


class World:
    """The oracle and the days (module docstring)."""

    def __init__(self, frame: pd.DataFrame, rows: int, drift: float, iterations: int, seed: int = 0,
                 correction: str = "training"):
        self.frame, self.rows, self.drift, self.iterations = frame, rows, drift, iterations
        self.correction = correction  # which rows fit the reference's correction (module docstring)
        self.oracle = _fit(frame, frame["click"].to_numpy(), seed, iterations * 2)
        self.oracle_logit = _logits(self.oracle, frame)
        values = np.unique(frame["hash_3"])
        rng = np.random.default_rng(seed + 1)
        self.segment = set(rng.choice(values, size=values.size // 3, replace=False))
        self.factor_values = {v: f for v, f in zip(np.unique(frame["hash_7"]),
                                                   rng.normal(0.0, 1.0, np.unique(frame["hash_7"]).size),
                                                   strict=True)}

    def day(self, d: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """(features, labels, the truth's click probability) of day d."""
        rng = np.random.default_rng(1000 + d)
        pick = rng.integers(0, len(self.frame), self.rows)
        part = self.frame.iloc[pick].reset_index(drop=True)
        shift = rng.normal(0.0, self.drift)
        logit = self.oracle_logit[pick] + shift * part["hash_3"].isin(self.segment).to_numpy()
        truth = special.expit(logit)
        return part, (rng.random(self.rows) < truth).astype(np.int64), truth


def night(world: World, d: int, reference_model, seed: int) -> dict:
    """Everything night d's audits read: the split, the corrected reference on the audited and check rows, and each
    target's probabilities on them."""
    from pipelines.data.splits import CORRECTION_SHARE, correction_share
    from pipelines.reference.recalibration import recalibrated_logits

    part, labels, truth = world.day(d)
    rng = np.random.default_rng(2000 + d)
    ids = np.arange(world.rows, dtype=np.int64) + (DAY0 + dt.timedelta(days=d)).toordinal() * 10_000_000
    role = rng.random(world.rows)
    training = role < 0.8
    if world.correction == "training":
        calibration = training & correction_share(ids, CORRECTION_SHARE)
        audited, check = training & ~calibration, ~training
    else:
        audited, calibration, check = training, (role >= 0.8) & (role < 0.9), role >= 0.9
    base = _logits(reference_model, part)
    apply = audited | check
    corrected, _ = recalibrated_logits(part[FEATURES][calibration], base[calibration], labels[calibration],
                                       part[FEATURES][apply], base[apply], FEATURES, seed=seed)
    reference = np.zeros(world.rows)
    reference[apply] = corrected
    p_reference = special.expit(reference)
    targets = {}
    train = part[training]
    for name, (eps, _, _) in TARGETS.items():
        if name.startswith("memorising"):
            factor = part["hash_7"].map(world.factor_values).to_numpy()
            noisy = labels if eps is None else _rr(labels, eps, rng)
            logit = reference + factor + np.where(training & (noisy == 1), 3.0, 0.0)
            targets[name] = special.expit(logit)
            continue
        y = labels[training] if eps is None else _rr(labels[training], eps, rng)
        if name == "nonprivate-deep":
            model = _fit(train, y, seed + d, world.iterations * DEEP["iterations_factor"], depth=DEEP["depth"],
                         l2_leaf_reg=DEEP["l2_leaf_reg"])
        else:
            model = _fit(train, y, seed + d, world.iterations)
        targets[name] = special.expit(_logits(model, part))
    return dict(labels=labels, truth=truth, ids=ids, audited=audited, check=check, p_reference=p_reference,
                targets=targets, part=part)


def audit(data: dict, name: str, day: dt.date, seed: int):
    from auditing.audit import CheckRows, run_audit

    a, c = data["audited"], data["check"]
    p = data["targets"][name]
    check = CheckRows(p[c], data["p_reference"][c], data["labels"][c], data["ids"][c])
    return run_audit(p[a], data["p_reference"][a], data["labels"][a], data["ids"][a],
                     game=GameConfig(repetitions=1, seed=seed).with_night(day), check=check)


def _rate(count: int, total: int) -> str:
    if total == 0:
        return "-"
    lo, hi = stats.binomtest(count, total).proportion_ci(0.95)
    return f"{count}/{total} ({100 * count / total:.1f}%, 95% CI {100 * lo:.1f}-{100 * hi:.1f})"


def _judged(args) -> list[tuple[str, float | None, float, str]]:
    """(label, true eps or None, claim, kind) of every judgement a night makes: each target at its claim, and each
    non-private target again at every ``--leak-claims`` claim (the same audit judged against a smaller claim: how
    large a leak above the claim the night and the family confirm)."""
    judged = []
    for name, (eps, claim, kind) in TARGETS.items():
        judged.append((name, eps, claim, kind))
        if eps is None:
            judged += [(f"{name} (claim {extra:g})", eps, extra, kind) for extra in args.leak_claims if extra != claim]
    return judged


def _report(args, records: list[dict], done: int, started: float) -> str:
    """The tables over the nights done so far (written after every night, so a run cut short still reports)."""
    from auditing.verdict.family_evidence import family_evidence

    lines = [f"Real-feature world ({args.correction} correction rows): {done} of {args.nights} nights of "
             f"{args.rows:,} rows resampled from the AdKDD'21 "
             f"sample, segment drift sd {args.drift}, CatBoost {args.iterations} iterations, {args.families} families (coin "
             f"seeds) per target; {time.monotonic() - started:.0f} s so far.", "",
             "| target | claim | true eps | eps_lb median / max | epsilon_check median / max | VIOLATION nights | "
             "decision act (trusted) | epsilon_check > true eps |",
             "|---|---|---|---|---|---|---|---|"]
    for name, eps, claim, _ in _judged(args):
        mine = [r for r in records if r["target"] == name]
        violations = sum(r["status"] == "VIOLATION" for r in mine)
        act = sum(r["decision"] == "act" for r in mine)
        above = sum(r["epsilon_check"] > r["true_eps"] for r in mine)
        truth = "inf" if eps is None else f"{eps:g}"
        lb = [r["eps_lb"] for r in mine]
        check = [r["epsilon_check"] for r in mine]
        lines.append(f"| {name} | {claim:g} | {truth} | {np.median(lb):.2f} / {max(lb):.2f} | "
                     f"{np.median(check):.2f} / {max(check):.2f} | {_rate(violations, len(mine))} | "
                     f"{_rate(act, len(mine))} | "
                     f"{_rate(above, len(mine)) if math.isfinite(mine[0]['true_eps']) else '-'} |")
    lines += ["", "Families (each target's nights in order, one coin seed per family):", "",
              "| target | kind | confirmed on the first night | within 3 | within 7 | ever (all nights) |",
              "|---|---|---|---|---|---|"]
    for name, _, _, kind in _judged(args):
        firsts, threes, sevens, evers = 0, 0, 0, 0
        for family in range(args.families):
            nights = [r["counts"] for r in records if r["target"] == name and r["family"] == family]
            test = family_evidence(nights)
            confirmed = test.confirmed_on
            place = None if confirmed is None else [n.partition_date for n in nights].index(confirmed) + 1
            firsts += place == 1
            threes += place is not None and place <= 3
            sevens += place is not None and place <= 7
            evers += place is not None
        n = args.families
        lines.append(f"| {name} | {kind} | {_rate(firsts, n)} | {_rate(threes, n)} | {_rate(sevens, n)} | "
                     f"{_rate(evers, n)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--nights", type=int, default=31, help="nights audited (days 1..N; day 0 trains the first "
                                                               "reference)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--families", type=int, default=8, help="coin seeds (families) per target")
    parser.add_argument("--drift", type=float, default=0.5, help="sd of the day's segment shift of the click logit")
    parser.add_argument("--iterations", type=int, default=80, help="CatBoost iterations of the models")
    parser.add_argument("--correction", choices=("training", "heldout"), default="training",
                        help="rows the reference's correction fits on: a keyed tenth of the training rows, which "
                             "leave the audit (the nightly's rule), or half of the held-out rows (the rule before)")
    parser.add_argument("--leak-claims", default="",
                        help="comma-separated claims at which each non-private target is judged again (the same "
                             "audits; e.g. 0.25,0.5: how far above a claim a leak must be to be confirmed)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--raw", type=Path, help="write every (night, target, family) record here (JSON lines)")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help="comma-separated targets to train and audit (default: all; fewer make bigger days "
                             "affordable)")
    args = parser.parse_args()
    try:
        args.leak_claims = [float(c) for c in args.leak_claims.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--leak-claims: expected comma-separated numbers, got {args.leak_claims!r}")
    chosen = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = sorted(set(chosen) - set(TARGETS))
    if unknown or not chosen:
        parser.error(f"--targets: unknown {unknown}; choose from {', '.join(TARGETS)}")
    for name in list(TARGETS):
        if name not in chosen:
            del TARGETS[name]

    from auditing.verdict.family_evidence import NightCounts
    from auditing.verdict.judge import judge

    started = time.monotonic()
    world = World(_read(args.data), args.rows, args.drift, args.iterations, correction=args.correction)
    records = []
    previous = world.day(0)
    for d in range(1, args.nights + 1):
        reference = _fit(previous[0], previous[1], d, args.iterations)
        data = night(world, d, reference, seed=d)
        day = DAY0 + dt.timedelta(days=d)
        audited = {}  # (target, family): tonight's audit, judged at each of the target's claims
        for label, eps, claim, kind in _judged(args):
            name = label.split(" ")[0]
            for family in range(args.families):
                if (name, family) not in audited:
                    audited[name, family] = audit(data, name, day, seed=family)
                result = audited[name, family]
                verdict = judge(result, claim)
                records.append({"night": d, "target": label, "family": family, "kind": kind, "claim": claim,
                                "true_eps": math.inf if eps is None else eps, "status": verdict.status,
                                "eps_lb": result.epsilon_lower_bound,
                                "epsilon_check": result.capacity_check.epsilon_check,
                                "decision": verdict.decision.decision, "trust": verdict.trust.state,
                                "counts": NightCounts.of_result(day, claim, result)})
        previous = data["part"], data["labels"]
        print(f"night {d}/{args.nights}: {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)

        text = _report(args, records, d, started)
        if args.out:
            args.out.write_text(text + "\n")
    print(text)
    if args.raw:
        with args.raw.open("w") as handle:
            for r in records:
                handle.write(json.dumps({k: v for k, v in r.items() if k != "counts"}) + "\n")


if __name__ == "__main__":
    main()
