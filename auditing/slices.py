"""Valid bounds per slice of the audited rows (docs/slices.md).

A leak confined to a few rows is diluted in the global bound: the sweep's best guesses come from every row. A
plan therefore declares slicings, each cutting the audited rows into slices, and every slice is played alone:
the same rows, the same keyed coins as the global game (repetition 0 of a game keyed by row id is the global
game restricted to the slice), bounded at the slice's own confidence.

What a slice may depend on: anything fixed before the coins are drawn and independent of them given the
features (a column's values, the reference's prior, a group column), or the label the game shows (given the
pair {trained label, counterfactual}, the shown label does not tell which is which when the reference is the
label law). Never the training label: within "trained label = 1" a shown 0 proves the counterfactual, so a model
that leaks nothing gets spurious evidence (docs/slices.md has the counterexample, tests/auditing/test_slices.py measures
it). The slices' names are chosen from the features and the reference alone (top-K by count, deciles of the
prior), so the number of slices S is fixed before any guess and Bonferroni over S holds.

Budget: slices have their own status and budget (``SLICE_DESIGN``): each slice at confidence 1 - budget / S. The
global verdict keeps its meaning; the chance of any false alarm, global or slice, is at most the sum of the two.

Counts, then bounds: `count_slices` plays each slice (claim-free, no bound setting read: `SliceCounts`, stored
beside the day's game), `bound_slices` bounds them at any bound settings and budget, as `auditing.audit.audit_counts`
does the global game; `audit_slices` is the two in one call.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from auditing.audit import CheckRows, audit_counts, play_game
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.game.counts import GameCounts
from auditing.game.play import (
    as_class_probabilities,
    as_labels,
    as_reference_probabilities,
    as_row_ids,
    secret_bits_and_released,
)
from auditing.result import SliceAudit, SliceResult
from labeldp.choices import Choices
from labeldp.errors import LabelDPInputError

DEFAULT_TOP = 10  # a column slicing without a count takes its 10 most frequent values
MAX_GROUPS = 100  # a group column with more values than this is refused (use a column's top-K)
NULL = "null"  # the name of a missing value


@dataclass(frozen=True)
class SliceRows:
    """The rows a slicing cuts: validated probabilities, labels and ids, the columns slices may read, and the game
    (for the shown label's keyed draws)."""

    reference: np.ndarray
    labels: np.ndarray
    row_ids: np.ndarray
    columns: Mapping[str, np.ndarray]
    seed: int

    def column(self, name: str, what: str) -> np.ndarray:
        if name not in self.columns:
            raise LabelDPInputError(f"slice {what}: no column {name!r} among the {what} rows' columns "
                                    f"{sorted(self.columns)}", field=name)
        values = np.asarray(self.columns[name])
        if values.shape[0] != self.labels.shape[0]:
            raise LabelDPInputError(f"slice column {name!r}: {values.shape[0]} values for {self.labels.shape[0]} "
                                    f"{what} rows", field=name)
        return values

    def shown_labels(self) -> np.ndarray:
        """Repetition 0's released label y^b per row, from the game's own keyed draws."""
        return secret_bits_and_released(self.reference, self.labels, self.row_ids, seed=self.seed, repetition=0)[1]


@dataclass(frozen=True)
class Slice:
    """One slice: its slicing's spec, its name, and its rows among the audited and the check rows."""

    slicing: str
    name: str
    audited: np.ndarray  # bool mask over the audited rows
    check: np.ndarray | None  # bool mask over the check rows (None: no check rows)


def _text(values: np.ndarray) -> np.ndarray:
    """A column's values as text, a missing value (None, NaN) as ``NULL``; integers without a decimal point."""
    if values.dtype.kind in "iub":
        return values.astype(str)
    if values.dtype.kind == "f":
        out = values.astype(str)
        out[np.isnan(values)] = NULL
        return out
    out = np.array([NULL if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in values],
                   dtype=object)
    return out.astype(str)


# ------------------------------------------------------------------------------------------- slicings
class Slicing:
    """A rule cutting rows into named slices; ``spec`` is its canonical text (as a plan or ``--slice`` writes it)."""

    spec: str

    def slices(self, audited: SliceRows, check: SliceRows | None) -> list[Slice]:
        """The slices of ``audited`` (and of ``check``), fixed from the audited rows themselves."""
        return self.fixed(day_statistics((self,), audited)).slices(audited, check)

    @property
    def column_names(self) -> tuple[str, ...]:
        return ()

    @property
    def statistic(self) -> tuple[str, ...] | None:
        """What the slicing reads of the whole day's audited rows to fix its slices (`day_statistics`): ("values",
        COLUMN) for a column's value counts, ("prior",) for the prior's deciles, None for nothing."""
        return None

    def fixed(self, statistics: Mapping[tuple, object]) -> Slicing:
        """This slicing with its slices fixed from the day's ``statistics``: the same slices on any batch of the
        day's rows, so the day can be cut batch by batch."""
        return self


@dataclass(frozen=True)
class FixedValues(Slicing):
    """A column slicing whose values are chosen: one slice per value, in order."""

    spec: str
    column: str
    chosen: tuple[str, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return (self.column,)

    def slices(self, audited, check):
        text = _text(audited.column(self.column, "audited"))
        check_text = None if check is None else _text(check.column(self.column, "check"))
        return [Slice(self.spec, f"{self.column}={value}", text == value,
                      None if check_text is None else check_text == value) for value in self.chosen]


def _value_counts(statistics: Mapping[tuple, object], column: str) -> Mapping[str, int]:
    return statistics[("values", column)]


@dataclass(frozen=True)
class ColumnValues(Slicing):
    """A categorical column's values: its ``top`` most frequent on the audited rows, or the ``values`` listed."""

    column: str
    top: int | None = DEFAULT_TOP
    values: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return f"column:{self.column}=" + ",".join(self.values) if self.values else f"column:{self.column}:top={self.top}"

    @property
    def column_names(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def statistic(self):
        return None if self.values else ("values", self.column)

    def fixed(self, statistics):
        if self.values:
            return FixedValues(self.spec, self.column, tuple(self.values))
        # most frequent first, ties by value: a function of the features
        counts = sorted(_value_counts(statistics, self.column).items(), key=lambda item: (-item[1], item[0]))
        return FixedValues(self.spec, self.column, tuple(name for name, _ in counts[: self.top]))


@dataclass(frozen=True)
class GroupColumn(Slicing):
    """Every value of a group column (a cohort, an experiment arm, a market) is a slice."""

    column: str

    @property
    def spec(self) -> str:
        return f"group:{self.column}"

    @property
    def column_names(self) -> tuple[str, ...]:
        return (self.column,)

    @property
    def statistic(self):
        return ("values", self.column)

    def fixed(self, statistics):
        names = sorted(_value_counts(statistics, self.column))
        if len(names) > MAX_GROUPS:
            raise LabelDPInputError(f"slice {self.spec}: {len(names)} groups, more than {MAX_GROUPS}; slice by the "
                                    f"most frequent ones instead (column:{self.column}:top=K)", field=self.column)
        return FixedValues(self.spec, self.column, tuple(names))


def reference_prior(reference: np.ndarray) -> np.ndarray:
    """The prior a decile slicing cuts: the reference's class-1 probability (binary), or its largest class
    probability (more classes)."""
    return reference[:, 1] if reference.shape[1] == 2 else reference.max(axis=1)


DECILES = np.arange(1, 10) / 10.0


def lower_quantile_ranks(n: int) -> np.ndarray:
    """The ranks (0-based, in sorted order) of ``np.quantile(values, DECILES, method="lower")`` for n values."""
    return np.floor((n - 1) * DECILES).astype(np.int64)


@dataclass(frozen=True)
class FixedEdges(Slicing):
    """A prior slicing whose edges are fixed: slice i holds the rows whose prior is in (edge_i, edge_i+1]."""

    spec: str
    edges: tuple[float, ...]

    def slices(self, audited, check):
        edges = np.asarray(self.edges)
        where = np.searchsorted(edges, reference_prior(audited.reference), side="left") - 1  # (edge_i, edge_i+1]
        check_where = None if check is None else np.searchsorted(edges, reference_prior(check.reference),
                                                                  side="left") - 1
        out = []
        for i in range(edges.size - 1):
            low = "0" if i == 0 else f"{edges[i]:.3g}"
            high = "1" if i == edges.size - 2 else f"{edges[i + 1]:.3g}"
            out.append(Slice(self.spec, f"prior ({low}, {high}]", where == i,
                             None if check_where is None else check_where == i))
        return out


@dataclass(frozen=True)
class PriorDeciles(Slicing):
    """Deciles of the reference's prior on the audited rows (``reference_prior``); tied edges merge deciles."""

    spec = "prior-deciles"

    @property
    def statistic(self):
        return ("prior",)

    def fixed(self, statistics):
        quantiles, largest = statistics[("prior",)]
        inner = np.unique(np.asarray(quantiles, dtype=np.float64))
        edges = np.concatenate([[-np.inf], inner[inner < largest], [np.inf]])
        return FixedEdges(self.spec, tuple(float(v) for v in edges))


@dataclass(frozen=True)
class ShownLabel(Slicing):
    """The label the game shows (repetition 0's y^b): one slice per class."""

    spec = "shown-label"

    def slices(self, audited, check):
        shown = audited.shown_labels()
        check_shown = None if check is None else check.shown_labels()
        return [Slice(self.spec, f"shown label {c}", shown == c, None if check_shown is None else check_shown == c)
                for c in range(audited.reference.shape[1])]


def day_statistics(slicings, audited: SliceRows) -> dict[tuple, object]:
    """What ``slicings`` read of the day's audited rows, held in memory (`Slicing.statistic`; `DayStatistics`
    gathers the same batch by batch)."""
    out: dict[tuple, object] = {}
    for slicing in slicings:
        wanted = slicing.statistic
        if wanted is None or wanted in out:
            continue
        if wanted[0] == "values":
            names, counts = np.unique(_text(audited.column(wanted[1], "audited")), return_counts=True)
            out[wanted] = {str(name): int(count) for name, count in zip(names, counts, strict=True)}
        else:
            prior = reference_prior(audited.reference)
            out[wanted] = (np.quantile(prior, DECILES, method="lower"), float(prior.max()))
    return out


# The prior's order-preserving bins for its exact deciles batch by batch: the top bits of a non-negative double
# (sign, exponent, 12 bits of mantissa), so a bin holds at most 1/4096 of a power of two.
_PRIOR_BIN_SHIFT = 40


class DayStatistics:
    """`day_statistics` gathered batch by batch, in memory that does not grow with the rows: each column's value
    counts (grows with its distinct values), and the prior's exact deciles in two passes over the day (`add`, then
    `add_again` while `needs_second_pass`): a count of rows per order-preserving bin of the prior, then the values of
    the bins holding the deciles' ranks alone."""

    def __init__(self, slicings):
        self._wanted = tuple(dict.fromkeys(s.statistic for s in slicings if s.statistic is not None))
        self._counts = {w: {} for w in self._wanted if w[0] == "values"}
        self._prior = ("prior",) in self._wanted
        self._bins: dict[int, int] = {}
        self._rows = 0
        self._largest = -np.inf
        self._targets: dict[int, list[int]] | None = None  # bin -> the ranks inside it
        self._found: dict[int, list[np.ndarray]] = {}

    @property
    def needs_second_pass(self) -> bool:
        return self._prior

    def add(self, audited: SliceRows) -> None:
        for wanted, counts in self._counts.items():
            names, found = np.unique(_text(audited.column(wanted[1], "audited")), return_counts=True)
            for name, count in zip(names.tolist(), found.tolist(), strict=True):
                counts[name] = counts.get(name, 0) + count
        if self._prior and audited.labels.size:
            prior = reference_prior(audited.reference)
            keys, found = np.unique(_prior_bins(prior), return_counts=True)
            for key, count in zip(keys.tolist(), found.tolist(), strict=True):
                self._bins[key] = self._bins.get(key, 0) + count
            self._rows += int(prior.size)
            self._largest = max(self._largest, float(prior.max()))

    def add_again(self, audited: SliceRows) -> None:
        """The second pass: keeps the prior values of the bins that hold a decile's rank."""
        if self._targets is None:
            self._targets = self._target_bins()
        if not audited.labels.size:
            return
        prior = reference_prior(audited.reference)
        bins = _prior_bins(prior)
        for key in self._targets:
            values = prior[bins == key]
            if values.size:
                self._found.setdefault(key, []).append(values)

    def again(self) -> DayStatistics:
        """A copy of these first-pass statistics (the whole day's) ready for the second pass on some of the day's
        rows: the deciles' bins fixed, no value found yet. Copies that saw different rows are then merged."""
        out = copy.copy(self)
        out._targets = self._target_bins() if self._prior else {}
        out._found = {}
        return out

    def merge(self, other: DayStatistics) -> DayStatistics:
        """Adds ``other``'s rows (gathered on other rows of the same day): in the first pass its counts, in the
        second (both made by `again`) the prior values it kept. Sums and a sorted result: the order of the merges
        does not change the result."""
        if self._targets is None:
            for wanted, counts in other._counts.items():
                mine = self._counts[wanted]
                for name, count in counts.items():
                    mine[name] = mine.get(name, 0) + count
            for key, count in other._bins.items():
                self._bins[key] = self._bins.get(key, 0) + count
            self._rows += other._rows
            self._largest = max(self._largest, other._largest)
        else:
            for key, values in other._found.items():
                self._found.setdefault(key, []).extend(values)
        return self

    def _target_bins(self) -> dict[int, list[int]]:
        if not self._rows:
            raise LabelDPInputError("no slice: no audited row to cut deciles of", field="slice")
        keys = np.array(sorted(self._bins), dtype=np.int64)
        ends = np.cumsum([self._bins[k] for k in keys.tolist()])
        targets: dict[int, list[int]] = {}
        for rank in lower_quantile_ranks(self._rows).tolist():
            at = int(np.searchsorted(ends, rank, side="right"))
            targets.setdefault(int(keys[at]), []).append(rank - (int(ends[at - 1]) if at else 0))
        return targets

    def result(self) -> dict[tuple, object]:
        out: dict[tuple, object] = dict(self._counts)
        if self._prior:
            if self._targets is None:
                raise RuntimeError("the prior's deciles need the second pass (add_again) over the day")
            quantiles = []
            for key, ranks in self._targets.items():
                values = np.sort(np.concatenate(self._found.get(key, [np.zeros(0)])))
                quantiles += [float(values[rank]) for rank in ranks]
            out[("prior",)] = (np.sort(np.array(quantiles)), self._largest)
        return out


def _prior_bins(prior: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(prior, dtype=np.float64).view(np.int64) >> _PRIOR_BIN_SHIFT


# ------------------------------------------------------------------------------------------- the registry
class SlicingKind:
    """A kind of slicing, registered by name; ``make`` reads the text after ``KIND:``."""

    name: str
    description: str

    def make(self, argument: str) -> Slicing:
        raise NotImplementedError


SLICING_KINDS: Choices[SlicingKind] = Choices("slice")


@SLICING_KINDS.register
class _Column(SlicingKind):
    name = "column"
    description = (f"a categorical column's values: column:NAME (its {DEFAULT_TOP} most frequent on the audited "
                   "rows), column:NAME:top=K, or column:NAME=A,B,C (the values listed)")

    def make(self, argument):
        usage = "expected column:NAME, column:NAME:top=K or column:NAME=VALUE[,VALUE...]"
        if "=" in argument and ":top=" not in argument:
            column, _, listed = argument.partition("=")
            values = tuple(v for v in listed.split(",") if v)
            if not column or not values:
                raise LabelDPInputError(f"slice column:{argument}: {usage}", field="slice")
            return ColumnValues(column, None, values)
        column, _, top = argument.partition(":top=")
        if not column or ":" in column:
            raise LabelDPInputError(f"slice column:{argument}: {usage}", field="slice")
        k = int(top) if top.isdigit() else DEFAULT_TOP if not top else 0
        if k < 1:
            raise LabelDPInputError(f"slice column:{argument}: top must be a positive integer; got {top!r}",
                                    field="slice")
        return ColumnValues(column, k)


@SLICING_KINDS.register
class _Group(SlicingKind):
    name = "group"
    description = f"every value of a group column (at most {MAX_GROUPS}): group:NAME"

    def make(self, argument):
        if not argument:
            raise LabelDPInputError("slice group: expected group:NAME", field="slice")
        return GroupColumn(argument)


class _Fixed(SlicingKind):
    slicing: Slicing

    def make(self, argument):
        if argument:
            raise LabelDPInputError(f"slice {self.name} takes no argument; got {self.name}:{argument}", field="slice")
        return self.slicing


@SLICING_KINDS.register
class _PriorDeciles(_Fixed):
    name = "prior-deciles"
    description = ("deciles of the reference's prior (its class-1 probability; the largest class probability for "
                   "more classes)")
    slicing = PriorDeciles()


@SLICING_KINDS.register
class _ShownLabel(_Fixed):
    name = "shown-label"
    description = "the label the game shows (repetition 0), one slice per class"
    slicing = ShownLabel()


def parse_slicing(text: str, label_column: str = "label") -> Slicing:
    """A slicing from its text (``--slice``, a plan's ``slices``): KIND or KIND:ARGUMENT. Slicing by the training
    label (``label_column``) is refused: it manufactures evidence against a model that leaks nothing."""
    if not isinstance(text, str) or not text.strip():
        raise LabelDPInputError(f"slice must be a text such as column:C9:top=5; got {text!r}", field="slice")
    kind, _, argument = text.strip().partition(":")
    slicing = SLICING_KINDS.get(kind, "slice").make(argument)
    if label_column in slicing.column_names:
        raise LabelDPInputError(
            f"slice {text}: {label_column!r} is the training label; within a slice of the training label a shown "
            "label that differs from it proves the counterfactual, so a model that leaks nothing would get spurious "
            "evidence (docs/slices.md); slice by the label the game shows instead (shown-label)", field="slice")
    return slicing


# ------------------------------------------------------------------------------------------- the counts
SLICES_DIR = "slices"  # beside the game's counts.npz: each slice's counts, and the index naming them
_INDEX = "index.json"
SLICES_INDEX = f"{SLICES_DIR}/{_INDEX}"  # its index, relative to the game's directory
NO_ROW = "no audited row in this slice"


@dataclass(frozen=True)
class SliceGame:
    """One slice's claim-free output: its slicing, name and row counts, and its game (repetition 0 of the global
    game restricted to the slice: `auditing.game.counts.GameCounts` with R = 1), None for a slice with no audited
    row. No bound setting enters it."""

    slicing: str
    name: str
    rows: int
    check_rows: int
    game: GameCounts | None


@dataclass(frozen=True)
class SliceCounts:
    """Every declared slice's counts (`count_slices`): what `bound_slices` turns into a `SliceAudit` at any bound
    settings and slice budget, as `auditing.audit.audit_counts` does for the global game. S, the number of slices
    the budget is split over, is ``len(slices)``: fixed from the features and the reference, before any guess."""

    slicings: tuple[str, ...]
    slices: tuple[SliceGame, ...]

    def save(self, directory: str | os.PathLike) -> Path:
        """Writes ``slices/`` under ``directory``: ``index.json`` and one ``slice-NNNN/counts.npz`` per slice with
        rows (`GameCounts.save`). Returns the ``slices/`` directory."""
        out = Path(directory) / SLICES_DIR
        out.mkdir(parents=True, exist_ok=True)
        index = []
        for i, piece in enumerate(self.slices):
            entry = {"slicing": piece.slicing, "name": piece.name, "rows": piece.rows, "check_rows": piece.check_rows,
                     "counts": None}
            if piece.game is not None:
                entry["counts"] = f"slice-{i:04d}"
                (out / entry["counts"]).mkdir(exist_ok=True)
                piece.game.save(out / entry["counts"])
            index.append(entry)
        (out / _INDEX).write_text(json.dumps({"slicings": list(self.slicings), "slices": index}, indent=1,
                                             sort_keys=True) + "\n", encoding="utf-8")
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike) -> SliceCounts | None:
        """The slice counts `save` wrote under ``directory``, or None when none were (a day without slices).
        LabelDPInputError naming the file when they cannot be read."""
        out = Path(directory) / SLICES_DIR
        if not (out / _INDEX).is_file():
            return None
        try:
            index = json.loads((out / _INDEX).read_text(encoding="utf-8"))
            slices = tuple(SliceGame(entry["slicing"], entry["name"], int(entry["rows"]), int(entry["check_rows"]),
                                     None if entry["counts"] is None else GameCounts.load(out / entry["counts"]))
                           for entry in index["slices"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LabelDPInputError(f"{out / _INDEX}: not readable slice counts ({exc})") from None
        return cls(tuple(index["slicings"]), slices)


def _rows(p_target, p_reference, labels, row_ids, columns, seed, what: str) -> tuple[np.ndarray, SliceRows]:
    target = as_class_probabilities(p_target, f"{what} p_target")
    n = target.shape[0]
    reference = as_reference_probabilities(p_reference, f"{what} p_reference", n=n, n_from=f"{what} p_target")
    y = as_labels(labels, target.shape[1], f"{what} labels")
    ids = np.arange(n, dtype=np.int64) if row_ids is None else as_row_ids(row_ids, n, f"{what} row_ids")
    return target, SliceRows(reference, y, ids, dict(columns or {}), seed)


def count_slices(p_target, p_reference, labels, row_ids, game: GameConfig, slicings, *,
                 columns: Mapping[str, np.ndarray] | None = None, check: CheckRows | None = None,
                 check_columns: Mapping[str, np.ndarray] | None = None,
                 night: dt.date | None = None) -> SliceCounts:
    """Every declared slice's counts (arguments as `audit_slices`, with the game's settings alone): repetition 0 of
    the game on ``night`` restricted to each slice (`auditing.audit.play_game` with R = 1), and its check rows."""
    slicings = tuple(parse_slicing(s) if isinstance(s, str) else s for s in slicings)
    played = dataclasses.replace(game.with_night(night), repetitions=1)  # repetition 0 alone bounds
    target, audited = _rows(p_target, p_reference, labels, row_ids, columns, played.draw_seed, "audited")
    check_target = checked = None
    if check is not None:
        check_target, checked = _rows(check.p_target, check.p_reference, check.labels, check.row_ids, check_columns,
                                      played.draw_seed, "check")
    declared = [piece for slicing in slicings for piece in slicing.slices(audited, checked)]
    if not declared:
        raise LabelDPInputError("no slice: the slicings declared none", field="slice")
    return SliceCounts(tuple(s.spec for s in slicings),
                       tuple(_slice_game(piece, target, audited, check_target, checked, played) for piece in declared))


def _slice_game(piece: Slice, target, audited: SliceRows, check_target, checked: SliceRows | None,
                game: GameConfig) -> SliceGame:
    mask = piece.audited
    ids = audited.row_ids[mask]
    check_mask = piece.check
    check_rows = 0 if check_mask is None else int(check_mask.sum())
    if ids.size == 0:
        return SliceGame(piece.slicing, piece.name, 0, check_rows, None)
    rows_check = None
    if check_rows:
        rows_check = CheckRows(check_target[check_mask], checked.reference[check_mask], checked.labels[check_mask],
                               checked.row_ids[check_mask])
    counts = play_game(target[mask], audited.reference[mask], audited.labels[mask], ids, game, check=rows_check)
    return SliceGame(piece.slicing, piece.name, int(ids.size), check_rows, counts)


# ------------------------------------------------------------------------------------------- the bounds
def _checked_budget(bound: BoundConfig, budget: float | None) -> float:
    """The slices' budget (default 1 - confidence); refuses an optimistic strategy and a budget outside (0, 1)."""
    if not bound.selection.valid:
        raise LabelDPInputError(f"slices need a valid selection strategy; {bound.strategy!r} gives an optimistic "
                                "figure", field="strategy")
    budget = 1.0 - bound.confidence if budget is None else float(budget)
    if not 0.0 < budget < 1.0:
        raise LabelDPInputError(f"slice budget must be in (0, 1); got {budget!r}", field="slice_budget")
    return budget


def bound_slices(counts: SliceCounts, bound: BoundConfig, budget: float | None = None) -> SliceAudit:
    """Each slice's valid bound from its counts at ``bound`` (`auditing.audit.audit_counts`, at the slice's
    confidence 1 - budget / S; ``budget``: the slices' false-alarm rate, default the global 1 - confidence).
    Milliseconds a slice: a change of kappa, method, delta, confidence, strategy or budget re-judges stored
    counts and never replays a slice."""
    budget = _checked_budget(bound, budget)
    confidence = 1.0 - budget / len(counts.slices)
    sub = dataclasses.replace(bound, confidence=confidence)
    return SliceAudit(budget=budget, declared=len(counts.slices), confidence=confidence, slicings=counts.slicings,
                      slices=tuple(_slice_result(piece, sub) for piece in counts.slices))


def _slice_result(piece: SliceGame, bound: BoundConfig) -> SliceResult:
    base = dict(slicing=piece.slicing, name=piece.name, rows=piece.rows, check_rows=piece.check_rows)
    if piece.game is None:
        return SliceResult(**base, note=NO_ROW)
    if bound.selection.uses_halves and piece.game.halves is None:
        return SliceResult(**base, note=f"the {bound.strategy} strategy's keyed split left a half of these "
                                        f"{piece.rows} row(s) empty")
    result = audit_counts(piece.game, bound)
    return SliceResult(**base, epsilon_lower_bound=result.epsilon_lower_bound,
                       max_certifiable_epsilon=result.max_certifiable_epsilon,
                       selected_guesses=result.selected_guesses, selected_correct=result.selected_correct,
                       selected_m=result.selected_m, capacity_check=result.capacity_check,
                       note=result.inconclusive_reason)


def audit_slices(p_target, p_reference, labels, row_ids, game: GameConfig, bound: BoundConfig, slicings, *,
                 columns: Mapping[str, np.ndarray] | None = None, check: CheckRows | None = None,
                 check_columns: Mapping[str, np.ndarray] | None = None, budget: float | None = None) -> SliceAudit:
    """Each declared slice's valid bound (arguments as `auditing.audit.run_audit`, the game's night included: the
    slices replay the global game's coins; ``columns``: the audited rows' columns the slicings read,
    ``check_columns`` the check rows'). ``budget``: the slices' false-alarm rate (default the global
    1 - confidence), split over all declared slices. `bound_slices` of `count_slices`."""
    _checked_budget(bound, budget)  # a bad bound setting is refused before any slice is played
    counts = count_slices(p_target, p_reference, labels, row_ids, game, slicings, columns=columns,
                          check=check, check_columns=check_columns, night=game.night)
    return bound_slices(counts, bound, budget)


__all__ = [
    "SLICES_DIR",
    "SLICES_INDEX",
    "SLICING_KINDS",
    "ColumnValues",
    "DayStatistics",
    "FixedEdges",
    "FixedValues",
    "GroupColumn",
    "PriorDeciles",
    "ShownLabel",
    "SliceCounts",
    "SliceGame",
    "Slicing",
    "SlicingKind",
    "audit_slices",
    "bound_slices",
    "count_slices",
    "day_statistics",
    "parse_slicing",
    "reference_prior",
]
