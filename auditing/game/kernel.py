"""The game of paper Algorithm 2 (Sec. 6.2) compiled: keyed draws, counterfactual, secret bit and score bins.

`auditing.game.play.play_repetition` plays one repetition with numpy: two keyed uniforms per row
(`auditing.game.keyed_random`), the counterfactual label by inverse CDF, the bit b, the score of the released label
and the guess b' = 0 where the score is > 0. The audit needs, per repetition, only |score|-bin histograms of
rows and correct guesses (`auditing.game.sweep_reduce`) plus the few rows of the bins the guess grid cuts (and, for
repetition 0's attack curve, its rows per octave, sign of the score and coin: `signed_outcomes`). This
module computes exactly those with numba kernels, parallel over sweeps ("slots": a repetition, or one half of
repetition 0 for the split strategy), without any per-repetition array of size n.

Bit-for-bit the same game as the numpy path:

- the uniforms are the same SplitMix64 words: the per-(seed, repetition, stream) key words come from
  `auditing.game.keyed_random.key_word` itself and the row mix is the same integer arithmetic, so every uniform is
  the same double (tests/auditing/game/test_kernel.py);
- the counterfactual compares the same uniform with the same numbers: p_reference[:, 1] for binary models, the
  reference's row CDF (`np.cumsum`, last column set to 1, as in `auditing.game.play.sample_counterfactual`) for k
  classes;
- a row's score depends on the row and the released label only, so the score of each (row, class) is computed
  once, by the same numpy function on the same doubles (`auditing.game.scores`), and its bin by
  `auditing.game.sweep_reduce.bin_index`; the kernels look them up. A custom score callable is not elementwise by
  contract, so callers keep the numpy path for it (`compiled_score`).

Tables are O(n x k) per batch and computed once for all repetitions; the kernels add into O(slots x bins)
histograms and return only boundary rows.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from numba import njit, prange

from auditing.game.keyed_random import STREAM_BIT, STREAM_COUNTERFACTUAL, key_word
from auditing.game.play import GameRows
from auditing.game.scores import SCORES
from auditing.game.sweep_reduce import BinSpec
from labeldp.errors import LabelDPInputError

__all__ = [
    "BoundaryRows",
    "GameTables",
    "SignedCounts",
    "SlotKeys",
    "boundary_rows",
    "compiled_score",
    "game_tables",
    "play",
    "released_labels",
    "signed_outcomes",
    "slot_histograms",
    "slot_keys",
]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_ONE = np.uint64(1)
_S63 = np.uint64(63)
_TWO_POW_53 = 9007199254740992.0
_TWO_POW_MINUS_53 = 1.0 / _TWO_POW_53


def compiled_score(score) -> bool:
    """True when the kernels can play the game with this score: a built-in score name (`auditing.game.scores.SCORES`).

    A callable may look at its whole input arrays, so only the numpy path (`auditing.game.play.play_repetition`)
    reproduces it; callers fall back to that path and say so.
    """
    return isinstance(score, str) and score in SCORES


# ------------------------------------------------------------------------------------------ kernels


@njit(cache=True, nogil=True)
def _mix64(z):
    """SplitMix64 finalizer, the same wrapping arithmetic as `auditing.game.keyed_random.mix64`."""
    z = z + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, nogil=True)
def _mixed(id_bits, key):
    """The keyed 64-bit word of a row: two chained SplitMix64 mixes (`auditing.game.keyed_random.keyed_uniform`)."""
    return _mix64(_mix64(id_bits ^ key) + key)


@njit(cache=True, parallel=True)
def _below_half(id_bits, key, out):
    for i in prange(id_bits.size):
        out[i] = (_mixed(id_bits[i], key) >> _S63) == 0


def keyed_below_half(row_ids: np.ndarray, key: np.uint64) -> np.ndarray:
    """keyed_uniform(...) < 1/2 per row for the key word ``key`` (`auditing.game.keyed_random.key_word`), exactly:
    u < 1/2 iff the mixed word's top bit is 0. One compiled pass instead of numpy's temporaries."""
    ids = np.ascontiguousarray(row_ids, dtype=np.int64).view(np.uint64)
    out = np.empty(ids.size, np.bool_)
    _below_half(ids, np.uint64(key), out)
    return out


@njit(cache=True, nogil=True)
def _word(id_bits, key):
    """The 53-bit integer m of the keyed uniform u = m * 2**-53: the word's top 53 bits."""
    return _mixed(id_bits, key) >> _S11


@njit(cache=True, nogil=True)
def _uniform(id_bits, key):
    """`auditing.game.keyed_random.keyed_uniform` for one row: m * 2**-53."""
    return np.float64(_word(id_bits, key)) * _TWO_POW_MINUS_53


@njit(cache=True, nogil=True)
def _bit(id_bits, key):
    """b = 1 iff u < 1/2, i.e. iff m < 2**52, i.e. iff the mixed word's top bit is 0 (no float conversion)."""
    return np.int64(1) - np.int64(_mixed(id_bits, key) >> _S63)


@njit(cache=True, nogil=True)
def _released(i, id_bits, labels, threshold, cdf, binary, key_cf, key_bit):
    """(released label, b) of row i: y1 by inverse CDF on the counterfactual uniform, b = 1 iff u_bit < 1/2.

    Binary models compare integers: u < p  <=>  m < ceil(p * 2**53) (`threshold_bits`), exactly, as m is an
    integer and scaling by 2**53 is exact. Branch-free where the outcome is a coin flip (a mispredicted branch
    per row costs more than the draws).
    """
    if binary:
        y1 = np.int64(_word(id_bits[i], key_cf) < threshold[i])
    else:
        u = _uniform(id_bits[i], key_cf)
        y1 = np.int64(0)
        for j in range(cdf.shape[1]):
            y1 += np.int64(cdf[i, j] <= u)
    bit = _bit(id_bits[i], key_bit)
    label = labels[i]
    return label + bit * (y1 - label), bit


