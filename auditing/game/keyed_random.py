"""Counter-based randomness keyed by (seed, repetition, row identity, stream).

Every random draw of the game is a pure function of its key, so one repetition can be recomputed alone and
the result does not depend on how rows are chunked, ordered or spread over workers (the Beam job applies the
same per-row function to batches and must reproduce the in-process counts exactly).

The seed a game draws with is `night_seed` of the configured seed and the night (the partition day) it audits:
row ids restart every day in some logs (Criteo's line numbers), so without the day in the key two nights of one
model family would replay the same coins, and the evidence across nights (docs/soundness.md section 10) needs
each night's coins fresh. Without a night the seed is used as it is (the draws of every game before nights).

The mixer is the SplitMix64 finalizer (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014): a bijection on 64-bit words with full avalanche. A uniform in [0, 1) takes the
top 53 bits of two chained mixes of the row id with key words derived from the seed, repetition and stream.
"""

from __future__ import annotations

import datetime as dt

import numpy as np

# Stream identifiers: independent draws for the same (seed, repetition, row).
STREAM_COUNTERFACTUAL = 1
STREAM_BIT = 2
STREAM_SPLIT = 3
STREAM_CONTROL = 4  # the positive control's randomized-response draw (auditing.verdict.controls)
STREAM_ATTACK_BOOTSTRAP = 5  # the seed of the attack curve's bootstrap (auditing.game.attack_curve)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_MASK64 = (1 << 64) - 1
# Folded in before the night's day number, so a night's seed is no (seed, repetition, stream) key word.
_NIGHT_TAG = 0x4E49474854  # "NIGHT"


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer on a uint64 array (wrapping arithmetic is intended)."""
    z = np.asarray(x, dtype=np.uint64) + _GOLDEN
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


def key_word(*parts: int) -> np.uint64:
    """Folds integers (seed, repetition, stream) into one 64-bit key, each part mixed in turn."""
    acc = np.array([0x5EED], dtype=np.uint64)
    for part in parts:
        acc = mix64(acc ^ np.array([int(part) & _MASK64], dtype=np.uint64))
    return acc[0]


def keyed_uniform(seed: int, repetition: int, stream: int, row_ids: np.ndarray) -> np.ndarray:
    """Uniform floats in [0, 1), one per row id, determined by (seed, repetition, stream, row_id) alone."""
    ids = np.asarray(row_ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"row ids must be integers; got dtype {ids.dtype}")
    key = key_word(seed, repetition, stream)
    bits = mix64(mix64(ids.astype(np.int64, copy=False).view(np.uint64) ^ key) + key)
    # Top 53 bits -> exactly representable double in [0, 1).
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def night_seed(seed: int, night: dt.date | None) -> int:
    """The seed a game's draws are keyed by: ``seed`` itself without a night, else a mix of (seed, a fixed tag,
    the night's day number) in [0, 2**63), so that the same seed and row ids draw fresh coins each night."""
    if night is None:
        return int(seed)
    if isinstance(night, dt.datetime) or not isinstance(night, dt.date):
        raise TypeError(f"night must be a datetime.date or None; got {night!r}")
    return int(key_word(int(seed), _NIGHT_TAG, night.toordinal()) >> np.uint64(1))
