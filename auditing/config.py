"""The two configurations of an audit: what determines the game's counts, and what turns counts into a bound.

`GameConfig` (`auditing.game.config`) is everything the counts depend on (repetitions, seed, score, grid, which rows
are audited and how the reference is corrected); the scoring job is keyed by it and never reads a bound setting. `BoundConfig` is
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
from auditing.game.config import GameConfig, digest
from labeldp.settings import check_settings, setting, setting_of

# The config hash's payload version: 1 is the layout written before kappa and reference_calibration existed;
# a configuration whose numbers are the same as a version-1 one (binomial, delta 0, kappa 0, raw reference)
# keeps its version-1 hash so existing warehouse rows stay keyed.
CONFIG_HASH_VERSION = 2


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
        return digest(payload)

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
