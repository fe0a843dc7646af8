"""Valid bounds per slice on a real public click log: a leak planted on one value of a column, and a compliant model.

The nights are benchmarks/bench_real_log.py's (its data, its ``night()``: two shuffled days of about 51,200 rows of
the AdKDD'21 Criteo sample, outside CatBoost models registered with their training rows, ``labeldp-audit nightly
--json``), with three targets trained on the same random 80% of day 2 (150 iterations, depth 6), claimed eps 1:

- ``rr-eps1-leak``: labels through randomized response at eps 1 on every row except those of ``--column`` =
  ``--value`` (default hash_14's most frequent value, about 9% of the rows), whose labels go in unrandomized. Not
  private on that slice;
- ``rr-eps1``: randomized response at eps 1 on every row (true eps 1);
- ``nonprivate``: the true labels on every row, claimed 1: on the leaky slice, the most a model that leaks every
  label there shows (the ceiling of the leak's slice bound with this model family and slice size).

The plan declares ``--slices`` (default column:hash_14:top=5, prior-deciles, shown-label) with the default budget
(5%) and the default controls (``--no-controls`` disables them). ``night()`` is called with these targets, a hook
that puts the leaky value's true labels back into the leak's training labels, and the plan's slices and controls.
Results: benchmarks/results/real_log_slices.md.

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_real_log_slices.py --data /work/realdata \\
        --seeds $(seq -s, 0 39) --budget-minutes 25 --raw real_log_slices.jsonl --out OUT.md
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_real_log as base

LEAK, COMPLIANT, CEILING = "rr-eps1-leak", "rr-eps1", "nonprivate"
TARGETS = {LEAK: (150, 6, 1.0, 1.0), COMPLIANT: (150, 6, 1.0, 1.0), CEILING: (150, 6, None, 1.0)}  # as base.TARGETS
CLAIM = 1.0


def leak_on(column: str, value: str):
    """The leak: the leaky target's training labels are the true ones on the rows with ``column == value``."""
    def labels_for(name, rows, labels):
        if name != LEAK:
            return labels
        return np.where(rows[column].to_numpy() == value, rows["click"].to_numpy(), labels)
    return labels_for


def summarise(rows: list[dict], label: str, leaky_slice: str) -> dict:
    """One night: each target's global verdict and its slices."""
    by_model = {r["model_id"]: r for r in rows if r.get("kind") == "target"}
    out = {"night": label, "seconds": rows[0]["night_seconds"] if rows else None,
           "exit_code": rows[0]["exit_code"] if rows else None,
           "controls": {r["model_id"]: r["status"] for r in rows if r.get("kind") == "control"}}
    for name in TARGETS:
        row = by_model[name]
        block = row.get("slices") or {}
        pieces = block.get("slices") or []
        out[name] = {"status": row["status"], "eps_lb": row["epsilon_lower_bound"],
                     "trust": row.get("trust"), "declared": block.get("declared"),
                     "confidence": block.get("confidence"), "slices": pieces}
    leak = out[LEAK]
    leaky = next((s for s in leak["slices"] if s["name"] == leaky_slice), None)
    out[CEILING]["leaky"] = next((s for s in out[CEILING]["slices"] if s["name"] == leaky_slice), None)
    out[CEILING]["violations"] = [s for s in out[CEILING]["slices"] if s["status"] == "VIOLATION"]
    others = [s for s in leak["slices"] if s["name"] != leaky_slice]
    leak["leaky"] = leaky
    leak["other_max"] = max(others, key=lambda s: s["epsilon_lower_bound"] or 0.0, default=None)
    leak["other_violations"] = [s["name"] for s in others if s["status"] == "VIOLATION"]
    compliant = out[COMPLIANT]
    compliant["max"] = max(compliant["slices"], key=lambda s: s["epsilon_lower_bound"] or 0.0, default=None)
    compliant["above"] = [s for s in compliant["slices"] if (s["epsilon_lower_bound"] or 0.0) > CLAIM]
    return out