@njit(cache=True, nogil=True)
def _in_slot(i, half, selection):
    """Half -1: every row; half 0: rows of the selection half; half 1: the other rows."""
    return half < 0 or selection[i] == (half == 0)


# Rows per block of the histogram kernel: a block's outcomes are computed in one branch-free loop (which the
# compiler vectorizes: the keyed draws are most of the arithmetic), then added to the histogram in a second loop
# (scattered increments, which do not vectorize).
_BLOCK = 1024
_LOW_32 = np.int64(0xFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _binary_code_bit(x, threshold, label, code0, code1, kc, kb):
    """(code of the released label, coin b) of one row of a binary model, branch-free (`_released`'s integer
    comparison): the step the histogram and signed kernels' blocks share."""
    y1 = np.int64(_word(x, kc) < threshold)
    bit = _bit(x, kb)
    released = label + bit * (y1 - label)
    first = np.int64(code0)
    return first + released * (np.int64(code1) - first), bit


@njit(cache=True, nogil=True)
def _binary_outcomes(id_bits, threshold, labels, code0, code1, selection, kc, kb, every, wanted, outside, out):
    """out[i] = bin << 1 | correct of each row of a binary model's block (`_histograms_kernel`); ``outside`` for
    a row outside the slot's half. Branch-free over contiguous columns, so that the loop vectorizes (a
    mispredicted branch per row costs more than the draws)."""
    for i in range(id_bits.size):
        code, bit = _binary_code_bit(id_bits[i], threshold[i], labels[i], code0[i], code1[i], kc, kb)
        inside = every | (selection[i] == wanted)
        out[i] = (code ^ bit) if inside else outside


# nogil: the Beam job plays pass 1 on a background thread while its main thread prepares the next batch.
@njit(cache=True, parallel=True, nogil=True)
def _histograms_kernel(id_bits, labels, threshold, cdf, binary, codes, code0, code1, key_cf, key_bit, slot_half,
                       selection, packed, out_slot, rows, correct):
    """Sets packed[s, b] to slot s's rows + (correct guesses << 32) in bin b, over the rows given (fewer than
    2**32, so that neither count overflows its half); packed[s, num_bins] collects the rows outside the slot's half.
    Then adds the two halves to rows[out_slot[s]] and correct[out_slot[s]] (on the slot's thread, while its
    histogram is in cache).

    A row's outcome is v = bin << 1 | correct, i.e. code ^ b: b' = 1 - (code & 1) (b' = 0 where the score is
    > 0) and the guess is correct iff b' == b. One increment per row and slot, into a histogram that stays in
    cache.
    """
    n = id_bits.size
    num_bins = packed.shape[1] - 1
    outside = np.int64(num_bins) << 1
    for s in prange(key_cf.size):
        kc = key_cf[s]
        kb = key_bit[s]
        every = slot_half[s] < 0
        wanted = slot_half[s] == 0
        local = packed[s]
        local[:] = 0
        outcome = np.empty(_BLOCK, np.int64)
        for start in range(0, n, _BLOCK):
            stop = min(start + _BLOCK, n)
            if binary:
                _binary_outcomes(id_bits[start:stop], threshold[start:stop], labels[start:stop], code0[start:stop],
                                 code1[start:stop], selection[start:stop], kc, kb, every, wanted, outside, outcome)
            else:
                for i in range(start, stop):
                    if not (every or selection[i] == wanted):
                        outcome[i - start] = outside
                        continue
                    released, bit = _released(i, id_bits, labels, threshold, cdf, binary, kc, kb)
                    outcome[i - start] = np.int64(codes[i, released]) ^ bit
            for j in range(stop - start):
                v = outcome[j]
                local[v >> 1] += 1 + ((v & 1) << 32)
        dest = out_slot[s]
        for b in range(num_bins):
            rows[dest, b] += local[b] & _LOW_32
            correct[dest, b] += local[b] >> 32


# nogil: as `_histograms_kernel`.
@njit(cache=True, parallel=True, nogil=True)
def _halves_kernel(id_bits, labels, threshold, cdf, binary, codes, code0, code1, kc, kb, selection, chunk, packed,
                   group, signed):
    """The two keyed halves of one repetition in one pass of its draws: packed[c, h, b] = rows + (correct guesses
    << 32) in bin b of half h (0: the selection half, 1: the other rows) among rows c * chunk .. (c + 1) * chunk - 1.
    The same outcomes as `_histograms_kernel`'s slots of half 0 and half 1 with these keys; parallel over row
    chunks, whose sum does not depend on the threads. With a non-empty ``signed`` ((chunks, groups * 4)), the
    same rows are also counted as `_signed_kernel` counts them (the repetition's attack-curve counts)."""
    n = id_bits.size
    with_signed = signed.size > 0
    for c in prange(packed.shape[0]):
        local = packed[c]
        local[:] = 0
        if with_signed:
            signed[c, :] = 0
        outcome = np.empty(_BLOCK, np.int64)
        for start in range(c * chunk, min(n, (c + 1) * chunk), _BLOCK):
            stop = min(start + _BLOCK, n, (c + 1) * chunk)
            # outcome: code << 1 | b of each row (as `_signed_kernel`); its histogram outcome is code ^ b.
            _signed_block(start, stop, id_bits, labels, threshold, cdf, binary, codes, code0, code1, kc, kb, outcome)
            for j in range(stop - start):
                x = outcome[j]
                v = (x >> 1) ^ (x & 1)
                local[1 - np.int64(selection[start + j]), v >> 1] += 1 + ((v & 1) << 32)
            if with_signed:
                for j in range(stop - start):
                    x = outcome[j]
                    signed[c, (group[x >> 2] * 2 + ((x >> 1) & 1)) * 2 + (x & 1)] += 1


@njit(cache=True, nogil=True)
def _binary_signed(id_bits, threshold, labels, code0, code1, kc, kb, out):
    """out[i] = code << 1 | b of each row of a binary model's block (`_signed_kernel`): the released label's code
    (bin << 1 | s > 0) and the coin, branch-free over contiguous columns as `_binary_outcomes`."""
    for i in range(id_bits.size):
        code, bit = _binary_code_bit(id_bits[i], threshold[i], labels[i], code0[i], code1[i], kc, kb)
        out[i] = (code << 1) | bit


@njit(cache=True, nogil=True, inline="always")
def _signed_block(start, stop, id_bits, labels, threshold, cdf, binary, codes, code0, code1, kc, kb, outcome):
    """outcome[i - start] = code << 1 | b of rows start .. stop - 1: the released label's code and the coin (the
    step `_signed_kernel` and `_halves_kernel` share)."""
    if binary:
        _binary_signed(id_bits[start:stop], threshold[start:stop], labels[start:stop], code0[start:stop],
                       code1[start:stop], kc, kb, outcome)
    else:
        for i in range(start, stop):
            released, bit = _released(i, id_bits, labels, threshold, cdf, binary, kc, kb)
            outcome[i - start] = (np.int64(codes[i, released]) << 1) | bit


# nogil: the Beam job plays it with pass 1 on its background thread.
@njit(cache=True, parallel=True, nogil=True)
def _signed_kernel(id_bits, labels, threshold, cdf, binary, codes, code0, code1, group, key_cf, key_bit, block,
                   out):
    """Sets out[c, (group[bin] * 2 + (s > 0)) * 2 + b] to the rows of block c (rows c * block .. (c + 1) * block
    - 1) whose released label's score falls in that bin and sign and whose coin is b; one histogram per block, so
    the blocks run in parallel and their sum does not depend on the threads."""
    n = id_bits.size
    for c in prange(out.shape[0]):
        local = out[c]
        local[:] = 0
        outcome = np.empty(_BLOCK, np.int64)
        for start in range(c * block, min(n, (c + 1) * block), _BLOCK):
            stop = min(start + _BLOCK, n, (c + 1) * block)
            _signed_block(start, stop, id_bits, labels, threshold, cdf, binary, codes, code0, code1, key_cf, key_bit,
                          outcome)
            for j in range(stop - start):
                v = outcome[j]
                local[(group[v >> 2] * 2 + ((v >> 1) & 1)) * 2 + (v & 1)] += 1


@njit(cache=True, nogil=True)
def _binary_hits(id_bits, threshold, labels, own_sign, selection, kc, kb, j, half, hit, correct):
    """For a block of gathered rows whose class-j score falls in one bin: hit[t] = 1 where the row releases j and
    is in the slot's half, correct[t] = its guess is correct. Branch-free over contiguous columns, so that the loop
    vectorizes as `_binary_outcomes` does."""
    every = half < 0
    wanted = half == 0
    for t in range(id_bits.size):
        y1 = np.int64(_word(id_bits[t], kc) < threshold[t])
        bit = _bit(id_bits[t], kb)
        label = labels[t]
        released = label + bit * (y1 - label)
        inside = every | (selection[t] == wanted)
        hit[t] = np.int64((released == j) & inside)
        correct[t] = (1 - own_sign[t]) == bit


@njit(cache=True, parallel=True)
def _boundary_kernel(id_bits, labels, threshold, cdf, binary, own_sign, key_cf, key_bit, slot_half, selection,
                     cut_bins, cut_start, starts, block, offsets, fill, counts, row_of, id_of, score_of, out_row,
                     out_id, out_score, out_bin, out_correct):
    """Boundary rows of each slot. The row arrays are the candidate rows gathered once per class column j in
    bin order, so that rows j*C + (starts[j, b] .. starts[j, b + 1] - 1) are those whose class-j score falls in
    bin b (sequential memory access instead of a cache miss per row); own_sign is each gathered row's class-j
    code & 1 (score > 0), and row_of, id_of and score_of its position in the table, row id and class-j |score|.
    counts[s]: the rows found; with ``fill``, the first offsets[s + 1] - offsets[s] of them are written from
    offsets[s] on. A bin's rows are played ``block`` at a time: their outcomes first (vectorized for binary
    models), then the hits kept in order."""
    k = starts.shape[0]
    for s in prange(key_cf.size):
        kc = key_cf[s]
        kb = key_bit[s]
        half = slot_half[s]
        at = offsets[s]
        room = offsets[s + 1] - at if fill else 0
        found = 0
        hit = np.empty(block, np.int64)
        correct = np.empty(block, np.bool_)
        for c in range(cut_start[s], cut_start[s + 1]):
            b = cut_bins[c]
            # Rows whose class-j score falls in bin b; such a row is in bin b exactly when it releases j
            # (visiting it only through its released class counts every row once).
            for j in range(k):
                for start in range(starts[j, b], starts[j, b + 1], block):
                    stop = min(start + block, starts[j, b + 1])
                    if binary:
                        _binary_hits(id_bits[start:stop], threshold[start:stop], labels[start:stop],
                                     own_sign[start:stop], selection[start:stop], kc, kb, j, half, hit, correct)
                    else:
                        for i in range(start, stop):
                            released, bit = _released(i, id_bits, labels, threshold, cdf, binary, kc, kb)
                            hit[i - start] = np.int64((released == j) & _in_slot(i, half, selection))
                            correct[i - start] = (1 - own_sign[i]) == bit
                    if room == 0:
                        for t in range(stop - start):
                            found += hit[t]
                        continue
                    # Branch-free on the coin flips: a visited row is written at the next free place, which only
                    # a hit keeps (the test on room only fails after the slot's last hit).
                    for t in range(stop - start):
                        if found < room:
                            i = start + t
                            out_row[at + found] = row_of[i]
                            out_id[at + found] = id_of[i]
                            out_score[at + found] = score_of[i]
                            out_bin[at + found] = b
                            out_correct[at + found] = correct[t]
                        found += hit[t]
        counts[s] = found


@njit(cache=True, parallel=True)
def _play_kernel(id_bits, labels, threshold, cdf, binary, key_cf, key_bit, released_out, bit_out):
    for i in prange(id_bits.size):
        released, bit = _released(i, id_bits, labels, threshold, cdf, binary, key_cf, key_bit)
        released_out[i] = released
        bit_out[i] = bit == 1


# ------------------------------------------------------------------------------------------ tables


@dataclass(frozen=True)
class GameTables:
    """Per-batch inputs of the kernels, computed once for all repetitions (O(n x k)).

    codes[i, j] = bin(score(row i, released label j)) << 1 | (score > 0); threshold = `threshold_bits` of
    p_reference[:, 1] for binary models, cdf = the reference's row CDF for k classes (the unused one is empty).
    """

    p_target: np.ndarray  # (n, k) float64
    p_reference: np.ndarray  # (n, k) float64
    labels: np.ndarray  # (n,) int64
    row_ids: np.ndarray  # (n,) int64
    id_bits: np.ndarray  # row_ids viewed as uint64
    threshold: np.ndarray  # uint64 (threshold_bits)
    cdf: np.ndarray
    codes: np.ndarray  # (n, k) int32
    selection: np.ndarray  # (n,) bool: the split strategy's selection half (all False when unused)
    score: str
    power: float

    @property
    def rows(self) -> int:
        return int(self.row_ids.size)

    @property
    def binary(self) -> bool:
        return self.p_target.shape[1] == 2

    @cached_property
    def code_columns(self) -> tuple[np.ndarray, np.ndarray]:
        """codes[:, 0] and codes[:, 1] as contiguous arrays for a binary model (what its vectorized kernel reads),
        empty arrays otherwise."""
        if not self.binary:
            return np.zeros(0, np.int32), np.zeros(0, np.int32)
        return np.ascontiguousarray(self.codes[:, 0]), np.ascontiguousarray(self.codes[:, 1])

    def slice(self, start: int, stop: int) -> GameTables:
        """Rows start..stop-1 (views, no copies)."""
        cut = slice(start, stop)
        return GameTables(self.p_target[cut], self.p_reference[cut], self.labels[cut], self.row_ids[cut],
                          self.id_bits[cut], self.threshold[cut] if self.binary else self.threshold,
                          self.cdf if self.binary else self.cdf[cut], self.codes[cut], self.selection[cut],
                          self.score, self.power)

    def abs_scores_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The (len(rows), k) |scores| of every class of `rows`, the doubles of the numpy score function itself:
        compiled for the paper's score at power 2 (`_paper_squared_abs`, the same operations in the same order)."""
        if self.score == "paper" and self.power == 2.0:
            out = np.empty((rows.size, self.p_target.shape[1]), np.float64)
            _paper_squared_abs(self.p_target, self.p_reference, np.ascontiguousarray(rows, dtype=np.int64), out)
            return out
        # take(axis=0): numpy's fancy indexing of a 2-D array's rows is about 10x slower than take, same values.
        return np.abs(np.asarray(SCORES.get(self.score)(self.p_target.take(rows, axis=0),
                                                    self.p_reference.take(rows, axis=0), self.power),
                                 dtype=np.float64))

    def scores_of(self, rows: np.ndarray, released: np.ndarray) -> np.ndarray:
        """The score of `released` for `rows`, by the numpy score function itself (as play_repetition does)."""
        return np.asarray(SCORES.get(self.score)(self.p_target[rows, released], self.p_reference[rows, released],
                                             self.power), dtype=np.float64)


@njit(cache=True, parallel=True)
def _score_codes(bits, shift, low_code, top):
    n, k = bits.shape
    codes = np.empty((n, k), np.int32)
    for i in prange(n):
        for j in range(k):
            magnitude = bits[i, j] & np.uint64(0x7FFFFFFFFFFFFFFF)
            index = np.int64(magnitude >> np.uint64(shift)) - low_code + 1
            index = min(max(index, 0), top)
            positive = bits[i, j] >> np.uint64(63) == 0 and magnitude != 0  # s > 0 (NaN rejected before)
            codes[i, j] = (index << 1) | positive
    return codes


@njit(cache=True, parallel=True)
def _paper_squared_abs(p_target, p_reference, rows, out):
    """out[g, j] = |(p_t - p_r) * ((1 - p_r) * (1 - p_r))| of class j of row rows[g]: `_paper_squared_codes`'s
    doubles (numpy's, which squares for the exponent 2), for the given rows only."""
    k = p_target.shape[1]
    for g in prange(rows.size):
        i = rows[g]
        for j in range(k):
            w = 1.0 - p_reference[i, j]
            out[g, j] = abs((p_target[i, j] - p_reference[i, j]) * (w * w))


@njit(cache=True, parallel=True)
def _paper_squared_codes(p_target, p_reference, shift, low_code, top, codes, threshold):
    """`score_codes` of `auditing.game.scores.paper_score` at power 2, (p_t - p_r) * ((1 - p_r) * (1 - p_r)): the
    same operations in the same order as numpy's (which squares for the exponent 2), so the same doubles, without
    its (n, k) temporaries. A binary model's `threshold_bits` of p_reference[:, 1] go to ``threshold`` in the same
    pass (an empty ``threshold``: none). Returns the number of NaN scores (the caller refuses them)."""
    n, k = p_target.shape
    nan = 0
    with_threshold = threshold.size > 0
    for c in prange((n + _BLOCK - 1) // _BLOCK):
        buf = np.empty(_BLOCK * k, np.float64)
        bits = buf.view(np.uint64)
        start = c * _BLOCK
        stop = min(n, start + _BLOCK)
        if with_threshold:
            for i in range(start, stop):
                threshold[i] = np.uint64(np.ceil(p_reference[i, 1] * _TWO_POW_53))
        m = 0
        for i in range(start, stop):
            for j in range(k):
                w = 1.0 - p_reference[i, j]
                buf[m] = (p_target[i, j] - p_reference[i, j]) * (w * w)
                m += 1
        m = 0
        for i in range(start, stop):
            for j in range(k):
                nan += buf[m] != buf[m]
                magnitude = bits[m] & np.uint64(0x7FFFFFFFFFFFFFFF)
                index = np.int64(magnitude >> np.uint64(shift)) - low_code + 1
                index = min(max(index, 0), top)
                positive = bits[m] >> np.uint64(63) == 0 and magnitude != 0
                codes[i, j] = (index << 1) | positive
                m += 1
    return nan


def score_codes(scores: np.ndarray, bins: BinSpec) -> np.ndarray:
    """Each score's code, ``bin_index(scores) << 1 | (scores > 0)``, as int32, in one pass over the scores' bits
    (no NaN: the caller refuses it first)."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    return _score_codes(scores.view(np.uint64), bins.pattern_shift, bins.low_code, bins.num_bins - 1)


def threshold_bits(p: np.ndarray) -> np.ndarray:
    """ceil(p * 2**53) as uint64: for the 53-bit integer m of a keyed uniform u = m * 2**-53, u < p exactly when
    m < ceil(p * 2**53) (p in [0, 1]; the product is exact, m is an integer)."""
    return np.ceil(np.asarray(p, dtype=np.float64) * _TWO_POW_53).astype(np.uint64)


def game_tables(p_target: np.ndarray, p_reference: np.ndarray, labels: np.ndarray, row_ids: np.ndarray, *,
                score: str, power: float, bins: BinSpec, selection: np.ndarray | None = None) -> GameTables:
    """Tables for already-validated arrays (see `auditing.game.play.as_class_probabilities`, `as_labels`, ...).

    Args:
        score, power: a built-in score name (`compiled_score`) and its power t.
        bins: the |score| binning of the histograms.
        selection: the split strategy's selection half per row (`auditing.audit.selection_half_mask`), if used.
    Raises:
        LabelDPInputError: ``score`` has no compiled form (a callable: use `auditing.game.play.play_repetition`).
    """
    if not compiled_score(score):
        raise LabelDPInputError(f"score {score!r} has no compiled form; use auditing.game.play.play_repetition")
    p_target = np.ascontiguousarray(p_target, dtype=np.float64)
    p_reference = np.ascontiguousarray(p_reference, dtype=np.float64)
    n, k = p_target.shape
    row_ids = np.ascontiguousarray(row_ids, dtype=np.int64)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    threshold = None
    if score == "paper" and power == 2.0:  # the default score, compiled (the same doubles as the numpy function)
        codes = np.empty((n, k), np.int32)
        threshold = np.empty(n if k == 2 else 0, np.uint64)
        if _paper_squared_codes(p_target, p_reference, bins.pattern_shift, bins.low_code, bins.num_bins - 1, codes,
                                threshold):
            raise LabelDPInputError("score function returned NaN")
    else:
        # Elementwise, so the same doubles as the score of the gathered released labels in play_repetition.
        scores = np.asarray(SCORES.get(score)(p_target, p_reference, power), dtype=np.float64)
        if np.isnan(scores).any():
            raise LabelDPInputError(f"score function returned NaN for {int(np.isnan(scores).any(axis=1).sum())} "
                                    "row(s)")
        codes = score_codes(scores, bins)
        del scores
    if k == 2:
        threshold = threshold_bits(p_reference[:, 1]) if threshold is None else threshold
        cdf = np.zeros((0, 2))
    else:
        threshold = np.zeros(0, np.uint64)
        cdf = np.cumsum(p_reference, axis=1)
        cdf[:, -1] = 1.0
    if selection is None:
        selection = np.zeros(n, dtype=bool)
    return GameTables(p_target, p_reference, labels, row_ids, row_ids.view(np.uint64), threshold, cdf,
                      codes, np.ascontiguousarray(selection, dtype=bool), score, float(power))


@dataclass(frozen=True)
class SlotKeys:
    """The sweeps to count: per slot its repetition, its half (-1 all rows, 0 selection, 1 bound half) and the
    key words of its two streams (`auditing.game.keyed_random.key_word`)."""

    repetition: np.ndarray  # int64
    half: np.ndarray  # int64
    key_cf: np.ndarray  # uint64
    key_bit: np.ndarray  # uint64

    @property
    def size(self) -> int:
        return int(self.repetition.size)

    def subset(self, index) -> SlotKeys:
        return SlotKeys(self.repetition[index], self.half[index], self.key_cf[index], self.key_bit[index])


def slot_keys(seed: int, slots) -> SlotKeys:
    """Keys for (repetition, half) pairs; half None or -1: all rows."""
    reps = np.array([int(r) for r, _ in slots], dtype=np.int64)
    halves = np.array([-1 if h is None else int(h) for _, h in slots], dtype=np.int64)
    key_cf = np.array([key_word(seed, r, STREAM_COUNTERFACTUAL) for r in reps], dtype=np.uint64)
    key_bit = np.array([key_word(seed, r, STREAM_BIT) for r in reps], dtype=np.uint64)
    return SlotKeys(reps, halves, key_cf, key_bit)


# ------------------------------------------------------------------------------------------ entry points

# Rows per call of the histogram kernel (its packed counts hold up to 2**32 - 1 rows per bin).
_PACKED_ROWS = 2**31


def _args(tables: GameTables):
    return (tables.id_bits, tables.labels, tables.threshold, tables.cdf, tables.binary)


def slot_histograms(tables: GameTables, keys: SlotKeys, rows: np.ndarray, correct: np.ndarray,
                    threads: int | None = None, signed: SignedCounts | None = None) -> None:
    """Adds each slot's rows and correct guesses per |score| bin to rows[s] and correct[s] (in place).

    Equals, for every slot, `auditing.game.sweep_reduce.histogram(bin_index(game.scores), game.correct)` of
    `play_repetition` on the slot's rows; parallel over slots, on ``threads`` threads (default: numba's
    setting; a background caller passes 1 to leave the other cores to its main thread). The counts do not
    depend on the number of threads.

    signed: also add an all-rows slot's `signed_outcomes` to ``signed.out``; counted in the same pass as that
    slot's halves when ``keys`` holds them (the compiled audit and the Beam job's pass 1 do), else on its own.
    """
    if tables.rows == 0 or keys.size == 0:
        return
    if rows.shape != correct.shape or rows.shape[0] != keys.size or rows.dtype != np.int64 \
            or correct.dtype != np.int64:
        raise ValueError(f"histograms must be int64 arrays of {keys.size} slots; got {rows.shape} {rows.dtype}")
    pairs, others = _paired_halves(keys)
    fused = signed is not None and any(every == signed.slot for _, _, every in pairs)
    if signed is not None:
        group, groups = signed.checked(tables)
    with _numba_threads(threads):
        packed = _packed_scratch(others.size, rows.shape[1])
        chunks = max(1, min(numba.get_num_threads(), -(-tables.rows // _HALVES_CHUNK)))
        # Calls of fewer than 2**32 rows, so that a packed count cannot overflow.
        for start in range(0, tables.rows, _PACKED_ROWS):
            part = tables.slice(start, start + _PACKED_ROWS) if tables.rows > _PACKED_ROWS else tables
            if others.size:
                kept = keys if others.size == keys.size else keys.subset(others)
                _histograms_kernel(*_args(part), part.codes, *part.code_columns, kept.key_cf, kept.key_bit, kept.half,
                                   part.selection, packed, others, rows, correct)
            for first, second, every in pairs:
                halves = np.empty((chunks, 2, rows.shape[1]), np.int64)
                with_signed = fused and every == signed.slot
                signs = np.empty((chunks, groups * 4) if with_signed else (0, 0), np.int64)
                _halves_kernel(*_args(part), part.codes, *part.code_columns, keys.key_cf[first], keys.key_bit[first],
                               part.selection, -(-part.rows // chunks), halves,
                               group if with_signed else _NO_GROUP, signs)
                if with_signed:
                    signed.out[...] += signs.sum(axis=0).reshape(signed.out.shape)
                counts = halves.sum(axis=0)  # under 2**31 rows: the packed halves add without a carry
                for slot, count in ((first, counts[0]), (second, counts[1])) + \
                        (((every, counts[0] + counts[1]),) if every >= 0 else ()):
                    rows[slot] += count & _LOW_32
                    correct[slot] += count >> 32
        if signed is not None and not fused:
            signed.out[...] += _signed_counts(tables, keys.key_cf[signed.slot], keys.key_bit[signed.slot], group, groups)


_NO_GROUP = np.zeros(0, np.int64)


@dataclass(frozen=True)
class SignedCounts:
    """Where `slot_histograms` adds an all-rows slot's rows per (group of the released label's |score| bin,
    s > 0, coin b), as `signed_outcomes` counts them: ``out`` (groups, 2, 2) int64, ``group`` each bin's group."""

    slot: int
    group: np.ndarray
    out: np.ndarray

    def checked(self, tables: GameTables) -> tuple[np.ndarray, int]:
        """``group`` as a contiguous int64 array and the number of groups, checked against ``out`` and the
        tables' bins."""
        groups = self.out.shape[0]
        if self.out.shape != (groups, 2, 2) or self.out.dtype != np.int64:
            raise ValueError(f"signed counts must be an int64 (groups, 2, 2) array; got {self.out.shape} "
                             f"{self.out.dtype}")
        return _checked_group(self.group, groups, tables), groups


