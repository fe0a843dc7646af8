"""The game's claim-free output (`GameCounts`), and its one file (``counts.npz``).

Everything a verdict needs from the rows, reduced: the sweep counts of every repetition and of both keyed halves
of repetition 0, repetition 0's |score| histogram and attack curve, the reference's prior histogram, the capacity
check's histograms, the expected curve a positive control's floor reads, and the row grouping. No bound setting enters
it: `auditing.audit.audit_counts` turns it into an `AuditResult` at any `auditing.config.BoundConfig`, in
milliseconds, so a change of kappa, method, delta, confidence or strategy re-judges stored counts and never
re-plays the game.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from auditing.game.check_histograms import CheckHistograms, LegacyCheck
from auditing.game.config import GAME_VERSION, GameConfig
from auditing.game.prior_histogram import PriorHistogram
from auditing.game.row_groups import RowGroups
from auditing.game.sweep import SweepCounts
from auditing.records.game import AttackCurve, ExpectedCorrect, ScoreHistogram
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError

COUNTS_FILE = "counts.npz"
# The file's layout version (a file of another layout is not read as counts; its game is played again).
COUNTS_LAYOUT = 2
_HALVES = ("selection", "bound")


def _record(cls, value, path: Path):
    """A stored nested record of ``counts.npz`` ({} or null: not recorded)."""
    return decode(cls, value, f"{path}: {cls.__name__}") if value else None


@dataclass(frozen=True)
class GameCounts:
    """The game's output for one model on one day under one `GameConfig`.

    halves: the selection and bound halves of repetition 0 (None only when a half holds no row). score_histogram,
    prior_histogram, expected_correct: the records `auditing.audit.AuditResult` carries as they are (None when
    not computed). check: the capacity check's histograms (None: no check rows were given). row_groups: the
    grouping the rows were selected under (None: none). inconclusive_reason: why no row was left to play on
    (m = 0). custom_score: the game was played with a caller's score function (recorded as "custom").
    attack_curve: repetition 0's attack as a classifier of the coin (`auditing.game.attack_curve`,
    docs/attack-curve.md); None when not recorded (counts stored before it, or no row played on)."""

    game: GameConfig
    counts: SweepCounts
    halves: tuple[SweepCounts, SweepCounts] | None = None
    score_histogram: ScoreHistogram | None = None
    prior_histogram: PriorHistogram | None = None
    expected_correct: ExpectedCorrect | None = None
    check: CheckHistograms | LegacyCheck | None = None
    row_groups: RowGroups | None = None
    inconclusive_reason: str | None = None
    custom_score: bool = False
    attack_curve: AttackCurve | None = None

    @property
    def m(self) -> int:
        return int(self.counts.m)

    def save(self, directory: str | os.PathLike) -> Path:
        """Writes ``counts.npz`` in ``directory`` (arrays, plus the records as one JSON text) and returns it."""
        arrays = {"layout": np.array(COUNTS_LAYOUT), "game_version": np.array(GAME_VERSION),
                  "m": np.array(self.counts.m), "guesses": self.counts.guesses, "correct": self.counts.correct}
        if self.halves is not None:
            for name, half in zip(_HALVES, self.halves, strict=True):
                arrays.update({f"{name}_m": np.array(half.m), f"{name}_guesses": half.guesses,
                               f"{name}_correct": half.correct})
        if isinstance(self.check, CheckHistograms):
            arrays.update({f"check_{name}": value for name, value in self.check.arrays().items()})
        records = {"game": encode(self.game), **{name: {} if getattr(self, name) is None else encode(getattr(self, name))
                                                 for name in ("score_histogram", "prior_histogram", "expected_correct",
                                                              "attack_curve")},
                   "row_groups": encode(self.row_groups),
                   "inconclusive_reason": self.inconclusive_reason, "custom_score": self.custom_score}
        arrays["records"] = np.array(json.dumps(records, sort_keys=True))
        path = Path(directory) / COUNTS_FILE
        np.savez(path, **arrays)
        return path

    @classmethod
    def load(cls, directory: str | os.PathLike) -> GameCounts:
        """The counts written by `save` in ``directory``; LabelDPInputError naming the file when it is missing or
        of another layout or game version (then its game is played again)."""
        path = Path(directory) / COUNTS_FILE
        if not path.is_file():
            raise LabelDPInputError(f"{path}: missing; no game was stored here")
        with np.load(path) as data:
            if "layout" not in data.files or int(data["layout"]) != COUNTS_LAYOUT:
                raise LabelDPInputError(f"{path}: written in an older layout (no stored game records); score the "
                                        "day again")
            if int(data["game_version"]) != GAME_VERSION:
                raise LabelDPInputError(f"{path}: counts of game version {int(data['game_version'])}, this code "
                                        f"plays version {GAME_VERSION}; score the day again")
            records = json.loads(str(data["records"]))
            counts = SweepCounts(m=int(data["m"]), guesses=data["guesses"], correct=data["correct"])
            halves = None
            if "selection_m" in data.files:
                halves = tuple(SweepCounts(m=int(data[f"{n}_m"]), guesses=data[f"{n}_guesses"],
                                           correct=data[f"{n}_correct"]) for n in _HALVES)
            check = None
            if "check_selection_rows" in data.files:
                check = CheckHistograms.from_arrays({name[len("check_"):]: data[name] for name in data.files
                                                     if name.startswith("check_")})
        return cls(game=GameConfig(**records["game"]), counts=counts, halves=halves,
                   score_histogram=_record(ScoreHistogram, records["score_histogram"], path),
                   prior_histogram=_record(PriorHistogram, records["prior_histogram"], path),
                   expected_correct=_record(ExpectedCorrect, records["expected_correct"], path), check=check,
                   row_groups=_record(RowGroups, records["row_groups"], path),
                   inconclusive_reason=records["inconclusive_reason"], custom_score=records["custom_score"],
                   attack_curve=_record(AttackCurve, records.get("attack_curve"), path))
