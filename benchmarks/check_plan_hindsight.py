"""Is the capacity check's plan what keeps real leaks from being acted on the night they happen?

A diagnostic, not a bound. On the real log's nights (benchmarks/bench_real_log.py's `night`, the non-private
targets only), each target's stored check histograms (repetition 0, `counts.npz`) are judged several ways at the
target's claim:

- **the plan** as the audit makes it (`auditing.verdict.capacity_check.capacity_check`): the threshold, strata and
  composition chosen from the selection half and the views' guess counts, assuming the check rows right half the
  time (docs/soundness.md section 8.4);
- **a model-belief plan**: the same search, but the check side's accuracy at each threshold and stratum is taken to
  be the one the audited model itself believes on those views (the score inverted at the bin's reference
  probability: for the paper score M = M' +- |s| / (1 - M')^t). It reads only the views, as the plan may; whether it
  would be worth building is what this measures;
- **a Bonferroni ladder**: the plan's own choice and the best planned candidates with at least 2x (and 4x) its
  check guesses, each tested at gamma / 2 (gamma / 3), the largest kept: valid, chosen from the views only;
- **a check-half plan**: the check rows split at random in two halves cell by cell (5 seeded splits); the plan reads
  the selection half and one check half's outcomes and maximises the normal approximation of the gap, the other
  half tests: valid, and no longer assumes the check rows right half the time, at half the check rows;
- **hindsight**: the largest epsilon_check over every threshold and composition the plan chooses among, with the
  test's outcomes read. A maximum over a sweep is optimistic, never a bound: it says how much any plan could gain,
  at most.

If the hindsight figure stays below the claim on a night the audit left unconfirmed, no plan would have confirmed
it. Where it exceeds the claim, a plan fixed in advance may or may not get there: the maximum over hundreds of
candidates is lifted by their noise, which is what the valid variants measure. Results:
benchmarks/results/check_plan.md.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/check_plan_hindsight.py \\
        --data DIR --seeds 0,1,2,3,4,5,6,7,8,9 --unshuffled [--score log-ratio] --keep KEPT --raw plan.jsonl
    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/check_plan_hindsight.py \\
        --data DIR --from-kept KEPT          # judge the kept nights again, without training
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_real_log import TARGETS, _read, night

from auditing.bounds.misfit_test import exact_epsilon_lower
from auditing.game.check_histograms import CHECK_BINS, CheckHistograms
from auditing.game.counts import GameCounts
from auditing.verdict import capacity_check as cc

NONPRIVATE = {name: spec for name, spec in TARGETS.items() if name.startswith("nonprivate")}


def _belief_accuracy(histograms: CheckHistograms, score: str, power: float) -> np.ndarray:
    """[fine stratum, |score| bin]: the accuracy the model itself believes a check guess there has (module
    docstring): a = M / (M + M') for a "trained" guess, M' / (M + M') for a "counterfactual" one."""
    bins = CHECK_BINS.num_bins
    edges = np.array([cc.bin_lower_edge(j) for j in range(bins + 1)], dtype=np.float64)
    middle = np.where(np.isfinite(edges[1:]), (edges[:-1] + edges[1:]) / 2, edges[:-1])
    out = np.full((histograms.selection_rows.shape[0], bins), 0.5)
    for fine in range(out.shape[0]):
        _, trained, low, high = cc.stratum_label(fine)
        p_ref = float(special.expit((special.logit(max(low, 1e-6)) + special.logit(min(high, 1 - 1e-6))) / 2))
        weight = (1.0 - p_ref) ** power
        s = np.abs(middle) / weight
        if score == "log-ratio":
            p_model = p_ref * np.exp(np.where(trained, s, -s))
        else:
            p_model = p_ref + np.where(trained, s, -s)
        p_model = np.clip(p_model, 1e-6, 1 - 1e-6)
        out[fine] = p_model / (p_model + p_ref) if trained else p_ref / (p_model + p_ref)
    return out


def _candidates(histograms: CheckHistograms):
    """Each threshold bin the plan chooses among (the audit's default grid), its strata (fine -> coarse, from the
    selection half's guesses) and a function merging a cumulative histogram's column at it into those strata."""
    size = histograms.classes * 2 * cc.COARSE_REFERENCE_BINS
    selection = cc._from_top(histograms.selection_rows)
    for k in cc._grid_thresholds(histograms.selection_rows.sum(axis=0), histograms.selection_correct.sum(axis=0),
                                 "log", 100, 1e-4):
        k = int(k)
        strata = cc._strata(selection[:, k], histograms.classes)
        yield k, strata, lambda values, k=k, strata=strata: np.bincount(strata, weights=values[:, k], minlength=size)


def _search(histograms: CheckHistograms, gamma: float, belief: np.ndarray | None, hindsight: bool):
    """The plan's search over thresholds and compositions; the value of a candidate is the planned epsilon_check
    (check side at 1/2, or at the model's belief), or with ``hindsight`` the candidate's own exact epsilon_check."""
    cum = {name: cc._from_top(getattr(histograms, name)) for name in CheckHistograms._FIELDS}
    belief_cum = None if belief is None else cc._from_top(histograms.check_rows * belief)
    critical = float(stats.norm.isf(gamma))
    items = []
    for k, strata, merged in _candidates(histograms):
        sel_rows, sel_correct = merged(cum["selection_rows"]), merged(cum["selection_correct"])
        bound, check = merged(cum["bound_rows"]).astype(np.int64), merged(cum["check_rows"]).astype(np.int64)
        accuracy = (sel_correct + 0.5) / (sel_rows + 1.0)
        for power, _, bound_take, check_take in cc._compositions(bound, check, accuracy):
            n_bound, n_check = int(bound_take.sum()), int(check_take.sum())
            if n_bound == 0 or n_check == 0:
                continue
            if hindsight:
                rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([histograms.seed,
                                                                                  cc._SUBSAMPLE_STREAM])))
                c_bound = cc._subsample(merged(cum["bound_correct"]).astype(np.int64), bound, bound_take, rng)
                c_check = cc._subsample(merged(cum["check_correct"]).astype(np.int64), check, check_take, rng)
                slack = float(np.clip(bound_take / n_bound - check_take / n_check, 0.0, None).sum())
                p_b, p_c = (c_bound + 0.5) / (n_bound + 1), (c_check + 0.5) / (n_check + 1)
                se = math.sqrt(1 / ((n_bound + 1) * p_b * (1 - p_b)) + 1 / ((n_check + 1) * p_c * (1 - p_c)))
                # the normal statistic ranks candidates; the exact test is run on the best few
                value = cc._logit(p_b) - cc._logit(p_c) - critical * se
                items.append((value, c_bound, n_bound, c_check, n_check, slack))
            else:
                planned = float(np.sum(bound_take * accuracy) / n_bound)
                value = cc._planned_epsilon(planned, n_bound, n_check, critical)
                if belief_cum is not None:
                    # the check side at the model's belief instead of 1/2
                    believed = merged(belief_cum) / np.maximum(check, 1)
                    value -= cc._logit(float(np.sum(check_take * believed) / n_check))
                items.append((value, k, power, bound_take, check_take, strata))
    items.sort(key=lambda item: -item[0])
    return items


