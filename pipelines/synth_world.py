"""The world of a base seed for the synthetic generator (`pipelines.synth`): what does not depend on the date.

Per column: the Criteo-like shape (vocabulary size, missing rate, location and spread of the log counts), the
values' hashed strings, Zipf popularities and logit effects, and the phases and periods of their slow drift.
Drawn once per seed from its own stream (cached), so a day's law is a function of (seed, date) only.
Also here: the day index and the per-day seed of the generator's random stream.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from auditing.errors import LabelDPInputError
from auditing.names import require_date
from pipelines import schema

GENERATOR_VERSION = 1
DEFAULT_SEED = 20240101
DEFAULT_ROWS = 1_000_000
CALIBRATION_ROWS = 32_768
MAX_ROWS = 2**32  # row_id packs the row index into 32 bits
_EPOCH = dt.date(1970, 1, 1)

# Criteo-like shapes, one entry per column (sizes capped at 200k values to keep generation fast).
VOCAB_SIZES = [1400, 550, 200_000, 120_000, 300, 20, 12_000, 600, 3, 50_000, 5000, 150_000, 3000,
               27, 14_000, 130_000, 10, 4500, 2000, 4, 140_000, 17, 15, 60_000, 90, 40_000]
CAT_MISSING = [0.0, 0.0, 0.03, 0.03, 0.0, 0.12, 0.0, 0.0, 0.0, 0.0, 0.0, 0.03, 0.0,
               0.0, 0.0, 0.03, 0.0, 0.0, 0.44, 0.44, 0.03, 0.76, 0.0, 0.03, 0.44, 0.44]
NUM_MU = [0.7, 1.5, 2.0, 1.8, 7.0, 3.0, 1.5, 2.5, 3.5, 0.5, 1.0, 0.3, 2.0]
NUM_SIGMA = [1.0, 1.5, 1.2, 1.0, 2.0, 1.5, 1.3, 1.0, 1.3, 0.6, 0.9, 0.8, 1.1]
NUM_MISSING = [0.45, 0.0, 0.21, 0.22, 0.03, 0.22, 0.04, 0.0005, 0.04, 0.45, 0.04, 0.76, 0.22]
# Which features carry signal (0-based column indices into NUMERIC_COLUMNS / CATEGORICAL_COLUMNS).
SIGNAL_NUMERIC = (0, 2, 3, 5, 6, 10)  # I1, I3, I4, I6, I7, I11
SIGNAL_CATEGORICAL = (0, 1, 5, 7, 8, 13, 16, 19, 22, 25)  # C1, C2, C6, C8, C9, C14, C17, C20, C23, C26


def epoch_day(date: dt.date) -> int:
    """Days since 1970-01-01."""
    return date.toordinal() - _EPOCH.toordinal()


def check_seed(seed: int) -> int:
    """``seed`` as an int in 0..2^63-1; anything else (bools included) raises LabelDPInputError."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise LabelDPInputError(f"seed must be a whole number in 0..2^63-1; got {seed!r}")
    return int(seed)


def day_seed(seed: int, date: dt.date) -> int:
    """The 63-bit seed of ``date``'s random stream, derived from the base ``seed`` and the date only."""
    state = np.random.SeedSequence([check_seed(seed), epoch_day(require_date(date)), GENERATOR_VERSION])
    return int(state.generate_state(1, np.uint64)[0] >> np.uint64(1))


# ------------------------------------------------------------------------------------------ the world


def hashed_values(count: int, key: int) -> np.ndarray:
    """``count`` distinct uint32 values: a keyed bijection of 0..count-1 (so no collisions by design)."""
    x = (np.arange(count, dtype=np.uint64) + np.uint64(key & 0xFFFFFFFF)) & np.uint64(0xFFFFFFFF)
    odd1 = np.uint64(((key >> 32) & 0xFFFFFFFF) | 1)
    mask = np.uint64(0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for multiplier in (odd1, np.uint64(0x85EBCA6B), np.uint64(0xC2B2AE35)):
            x = (x * multiplier) & mask  # odd multiplier mod 2^32: a bijection
            x ^= x >> np.uint64(16)  # xor-shift: a bijection
    return x.astype(np.uint32)


@dataclass(frozen=True)
class CategoricalLaw:
    """The date-free law of one categorical column in the world of a seed."""

    dictionary: pa.StringArray  # all possible values of the column
    exponent: float  # Zipf exponent s of the base popularity
    log_weight: np.ndarray  # Zipf base popularity (log scale): -s * log(1 + k)
    popularity_phase: np.ndarray
    popularity_period: float
    effect: np.ndarray | None  # per-value logit effect (signal columns only)
    effect_phase: np.ndarray | None
    effect_period: float
    missing: float


@dataclass(frozen=True)
class World:
    """Everything the generator draws once per base seed (`seed_world`)."""

    seed: int
    categoricals: tuple[CategoricalLaw, ...]
    num_loading: np.ndarray  # loading of each numeric feature on the latent activity factor
    num_mu_phase: np.ndarray
    num_coef: np.ndarray  # logit coefficient of log1p(count), per standard deviation of g
    num_coef_phase: np.ndarray
    num_missing_coef: np.ndarray
    rate_phase: float


@functools.lru_cache(maxsize=4)
def seed_world(seed: int) -> World:
    """Everything that depends on the base seed only (not on the date)."""
    rng = np.random.default_rng([seed, 0x574F524C44])  # "WORLD"
    cats = []
    for j, size in enumerate(VOCAB_SIZES):
        key = int(rng.integers(0, 2**63))
        exponent = rng.uniform(1.05, 1.35)
        signal = j in SIGNAL_CATEGORICAL
        effect_sd = rng.uniform(0.25, 0.6) if signal else 0.0
        cats.append(CategoricalLaw(
            dictionary=schema.hex_strings(hashed_values(size, key)),
            exponent=float(exponent),
            log_weight=-exponent * np.log1p(np.arange(size, dtype=np.float64)),
            popularity_phase=rng.uniform(0.0, 2 * math.pi, size),
            popularity_period=float(rng.uniform(40.0, 200.0)),
            effect=rng.normal(0.0, effect_sd, size) if signal else None,
            effect_phase=rng.uniform(0.0, 2 * math.pi, size) if signal else None,
            effect_period=float(rng.uniform(60.0, 400.0)),
            missing=CAT_MISSING[j],
        ))
    n_num = len(schema.NUMERIC_COLUMNS)
    coef = np.zeros(n_num)
    missing_coef = np.zeros(n_num)
    signs = rng.choice([-1.0, 1.0], size=len(SIGNAL_NUMERIC))
    coef[list(SIGNAL_NUMERIC)] = signs * rng.uniform(0.15, 0.4, len(SIGNAL_NUMERIC))
    missing_coef[list(SIGNAL_NUMERIC)] = rng.normal(0.0, 0.3, len(SIGNAL_NUMERIC))
    return World(
        seed=seed,
        categoricals=tuple(cats),
        num_loading=rng.uniform(0.2, 0.7, n_num),
        num_mu_phase=rng.uniform(0.0, 2 * math.pi, n_num),
        num_coef=coef,
        num_coef_phase=rng.uniform(0.0, 2 * math.pi, n_num),
        num_missing_coef=missing_coef,
        rate_phase=float(rng.uniform(0.0, 2 * math.pi)),
    )

