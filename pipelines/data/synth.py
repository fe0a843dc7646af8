"""A deterministic Criteo-like click-log generator with a known truth (the oracle).

What a generated day looks like (``generate_day``):

- ``I1``..``I13``: heavy-tailed counts (``floor(exp(g)) - 1``, ``g`` Gaussian), correlated through one latent
  activity factor per row, with Criteo-like missing rates (e.g. I12 ~76% missing, I2 never);
- ``C1``..``C26``: hashed categoricals (8 lowercase hex digits), values drawn Zipf-like (weight of the k-th
  value ~ (k+1)^-s, s in 1.05..1.35) from vocabularies of 3 to 200,000 values, with Criteo-like missing rates;
- ``label``: Bernoulli(``p_click``), where ``logit(p_click)`` = intercept + effects of 6 numeric features
  (their log1p counts and their missingness) + per-value effects of 10 categorical features. The other
  features are pure noise. The intercept is calibrated each day so the expected click rate is about 3%
  (2.7%..3.3%, moving slowly over the year);
- drift: coefficients, per-value effects and per-value popularities move day by day along slow sinusoids
  (periods of 40..400 days) with phases fixed by the base seed, so consecutive days are close and days weeks
  apart differ measurably;
- ``row_id`` = days since 1970-01-01 times 2^32 plus the row's index, unique across days.

Shifts on demand (``DayShift``, passed to ``generate_day`` / ``write_synthetic_day`` for the chosen days; the
command line's ``data synth --shift-days ...``): a sudden day-over-day move on top of the slow drift, e.g. a
campaign or a holiday. Three kinds, combinable:

- ``logit``: logit(p_click) of every row moves by this amount (``DayShift(logit=0.7)``: ~3% -> ~5.5% clicks, the
  mean p_click x1.8-1.9);
- ``segments``: ``SegmentShift(column="C9", rank=0, logit=0.5)`` moves logit(p_click) of the rows whose C9 is
  that day's most popular value (``rank`` K = the K-th most popular value by the day's sampling weights, 0 =
  most popular; or ``value="0a1b2c3d"``, the hex string as it appears in the data). Rows where the column is
  missing are never in a segment. Segment shifts add to each other and to ``logit``;
- ``popularity``: ``PopularityShift(column="C3", rotate=K, exponent=S)`` changes the sampling weights of the
  column's values: the Zipf exponent becomes S (0 = uniform) and/or the Zipf ordering is rotated by K places
  (the value at position k takes the weight of position k + K mod n: the K least popular values become the
  most popular). The features move; P(label | features) keeps exactly the day's form (a covariate shift).

A shifted day is the unshifted day with the logit offsets added: the same random stream (so the same numeric
features, the same uniforms behind every categorical and every label), and the intercept calibrated on the
unshifted law. Hence with segment shifts only, rows outside every segment keep their p_click bit for bit and
rows inside have their logit moved by exactly the sum of their segments' shifts; a positive logit shift only
turns labels 0 -> 1; a popularity shift changes only the values of its own column (and, for a signal column,
p_click through the new value's effect). The oracle records the shifted probability (the truth of that day);
``_provenance.json`` records the shift under ``"shift"`` (settings; per segment its resolved value, popularity
rank that day, expected share and row count; per popularity shift the column's base exponent); ``intercept``
and ``target_click_rate`` there describe the unshifted law, ``mean_p_click`` and ``click_rate`` the shifted day.

Guarantees:

- Determinism: the output is a function of (``seed``, ``date``, ``rows``, the day's shift) only: the same
  arguments give byte-identical Parquet files (with the same pyarrow version), whatever other days are
  generated (shifted or not) and in whichever order. Without a shift (``shift=None``, or a ``DayShift`` that
  moves nothing) the output is exactly that of the generator without shifts. The day's random stream is
  seeded with ``day_seed(seed, date)``, which is recorded in the partition's ``_provenance.json``.
- The law of a day does not depend on ``rows``: the intercept is calibrated on a fixed 32,768-row
  calibration sample drawn from its own stream.
- ``p_click`` is exactly P(label = 1 | the row's features): labels depend on nothing else, so audits may
  sample counterfactual labels from the oracle (D' = D). It is written to ``oracle/date=D/``, never into the
  partition, and training must never read it.
- Generation is vectorized numpy: dictionary arrays are built from byte buffers, never from per-row Python
  strings (timings: benchmarks/results/synth.md).

The module, in order: the world of a base seed, then shifts on demand, then a day's law, the drawing of a day
and its writing.

The world of a base seed: what does not depend on the date. Per column: the Criteo-like shape (vocabulary size, missing rate, location and spread of the log counts), the
values' hashed strings, Zipf popularities and logit effects, and the phases and periods of their slow drift.
Drawn once per seed from its own stream (cached), so a day's law is a function of (seed, date) only.
Also here: the day index and the per-day seed of the generator's random stream.

Shifts on demand: a sudden day-over-day move of one day. ``DayShift`` bundles a global logit shift, ``SegmentShift``s (the rows holding one value of a categorical
column) and ``PopularityShift``s (new sampling weights of a column's values); Every setting is checked when
the object is built (LabelDPInputError naming the setting); `check_shift` also checks segment values against
the world of a seed (what a shifted day is and what stays bit for bit the same: above).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from labeldp.errors import LabelDPInputError
from labeldp.names import require_date
from pipelines.data import schema

# ------------------------------------------------------------------------------------------ synth world


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


# ------------------------------------------------------------------------------------------ synth shifts


MAX_LOGIT_SHIFT = 10.0  # |logit shift| of a DayShift or SegmentShift
MAX_ZIPF_EXPONENT = 5.0  # PopularityShift.exponent in 0..5
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


def _column_index(column: object, what: str) -> int:
    if not isinstance(column, str) or column not in schema.CATEGORICAL_COLUMNS:
        raise LabelDPInputError(f"{what} must name a categorical column C1..C26; got {column!r}")
    return schema.CATEGORICAL_COLUMNS.index(column)


def _number(value: object, what: str, low: float, high: float) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating)
            or not math.isfinite(value) or not low <= value <= high):
        raise LabelDPInputError(f"{what} must be a finite number in {low:g}..{high:g}; got {value!r}")
    return float(value)


def _integer(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not low <= value <= high:
        raise LabelDPInputError(f"{what} must be a whole number in {low}..{high}; got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class SegmentShift:
    """Adds ``logit`` to logit(p_click) of the rows whose categorical ``column`` (``"C1"``..``"C26"``) has one
    value, chosen by exactly one of:

    - ``value``: the value as it appears in the data (8 hex digits; must be in the column's vocabulary of this
      seed's world);
    - ``rank``: the ``rank``-th most popular value of the column on that day (0 = the most popular), by the
      day's sampling weights (after any ``PopularityShift`` of the same column and day; ties by vocabulary
      order). E.g. ``rank=0`` of C9 (3 values) covers about 40-70% of the rows, without knowing its hex string.

    Rows where the column is missing are never in the segment.
    """

    column: str
    logit: float
    value: str | None = None
    rank: int | None = None

    def __post_init__(self) -> None:
        j = _column_index(self.column, "segment column")
        object.__setattr__(self, "logit", _number(self.logit, "segment logit shift", -MAX_LOGIT_SHIFT,
                                                  MAX_LOGIT_SHIFT))
        if (self.value is None) == (self.rank is None):
            raise LabelDPInputError(f"a segment of {self.column} needs exactly one of a value (8 hex digits) or a "
                                    f"popularity rank; got value={self.value!r}, rank={self.rank!r}")
        if self.value is not None:
            if not isinstance(self.value, str) or not _HEX8.fullmatch(self.value):
                raise LabelDPInputError(f"segment value of {self.column} must be 8 hex digits (as in the data, "
                                        f"e.g. 0a1b2c3d); got {self.value!r}")
            object.__setattr__(self, "value", self.value.lower())
        else:
            size = VOCAB_SIZES[j]
            object.__setattr__(self, "rank", _integer(self.rank, f"segment rank of {self.column} ({size} values)",
                                                      0, size - 1))

    def settings(self) -> dict:
        selector = {"value": self.value} if self.value is not None else {"rank": self.rank}
        return {"column": self.column, **selector, "logit": self.logit}


@dataclass(frozen=True, kw_only=True)
class PopularityShift:
    """Changes the sampling weights (popularity) of the values of categorical ``column`` on the day.

    The base weight of the value at Zipf position k is (k + 1)^-s (s = the column's exponent, 1.05..1.35), times
    the value's slow daily drift. ``exponent`` replaces s (0 = all values equally popular; larger = more
    concentrated on the top values); ``rotate`` K (1..n-1, n = the vocabulary size) then rotates the ordering:
    the value at position k takes the weight of position (k + K) mod n, so the K least popular values become
    the most popular ones and every other value moves down K places. The values' effects on the click logit are
    unchanged: P(label | features) keeps its form; only the feature distribution moves.
    """

    column: str
    rotate: int = 0
    exponent: float | None = None

    def __post_init__(self) -> None:
        j = _column_index(self.column, "popularity shift column")
        size = VOCAB_SIZES[j]
        object.__setattr__(self, "rotate", _integer(self.rotate, f"popularity rotation of {self.column} "
                                                                 f"({size} values)", 0, size - 1))
        if self.exponent is not None:
            object.__setattr__(self, "exponent", _number(self.exponent, f"popularity exponent of {self.column}",
                                                         0.0, MAX_ZIPF_EXPONENT))
        if self.rotate == 0 and self.exponent is None:
            raise LabelDPInputError(f"a popularity shift of {self.column} needs a rotation (1..{size - 1}) or an "
                                    f"exponent (0..{MAX_ZIPF_EXPONENT:g}); got neither")

    def settings(self) -> dict:
        return {"column": self.column, "rotate": self.rotate, "exponent": self.exponent}

    def log_weight(self, base: CategoricalLaw) -> np.ndarray:
        """The shifted base popularity (log scale, before the daily drift) of the column's values."""
        log_w = base.log_weight
        if self.exponent is not None:
            log_w = -self.exponent * np.log1p(np.arange(len(log_w), dtype=np.float64))
        return np.roll(log_w, -self.rotate) if self.rotate else log_w


