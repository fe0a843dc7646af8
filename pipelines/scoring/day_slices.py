"""A day's slices (docs/slices.md) counted in the scoring job's own passes, as the job counts the global game.

Each scored batch carries the slicings' columns of its own rows (read with the batch:
`pipelines.scoring.partition_batches.with_slice_columns`) and its check rows. The slices are counted by four
accumulators, each folded over the day's batches by the job (a CombineFn of `pipelines.scoring.beam_dofns`, or
the driver on batches an in-process runner held) and merged in any order:

1. `SliceStatistics`: the day's statistics the slices are fixed from (`auditing.slices.DayStatistics`: each
   column's value counts, the count of rows per order-preserving bin of the prior);
2. `SliceStatistics` again (only with ``prior-deciles``): the prior values of the bins that hold a decile's rank;
   each slicing is then fixed (`Slicing.fixed`: its values or edges), so every batch is cut into the same slices;
3. `SlicePass1`: each slice's pass 1 (`pipelines.scoring.scoring_batches.Pass1Accumulator`: per-slot |score|
   histograms of repetition 0 and its keyed halves, the capacity check's histograms of the slice's check rows);
4. `SlicePass2`: each slice's pass 2, the rows of its cut bins (`boundary_rows`), counted exactly
   (`finish_counts`) by `slice_counts`.

Every merge is a sum of integer histograms and counts, or a union of rows that is ranked before it is counted,
so the counts are the same whatever the runner, the batch size, the number of workers and the order of the
merges; they equal `auditing.slices.count_slices` on the day's rows held at once. Memory: each column's value
counts (they grow with its distinct values, not its rows), the prior's bins, each slice's histograms and the rows
of its cut bins, not the day's rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from auditing.game.attack_curve import attack_curve_from_outcomes
from auditing.game.config import GameConfig
from auditing.game.counts import GameCounts
from auditing.game.score_histogram import coarsen
from auditing.slices import DayStatistics, SliceCounts, SliceGame, SliceRows, Slicing, parse_slicing
from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.scoring.scored_batch import RowCounts, ScoredBatch
from pipelines.scoring.scoring_batches import (
    BoundaryChunk,
    GameSpec,
    Pass1Accumulator,
    SweepPlan,
    boundary_rows,
    finish_counts,
    make_plan,
    sweep_counts,
)


def slicings_for(texts: Sequence[str | Slicing], dataset: DatasetSpec, where: str = "slices") -> tuple[Slicing, ...]:
    """The declared slicings, parsed once and checked against ``dataset``: a column slicing must name one of its
    feature or carry columns, never its label (refused by `parse_slicing` with the reason)."""
    out = []
    for i, text in enumerate(texts):
        try:
            slicing = parse_slicing(text, label_column=dataset.label) if isinstance(text, str) else text
        except LabelDPInputError as exc:
            raise LabelDPInputError(f"{where}[{i}]: {exc.template}", field=where) from None
        usable = (*dataset.features, *dataset.carry)
        unknown = [name for name in slicing.column_names if name not in usable]
        if unknown:
            raise LabelDPInputError(f"{where}[{i}] {slicing.spec}: dataset {dataset.name} has no feature or carry "
                                    f"column {unknown[0]!r}; it has {list(usable)}", field=where)
        out.append(slicing)
    return tuple(out)


def slice_column_names(slicings: Sequence[Slicing]) -> tuple[str, ...]:
    """The columns the slicings read, each once: what the job joins to every batch."""
    return tuple(dict.fromkeys(name for slicing in slicings for name in slicing.column_names))


def played_game(game: GameConfig, night) -> GameConfig:
    """The game a slice plays: repetition 0 of the night's game (it alone bounds)."""
    return dataclasses.replace(game.with_night(night), repetitions=1)


