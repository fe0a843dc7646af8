"""The two configurations of an audit: what determines the game's counts, and what turns counts into a bound.

`GameConfig` is everything the counts depend on (repetitions, seed, score, grid, which rows are audited and how
the reference is corrected); the scoring job is keyed by it and never reads a bound setting. `BoundConfig` is
everything applied to stored counts afterwards (bound method, selection strategy, confidence, delta, kappa): a
change of it re-judges stored counts in milliseconds and never re-scores. `AuditConfig` is the two together, the
configuration a verdict is stored under (its ``config_hash`` is part of the warehouse key).

The game always counts both keyed halves of repetition 0 (`auditing.game.slots`), so every selection strategy,
halves or not, is a bound setting.

A game also carries the night it audits (`GameConfig.night`, the partition day), which keys its draws with the seed
(`GameConfig.draw_seed`). The night is a fact of the run, not a setting: it is in the game's hash when set, never in
`AuditConfig` or its ``config_hash``, so one plan's verdicts keep one config hash across nights.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from dataclasses import asdict, dataclass, fields

import numpy as np

from auditing.bounds.lower_bound import resolve_delta
from auditing.bounds.methods import BOUND_METHODS, Binomial, BoundMethod, bound_method, method_names
from auditing.bounds.params import CONFIDENCE, DELTA, KAPPA
from auditing.bounds.selection import (
    STRATEGIES_REGISTRY,
    SelectionStrategy,
    selection_strategy,
    strategy_names,
)
from auditing.game.keyed_random import night_seed
from auditing.game.scores import DEFAULT_POWER, SCORES
from auditing.game.sweep import GRID_KINDS, guess_grid
from labeldp.errors import LabelDPInputError
from labeldp.names import parse_date
from labeldp.settings import check_settings, setting, setting_of

# Which rows of the day the game is played on: the rows whose labels entered training (default), or
# every row. The core audits whatever rows it is given; pipelines/scoring/audit_rows.py selects them.
AUDIT_ROWS = ("training", "all")
# How the reference M' is corrected on the day's held-out rows before the game (pipelines/reference/recalibration.py):
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

    repetitions: int = setting(20, help="repetitions of the game: repetition 0 is pre-registered and decides, the "
                                        "others give the paper's optimistic statistic", minimum=1)
    seed: int = setting(0, help="seed keying the game's counterfactual labels and coins (with each row's id and "
                                "the night audited)", minimum=0)
    score: str = setting("paper", help="attack score", choices=SCORES.names,
                         choices_help=SCORES.help)
    score_power: float = setting(DEFAULT_POWER, help="the power t of the score's (1 - M'(x)[y])^t weighting",
                                 minimum=0)
    grid: str = setting("log", help="the guess grid over c': log (grid_points log-spaced fractions from "
                                    "grid_min_fraction to 1) or paper (1% to 100% of the rows, the paper's)",
                        choices=lambda: tuple(GRID_KINDS))
    grid_points: int = setting(100, help="points of the log grid", minimum=1)
    grid_min_fraction: float = setting(1e-4, help="smallest fraction of the rows guessed on the log grid", minimum=0,
                                       open_minimum=True, maximum=1)
    audit_rows: str = setting("training", help="the rows the game is played on: training (the rows whose labels "
                                               "entered training, from the model's registry metadata) or all",
                              choices=lambda: AUDIT_ROWS)
    reference_calibration: str = setting(
        "boost", help="correction of the reference on day D before the game: boost (a few "
                      "regularised boosting rounds from M''s logits, fitted on a keyed tenth of the training rows, which "
                      "then leave the audit) or none (the paper's raw M'); a table of "
                      "probabilities audited as given records none", choices=lambda: REFERENCE_CALIBRATIONS,
        option=False)
    # The partition day the game audits, keying its draws with the seed (`draw_seed`): fresh coins each night for
    # the evidence across nights (docs/soundness.md section 10). Not a setting (no plan key, no option); None keys
    # the draws by the seed alone, as before nights existed. Text YYYY-MM-DD (a stored game read back) is parsed.
    night: dt.date | None = None

    def __post_init__(self):
        check_settings(self)
        if self.night is not None:
            object.__setattr__(self, "night", parse_date(self.night, "night"))
        if self.audit_rows == "all" and self.reference_calibration != "none":
            raise LabelDPInputError(
                "audit_rows 'all' cannot be combined with reference_calibration "
                f"{self.reference_calibration!r}: the calibration uses the day's held-out rows, which would then "
                "be audited too; use audit_rows 'training' or reference_calibration 'none'")

    @property
    def draw_seed(self) -> int:
        """The seed every draw of the game is keyed by (`auditing.game.keyed_random.night_seed`): ``seed``
        without a night, else a mix of the seed and the night."""
        return night_seed(self.seed, self.night)

    def with_night(self, night: dt.date | None) -> GameConfig:
        """This game played on ``night`` (None: keyed by the seed alone)."""
        return dataclasses.replace(self, night=night)

    def to_dict(self) -> dict:
        """The stored form: every field, the night as YYYY-MM-DD and left out when None (so a game without a
        night is stored, and hashed, as before nights existed)."""
        out = asdict(self)
        night = out.pop("night")
        if night is not None:
            out["night"] = night.isoformat()
        return out

    def game_hash(self) -> str:
        """Stable 16-hex digest of what determines the counts (with `GAME_VERSION`): the night is in it when set."""
        return _digest({**self.to_dict(), "game_version": GAME_VERSION})

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

    method: str = setting("binomial", help="bound method", choices=method_names,
                          choices_help=lambda: BOUND_METHODS.help())
    strategy: str = setting("bonferroni", help="how the number of guesses c' is chosen over the sweep",
                            choices=strategy_names, choices_help=lambda: STRATEGIES_REGISTRY.help())
    confidence: float = setting(0.95, meaning=CONFIDENCE)
    delta: float | None = setting(None, meaning=DELTA)
    kappa: float = setting(0.0, meaning=KAPPA)

    def __post_init__(self):
        object.__setattr__(self, "method", bound_method(self.method).name)
        object.__setattr__(self, "strategy", selection_strategy(self.strategy).name)
        object.__setattr__(self, "delta", resolve_delta(self.method, self.delta))
        check_settings(self)

    @property
    def bound_method(self) -> BoundMethod:
        return bound_method(self.method)

    @property
    def selection(self) -> SelectionStrategy:
        return selection_strategy(self.strategy)


# The declared settings of each part (the game's night is the run's, not a setting: AuditConfig does not carry it).
GAME_FIELDS = tuple(f.name for f in fields(GameConfig) if setting_of(f) is not None)
BOUND_FIELDS = tuple(f.name for f in fields(BoundConfig) if setting_of(f) is not None)


class AuditConfig:
    """The audit's settings: how the game is played (what its counts depend on) and how the counts become a valid
    bound (what a re-judging may change)

    The bound's (`BoundConfig`) and the game's (`GameConfig`) fields side by side, each declared there once (type,
    default, range, help) and joined here by `_joined`; validated by both on construction. ``.game`` and
    ``.bound`` split it; `AuditConfig.of` joins them."""

    def __post_init__(self):
        bound = BoundConfig(**{name: getattr(self, name) for name in BOUND_FIELDS})
        for name in BOUND_FIELDS:  # the names and the resolved delta as BoundConfig stores them
            object.__setattr__(self, name, getattr(bound, name))
        game = GameConfig(**{name: getattr(self, name) for name in GAME_FIELDS})
        for name in GAME_FIELDS:
            object.__setattr__(self, name, getattr(game, name))

    @classmethod
    def of(cls, game: GameConfig, bound: BoundConfig) -> AuditConfig:
        """The settings of ``game`` and ``bound`` (a game's night is left out: it is no setting)."""
        return cls(**{name: getattr(game, name) for name in GAME_FIELDS}, **asdict(bound))

    @property
    def game(self) -> GameConfig:
        """The game's settings, with no night (`GameConfig.with_night` adds the night a run audits)."""
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


def _joined(cls: type, *parts: type) -> type:
    """``cls`` as a frozen dataclass whose fields are ``parts``' declared settings, in order, with their
    declarations."""
    cls.__annotations__ = {}
    for part in parts:
        for item in fields(part):
            if setting_of(item) is None:
                continue
            cls.__annotations__[item.name] = item.type
            setattr(cls, item.name, dataclasses.field(default=item.default, default_factory=item.default_factory,
                                                      metadata=item.metadata))
    return dataclass(frozen=True)(cls)


AuditConfig = _joined(AuditConfig, BoundConfig, GameConfig)