@dataclass(frozen=True, kw_only=True)
class DayShift:
    """A day-over-day shift applied to one generated day (module docstring of `pipelines.data.synth`, "Shifts on
    demand").

    ``logit``: added to logit(p_click) of every row. ``segments``: ``SegmentShift``s, each added to the
    logit of its segment's rows. ``popularity``: ``PopularityShift``s (at most one per column). ``DayShift()``
    moves nothing: the day is generated exactly as without a shift. Example::

        shift = DayShift(logit=0.7, segments=(SegmentShift(column="C9", rank=0, logit=-0.5),),
                         popularity=(PopularityShift(column="C3", rotate=100),))
        generate_day(date, rows=100_000, shift=shift)
    """

    logit: float = 0.0
    segments: tuple[SegmentShift, ...] = ()
    popularity: tuple[PopularityShift, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "logit", _number(self.logit, "logit shift", -MAX_LOGIT_SHIFT, MAX_LOGIT_SHIFT))
        for field, kind in (("segments", SegmentShift), ("popularity", PopularityShift)):
            items = getattr(self, field)
            if isinstance(items, kind):
                items = (items,)
            if isinstance(items, str | bytes) or not hasattr(items, "__iter__"):
                raise LabelDPInputError(f"DayShift.{field} must be a sequence of {kind.__name__}; got {items!r}")
            items = tuple(items)
            for item in items:
                if not isinstance(item, kind):
                    raise LabelDPInputError(f"DayShift.{field} must hold {kind.__name__} objects; got {item!r}")
            object.__setattr__(self, field, items)
        columns = [item.column for item in self.popularity]
        for column in columns:
            if columns.count(column) > 1:
                raise LabelDPInputError(f"at most one popularity shift per column; {column} has "
                                        f"{columns.count(column)}")

    @property
    def is_identity(self) -> bool:
        """True if the shift moves nothing (the day is then generated exactly as without a shift)."""
        return self.logit == 0.0 and not self.popularity and all(s.logit == 0.0 for s in self.segments)

    def settings(self) -> dict:
        """The shift's settings, JSON-able (as recorded in ``_provenance.json``)."""
        return {"logit": self.logit, "segments": [s.settings() for s in self.segments],
                "popularity": [p.settings() for p in self.popularity]}


