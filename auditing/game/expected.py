"""The observational game's EXPECTED outcome (paper Alg. 2): expected correct guesses per |score| bin and over a
guess grid, as a function of the models and labels only (no draw of any repetition), so a figure derived from it
is pre-registered. Used by the positive control's floor (`auditing.verdict.controls`) and the game-aware detection floor
(`auditing.verdict.exposure_floor`).
"""

from __future__ import annotations

import numpy as np

from auditing.game.sweep_reduce import BinSpec, bin_index
from auditing.records.game import ExpectedCorrect


def expected_histogram(p_target: np.ndarray, p_reference: np.ndarray, labels: np.ndarray, score,
                       spec: BinSpec, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The game's EXPECTED |score| histogram: (expected rows, expected correct guesses) per `spec` bin.

    Per row, Alg. 2 has 1 + k outcomes: b = 0 (prob 1/2) releases y0; b = 1 with y1 = j (prob M'(x)[j] / 2)
    releases j. Each outcome's score s = score(M(x)[y], M'(x)[y]) is fixed by the row, the guess is b' = 0
    iff s > 0, and it is correct iff b' = b. Summing the outcome probabilities per |score| bin gives the
    expectation over the game's coins (y1, b) given the models and labels: it uses no draw of any repetition,
    so a figure derived from it is pre-registered. Histograms of disjoint row chunks add (Beam combiner).
    weights: optional per-row multiplicities (default 1 each), e.g. to stand for a population of rows.
    """
    n, k = p_target.shape
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.zeros(spec.num_bins)
    hits = np.zeros(spec.num_bins)
    index = np.arange(n)
    s0 = np.asarray(score(p_target[index, labels], p_reference[index, labels]), dtype=np.float64)
    b0 = bin_index(s0, spec)
    rows += np.bincount(b0, weights=0.5 * w, minlength=spec.num_bins)
    hits += np.bincount(b0, weights=np.where(s0 > 0, 0.5 * w, 0.0), minlength=spec.num_bins)
    for j in range(k):
        sj = np.asarray(score(p_target[:, j], p_reference[:, j]), dtype=np.float64)
        bj = bin_index(sj, spec)
        weight = 0.5 * p_reference[:, j] * w
        rows += np.bincount(bj, weights=weight, minlength=spec.num_bins)
        hits += np.bincount(bj, weights=np.where(sj > 0, 0.0, weight), minlength=spec.num_bins)
    return rows, hits


def expected_correct_at(rows, correct, grid) -> np.ndarray:
    """Expected correct guesses among the top c' rows for each c' of `grid`, from an expected histogram
    (bins ascending in |score|; the attacker takes bins from the top, linearly within the cut bin)."""
    rows_desc = np.asarray(rows, dtype=np.float64)[::-1]
    correct_desc = np.asarray(correct, dtype=np.float64)[::-1]
    cum_rows = np.concatenate(([0.0], np.cumsum(rows_desc)))
    cum_correct = np.concatenate(([0.0], np.cumsum(correct_desc)))
    grid = np.minimum(np.asarray(grid, dtype=np.float64), cum_rows[-1])
    return np.interp(grid, cum_rows, cum_correct)


def expected_correct_record(p_target, p_reference, labels, score, grid,
                            spec: BinSpec | None = None) -> ExpectedCorrect:
    """The expected correct guesses at each point of ``grid`` (AuditResult.expected_correct)."""
    spec = spec or BinSpec()
    rows, hits = expected_histogram(p_target, p_reference, labels, score, spec)
    return expected_record(rows, hits, grid)


def expected_record(rows, hits, grid) -> ExpectedCorrect:
    grid = np.asarray(grid, dtype=np.int64)
    return ExpectedCorrect(guesses=tuple(grid.tolist()),
                           correct=tuple(float(v) for v in expected_correct_at(rows, hits, grid)))
