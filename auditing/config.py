"""The two configurations of an audit: what determines the game's counts, and what turns counts into a bound.

`GameConfig` is everything the counts depend on (repetitions, seed, score, grid, which rows are audited and how
the reference is corrected); the scoring job is keyed by it and never reads a bound setting. `BoundConfig` is
everything applied to stored counts afterwards (bound method, selection strategy, confidence, delta, kappa): a
change of it re-judges stored counts in milliseconds and never re-scores. `AuditConfig` is the two together, the
configuration a verdict is stored under (its ``config_hash`` is part of the warehouse key).

The game always counts both keyed halves of repetition 0 (`auditing.slots`), so every selection strategy,
halves or not, is a bound setting.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields

import numpy as np

from auditing.bounds import resolve_delta
from auditing.errors import LabelDPInputError
from auditing.methods import Binomial, BoundMethod, bound_method
from auditing.params import check_confidence, check_delta, check_kappa
from auditing.scores import DEFAULT_POWER, SCORES
from auditing.selection import SelectionStrategy, selection_strategy
from auditing.sweep import GRID_KINDS, guess_grid

# Which rows of the day the game is played on: the rows whose labels entered training (default), or
# every row. The core audits whatever rows it is given; pipelines/audit_rows.py selects them.
AUDIT_ROWS = ("training", "all")
# How the reference M' is corrected on the day's held-out rows before the game (pipelines/recalibration.py):
# `boost` (a few regularized boosting rounds from M''s logits, able to learn feature-dependent drift) or
# `none` (the paper's raw M'). The core plays the game on whatever reference it is given; the label is part of
# the game's configuration because it changes the counts.
REFERENCE_CALIBRATIONS = ("boost", "none")
# The config hash's payload version: 1 is the layout written before kappa and reference_calibration existed;
# a configuration whose numbers are the same as a version-1 one (binomial, delta 0, kappa 0, raw reference)
# keeps its version-1 hash so existing warehouse rows stay keyed.
CONFIG_HASH_VERSION = 2
# The game's version: bumped whenever the same GameConfig on the same inputs would count differently (a change
# of the keyed randomness, the scores or the grid). Stored counts of another version are never reused.
GAME_VERSION = 1


def _digest(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GameConfig:
    """Everything that determines the game's counts (paper Alg. 2 and its sweep); validated on construction."""

    repetitions: int = 100
    seed: int = 0
    score: str = "paper"
    score_power: float = DEFAULT_POWER
    grid: str = "log"
    grid_points: int = 100
    grid_min_fraction: float = 1e-4
    audit_rows: str = "training"  # AUDIT_ROWS
    reference_calibration: str = "none"  # REFERENCE_CALIBRATIONS

    def __post_init__(self):
        if self.audit_rows not in AUDIT_ROWS:
            raise LabelDPInputError(f"audit_rows must be one of {list(AUDIT_ROWS)}; got {self.audit_rows!r}")
        if self.reference_calibration not in REFERENCE_CALIBRATIONS:
            raise LabelDPInputError(f"reference_calibration must be one of {list(REFERENCE_CALIBRATIONS)}; "
                                    f"got {self.reference_calibration!r}")
        if self.audit_rows == "all" and self.reference_calibration != "none":
            raise LabelDPInputError(
                "audit_rows 'all' cannot be combined with reference_calibration "
                f"{self.reference_calibration!r}: the calibration uses the day's held-out rows, which would then "
                "be audited too; use audit_rows 'training' or reference_calibration 'none'")
        if isinstance(self.repetitions, bool) or int(self.repetitions) != self.repetitions or self.repetitions < 1:
            raise LabelDPInputError(f"repetitions must be a whole number >= 1; got {self.repetitions!r}")
        if isinstance(self.seed, bool) or int(self.seed) != self.seed or self.seed < 0:
            raise LabelDPInputError(f"seed must be a whole number >= 0; got {self.seed!r}")
        if self.score not in SCORES:
            raise LabelDPInputError(f"score must be one of {sorted(SCORES)}; got {self.score!r}")
        if not (self.score_power >= 0):
            raise LabelDPInputError(f"score_power must be >= 0; got {self.score_power!r}")
        if self.grid not in GRID_KINDS:
            raise LabelDPInputError(f"grid must be one of {list(GRID_KINDS)}; got {self.grid!r}")

    def game_hash(self) -> str:
        """Stable 16-hex digest of what determines the counts (with `GAME_VERSION`)."""
        return _digest({**asdict(self), "game_version": GAME_VERSION})

    def grid_for(self, m: int) -> np.ndarray:
        """The sweep's guess counts c' for a game on ``m`` rows (sorted, unique)."""
        return guess_grid(m, kind=self.grid, points=self.grid_points, min_fraction=self.grid_min_fraction)

    def half_grid(self, m_half: int) -> np.ndarray:
        """The grid of one keyed half of repetition 0: one fixed list of fractions (not de-duplicated), so index
        g means the same fraction in both halves. Empty for an empty half."""
        if m_half < 1:
            return np.zeros(0, dtype=np.int64)
        if self.grid == "paper":
            fractions = np.arange(1, 101) / 100.0
        else:
            fractions = np.geomspace(self.grid_min_fraction, 1.0, self.grid_points)
        return np.clip(np.ceil(fractions * m_half - 1e-9).astype(np.int64), 1, m_half)


