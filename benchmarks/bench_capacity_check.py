"""Trust rules compared on seeded segment worlds with a known truth (tests/support/segment_worlds.py): how
often a VIOLATION of a private target comes out trusted (it must not, beyond 5%), and how often a real leak does
(it should).

Per night: one segment world (125 segments, drift on some of them that the reference's global correction cannot
see), its target audited with `auditing.audit.run_audit` (binomial, bonferroni, 95%, kappa 0, repetition 0
only, game seed = night), claim = the private targets' true eps (0.3 unless stated). Four rules decide whether
a VIOLATION is trusted:

- ``audit alone``: every VIOLATION (what kappa = 0 promises when the reference is right);
- ``label-blind control``: the rule the capacity check replaced: trusted unless the night's label-blind control
  (tests/support/segment_worlds.py's stand-in, trained on the check rows only) has a positive valid bound;
- ``count rule``: the first formulation examined, E[C_audited] <= (m_A / m_H)(e^eps E[C0_H] + E[C1_H]), tested
  on the bound half against the check rows at the capacity check's own threshold, with Clopper-Pearson limits
  (gamma / 4 on the audited rate, 3 gamma / 8 on each check rate); written here, not in the product;
- ``trained-count rule``: its sharper-looking variant on "trained" guesses only (the counterfactual half cancels
  in expectation), E[C0_audited] <= e^eps (m_A / m_H) E[C0_H] (gamma / 4 and 3 gamma / 4);
- ``capacity check``: the product's rule, epsilon_check > claim (auditing/verdict/capacity_check.py).

    NUMBA_CACHE_DIR=$PWD/.venv/numba-cache .venv/bin/python benchmarks/bench_capacity_check.py --nights 200 \
        --out benchmarks/results/capacity_check.md
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.play import as_class_probabilities, secret_bits_and_released
from auditing.game.scores import paper_score
from auditing.game.slots import selection_half_mask
from auditing.result import CapacityCheck
from tests.support.segment_worlds import World, night

SCENARIOS = {
    "private eps 0.3, drift +1.5 on 10% of segments": dict(),
    "private eps 0.3, memorising its noisy labels (w = 0.5)": dict(memorize=0.5),
    "private eps 0.3, drift +2.5 on 30%, memorising": dict(drift=2.5, drifted_share=0.3, memorize=0.5),
    "private eps 1 (claim 1), drift +2.5 on 30%, memorising": dict(epsilon=1.0, drift=2.5, drifted_share=0.3,
                                                                  memorize=0.5),
    "private eps 0.3, drift +2.5 on 30%, memorising (w = 0.9)": dict(drift=2.5, drifted_share=0.3, memorize=0.9),
    "private eps 0.3, 5 classes, memorising (w = 0.3)": dict(classes=5, click_rate=0.03, memorize=0.3),
    "non-private, memorising (w = 0.05): a real leak": dict(private=False, memorize=0.05),
    "non-private, memorising (w = 0.3): a real leak": dict(private=False, memorize=0.3),
}
GAMMA = 0.05


def _game(p_target, p_reference, labels, ids, seed):
    """Repetition 0's score, correctness and secret bit per row (the game's own keyed draws)."""
    target = as_class_probabilities(p_target, "p_target")
    reference = as_class_probabilities(p_reference, "p_reference")
    bit, released = secret_bits_and_released(reference, labels, ids, seed=seed, repetition=0)
    rows = np.arange(labels.size)
    s = paper_score(target[rows, released], reference[rows, released])
    correct = (~(s > 0)) == bit
    return s, correct, bit


def count_rules_trust(world: World, check: CapacityCheck, seed: int, claim: float) -> tuple[bool, bool]:
    """The count formulation and its trained-only variant at the capacity check's threshold (module docstring)."""
    if not check.checked or check.threshold_score is None:
        return False, False
    p_t, p_r, y, ids = world.audited
    s, correct, _ = _game(p_t, p_r, y, ids, seed)
    bound_half = ~selection_half_mask(ids, seed)
    t = check.threshold_score
    _, _, bit = _game(p_t, p_r, y, ids, seed)
    c_a, m_a = int((correct & bound_half & (np.abs(s) >= t)).sum()), int(bound_half.sum())
    c_a0 = int((correct & bound_half & (np.abs(s) >= t) & ~bit).sum())
    cw = world.check
    s_h, correct_h, bit_h = _game(cw.p_target, cw.p_reference, np.asarray(cw.labels), np.asarray(cw.row_ids), seed)
    guessed = np.abs(s_h) >= t
    c0, c1, m_h = int((correct_h & guessed & ~bit_h).sum()), int((correct_h & guessed & bit_h).sum()), s_h.size
    lower = special.betaincinv(c_a, m_a - c_a + 1, GAMMA / 4) if c_a else 0.0
    upper = [special.betaincinv(c + 1, m_h - c, 1 - 3 * GAMMA / 8) if c < m_h else 1.0 for c in (c0, c1)]
    lower0 = special.betaincinv(c_a0, m_a - c_a0 + 1, GAMMA / 4) if c_a0 else 0.0
    upper0 = special.betaincinv(c0 + 1, m_h - c0, 1 - 3 * GAMMA / 4) if c0 < m_h else 1.0
    return bool(lower > math.exp(claim) * upper[0] + upper[1]), bool(lower0 > math.exp(claim) * upper0)


def run(nights: int) -> list[dict]:
    rows = []
    for label, world_args in SCENARIOS.items():
        claim = world_args.get("epsilon", 0.3)
        private = world_args.get("private", True)
        counts = dict(violation=0, blind=0, count=0, trained=0, capacity=0)
        started = time.monotonic()
        for seed in range(nights):
            world = night(5000 + seed, **world_args)
            game, bound = GameConfig(repetitions=1, seed=seed), BoundConfig()
            result = run_audit(*world.audited, game=game, bound=bound, check=world.check)
            if result.epsilon_lower_bound <= claim:
                continue
            counts["violation"] += 1
            blind = run_audit(world.label_blind, *world.audited[1:], game=game, bound=bound)
            counts["blind"] += blind.epsilon_lower_bound == 0.0
            check = result.capacity_check
            count, trained = count_rules_trust(world, check, seed, claim)
            counts["count"] += count
            counts["trained"] += trained
            counts["capacity"] += check.vouches_for(claim)
        rows.append(dict(scenario=label, private=private, claim=claim, nights=nights, **counts,
                         seconds=round(time.monotonic() - started, 1)))
        print(rows[-1], flush=True)
    return rows


def _rate(k: int, n: int) -> str:
    lo = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} ({100 * k / n:.0f}%, {100 * lo:.0f}-{100 * hi:.0f}%)"


def table(rows: list[dict]) -> str:
    lines = ["| scenario | VIOLATIONs (audit alone) | trusted: label-blind control | trusted: count rule | "
             "trusted: trained-count rule | trusted: capacity check |", "|---|---|---|---|---|---|"]
    for r in rows:
        n = r["nights"]
        lines.append(f"| {r['scenario']} | {_rate(r['violation'], n)} | {_rate(r['blind'], n)} | "
                     f"{_rate(r['count'], n)} | {_rate(r['trained'], n)} | {_rate(r['capacity'], n)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nights", type=int, default=200)
    parser.add_argument("--out", type=Path, help="write the markdown table here")
    args = parser.parse_args()
    rows = run(args.nights)
    text = table(rows)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