def _checked_group(group: np.ndarray, groups: int, tables: GameTables) -> np.ndarray:
    group = np.ascontiguousarray(group, dtype=np.int64)
    if group.ndim != 1 or (group.size and (int(group.min()) < 0 or int(group.max()) >= groups)):
        raise ValueError(f"group must map bins to 0..{groups - 1}")
    if tables.rows and int(tables.codes.max()) >> 1 >= group.size:
        raise ValueError(f"group maps {group.size} bins; the tables' codes reach bin {int(tables.codes.max()) >> 1}")
    return group


# Rows per chunk of `_halves_kernel` at the least (more chunks than threads only add histograms to sum).
_HALVES_CHUNK = 65_536


def _paired_halves(keys: SlotKeys) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """The slots `slot_histograms` counts together: (half 0, half 1, all rows or -1) of the same repetition's keys,
    one pass of their draws for the three (the all-rows slot is the halves' sum), and the other slots' indices."""
    pairs, paired = [], set()
    for first in np.flatnonzero(keys.half == 0).tolist():
        same = (keys.key_cf == keys.key_cf[first]) & (keys.key_bit == keys.key_bit[first])
        second = [s for s in np.flatnonzero(same & (keys.half == 1)).tolist() if s not in paired]
        if not second:
            continue
        every = [s for s in np.flatnonzero(same & (keys.half < 0)).tolist() if s not in paired]
        triple = (first, second[0], every[0] if every else -1)
        pairs.append(triple)
        paired.update(s for s in triple if s >= 0)
    return pairs, np.array([s for s in range(keys.size) if s not in paired], dtype=np.int64)