class _Part:
    """One scored batch cut in its audited and check rows, each with the slicings' columns (`SliceRows`).
    ``names``: the columns the slicings read (`slice_column_names`); none for slicings that read only the scores
    (``shown-label``, ``prior-deciles``), whose batches then carry no column."""

    def __init__(self, batch: ScoredBatch, seed: int, names: Sequence[str]):
        columns = batch.columns or {}
        missing = [name for name in names if name not in columns]
        if missing and batch.rows:
            raise RuntimeError(f"slices: batch {batch.batch_id} carries no slicing column {missing[0]!r}")
        audited = np.flatnonzero(~batch.check) if batch.check is not None else np.arange(batch.rows)
        self.batch_id = batch.batch_id
        self.target = batch.p_target[audited]
        self.audited = SliceRows(batch.p_reference[audited], batch.labels[audited], batch.row_ids[audited],
                                 {name: v[audited] for name, v in columns.items()}, seed)
        self.check_target, self.check = None, None
        if batch.check is not None and batch.check.any():
            check = np.flatnonzero(batch.check)
            self.check_target = batch.p_target[check]
            self.check = SliceRows(batch.p_reference[check], batch.labels[check], batch.row_ids[check],
                                   {name: v[check] for name, v in columns.items()}, seed)

    def pieces(self, fixed: Sequence[Slicing]) -> list:
        return [piece for slicing in fixed for piece in slicing.slices(self.audited, self.check)]

    def batch(self, piece, audited_only: bool = False) -> ScoredBatch | None:
        """The rows of ``piece`` as a scored batch: its audited rows, then (unless ``audited_only``) its check
        rows flagged; None when it has none."""
        a = piece.audited
        c = None if audited_only or self.check is None or piece.check is None else piece.check
        n_audited, n_check = int(a.sum()), 0 if c is None else int(c.sum())
        if n_audited + n_check == 0:
            return None
        audited = self.audited
        if c is None:
            return ScoredBatch(self.batch_id, audited.row_ids[a], audited.labels[a], self.target[a],
                               audited.reference[a], RowCounts(rows_scored=n_audited), None)
        check = self.check
        return ScoredBatch(self.batch_id, np.concatenate([audited.row_ids[a], check.row_ids[c]]),
                           np.concatenate([audited.labels[a], check.labels[c]]),
                           np.concatenate([self.target[a], self.check_target[c]]),
                           np.concatenate([audited.reference[a], check.reference[c]]),
                           RowCounts(rows_scored=n_audited),
                           np.concatenate([np.zeros(n_audited, bool), np.ones(n_check, bool)]))


class SliceStatistics:
    """Steps 1 and 2 (module docstring): `auditing.slices.DayStatistics` over batches. ``first``: None for the
    first pass, else the first pass's merged statistics (the second pass starts from `DayStatistics.again`)."""

    def __init__(self, slicings: Sequence[Slicing], seed: int, first: DayStatistics | None = None):
        self.statistics = DayStatistics(slicings) if first is None else first.again()
        self._seed, self._second = seed, first is not None
        self._names = slice_column_names(slicings)

    def add(self, batch: ScoredBatch) -> SliceStatistics:
        part = _Part(batch, self._seed, self._names)
        if self._second:
            self.statistics.add_again(part.audited)
        else:
            self.statistics.add(part.audited)
        return self

    def merge(self, other: SliceStatistics) -> SliceStatistics:
        self.statistics.merge(other.statistics)
        return self


class SlicePass1:
    """Step 3: each fixed slice's pass-1 accumulator, audited rows and check rows."""

    def __init__(self, fixed: Sequence[Slicing], spec: GameSpec):
        self.fixed, self.spec = tuple(fixed), spec
        self._names = slice_column_names(self.fixed)
        self.labels: list[tuple[str, str]] | None = None
        self.passes: list[Pass1Accumulator] = []
        self.rows: list[int] = []
        self.check_rows: list[int] = []

    def _start(self, labels: list[tuple[str, str]]) -> None:
        if self.labels is None:
            self.labels = labels
            self.passes = [Pass1Accumulator() for _ in labels]
            self.rows, self.check_rows = [0] * len(labels), [0] * len(labels)
        elif self.labels != labels:
            raise RuntimeError(f"slices: a batch was cut into {labels}, another into {self.labels}")

    def add(self, batch: ScoredBatch) -> SlicePass1:
        part = _Part(batch, self.spec.game.draw_seed, self._names)
        pieces = part.pieces(self.fixed)
        self._start([(piece.slicing, piece.name) for piece in pieces])
        for i, piece in enumerate(pieces):
            self.rows[i] += int(piece.audited.sum())
            self.check_rows[i] += 0 if piece.check is None else int(piece.check.sum())
            found = part.batch(piece)
            if found is not None:
                self.passes[i].add_batch(found, self.spec)
        return self

    def merge(self, other: SlicePass1) -> SlicePass1:
        if other.labels is None:
            return self
        self._start(other.labels)
        for i in range(len(self.passes)):
            self.passes[i].merge(other.passes[i])
            self.rows[i] += other.rows[i]
            self.check_rows[i] += other.check_rows[i]
        return self

    def plans(self) -> list[SweepPlan | None]:
        """Each slice's pass-2 plan (None for a slice with no audited row)."""
        if not self.labels:
            raise LabelDPInputError("no slice: the slicings declared none", field="slice")
        return [make_plan(self.passes[i], self.spec) if self.rows[i] else None for i in range(len(self.labels))]


class SlicePass2:
    """Step 4: the rows of each slice's cut bins, by (slice, slot)."""

    def __init__(self, fixed: Sequence[Slicing], spec: GameSpec, plans: Sequence[SweepPlan | None]):
        self.fixed, self.spec, self.plans = tuple(fixed), spec, tuple(plans)
        self._names = slice_column_names(self.fixed)
        self.chunks: dict[tuple[int, int], list[BoundaryChunk]] = {}

    def add(self, batch: ScoredBatch) -> SlicePass2:
        part = _Part(batch, self.spec.game.draw_seed, self._names)
        for i, piece in enumerate(part.pieces(self.fixed)):
            if self.plans[i] is None or not piece.audited.any():
                continue
            for slot, chunk in boundary_rows(part.batch(piece, audited_only=True), self.spec, self.plans[i]):
                self.chunks.setdefault((i, slot), []).append(chunk)
        return self

    def merge(self, other: SlicePass2) -> SlicePass2:
        for key, chunks in other.chunks.items():
            self.chunks.setdefault(key, []).extend(chunks)
        return self