def effective_shift(shift: DayShift | None) -> DayShift | None:
    """None for no shift or one that moves nothing, else ``shift``; TypeError for anything but a DayShift."""
    if shift is None:
        return None
    if not isinstance(shift, DayShift):
        raise TypeError(f"shift must be a DayShift or None; got {type(shift).__name__} {shift!r}")
    return None if shift.is_identity else shift


def value_index(seed: int, segment: SegmentShift) -> int:
    """The vocabulary index of ``segment.value`` in the world of ``seed``."""
    dictionary = seed_world(seed).categoricals[schema.CATEGORICAL_COLUMNS.index(segment.column)].dictionary
    index = pc.index(dictionary, segment.value).as_py()
    if index < 0:
        raise LabelDPInputError(f"{segment.value} is not a value of {segment.column} in the synthetic world of seed "
                                f"{seed} ({len(dictionary)} values); pick it from the data, or by popularity rank")
    return index


def check_shift(shift: DayShift | None, seed: int = DEFAULT_SEED) -> None:
    """Raises ``LabelDPInputError`` if ``shift`` names a segment value that is not in its column's vocabulary of
    the world of ``seed`` (everything else is checked when the ``DayShift`` is built). For the command line,
    which checks all its days' settings before writing anything."""
    seed = check_seed(seed)
    shift = effective_shift(shift)
    for segment in shift.segments if shift is not None else ():
        if segment.value is not None:
            value_index(seed, segment)