@contextlib.contextmanager
def _numba_threads(threads: int | None):
    """Runs the block's kernels on ``threads`` threads (None: numba's setting); the setting is the calling
    thread's own and is put back afterwards."""
    if threads is None:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))  # this thread only
    try:
        yield
    finally:
        numba.set_num_threads(previous)


# Rows per block of `signed_outcomes` (one small histogram per block).
_SIGNED_BLOCK = 65_536


def signed_outcomes(tables: GameTables, seed: int, repetition: int, group: np.ndarray, groups: int,
                    threads: int | None = None) -> np.ndarray:
    """Rows of one repetition over all rows per (group of the released label's |score| bin, s > 0, coin b): an
    int64 (groups, 2, 2) array; ``group`` maps each bin of the tables' `BinSpec` to 0 .. groups - 1.

    Equals counting `auditing.game.play.play_repetition`'s scores and coins (b = 1 exactly where (s > 0) !=
    correct) by the same bins: the same draws (`_released`) and codes as `slot_histograms`. The attack curve's
    counts (`auditing.game.attack_curve`); threads as `slot_histograms`.
    """
    keys = slot_keys(seed, [(repetition, None)])
    with _numba_threads(threads):
        return _signed_counts(tables, keys.key_cf[0], keys.key_bit[0], _checked_group(group, groups, tables), groups)


