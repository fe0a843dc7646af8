"""The game's configuration (`GameConfig`): everything its counts depend on (repetitions, seed, score, grid, which
rows are audited and how the reference is corrected), and the night that keys its draws. The scoring job is keyed by
it and never reads a bound setting (`auditing.config.BoundConfig`); `auditing.config.config_hash` keys a verdict
by both.

A game carries the night it audits (`GameConfig.night`, the partition day), which keys its draws with the seed
(`GameConfig.draw_seed`). The night is a fact of the run, not a setting: it is in the game's hash when set.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from auditing.game.keyed_random import night_seed
from auditing.game.scores import DEFAULT_POWER, SCORES
from auditing.game.sweep import GRID_KINDS, guess_grid
from auditing.records.game import REFERENCE_CALIBRATIONS
from labeldp.codec import OMIT_DEFAULT, encode
from labeldp.errors import LabelDPInputError
from labeldp.names import parse_date
from labeldp.settings import as_stored, check_settings, setting
from labeldp.stored import COUNT, SMALL_COUNT, TEXT, stored_metadata

# Which rows of the day the game is played on: the rows whose labels entered training (default), or
# every row. The core audits whatever rows it is given; pipelines/scoring/audit_rows.py selects them.
AUDIT_ROWS = ("training", "all")
# The game's version: bumped whenever the same GameConfig on the same inputs would count differently (a change
# of the keyed randomness, the scores or the grid). Stored counts of another version are never reused.
GAME_VERSION = 1


def digest(payload: dict) -> str:
    """Stable 16-hex digest of a JSON payload (keys sorted): the game's hash and the audit's config hash."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GameConfig:
    """Everything that determines the game's counts (paper Alg. 2 and its sweep); validated on construction.
    repetitions, seed and reference_calibration are also columns of audit_results (`labeldp.stored`)."""

    repetitions: int = setting(20, help="repetitions of the game: repetition 0 is pre-registered and decides, the "
                                        "others give the paper's optimistic statistic", minimum=1,
                               metadata=stored_metadata(SMALL_COUNT, "repetitions of the game (for the paper's "
                                                        "statistic)", low=1, required=True))
    seed: int = setting(0, help="seed keying the game's counterfactual labels and coins (with each row's id and "
                                "the night audited)", minimum=0,
                        metadata=stored_metadata(COUNT, "seed keying the game's randomness", required=True))
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
        option=False, metadata=stored_metadata(
            TEXT, "how the reference M' was corrected on day D before the game: boost | none (the raw "
            "M'); NULL: a row written before the correction existed (raw M')", choices=lambda: REFERENCE_CALIBRATIONS,
            group="calibration"))
    # The partition day the game audits, keying its draws with the seed (`draw_seed`): fresh coins each night for
    # the evidence across nights (docs/soundness.md section 10). Not a setting (no plan key, no option); None keys
    # the draws by the seed alone, as before nights existed. Text YYYY-MM-DD (a stored game read back) is parsed.
    # Stored (`labeldp.codec.encode`) as YYYY-MM-DD, and left out when None: a game without a night is stored, and
    # hashed, as before nights existed.
    night: dt.date | None = field(default=None, metadata=OMIT_DEFAULT)

    def __post_init__(self):
        check_settings(self)
        if self.night is not None:
            object.__setattr__(self, "night", parse_date(self.night, "night"))
        if self.audit_rows == "all" and self.reference_calibration != "none":
            raise LabelDPInputError(
                "audit_rows 'all' cannot be combined with reference_calibration "
                f"{self.reference_calibration!r}: the calibration uses the day's held-out rows, which would then "
                "be audited too; use audit_rows 'training' or reference_calibration 'none'")

    @classmethod
    def as_stored(cls, **values) -> GameConfig:
        """The game a stored record names, as it was written: not checked against this process's registries (a
        score a plugin registered in another process still reads back); the night parsed."""
        stored = as_stored(cls, values)
        if stored.night is not None:
            object.__setattr__(stored, "night", parse_date(stored.night, "night"))
        return stored

    @property
    def draw_seed(self) -> int:
        """The seed every draw of the game is keyed by (`auditing.game.keyed_random.night_seed`): ``seed``
        without a night, else a mix of the seed and the night."""
        return night_seed(self.seed, self.night)

    def with_night(self, night: dt.date | None) -> GameConfig:
        """This game played on ``night`` (None: keyed by the seed alone)."""
        return dataclasses.replace(self, night=night)

    def game_hash(self) -> str:
        """Stable 16-hex digest of what determines the counts (with `GAME_VERSION`): the night is in it when set."""
        return digest({**encode(self), "game_version": GAME_VERSION})

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
