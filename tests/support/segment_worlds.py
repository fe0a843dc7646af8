"""Seeded segment worlds with a known truth, for the capacity check's tests and benchmark
(tests/support/capacity_nights.py, benchmarks/bench_capacity_check.py). Nothing here comes from the code under test.

Rows fall into segments (the features); each segment has a label law D(. | segment); day D moves some segments'
logits (drift the reference does not know). Every learner is a stand-in written here:

- the reference M': the previous day's per-segment frequencies, corrected on the day's calibration rows by a
  global per-class intercept (a correction that cannot see segment drift: its misfit on the drifted segments is
  the point);
- the target: k-ary randomized response at a known eps on the audited rows' labels, then per-segment debiased
  frequencies (eps-label-DP by post-processing), optionally memorising its own noisy training label on its
  training rows (output = (1 - w) * segment estimate + w * one-hot(released label), still eps-label-DP); or the
  same without the noise (non-private, a real leak);
- the label-blind stand-in (the control the capacity check replaced): per-segment frequencies of the check rows,
  shrunk toward the reference's by 20 pseudo-rows: it never saw an audited label.

Roles: 80% audited (the target's training rows), 8% calibration (the reference's correction), 8% check rows
(the label-blind stand-in's rows), 4% unused. With ``correction_rows="training"`` (the nightly's rule since
2026-11-29) the calibration rows are training rows too: the target trains (and memorises) on them, and they are
left out of the audited rows, as the nightly leaves its correction's share out of every game.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from auditing.audit import CheckRows


@dataclass(frozen=True)
class World:
    """One night: the audited rows (target's training rows) and the check rows, with both models' outputs."""

    audited: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # p_target, p_reference, labels, row_ids
    check: CheckRows
    true_epsilon: float
    label_blind: np.ndarray  # the label-blind stand-in's probabilities on the audited rows (same shape as p_target)


def _softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def night(seed: int, *, classes: int = 2, rows: int = 100_000, segments: int = 125, drift: float = 1.5,
          drifted_share: float = 0.1, epsilon: float = 0.3, memorize: float = 0.0, private: bool = True,
          click_rate: float = 0.04, correction_rows: str = "heldout") -> World:
    """A seeded night (module docstring). ``epsilon`` is the target's true eps (inf when not ``private``)."""
    rng = np.random.default_rng(seed)
    k = classes
    base = np.zeros((segments, k))
    base[:, 1:] = rng.normal(math.log(click_rate), 0.8, (segments, k - 1))  # class 0 is the common "no click"
    drifted = rng.random(segments) < drifted_share
    today = base.copy()
    today[drifted, 1:] += drift
    law_prev, law = _softmax(base), _softmax(today)

    def draw(segment, table):
        cdf = np.cumsum(table[segment], axis=1)
        return (rng.random(segment.size)[:, None] > cdf[:, :-1]).sum(axis=1)

    seg_prev = rng.integers(0, segments, rows)
    y_prev = draw(seg_prev, law_prev)
    seg = rng.integers(0, segments, rows)
    y = draw(seg, law)
    role = rng.choice(4, rows, p=[0.8, 0.08, 0.08, 0.04])  # audited, calibration, check, unused
    audited, calibration, check = role == 0, role == 1, role == 2
    if correction_rows not in ("heldout", "training"):
        raise ValueError(f"correction_rows must be heldout or training; got {correction_rows!r}")
    trained = audited | calibration if correction_rows == "training" else audited  # the target's training rows

    # The reference: yesterday's smoothed frequencies, then a global per-class intercept fitted on the
    # calibration rows (a few Newton-free multiplicative steps to match the class totals).
    counts_prev = np.zeros((segments, k))
    np.add.at(counts_prev, (seg_prev, y_prev), 1.0)
    ref_logits = np.log((counts_prev + 0.5) / (counts_prev.sum(axis=1, keepdims=True) + 0.5 * k))
    shift = np.zeros(k)
    for _ in range(50):
        p = _softmax(ref_logits[seg[calibration]] + shift)
        observed = np.bincount(y[calibration], minlength=k)
        shift += np.log((observed + 0.5) / (p.sum(axis=0) + 0.5))
    p_reference = _softmax(ref_logits[seg] + shift)

    # The target.
    if private:
        keep = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
        flip = rng.random(rows) >= keep
        other = (y + 1 + rng.integers(0, k - 1, rows)) % k
        released = np.where(flip, other, y)
    else:
        released = y
    counts = np.zeros((segments, k))
    np.add.at(counts, (seg[trained], released[trained]), 1.0)
    freq = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    if private:  # debias k-ary RR: E[freq] = keep * D + (1 - keep) / (k - 1) * (1 - D)
        freq = (freq - (1 - keep) / (k - 1)) / (keep - (1 - keep) / (k - 1))
    estimate = np.clip(freq, 0.002, None)
    estimate /= estimate.sum(axis=1, keepdims=True)
    p_target = estimate[seg].copy()
    if memorize:
        one_hot = np.eye(k)[released[trained]]
        p_target[trained] = (1 - memorize) * p_target[trained] + memorize * one_hot
    p_target = np.clip(p_target, 1e-4, None)
    p_target /= p_target.sum(axis=1, keepdims=True)
    ids = np.arange(rows, dtype=np.int64) * 11 + 5

    def columns(mask):
        out_t, out_r = p_target[mask], p_reference[mask]
        if k == 2:
            out_t, out_r = out_t[:, 1], out_r[:, 1]
        return out_t, out_r, y[mask], ids[mask]

    counts_check = np.zeros((segments, k))
    np.add.at(counts_check, (seg[check], y[check]), 1.0)
    prior = _softmax(ref_logits + shift)
    blind = (counts_check + 20.0 * prior) / (counts_check.sum(axis=1, keepdims=True) + 20.0)
    p_blind = blind[seg[audited]]
    return World(columns(audited), CheckRows(*columns(check)), epsilon if private else math.inf,
                 p_blind[:, 1] if k == 2 else p_blind)