def _signed_counts(tables: GameTables, key_cf, key_bit, group: np.ndarray, groups: int) -> np.ndarray:
    """`signed_outcomes` for one slot's key words (``group`` checked)."""
    out = np.zeros((max(1, -(-tables.rows // _SIGNED_BLOCK)), groups * 4), np.int64)
    if tables.rows:
        _signed_kernel(*_args(tables), tables.codes, *tables.code_columns, group, key_cf, key_bit, _SIGNED_BLOCK,
                       out)
    return out.sum(axis=0).reshape(groups, 2, 2)


_SCRATCH = threading.local()


def _packed_scratch(slots: int, num_bins: int) -> np.ndarray:
    """The calling thread's (slots, num_bins + 1) int64 array for the kernel's packed counts, kept between calls
    (a fresh one per call would be page-faulted in again each time)."""
    scratch = getattr(_SCRATCH, "packed", None)
    if scratch is None or scratch.shape[0] < slots or scratch.shape[1] != num_bins + 1:
        scratch = _SCRATCH.packed = np.empty((slots, num_bins + 1), np.int64)
    return scratch[:slots]


@dataclass(frozen=True)
class BoundaryRows:
    """Rows of a batch that fall in a slot's cut bins, grouped by slot: offsets[s]..offsets[s+1]-1."""

    offsets: np.ndarray  # (slots + 1,) int64
    rows: np.ndarray  # row positions in the batch
    bins: np.ndarray
    abs_scores: np.ndarray
    row_ids: np.ndarray
    correct: np.ndarray

    def of(self, slot: int):
        """(bins, abs_scores, row_ids, correct) of one slot, the arguments of `sweep_reduce.exact_counts`."""
        part = slice(int(self.offsets[slot]), int(self.offsets[slot + 1]))
        return self.bins[part], self.abs_scores[part], self.row_ids[part], self.correct[part]


@njit(cache=True, parallel=True)
def _rows_in_bins(codes, bins):
    """Per row: does any of its k codes (bin << 1 | sign) fall in a bin marked in ``bins``."""
    n, k = codes.shape
    out = np.zeros(n, np.bool_)
    for i in prange(n):
        for j in range(k):
            if bins[codes[i, j] >> 1]:
                out[i] = True
                break
    return out


# Gathered rows played at once by `_boundary_kernel` (a bin's rows in blocks of this many).
_BOUNDARY_BLOCK = 1024


def boundary_rows(tables: GameTables, keys: SlotKeys, cut: np.ndarray, slot_counts: np.ndarray | None = None
                  ) -> BoundaryRows:
    """Replays the game only for rows one of whose k possible bins is cut (cut: (slots, bins) bool) and returns
    those that land in a cut bin of their slot, with the numbers `auditing.game.sweep_reduce.exact_counts` needs.

    slot_counts: how many rows each slot has in its cut bins, when the caller knows it from the slots'
    histograms over these same rows: the replay then runs once instead of counting first (a disagreement raises).
    """
    cut = np.ascontiguousarray(cut, dtype=bool)
    slots = keys.size
    if cut.shape[0] != slots:
        raise ValueError(f"cut masks for {cut.shape[0]} slots; expected {slots}")
    counts = np.zeros(slots, np.int64)
    active = np.flatnonzero(cut.any(axis=1))
    candidates = np.zeros(0, np.int64)
    if tables.rows and active.size:
        union = cut[active].any(axis=0)
        candidates = np.flatnonzero(_rows_in_bins(tables.codes, union))
    if candidates.size == 0:
        return BoundaryRows(np.zeros(slots + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                            np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool))
    # The candidate rows, gathered once per class column j in bin order (see _boundary_kernel); `position` is
    # each gathered row's index among the candidates.
    num_bins = cut.shape[1]
    candidate_codes = tables.codes.take(candidates, axis=0)
    candidate_bins = candidate_codes >> 1
    k = candidate_bins.shape[1]
    position = np.empty(k * candidates.size, np.int64)
    starts = np.zeros((k, num_bins + 1), np.int64)
    # Bins fit 16 bits at the default spec: numpy's stable sort is then a radix sort (the same order).
    sortable = candidate_bins.astype(np.uint16) if num_bins <= 1 << 16 else candidate_bins
    for j in range(k):
        position[j * candidates.size:(j + 1) * candidates.size] = np.argsort(sortable[:, j], kind="stable")
        starts[j, 1:] = np.cumsum(np.bincount(candidate_bins[:, j], minlength=num_bins))
        starts[j] += j * candidates.size
    gathered = candidates[position]
    keys, cut = keys.subset(active), cut[active]
    # Row-major positions of the cut bins (numpy's 2-D nonzero is about 10x slower than flatnonzero on this size).
    cut_slot, cut_bins = np.divmod(np.flatnonzero(cut), num_bins)
    cut_start = np.searchsorted(cut_slot, np.arange(active.size + 1)).astype(np.int64)
    found = np.zeros(active.size, np.int64)
    binary = tables.binary

    def of_gathered(values: np.ndarray) -> np.ndarray:
        # Read the candidates in row order, then reorder them in cache: gathering the table rows in bin order
        # directly misses the cache on nearly every row.
        return values.take(candidates, axis=0).take(position, axis=0)

    # Each gathered row's entry for its own column's class: gathered row g of column j is candidate position[g].
    own = position * k + np.repeat(np.arange(k, dtype=np.int64), candidates.size)
    common = (of_gathered(tables.id_bits), of_gathered(tables.labels),
              of_gathered(tables.threshold) if binary else tables.threshold,
              tables.cdf if binary else of_gathered(tables.cdf), binary,
              (candidate_codes.reshape(-1).take(own) & 1).astype(np.int64),
              keys.key_cf, keys.key_bit, keys.half, of_gathered(tables.selection), cut_bins.astype(np.int64),
              cut_start, starts, _BOUNDARY_BLOCK)
    # Each gathered row's |score| for its column's class, by the numpy score function on the same doubles
    # (elementwise, so equal to the score of the released label that play_repetition computes).
    scores = tables.abs_scores_of_rows(candidates)
    gathered_rows = (gathered, of_gathered(tables.row_ids), scores.reshape(-1).take(own))
    if slot_counts is None:
        nothing_i, nothing_b = np.zeros(0, np.int64), np.zeros(0, bool)
        _boundary_kernel(*common, np.zeros(active.size + 1, np.int64), False, found, *gathered_rows, nothing_i,
                         nothing_i, np.zeros(0), nothing_i, nothing_b)
        expected = found.copy()
    else:
        expected = np.asarray(slot_counts, dtype=np.int64)[active]
    counts[active] = expected
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    total = int(offsets[-1])
    rows, row_ids, bins = (np.empty(total, np.int64) for _ in range(3))
    abs_scores, correct = np.empty(total), np.empty(total, bool)
    _boundary_kernel(*common, np.concatenate(([0], np.cumsum(expected))).astype(np.int64), True, found,
                     *gathered_rows, rows, row_ids, abs_scores, bins, correct)
    if not np.array_equal(found, expected):
        raise RuntimeError(f"boundary rows: the replay found {found.tolist()} rows in the cut bins of slots "
                           f"{active.tolist()}; the histograms hold {expected.tolist()}")
    return BoundaryRows(offsets, rows, bins, abs_scores, row_ids, correct)


def released_labels(tables: GameTables, seed: int, repetition: int) -> tuple[np.ndarray, np.ndarray]:
    """(released label, coin b) of every row in one repetition: the game's own keyed draws, compiled."""
    keys = slot_keys(seed, [(repetition, None)])
    released = np.empty(tables.rows, np.int64)
    bit = np.empty(tables.rows, bool)
    if tables.rows:
        _play_kernel(*_args(tables), keys.key_cf[0], keys.key_bit[0], released, bit)
    return released, bit


def play(tables: GameTables, seed: int, repetition: int) -> GameRows:
    """One repetition's per-row scores and correctness: `auditing.game.play.play_repetition`, compiled."""
    released, bit = released_labels(tables, seed, repetition)
    scores = tables.scores_of(np.arange(tables.rows), released)
    return GameRows(scores=scores, correct=~(scores > 0) == bit, released=released)