def fixed_slicings(slicings: Sequence[Slicing], statistics: DayStatistics) -> tuple[Slicing, ...]:
    """Each slicing with its slices fixed from the day's merged statistics (both passes)."""
    found = statistics.result()
    return tuple(slicing.fixed(found) for slicing in slicings)


def slice_counts(slicings: Sequence[Slicing], pass1: SlicePass1, pass2: SlicePass2) -> SliceCounts:
    """Every declared slice's counts from the merged passes: a `GameCounts` with R = 1 per slice with rows."""
    spec, bins = pass1.spec, pass1.spec.bins
    played = spec.game
    out = []
    for i, (slicing, name) in enumerate(pass1.labels):
        plan = pass2.plans[i]
        if plan is None:
            out.append(SliceGame(slicing, name, 0, pass1.check_rows[i], None))
            continue
        accumulator = pass1.passes[i].settle()
        found = {slot: finish_counts(plan, slot, chunks) for (index, slot), chunks in pass2.chunks.items()
                 if index == i}
        counts, halves = sweep_counts(plan, spec, found)
        counted = GameCounts(
            game=played, counts=counts, halves=halves,
            score_histogram=coarsen(accumulator.rows[0], accumulator.correct[0], bins),
            prior_histogram=accumulator.prior_histogram(),
            check=accumulator.checks if pass1.check_rows[i] else None,
            attack_curve=attack_curve_from_outcomes(accumulator.signed, seed=played.draw_seed))
        out.append(SliceGame(slicing, name, pass1.rows[i], pass1.check_rows[i], counted))
    return SliceCounts(tuple(s.spec for s in slicings), tuple(out))


@dataclass
class SliceSteps:
    """The day's slices counted step by step (module docstring) by whoever folds the batches: `next_step` names the
    next step and makes its empty accumulators, `take` keeps its merged result, `counts` gives the slices' counts
    once every step is taken."""

    slicings: tuple[Slicing, ...]
    spec: GameSpec  # the game a slice plays (`played_game`), the histograms' bins, the capacity check
    first: DayStatistics | None = None
    statistics: DayStatistics | None = None  # both passes merged
    fixed: tuple[Slicing, ...] | None = None
    pass1: SlicePass1 | None = None
    plans: list | None = None
    pass2: SlicePass2 | None = None

    def next_step(self) -> tuple[str, Callable[[], object]] | None:
        """(step name, a picklable maker of its empty accumulator), or None when every step is taken."""
        seed = self.spec.game.draw_seed
        if self.first is None:
            return "statistics", partial(SliceStatistics, self.slicings, seed)
        if self.statistics is None:
            return "statistics-again", partial(SliceStatistics, self.slicings, seed, self.first)
        if self.pass1 is None:
            return "pass1", partial(SlicePass1, self.fixed, self.spec)
        if self.pass2 is None:
            return "pass2", partial(SlicePass2, self.fixed, self.spec, self.plans)
        return None

    def take(self, step: str, accumulator) -> None:
        """Keeps ``step``'s merged accumulator (None: no batch reached the step; its empty accumulator)."""
        name, make = self.next_step()
        if name != step:
            raise RuntimeError(f"slices: step {step!r} taken where {name!r} was due")
        accumulator = make() if accumulator is None else accumulator
        if step == "statistics":
            self.first = accumulator.statistics
            if not self.first.needs_second_pass:
                self._fix(self.first)
        elif step == "statistics-again":
            self._fix(accumulator.statistics)
        elif step == "pass1":
            self.pass1, self.plans = accumulator, accumulator.plans()
        else:
            self.pass2 = accumulator

    def _fix(self, statistics: DayStatistics) -> None:
        self.statistics, self.fixed = statistics, fixed_slicings(self.slicings, statistics)

    def counts(self) -> SliceCounts:
        if self.pass2 is None:
            raise RuntimeError(f"slices: step {self.next_step()[0]!r} was not taken")
        return slice_counts(self.slicings, self.pass1, self.pass2)


def count_held_slices(batches: Sequence[ScoredBatch], steps: SliceSteps) -> SliceCounts:
    """Every step left in this process over scored batches already held (an in-process runner's job hands its
    batches to the driver, as it does for the global pass 2)."""
    while (step := steps.next_step()) is not None:
        accumulator = step[1]()
        for batch in batches:
            accumulator.add(batch)
        steps.take(step[0], accumulator)
    return steps.counts()


__all__ = [
    "SlicePass1",
    "SlicePass2",
    "SliceStatistics",
    "SliceSteps",
    "count_held_slices",
    "fixed_slicings",
    "played_game",
    "slice_column_names",
    "slice_counts",
    "slicings_for",
]