def _f(v, digits=3):
    if v is None:
        return "-"
    return f"{v:.{digits}f}" if isinstance(v, float) and math.isfinite(v) else str(v)


def report(nights: list[dict], leaky_slice: str) -> str:
    lines = [f"Planted leak (`{LEAK}`, claim {CLAIM:g}; leaky slice `{leaky_slice}`):", "",
             "| night | global eps_lb | global status | global trust | slice rows | slice check rows | slice eps_lb "
             "| slice max certifiable | slice status | slice trust | largest other slice | other slice VIOLATIONs "
             f"| `{CEILING}` global (status, trust) | `{CEILING}` on the slice (status, trust) "
             f"| `{CEILING}` slice VIOLATIONs (trusted) |",
             "|" + "---|" * 15]
    for n in nights:
        leak, s, o = n[LEAK], n[LEAK]["leaky"] or {}, n[LEAK]["other_max"] or {}
        c, cs = n[CEILING], n[CEILING]["leaky"] or {}
        lines.append(f"| {n['night']} | {_f(leak['eps_lb'])} | {leak['status']} | {leak['trust']} | {s.get('rows')} "
                     f"| {s.get('check_rows')} | {_f(s.get('epsilon_lower_bound'))} "
                     f"| {_f(s.get('max_certifiable_epsilon'))} | {s.get('status')} | {s.get('trust')} "
                     f"| {_f(o.get('epsilon_lower_bound'))} ({o.get('name')}) "
                     f"| {', '.join(leak['other_violations']) or '-'} | {_f(c['eps_lb'])} ({c['status']}, "
                     f"{c['trust']}) | {_f(cs.get('epsilon_lower_bound'))} ({cs.get('status')}, {cs.get('trust')}) "
                     f"| {len(c['violations'])} ({sum(v['trust'] == 'trusted' for v in c['violations'])}) |")
    lines += ["", f"Compliant (`{COMPLIANT}`, true eps {CLAIM:g}, claim {CLAIM:g}):", "",
              "| night | global eps_lb | global status | largest slice bound | slices above 1 (trust) | slice "
              "VIOLATIONs | controls | night seconds | exit |", "|" + "---|" * 9]
    for n in nights:
        c, m = n[COMPLIANT], n[COMPLIANT]["max"] or {}
        above = ", ".join(f"{s['name']} {_f(s['epsilon_lower_bound'])} ({s['trust']})" for s in c["above"]) or "none"
        violations = sum(s["status"] == "VIOLATION" for s in c["slices"])
        controls = ", ".join(f"{k} {v}" for k, v in n["controls"].items()) or "disabled"
        lines.append(f"| {n['night']} | {_f(c['eps_lb'])} | {c['status']} | {_f(m.get('epsilon_lower_bound'))} "
                     f"({m.get('name')}) | {above} | {violations} | {controls} | {n['seconds']} | {n['exit_code']} |")
    not_global = [n for n in nights if n[LEAK]["status"] != "VIOLATION"]
    caught = [n for n in not_global if (n[LEAK]["leaky"] or {}).get("status") == "VIOLATION"]
    trusted = [n for n in caught if n[LEAK]["leaky"]["trust"] == "trusted"]
    exceed = sum(bool(n[COMPLIANT]["above"]) for n in nights)
    pvalue = stats.binomtest(exceed, len(nights), 0.05, alternative="greater").pvalue if nights else float("nan")
    first = nights[0][LEAK] if nights else {}
    ceiling = [n[CEILING]["leaky"]["epsilon_lower_bound"] for n in nights if n[CEILING]["leaky"]]
    g = [n[CEILING]["status"] == "VIOLATION" for n in nights]
    t = [n[CEILING]["status"] == "VIOLATION" and n[CEILING]["trust"] == "trusted" for n in nights]
    missed = [n for n, v in zip(nights, g, strict=True) if not v and n[CEILING]["violations"]]
    flagged = [v for n in nights for v in n[CEILING]["violations"]]
    lines += ["", f"Slices declared per target: {first.get('declared')}, each at confidence "
              f"{_f(first.get('confidence'), 5)}.",
              f"Leak caught by its slice (slice VIOLATION) on {len(caught)} of {len(not_global)} nights whose global "
              f"verdict is not a VIOLATION (of {len(nights)} nights; trusted: {len(trusted)}).",
              f"Compliant: a slice's valid bound above the true eps 1 on {exceed} of {len(nights)} nights (budget 5%; "
              f"one-sided binomial p-value {pvalue:.3g}).",
              f"`{CEILING}` (every label in the clear) on the leaky slice: median bound "
              f"{_f(float(np.median(ceiling)) if ceiling else None)} (range {_f(min(ceiling, default=None))}-"
              f"{_f(max(ceiling, default=None))}), slice VIOLATION on "
              f"{sum((n[CEILING]['leaky'] or {}).get('status') == 'VIOLATION' for n in nights)} of {len(nights)} nights.",
              f"`{CEILING}` global VIOLATION on {sum(g)} of {len(nights)} nights (trusted {sum(t)}); a slice VIOLATION "
              f"on {sum(bool(n[CEILING]['violations']) for n in nights)} nights, {len(missed)} of them nights whose "
              f"global verdict is not a VIOLATION; its slice VIOLATIONs trusted: "
              f"{sum(v['trust'] == 'trusted' for v in flagged)} of {len(flagged)} (check rows "
              f"{min((v['check_rows'] for v in flagged), default=0)}-{max((v['check_rows'] for v in flagged), default=0)})."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="directory with X_train.csv.gz and y_train.csv.gz")
    parser.add_argument("--seeds", default="0,1,2,3", help="shuffle seeds, comma-separated")
    parser.add_argument("--budget-minutes", type=float, help="start no night expected to end after this")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--column", default="hash_14")
    parser.add_argument("--value", help="the leaky value of --column (default its most frequent)")
    parser.add_argument("--slices", default="column:{column}:top=5,prior-deciles,shown-label")
    parser.add_argument("--no-controls", action="store_true", help="disable the nightly controls")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--raw", type=Path, help="append every night's JSON rows here")
    parser.add_argument("--from-raw", type=Path, help="only write the tables of the nights stored by --raw")
    args = parser.parse_args()
    frame = base._read(args.data)
    shares = frame[args.column].value_counts(normalize=True)
    value = args.value or str(shares.index[0])
    print(f"{args.column}: {frame[args.column].nunique()} values; top shares "
          + ", ".join(f"{v} {s:.1%}" for v, s in shares.head(5).items())
          + f"; leaky value {value} ({shares[value]:.1%}, click rate "
            f"{frame.loc[frame[args.column] == value, 'click'].mean():.3f})", flush=True)
    slices = args.slices.format(column=args.column).split(",")
    leaky_slice = f"{args.column}={value}"
    if args.from_raw:
        stored = [json.loads(line) for line in args.from_raw.read_text().splitlines() if line]
        text = report([summarise(n["rows"], n["night"], leaky_slice) for n in stored], leaky_slice)
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
        return
    started, nights = time.monotonic(), []
    for seed in [int(s) for s in args.seeds.split(",") if s]:
        elapsed = time.monotonic() - started
        if args.budget_minutes and nights and elapsed + elapsed / len(nights) > 60 * args.budget_minutes:
            break
        with tempfile.TemporaryDirectory() as work:
            rows = base.night(frame, seed, args.repetitions, Path(work), targets=TARGETS,
                              labels_for=leak_on(args.column, value),
                              plan_extra={"slices": list(slices), "controls": {"enabled": not args.no_controls}})
        if args.raw:
            with args.raw.open("a") as f:
                f.write(json.dumps({"night": f"shuffle {seed}", "rows": rows}) + "\n")
        nights.append(summarise(rows, f"shuffle {seed}", leaky_slice))
        print(report(nights, leaky_slice), flush=True)
    wall = time.monotonic() - started
    text = report(nights, leaky_slice) + f"\n\n{len(nights)} nights in {wall / 60:.1f} min wall time."
    print(text.splitlines()[-1])
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