def _split_check(histograms: CheckHistograms, seed: int) -> tuple[CheckHistograms, CheckHistograms]:
    """The check rows' guesses split at random in two halves, cell by cell (a uniform row split: the correct
    guesses of a half are hypergeometric given the cell's), keyed by ``seed``: one half plans, the other tests."""
    rng = np.random.default_rng(seed)
    rows = histograms.check_rows.astype(np.int64)
    plan_rows = rng.binomial(rows, 0.5)
    correct = histograms.check_correct.astype(np.int64)
    plan_correct = np.zeros_like(correct)
    nonzero = plan_rows > 0
    plan_correct[nonzero] = rng.hypergeometric(correct[nonzero], (rows - correct)[nonzero], plan_rows[nonzero])
    parts = {name: getattr(histograms, name) for name in CheckHistograms._FIELDS}
    plan = CheckHistograms(histograms.classes, histograms.seed,
                           *[plan_rows if n == "check_rows" else plan_correct if n == "check_correct" else parts[n]
                             for n in CheckHistograms._FIELDS])
    test = CheckHistograms(histograms.classes, histograms.seed,
                           *[rows - plan_rows if n == "check_rows" else correct - plan_correct
                             if n == "check_correct" else parts[n] for n in CheckHistograms._FIELDS])
    return plan, test