@dataclass(frozen=True)
class DayParameters:
    """The law of one day: what drifts, evaluated at that day (exposed for tests and documentation)."""

    seed: int
    date: dt.date
    target_click_rate: float
    num_mu: np.ndarray  # location of log counts, per numeric column
    num_coef: np.ndarray  # logit coefficient per numeric column (0 = no signal)
    cat_cdf: tuple[np.ndarray, ...]  # cumulative popularity of each categorical column's values
    cat_effect: tuple[np.ndarray | None, ...]  # per-value logit effects (None = no signal)


def _popularity_cdf(cat: CategoricalLaw, t: float, log_weight: np.ndarray) -> np.ndarray:
    """The cumulative popularity on day ``t`` of values with base popularity ``log_weight`` (plus their drift)."""
    log_w = log_weight + 0.5 * np.sin(2 * math.pi * t / cat.popularity_period + cat.popularity_phase)
    weights = np.exp(log_w - log_w.max())
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def day_parameters(seed: int, date: dt.date, shift: DayShift | None = None) -> DayParameters:
    """The drifting parameters of ``date`` in the world of ``seed``: smooth in the date (sinusoids).

    With ``shift``, its popularity shifts are applied to ``cat_cdf`` (its logit shifts are not part of the
    parameters: ``generate_day`` adds them to each row's logit).
    """
    seed = check_seed(seed)
    date = require_date(date)
    world = seed_world(seed)
    t = float(epoch_day(date))
    two_pi = 2 * math.pi
    cdfs = []
    effects = []
    for cat in world.categoricals:
        cdfs.append(_popularity_cdf(cat, t, cat.log_weight))
        if cat.effect is None:
            effects.append(None)
        else:
            scale = float(np.std(cat.effect)) if len(cat.effect) > 1 else 0.0
            effects.append(cat.effect + 0.3 * scale * np.sin(two_pi * t / cat.effect_period + cat.effect_phase))
    num_mu = np.asarray(NUM_MU) + 0.1 * np.sin(two_pi * t / 90.0 + world.num_mu_phase)
    num_coef = world.num_coef * (1.0 + 0.3 * np.sin(two_pi * t / 120.0 + world.num_coef_phase))
    rate = 0.03 * (1.0 + 0.1 * math.sin(two_pi * t / 365.25 + world.rate_phase))
    shift = effective_shift(shift)
    for popularity in shift.popularity if shift is not None else ():
        j = schema.CATEGORICAL_COLUMNS.index(popularity.column)
        cat = world.categoricals[j]
        cdfs[j] = _popularity_cdf(cat, t, popularity.log_weight(cat))
    return DayParameters(seed=seed, date=date, target_click_rate=rate, num_mu=num_mu, num_coef=num_coef,
                         cat_cdf=tuple(cdfs), cat_effect=tuple(effects))


# ------------------------------------------------------------------------------------------ one day


