"""Seeded worlds where a private model memorises its training rows while its outputs on unseen rows do not follow
the day, and the reference misfits in one direction: the construction that broke the capacity check's assumption T
(docs/soundness.md section 8.6). Nothing here comes from the code under test; the truth (the day's label law D, the
reference D', every row's misfit-only accuracy) is known.

Rows fall into segments (the features). Yesterday's law per segment is known to the reference M'; today's law moves
by a misfit the reference does not know: ``shift`` in click logit on every segment (``segment_share`` = 1) or on a
random share of them, optionally on the morning's rows only (``morning_only``: the rows carry an ``hour``). A
reference can also be over- or under-confident (``confidence``: its logits are the truth's spread times this).

The target, a learner warm-started from the reference:

- private (``epsilon`` finite): each training row's label goes through k-ary randomized response at ``epsilon``;
  on its training rows it memorises that noisy label (its logit moves ``memorise`` toward it; with
  ``clicks_only``, only a noisy label other than class 0, as a model overfitting its rare positives); on every row it
  multiplies the reference's odds by a label-free factor per segment. Its output on a training row depends on that
  row's label only through the noisy label, so it is exactly ``epsilon``-label-DP (post-processing);
- non-private (``epsilon`` = inf): the same with the true labels, a real leak;
- ``follow``: the share of the day's misfit its outputs on every row move toward (0: they do not follow the day);
- ``additive``: the label-free move is also a per-segment shift of the click probability itself (standard
  deviation ``additive``), so that on unseen rows it sits above or below the reference by as much either way.

Check rows are a uniformly random share of the day (``check_share``), or the afternoon (``afternoon_check``: a
split that is not random), and never trained the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from auditing.audit import CheckRows


@dataclass(frozen=True)
class MemorisingNight:
    """One night: the audited rows (the target's training rows) and the check rows, with both models' outputs,
    the truth's probabilities, the features (segment, hour) and the target's true eps."""

    audited: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # p_target, p_reference, labels, row_ids
    check: CheckRows
    true_epsilon: float
    truth_audited: np.ndarray  # D(. | x) on the audited rows (class-1 column when binary)
    truth_check: np.ndarray
    segment_audited: np.ndarray
    segment_check: np.ndarray
    hour_audited: np.ndarray
    hour_check: np.ndarray


def _softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def memorising_night(seed: int, *, rows: int = 110_000, check_share: float = 10_000 / 110_000,
                     classes: int = 2, segments: int = 125, click_rate: float = 0.04, shift: float = 1.0,
                     segment_share: float = 1.0, morning_only: bool = False, confidence: float = 1.0,
                     epsilon: float = 1.0, memorise: float = 3.0, factor_sd: float = 0.5, follow: float = 0.0,
                     afternoon_check: bool = False, additive: float = 0.0,
                     clicks_only: bool = False) -> MemorisingNight:
    """A seeded night (module docstring)."""
    rng = np.random.default_rng(seed)
    k = classes
    base = np.zeros((segments, k))
    base[:, 1:] = rng.normal(math.log(click_rate), 0.8, (segments, k - 1))  # class 0 is the common "no click"
    moved = rng.random(segments) < segment_share
    seg = rng.integers(0, segments, rows)
    hour = rng.integers(0, 24, rows)
    morning = hour < 12
    misfit = np.zeros((rows, k))
    misfit[:, 1:] = shift * (moved[seg] & (morning | (not morning_only)))[:, None]
    truth = _softmax(base[seg] + misfit)
    cdf = np.cumsum(truth, axis=1)
    y = (rng.random(rows)[:, None] > cdf[:, :-1]).sum(axis=1)

    # The reference: yesterday's law, its spread scaled by ``confidence`` around the class means.
    mean = base.mean(axis=0)
    ref_logits = mean + confidence * (base - mean)
    p_reference = _softmax(ref_logits[seg])

    if afternoon_check:
        check = ~morning & (rng.random(rows) < 2 * check_share)
    else:
        check = rng.random(rows) < check_share
    audited = ~check

    if math.isfinite(epsilon):
        keep = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
        flip = rng.random(rows) >= keep
        other = (y + 1 + rng.integers(0, k - 1, rows)) % k
        noisy = np.where(flip, other, y)
    else:
        noisy = y
    factor = rng.normal(0.0, factor_sd, (segments, k))
    factor[:, 0] = 0.0
    logits = ref_logits[seg] + factor[seg] + follow * misfit
    if additive:  # a label-free move of the click probability itself, symmetric in probability (binary only)
        p1 = _softmax(logits)[:, 1] + rng.normal(0.0, additive, segments)[seg]
        p1 = np.clip(p1, 1e-3, 1 - 1e-3)
        logits = np.stack([np.zeros(rows), np.log(p1) - np.log1p(-p1)], axis=1)
    memorised = logits.copy()
    memorised[np.arange(rows), noisy] += np.where(clicks_only & (noisy == 0), 0.0, memorise)
    target_logits = np.where(audited[:, None], memorised, logits)
    p_target = _softmax(target_logits)
    ids = np.arange(rows, dtype=np.int64) * 7 + 3

    def columns(mask):
        out_t, out_r = p_target[mask], p_reference[mask]
        if k == 2:
            out_t, out_r = out_t[:, 1], out_r[:, 1]
        return out_t, out_r, y[mask], ids[mask]

    def truth_of(mask):
        return truth[mask, 1] if k == 2 else truth[mask]

    return MemorisingNight(columns(audited), CheckRows(*columns(check)), epsilon, truth_of(audited),
                           truth_of(check), seg[audited], seg[check], hour[audited], hour[check])