def _split_plan_epsilon(histograms: CheckHistograms, gamma: float, seed: int) -> tuple[float, int]:
    """Plan on the selection half and one half of the check rows (their outcomes read), test on the bound half and
    the other half of the check rows."""
    plan_side, test_side = _split_check(histograms, seed)
    cum = {name: cc._from_top(getattr(plan_side, name)) for name in CheckHistograms._FIELDS}
    test_cum = {name: cc._from_top(getattr(test_side, name)) for name in CheckHistograms._FIELDS}
    critical = float(stats.norm.isf(gamma))
    best = None
    for k, strata, merged in _candidates(histograms):
        sel_rows, sel_correct = merged(cum["selection_rows"]), merged(cum["selection_correct"])
        bound = merged(cum["bound_rows"]).astype(np.int64)
        check = merged(test_cum["check_rows"]).astype(np.int64)
        plan_rows, plan_correct = merged(cum["check_rows"]), merged(cum["check_correct"])
        accuracy = (sel_correct + 0.5) / (sel_rows + 1.0)
        check_accuracy = (plan_correct + 0.5) / (plan_rows + 1.0)
        for _, _, bound_take, check_take in cc._compositions(bound, check, accuracy):
            n_bound, n_check = int(bound_take.sum()), int(check_take.sum())
            if n_bound == 0 or n_check == 0:
                continue
            a_b = float(np.sum(bound_take * accuracy) / n_bound)
            a_c = float(np.sum(check_take * check_accuracy) / n_check)
            se = math.sqrt(1 / ((n_bound + 1) * a_b * (1 - a_b)) + 1 / ((n_check + 1) * a_c * (1 - a_c)))
            value = cc._logit(a_b) - cc._logit(a_c) - critical * se
            if best is None or value > best[0]:
                best = (value, k, 0.0, bound_take, check_take, strata)
    if best is None:
        return 0.0, 0
    eps, n_check, _ = _exact_of_plan(test_side, gamma, best)
    return eps, n_check


def _exact_of_plan(histograms: CheckHistograms, gamma: float, item) -> tuple[float, int, int]:
    """epsilon_check of a planned (threshold, composition), computed as the audit computes it."""
    _, k, _, bound_take, check_take, strata = item
    size = histograms.classes * 2 * cc.COARSE_REFERENCE_BINS
    cum = {name: cc._from_top(getattr(histograms, name)) for name in CheckHistograms._FIELDS}

    def merged(name):
        return np.bincount(strata, weights=cum[name][:, k], minlength=size).astype(np.int64)

    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([histograms.seed, cc._SUBSAMPLE_STREAM])))
    c_bound = cc._subsample(merged("bound_correct"), merged("bound_rows"), bound_take, rng)
    c_check = cc._subsample(merged("check_correct"), merged("check_rows"), check_take, rng)
    n_bound, n_check = int(bound_take.sum()), int(check_take.sum())
    slack = float(np.clip(bound_take / n_bound - check_take / n_check, 0.0, None).sum())
    return exact_epsilon_lower(c_bound, n_bound, c_check, n_check, gamma, slack), n_check, k


def _ladder(plans: list, rungs: int, factor: float = 2.0) -> list:
    """The plan's own choice and, for each further rung, the best planned candidate with at least ``factor`` times
    the previous rung's check guesses: tests fixed from the views, to be run at gamma / rungs each (Bonferroni)."""
    chosen = [plans[0]]
    for item in plans:
        if len(chosen) == rungs:
            break
        if int(item[4].sum()) >= factor * int(chosen[-1][4].sum()):
            chosen.append(item)
    return chosen