def _draw_features(params: DayParameters, rng: np.random.Generator, n: int, build_arrays: bool,
                   keep: frozenset[int] = frozenset()):
    """Draws ``n`` rows of features. Returns (logit without intercept, {column: pyarrow array} or None,
    {j: (vocabulary index, missing)} for the categorical columns j in ``keep``)."""
    world = seed_world(params.seed)
    kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    logit = np.zeros(n)
    arrays: dict[str, pa.Array] | None = {} if build_arrays else None
    activity = rng.standard_normal(n)
    sigma = np.asarray(NUM_SIGMA)
    loading = world.num_loading
    for j, name in enumerate(schema.NUMERIC_COLUMNS):
        g = params.num_mu[j] + sigma[j] * (loading[j] * activity
                                           + math.sqrt(1.0 - loading[j] ** 2) * rng.standard_normal(n))
        counts = np.floor(np.expm1(np.maximum(g, 0.0))).astype(np.int64)
        missing = rng.random(n) < NUM_MISSING[j]
        if params.num_coef[j] != 0.0:
            x = np.log1p(counts) / sigma[j]
            logit += np.where(missing, world.num_missing_coef[j], params.num_coef[j] * x)
        if arrays is not None:
            arrays[name] = pa.array(counts, type=pa.int64(), mask=missing if missing.any() else None)
    for j, name in enumerate(schema.CATEGORICAL_COLUMNS):
        cat = world.categoricals[j]
        cdf = params.cat_cdf[j]
        # One uniform per row decides both missingness and the value: u < m is missing; otherwise
        # (u - m) / (1 - m) is uniform on [0, 1) and picks the value by inverse CDF.
        u = rng.random(n)
        missing = u < cat.missing
        v = (u - cat.missing) / (1.0 - cat.missing)
        index = np.minimum(np.searchsorted(cdf, v, side="right"), len(cdf) - 1)
        effect = params.cat_effect[j]
        if effect is not None:
            logit += np.where(missing, 0.0, effect[index])
        if arrays is not None:
            arrays[name] = _dictionary_column(index, missing, cat.dictionary)
        if j in keep:
            kept[j] = (index, missing)
    return logit, arrays, kept


def _dictionary_column(index: np.ndarray, missing: np.ndarray, dictionary: pa.StringArray) -> pa.DictionaryArray:
    """A dictionary array holding only the values used (in vocabulary order), nulls where ``missing``."""
    present = index[~missing] if missing.any() else index
    used = np.bincount(present, minlength=len(dictionary)) > 0
    remap = (np.cumsum(used) - 1).astype(np.int32)
    indices = pa.array(remap[index], type=pa.int32(), mask=missing if missing.any() else None)
    return pa.DictionaryArray.from_arrays(indices, dictionary.take(pa.array(np.flatnonzero(used))))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # tanh form: no overflow warnings for large |x|


def _calibrate_intercept(logit: np.ndarray, target: float) -> float:
    """The intercept b with mean(sigmoid(b + logit)) = target (bisection; the mean is increasing in b)."""
    low, high = -20.0, 10.0
    for _ in range(60):
        mid = 0.5 * (low + high)
        if _sigmoid(mid + logit).mean() < target:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


@dataclass(frozen=True)
class SyntheticDay:
    """One generated day: the partition table, its oracle, and what produced them."""

    table: pa.Table  # PARTITION_SCHEMA
    oracle: pa.Table  # ORACLE_SCHEMA: row_id, p_click
    provenance: dict


def _resolve_segments(params: DayParameters, shift: DayShift) -> list[tuple[int, int, int, float]]:
    """(column index j, vocabulary index, popularity rank that day, expected share of rows) per segment."""
    world = seed_world(params.seed)
    resolved = []
    for segment in shift.segments:
        j = schema.CATEGORICAL_COLUMNS.index(segment.column)
        pmf = np.diff(params.cat_cdf[j], prepend=0.0)
        order = np.argsort(-pmf, kind="stable")  # most popular first; ties by vocabulary order
        if segment.rank is not None:
            index = int(order[segment.rank])
            rank = segment.rank
        else:
            index = value_index(params.seed, segment)
            rank = int(np.flatnonzero(order == index)[0])
        resolved.append((j, index, rank, float(pmf[index]) * (1.0 - world.categoricals[j].missing)))
    return resolved


