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

The code: `pipelines.synth_world` (what a base seed fixes: vocabularies, popularities, effects, drift phases,
the per-day seed), `pipelines.synth_shifts` (``DayShift`` and its parts) and this module (a day's law, the
drawing of a day and its writing). The public names of the other two are importable from here.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from auditing.errors import LabelDPInputError
from auditing.names import require_date
from pipelines import schema
from pipelines.synth_shifts import (
    MAX_LOGIT_SHIFT,
    MAX_ZIPF_EXPONENT,
    DayShift,
    PopularityShift,
    SegmentShift,
    check_shift,
    effective_shift,
    value_index,
)
from pipelines.synth_world import (
    CALIBRATION_ROWS,
    DEFAULT_ROWS,
    DEFAULT_SEED,
    GENERATOR_VERSION,
    MAX_ROWS,
    NUM_MISSING,
    NUM_MU,
    NUM_SIGMA,
    SIGNAL_CATEGORICAL,
    SIGNAL_NUMERIC,
    CategoricalLaw,
    check_seed,
    day_seed,
    epoch_day,
    seed_world,
)

__all__ = [
    "CALIBRATION_ROWS",
    "DEFAULT_ROWS",
    "DEFAULT_SEED",
    "GENERATOR_VERSION",
    "MAX_LOGIT_SHIFT",
    "MAX_ROWS",
    "MAX_ZIPF_EXPONENT",
    "SIGNAL_CATEGORICAL",
    "SIGNAL_NUMERIC",
    "DayParameters",
    "DayShift",
    "PopularityShift",
    "SegmentShift",
    "SyntheticDay",
    "check_shift",
    "day_parameters",
    "day_seed",
    "epoch_day",
    "generate_day",
    "write_synthetic_day",
]


# ------------------------------------------------------------------------------------------ the day's law


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
                        shift: DayShift | None = None) -> tuple[Path, dict]:
    """Generates ``date`` and writes ``partitions/date=D/`` (with ``_provenance.json``) and ``oracle/date=D/``.

    ``shift``: a ``DayShift`` for this day (see ``generate_day``); to shift some days of a range, pass it for
    those days only. Each directory is published atomically. The oracle is written first, so a partition never
    exists without its oracle. Returns (partition directory, provenance).
    """
    day = generate_day(date, rows=rows, seed=seed, shift=shift)
    schema.write_oracle(root, date, day.oracle)
    directory = schema.write_partition(root, date, day.table, rows_per_file=rows_per_file,
                                       source=f"synthetic day {date.isoformat()}",
                                       provenance=day.provenance)
    return directory, day.provenance