def judge_night(root: Path, gamma: float = 0.05) -> list[dict]:
    out = []
    for name, (_, _, _, claim) in NONPRIVATE.items():
        paths = sorted((root / "sweeps" / name).glob("date=*/*/counts.npz"))
        if not paths:
            continue
        counts = GameCounts.load(paths[-1].parent)
        h = counts.check
        audit = cc.capacity_check(h, confidence=1 - gamma)
        belief = _belief_accuracy(h, counts.game.score, counts.game.score_power)
        planned = _search(h, gamma, belief, hindsight=False)
        eps_belief, n_belief, k_belief = _exact_of_plan(h, gamma, planned[0])
        ranked = _search(h, gamma, None, hindsight=True)[:5]
        hind = max(exact_epsilon_lower(c_b, n_b, c_c, n_c, gamma, s) for _, c_b, n_b, c_c, n_c, s in ranked)
        ladders = {}
        split = [_split_plan_epsilon(h, gamma, seed) for seed in range(5)]
        ladders["split_plan"] = [round(e, 3) for e, _ in split]
        ladders["split_plan_check_guesses"] = [n for _, n in split]
        plans = _search(h, gamma, None, hindsight=False)
        for rungs in (2, 3):
            chosen = _ladder(plans, rungs)
            ladders[f"ladder{rungs}"] = max(_exact_of_plan(h, gamma / rungs, item)[0] for item in chosen)
            ladders[f"ladder{rungs}_check_guesses"] = [int(item[4].sum()) for item in chosen]
        out.append(dict(target=name, claim=claim, audit=audit.epsilon_check,
                        audit_check_guesses=audit.matched_check_guesses, audit_threshold=audit.threshold_bin,
                        belief=eps_belief, belief_check_guesses=n_belief, belief_threshold=k_belief,
                        hindsight=hind, **ladders))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="directory with X_train.csv.gz and y_train.csv.gz")
    parser.add_argument("--seeds", default="0,1,2,3")
    parser.add_argument("--unshuffled", action="store_true")
    parser.add_argument("--raw", type=Path, help="append each night's figures here (JSON lines)")
    parser.add_argument("--score", default="paper", choices=("paper", "log-ratio"),
                        help="the attack score the nightly plays (the plan's audit.score)")
    parser.add_argument("--keep", type=Path, help="copy each night's counts.npz here (<night>/<target>/counts.npz)")
    parser.add_argument("--from-kept", type=Path, help="judge the nights kept by --keep instead of running them")
    args = parser.parse_args()
    started = time.monotonic()
    if args.from_kept:
        for place in sorted(p for p in args.from_kept.iterdir() if p.is_dir()):
            for row in judge_night(place):
                row["night"] = place.name
                print(json.dumps(row), flush=True)
        return
    if args.data is None:
        parser.error("--data is required unless --from-kept is given")
    frame = _read(args.data)
    nights = [int(s) for s in args.seeds.split(",") if s] + ([None] if args.unshuffled else [])
    for seed in nights:
        label = "unshuffled" if seed is None else f"shuffle-{seed}"
        with tempfile.TemporaryDirectory() as work:
            nightly = night(frame, seed, 1, Path(work), targets=NONPRIVATE,
                            plan_extra={"audit": {"repetitions": 1, "score": args.score}})
            verdicts = {row["model_id"]: row for row in nightly if row.get("kind") == "target"}
            root = Path(work) / "data"
            if args.keep:
                for name in NONPRIVATE:
                    found = sorted((root / "sweeps" / name).glob("date=*/*/counts.npz"))
                    if found:
                        place = args.keep / label / "sweeps" / name / "date=kept" / "game"
                        place.mkdir(parents=True, exist_ok=True)
                        shutil.copy(found[-1], place / "counts.npz")
            rows = judge_night(root)
        for row in rows:
            row["night"], row["score"] = label, args.score
            verdict = verdicts[row["target"]]
            row.update(status=verdict["status"], eps_lb=verdict["epsilon_lower_bound"],
                       decision=verdict.get("decision"))
            print(json.dumps(row), flush=True)
            if args.raw:
                with args.raw.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
        print(f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