def generate_day(date: dt.date, rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED,
                 shift: DayShift | None = None) -> SyntheticDay:
    """Generates the day ``date`` (deterministic in ``seed``, ``date``, ``rows``, ``shift``; nothing written).

    ``shift`` (a ``DayShift``) moves this day away from its law (see the module docstring); ``None`` or a
    ``DayShift`` that moves nothing gives exactly the unshifted day.
    """
    date = require_date(date)
    seed = check_seed(seed)
    if isinstance(rows, bool) or int(rows) != rows or not 1 <= rows < MAX_ROWS:
        raise LabelDPInputError(f"rows must be a whole number in 1..{MAX_ROWS - 1}; got {rows!r}")
    rows = int(rows)
    shift = effective_shift(shift)
    params = day_parameters(seed, date)
    stream = day_seed(seed, date)
    # The intercept belongs to the unshifted law: a shift moves the day away from it.
    calibration_logit, _, _ = _draw_features(params, np.random.default_rng([stream, 1]), CALIBRATION_ROWS,
                                             build_arrays=False)
    intercept = _calibrate_intercept(calibration_logit, params.target_click_rate)
    rng = np.random.default_rng([stream, 0])
    if shift is None:
        logit, arrays, _ = _draw_features(params, rng, rows, build_arrays=True)
        p_click = _sigmoid(intercept + logit)
    else:
        drawn = day_parameters(seed, date, shift) if shift.popularity else params
        segments = _resolve_segments(drawn, shift)
        logit, arrays, kept = _draw_features(drawn, rng, rows, build_arrays=True,
                                             keep=frozenset(j for j, *_ in segments))
        offset = np.full(rows, shift.logit)
        segment_rows = []
        for segment, (j, index, _, _) in zip(shift.segments, segments, strict=True):
            values, missing = kept[j]
            inside = (values == index) & ~missing
            offset[inside] += segment.logit
            segment_rows.append(int(np.count_nonzero(inside)))
        p_click = _sigmoid(intercept + logit + offset)  # rows with offset 0 get exactly the unshifted p_click
    label = (rng.random(rows) < p_click).astype(np.int8)
    row_id = np.int64(epoch_day(date)) * np.int64(2**32) + np.arange(rows, dtype=np.int64)
    columns = {schema.ROW_ID: pa.array(row_id), schema.LABEL: pa.array(label), **arrays}
    table = pa.Table.from_arrays([columns[name] for name in schema.ALL_COLUMNS], schema=schema.PARTITION_SCHEMA)
    oracle = pa.Table.from_arrays([columns[schema.ROW_ID], pa.array(p_click)], schema=schema.ORACLE_SCHEMA)
    provenance = {
        "source": "synthetic",
        "generator": "pipelines.synth",
        "generator_version": GENERATOR_VERSION,
        "date": date.isoformat(),
        "base_seed": seed,
        "day_seed": stream,
        "rows": rows,
        "clicks": int(label.sum()),
        "click_rate": round(float(label.mean()), 6),
        "mean_p_click": round(float(p_click.mean()), 6),
        "target_click_rate": round(params.target_click_rate, 6),
        "intercept": round(intercept, 6),
        "signal_features": [schema.NUMERIC_COLUMNS[j] for j in SIGNAL_NUMERIC]
        + [schema.CATEGORICAL_COLUMNS[j] for j in SIGNAL_CATEGORICAL],
    }
    if shift is not None:
        world = seed_world(seed)
        record = shift.settings()
        for item, (j, index, rank, share), count in zip(record["segments"], segments, segment_rows, strict=True):
            item.update(value=world.categoricals[j].dictionary[index].as_py(), day_rank=rank,
                        expected_share=round(share, 6), rows=count)
        for item in record["popularity"]:
            item["base_exponent"] = round(world.categoricals[schema.CATEGORICAL_COLUMNS.index(item["column"])]
                                          .exponent, 6)
        provenance["shift"] = record
    return SyntheticDay(table=table, oracle=oracle, provenance=provenance)


def write_synthetic_day(root: str | os.PathLike, date: dt.date, rows: int = DEFAULT_ROWS,
                        seed: int = DEFAULT_SEED,
                        rows_per_file: int = schema.DEFAULT_ROWS_PER_FILE,
                        shift: DayShift | None = None, replace: bool = False) -> tuple[Path, dict]:
    """Generates ``date`` and writes ``partitions/date=D/`` (with ``_provenance.json``) and ``oracle/date=D/``.

    ``shift``: a ``DayShift`` for this day (see ``generate_day``); to shift some days of a range, pass it for
    those days only. The oracle and the partition are published as one pair (`pipelines.data.schema.write_partition`
    with ``oracle=``): a reader sees the old day or the new one, and a process killed between the two swaps leaves a
    journal from which the next command that writes under the data root moves the new pair in. The oracle moves in
    first, so a partition never exists without its oracle. An existing day is refused unless ``replace`` (before
    anything is written: `pipelines.data.schema.refuse_existing_partition`). Returns (partition directory,
    provenance).
    """
    schema.refuse_existing_partition(root, date, replace)
    day = generate_day(date, rows=rows, seed=seed, shift=shift)
    directory = schema.write_partition(root, date, day.table, rows_per_file=rows_per_file,
                                       source=f"synthetic day {date.isoformat()}",
                                       provenance=day.provenance, replace=replace, oracle=day.oracle)
    return directory, day.provenance


__all__ = ["DayParameters", "SyntheticDay", "day_parameters", "generate_day", "write_synthetic_day"]
