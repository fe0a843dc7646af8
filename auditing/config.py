"""The two configurations of an audit: what determines the game's counts, and what turns counts into a bound.

`GameConfig` (`auditing.game.config`) is everything the counts depend on (repetitions, seed, score, grid, which rows
are audited and how the reference is corrected); the scoring job is keyed by it and never reads a bound setting. `BoundConfig` is
everything applied to stored counts afterwards (bound method, selection strategy, confidence, delta, kappa): a
change of it re-judges stored counts in milliseconds and never re-scores. A verdict is stored under both:
`config_hash` of the two is part of the warehouse key.

The game always counts both keyed halves of repetition 0 (`auditing.game.slots`), so every selection strategy,
halves or not, is a bound setting.

A game also carries the night it audits (`GameConfig.night`, the partition day), which keys its draws with the seed
(`GameConfig.draw_seed`). The night is a fact of the run, not a setting: it is in the game's hash when set, never in
`config_hash`, so one plan's verdicts keep one config hash across nights.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

from auditing.bounds.params import CONFIDENCE, DELTA, KAPPA
from auditing.game.config import GameConfig, digest
from labeldp.settings import as_stored, check_settings, setting, setting_of
from labeldp.stored import NUMBER, TEXT, stored_metadata

if TYPE_CHECKING:
    from auditing.bounds.methods import BoundMethod
    from auditing.bounds.selection import SelectionStrategy

# The config hash's payload version: 1 is the layout written before kappa and reference_calibration existed;
# a configuration whose numbers are the same as a version-1 one (binomial, delta 0, kappa 0, raw reference)
# keeps its version-1 hash so existing warehouse rows stay keyed.
CONFIG_HASH_VERSION = 2


# The bound registries are imported where a bound is checked or used, not when this module loads: a stored result
# (which holds a BoundConfig) is read without them.
def _methods():
    from auditing.bounds import methods

    return methods


def _strategies():
    from auditing.bounds import selection

    return selection


@dataclass(frozen=True)
class BoundConfig:
    """Everything that turns the game's counts into a valid bound; validated on construction. A method or
    strategy object is accepted and stored by its registered name (hashes and rows use it).

    Each setting is also a column of audit_results (`labeldp.stored`), each in its own place of the table (its
    ``group``, `auditing.sinks.warehouse.schema.STORED_BLOCKS`)."""

    method: str = setting("binomial", help="bound method", choices=lambda: _methods().method_names(),
                          choices_help=lambda: _methods().BOUND_METHODS.help(),
                          metadata=stored_metadata(
                              TEXT, "bound method: a name of auditing.bounds.lower_bound.METHODS (the CHECK lists them)",
                              choices=lambda: _methods().method_names(), required=True, group="method"))
    strategy: str = setting("bonferroni", help="how the number of guesses c' is chosen over the sweep",
                            choices=lambda: _strategies().strategy_names(),
                            choices_help=lambda: _strategies().STRATEGIES_REGISTRY.help(),
                            metadata=stored_metadata(TEXT, "how c' was selected: bonferroni | split", blank=False,
                                                     required=True, group="strategy"))
    confidence: float = setting(0.95, meaning=CONFIDENCE, metadata=stored_metadata(
        NUMBER, "confidence of epsilon_lower_bound, e.g. 0.95", high=1.0, low_open=True, high_open=True,
        required=True, group="confidence"))
    delta: float | None = setting(None, meaning=DELTA, metadata=stored_metadata(
        NUMBER, "delta of the (epsilon, delta) claim that was audited", high=1.0, high_open=True, required=True,
        group="delta"))
    # NULL on a row written before kappa
    kappa: float = setting(0.0, meaning=KAPPA, metadata=stored_metadata(
        NUMBER, "the kappa the verdict was computed at (the plan's): on every audited row |log D'(y|x) - log D(y|x)| <= "
        "kappa, i.e. the reference misjudges no row's click odds by more than a factor e^kappa; NULL: a row "
        "written before kappa", group="kappa"))

    def __post_init__(self):
        from auditing.bounds.lower_bound import resolve_delta

        object.__setattr__(self, "method", self.bound_method.name)
        object.__setattr__(self, "strategy", self.selection.name)
        object.__setattr__(self, "delta", resolve_delta(self.method, self.delta))
        check_settings(self)

    @classmethod
    def as_stored(cls, **values) -> BoundConfig:
        """The bound a stored record names, as it was written: not checked against this process's registries (a
        method a plugin registered in another process still reads back)."""
        return as_stored(cls, values)

    @property
    def bound_method(self) -> BoundMethod:
        return _methods().bound_method(self.method)

    @property
    def selection(self) -> SelectionStrategy:
        return _strategies().selection_strategy(self.strategy)


# The declared settings of each part (the game's night is the run's, not a setting).
GAME_FIELDS = tuple(f.name for f in fields(GameConfig) if setting_of(f) is not None)
BOUND_FIELDS = tuple(f.name for f in fields(BoundConfig) if setting_of(f) is not None)


def split_settings(values: Mapping[str, object]) -> tuple[GameConfig, BoundConfig]:
    """The game's and the bound's settings of one flat mapping (a plan's ``audit`` object, `flat_settings`' form);
    a key that is neither's raises TypeError naming it. The bound is validated first."""
    unknown = sorted(set(values) - set(GAME_FIELDS) - set(BOUND_FIELDS))
    if unknown:
        raise TypeError(f"unexpected setting(s) {unknown}: neither the game's nor the bound's")
    bound = BoundConfig(**{k: v for k, v in values.items() if k in BOUND_FIELDS})
    return GameConfig(**{k: v for k, v in values.items() if k in GAME_FIELDS}), bound


def flat_settings(game: GameConfig, bound: BoundConfig) -> dict:
    """The settings of ``game`` and ``bound`` side by side, the bound's first, without the night: the form a plan's
    ``audit`` object, a scoring record's ``config`` and `config_hash` take."""
    return {**asdict(bound), **{name: getattr(game, name) for name in GAME_FIELDS}}


def config_hash(game: GameConfig, bound: BoundConfig) -> str:
    """Stable 16-hex digest of an audit's settings, ``game``'s and ``bound``'s (it keys verdicts in the warehouse);
    the game's night is no setting and is left out. Versioned: see CONFIG_HASH_VERSION."""
    payload = flat_settings(game, bound)
    if same_numbers_as_version1(game, bound):
        payload.pop("kappa")
        payload.pop("reference_calibration")
        payload["tau"] = 0.0  # version 1's field; 0 there gives the numbers kappa = 0 gives here
    else:
        payload["hash_version"] = CONFIG_HASH_VERSION
    return digest(payload)


def same_numbers_as_version1(game: GameConfig, bound: BoundConfig) -> bool:
    """True when results under these settings equal those written before kappa existed (then the binomial bound
    with delta 0 at tau 0, on the raw reference)."""
    return (bound.method == _methods().Binomial.name and bound.delta == 0.0 and bound.kappa == 0.0
            and game.reference_calibration == "none")