@dataclass(frozen=True)
class BoundConfig:
    """Everything that turns the game's counts into a valid bound; validated on construction. A method or
    strategy object is accepted and stored by its registered name (hashes and rows use it)."""

    method: str = "binomial"  # a registered bound method (auditing.methods)
    strategy: str = "bonferroni"  # a registered selection strategy (auditing.selection)
    confidence: float = 0.95
    delta: float | None = None  # None: the method's default (0 for both, auditing.bounds)
    kappa: float = 0.0  # bound on |log D'(y|x) - log D(y|x)| over the audited rows (docs/soundness.md)

    def __post_init__(self):
        object.__setattr__(self, "method", bound_method(self.method).name)
        object.__setattr__(self, "strategy", selection_strategy(self.strategy).name)
        check_confidence(self.confidence)
        object.__setattr__(self, "delta", check_delta(resolve_delta(self.method, self.delta)))
        object.__setattr__(self, "kappa", check_kappa(self.kappa))

    @property
    def bound_method(self) -> BoundMethod:
        return bound_method(self.method)

    @property
    def selection(self) -> SelectionStrategy:
        return selection_strategy(self.strategy)


GAME_FIELDS = tuple(f.name for f in fields(GameConfig))
BOUND_FIELDS = tuple(f.name for f in fields(BoundConfig))


@dataclass(frozen=True)
class AuditConfig:
    """An audit's whole configuration: the game's (`GameConfig`) and the bound's (`BoundConfig`) fields side by
    side, validated by both on construction. ``.game`` and ``.bound`` split it; `AuditConfig.of` joins them."""

    method: str = "binomial"
    strategy: str = "bonferroni"
    confidence: float = 0.95
    delta: float | None = None
    kappa: float = 0.0
    repetitions: int = 100
    seed: int = 0
    score: str = "paper"
    score_power: float = DEFAULT_POWER
    grid: str = "log"
    grid_points: int = 100
    grid_min_fraction: float = 1e-4
    audit_rows: str = "training"
    reference_calibration: str = "none"  # plans default to "boost" (flows/plan.py)

    def __post_init__(self):
        bound = BoundConfig(**{name: getattr(self, name) for name in BOUND_FIELDS})
        for name in BOUND_FIELDS:  # the names and the resolved delta as BoundConfig stores them
            object.__setattr__(self, name, getattr(bound, name))
        GameConfig(**{name: getattr(self, name) for name in GAME_FIELDS})

    @classmethod
    def of(cls, game: GameConfig, bound: BoundConfig) -> AuditConfig:
        return cls(**asdict(game), **asdict(bound))

    @property
    def game(self) -> GameConfig:
        return GameConfig(**{name: getattr(self, name) for name in GAME_FIELDS})

    @property
    def bound(self) -> BoundConfig:
        return BoundConfig(**{name: getattr(self, name) for name in BOUND_FIELDS})

    def config_hash(self) -> str:
        """Stable 16-hex digest of the whole configuration (keys verdicts by audit config), versioned: see
        CONFIG_HASH_VERSION."""
        payload = asdict(self)
        if self.same_numbers_as_version1():
            payload.pop("kappa")
            payload.pop("reference_calibration")
            payload["tau"] = 0.0  # version 1's field; 0 there gives the numbers kappa = 0 gives here
        else:
            payload["hash_version"] = CONFIG_HASH_VERSION
        return _digest(payload)

    def same_numbers_as_version1(self) -> bool:
        """True when results under this configuration equal those written before kappa existed (then the
        binomial bound with delta 0 at tau 0, on the raw reference)."""
        return (self.method == Binomial.name and self.delta == 0.0 and self.kappa == 0.0
                and self.reference_calibration == "none")

    @property
    def bound_method(self) -> BoundMethod:
        return bound_method(self.method)

    @property
    def selection(self) -> SelectionStrategy:
        return selection_strategy(self.strategy)

    def grid_for(self, m: int) -> np.ndarray:
        return self.game.grid_for(m)
