"""The two-pass exact reduction of the Beam scoring job (pipelines/scoring/beam_scoring.py), as plain functions
without Beam: R repetitions of the game over a day's batches, reduced to the exact sweep counts of the
in-process audit (`auditing.audit.run_audit`).

A batch flows through these steps (each a pure function of its inputs, so any runner may split, retry or
move batches between workers without changing a count):

1. Reading (`pipelines.scoring.partition_batches`): the partition's Parquet row groups, read as validated Arrow
   batches, restricted to the audited rows.
2. Scoring (`pipelines.scoring.scored_batch`): attaches both models' class probabilities; rows that cannot enter the
   game are counted in `ScoredBatch.issues`, never dropped silently. Row ids must be unique in the day; the
   job checks it by hash bucket there.
3. `Pass1Accumulator.add_batch`: plays every repetition with the compiled game (`auditing.game.kernel`,
   bit-identical to `auditing.game.play.play_repetition`) and adds the batch to per-slot histograms of |score| bins
   (`auditing.game.sweep_reduce`). A slot is one sweep to count (`auditing.game.slots.SlotPlan`): a repetition over all
   rows, or one keyed half of repetition 0. It also counts repetition 0's rows per (octave of |score|, sign of the
   score, coin), the attack curve's counts (`auditing.game.attack_curve`). Accumulators merge by addition.
   The Beam job plays it on a background thread (``background=True``) so that it overlaps the next batch's
   single-threaded reading, frame conversion and CatBoost Pool construction.
4. `make_plan`: from the merged histograms, the grid of each slot and the bins its grid points cut.
5. `boundary_rows`: replays the game only for rows that can land in a cut bin and returns those rows.
6. `finish_counts`: completes each slot's counts with `auditing.game.sweep_reduce.exact_counts`, and
   `sweep_counts` builds the `SweepCounts` that `auditing.audit.audit_from_counts` turns into the result.
   `count_batches` does steps 5 and 6 for batches held in one process (the side-input plan on an in-process
   runner, where the driver plays pass 2). A slot whose cut bins hold more rows than memory should
   (`ranked_slots`: a constant score puts the whole slot there) is instead written in rank order batch by batch
   (`ranked_order`) and counted from a merge of those runs (`count_ranked`).

Steps 3 to 6 live here, as one algorithm: the plan is read off pass 1's histograms, and pass 2 and the counts
depend on the plan's exact layout.

Step 5 avoids replaying the whole game: for a k-class model a row's released label is one of k classes, so its
score in any repetition is one of k values, computed once per batch with the configured score function
(`auditing.game.kernel.game_tables`, the same numbers the kernel bins in step 3). Rows none of whose k
candidate bins is cut in a slot cannot be boundary rows of it and are skipped; the rows kept are replayed by
the same kernel, and only their real bins decide. Exactness never depends on the filter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
import pyarrow as pa

from auditing.game.attack_curve import OCTAVES, octave_of_fine
from auditing.game.check_histograms import CheckHistograms
from auditing.game.config import GameConfig
from auditing.game.kernel import GameTables, SignedCounts, SlotKeys, game_tables, slot_histograms
from auditing.game.kernel import boundary_rows as kernel_boundary_rows
from auditing.game.play import GameRows, play_repetition, secret_bits_and_released
from auditing.game.prior_histogram import PriorHistogram
from auditing.game.scores import resolve_score
from auditing.game.slots import Slot, SlotPlan, selection_half_mask
from auditing.game.sweep import rank_order
from auditing.game.sweep_reduce import BinSpec, RankedCounts, boundary_bins, cut_bin_mask, exact_counts
from auditing.verdict.capacity_check import histograms_of
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.scoring.background import background_thread
from pipelines.scoring.scored_batch import RowCounts, ScoredBatch

# Filter margin in bins around each cut bin (step 5): a one-ulp difference can move a score across one edge.
FILTER_MARGIN = 1


# ------------------------------------------------------------------------------------------ the game


@dataclass(frozen=True)
class GameSpec:
    """The game's configuration plus the binning used to reduce it, over the slots of
    `auditing.game.slots.SlotPlan` (the R repetitions and both keyed halves of repetition 0, always: no bound setting
    is read here). ``capacity_check``: the job reads check rows and pass 1 also histograms repetition 0 for the
    capacity check (`auditing.verdict.capacity_check`)."""

    game: GameConfig
    bins: BinSpec = field(default_factory=BinSpec)
    capacity_check: bool = False

    @cached_property
    def plan(self) -> SlotPlan:
        return SlotPlan(self.game)

    @property
    def slots(self) -> tuple[Slot, ...]:
        return self.plan.slots

    def score(self):
        return resolve_score(self.game.score, self.game.score_power)

    def play(self, batch: ScoredBatch, repetition: int) -> GameRows:
        return play_repetition(batch.p_target, batch.p_reference, batch.labels, batch.row_ids,
                               seed=self.game.draw_seed, repetition=repetition, score=self.score())

    @cached_property
    def keys(self) -> SlotKeys:
        """The slots' key words for the compiled game (`auditing.game.kernel`), in `slots` order."""
        return self.plan.keys()

    @cached_property
    def octaves(self) -> np.ndarray:
        """Each |score| bin's octave, the attack curve's grouping (`auditing.game.attack_curve.octave_of_fine`)."""
        return octave_of_fine(self.bins)

    def tables(self, batch: ScoredBatch) -> GameTables:
        """The batch's per-(row, class) score bins for the compiled game, computed once for all repetitions,
        with the keyed halves of repetition 0."""
        return game_tables(batch.p_target, batch.p_reference, batch.labels, batch.row_ids, score=self.game.score,
                           power=self.game.score_power, bins=self.bins,
                           selection=selection_half_mask(batch.row_ids, self.game.draw_seed))

    def check_histograms(self, audited: GameTables, check: ScoredBatch | None) -> CheckHistograms:
        """Repetition 0's capacity-check histograms of a batch: its audited rows' halves (``audited``: their
        `tables`) and its check rows."""
        check_tables = None if check is None or check.rows == 0 else game_tables(
            check.p_target, check.p_reference, check.labels, check.row_ids, score=self.game.score,
            power=self.game.score_power, bins=self.bins)
        return histograms_of(audited, check_tables, self.game.draw_seed, self.bins, audited.p_target.shape[1])


# Pass-1 kernels run on the process's "pass1" background thread when an accumulator plays in the background
# (`Pass1Accumulator.add_batch`): one thread per process, so kernels of several accumulators run one after
# another, never over each other.
# The background kernel plays a batch in chunks of this many rows, so that what is left when the accumulator is
# read can be played at once on every core (`Pass1Accumulator.settle`).
BACKGROUND_CHUNK_ROWS = 65_536
# Chunks whose kernel may be pending per accumulator: bounds the memory held for them (each keeps its batch).
MAX_PENDING_CHUNKS = 12
# Threads of a background kernel: one core, the main thread keeps the other(s).
BACKGROUND_THREADS = 1


def _narrowed(counts: np.ndarray | None) -> np.ndarray | None:
    """Non-negative counts in the narrowest unsigned type that holds them exactly (None stays None)."""
    if counts is None or counts.size == 0 or int(counts.min()) < 0:
        return counts
    largest = int(counts.max())
    for dtype in (np.uint8, np.uint16, np.uint32):
        if largest <= np.iinfo(dtype).max:
            return counts.astype(dtype)
    return counts


@dataclass
class Pass1Accumulator:
    """Per-slot histograms (rows, correct guesses per |score| bin) and the issue counters; merges by addition.

    The arrays are allocated on first use, so empty accumulators (Beam creates many) cost nothing.

    ``add_batch(..., background=True)`` returns as soon as the batch's tables are built and runs the game kernel
    on a background thread (the kernel releases the GIL), so that the single-threaded Python work of the next
    batch (reading, frame conversion, CatBoost Pool construction) overlaps it. Every reader of the histograms
    (`settle`, `merge`, `save`, pickling) first waits for the pending kernels and re-raises their errors; the
    histograms are integer sums, so the result does not depend on when or in which order the kernels ran.
    """

    rows: np.ndarray | None = None  # (slots, bins) int64
    correct: np.ndarray | None = None
    issues: RowCounts = field(default_factory=RowCounts)  # summed over the batches added and merged
    batches: int = 0
    # Counts of the reference's probabilities of the audited rows in auditing.risk.figures.PriorHistogram's
    # fixed buckets (claim-free; integer counts, so any batching or merge order gives the same histogram).
    priors: np.ndarray | None = None
    prior_kind: str = "class1"
    # Repetition 0's capacity-check histograms (auditing.verdict.capacity_check; None unless the job reads check rows).
    checks: CheckHistograms | None = None
    # Repetition 0's rows per (octave of |score|, score > 0, coin b), the attack curve's counts
    # (auditing.game.attack_curve); (OCTAVES, 2, 2) int64.
    signed: np.ndarray | None = None
    _pending: list = field(default_factory=list, repr=False, compare=False)

    def _add_priors(self, batch: ScoredBatch) -> None:
        histogram = PriorHistogram.from_reference(batch.p_reference)
        self.prior_kind = histogram.kind
        self.priors = histogram.counts if self.priors is None else self.priors + histogram.counts

    def prior_histogram(self) -> PriorHistogram | None:
        """The merged histogram as AuditResult.prior_histogram (None when no row was audited)."""
        if self.priors is None:
            return None
        return PriorHistogram(self.priors, self.prior_kind)

    def _allocate(self, spec: GameSpec) -> None:
        if self.rows is None:
            shape = (len(spec.slots), spec.bins.num_bins)
            self.rows = np.zeros(shape, dtype=np.int64)
            self.correct = np.zeros(shape, dtype=np.int64)
        if self.signed is None:
            self.signed = np.zeros((OCTAVES, 2, 2), dtype=np.int64)

    def _play(self, tables: GameTables, spec: GameSpec, threads: int | None = None) -> None:
        """Adds the rows of ``tables`` to every slot's histograms and to repetition 0's attack-curve counts."""
        # Slot 0 is repetition 0 over all rows: its attack-curve counts come from the pass over its halves.
        slot_histograms(tables, spec.keys, self.rows, self.correct, threads,
                        signed=SignedCounts(0, spec.octaves, self.signed))

    def add_batch(self, batch: ScoredBatch, spec: GameSpec, background: bool = False) -> Pass1Accumulator:
        """Adds a scored batch (its check rows, if any, only to the capacity check's histograms)."""
        if batch.issues is not None:
            self.issues += batch.issues
        self.batches += 1
        check, batch = batch.check_rows(), batch.audited()
        if batch.rows == 0 and (check is None or check.rows == 0):
            return self
        # Every slot at once, compiled (auditing.game.kernel): the same histograms as bin_index + bincount of
        # play_repetition's scores and correct guesses per slot, without per-repetition arrays. The tables are
        # built here, so that bad input raises at its batch, whichever thread plays it.
        tables = spec.tables(batch)
        if spec.capacity_check:
            found = spec.check_histograms(tables, check)
            self.checks = found if self.checks is None else self.checks.merge(found)
        if batch.rows == 0:
            return self
        self._add_priors(batch)
        self._allocate(spec)
        if not background:
            self._play(tables, spec)
            return self
        for start in range(0, tables.rows, BACKGROUND_CHUNK_ROWS):
            while len(self._pending) >= MAX_PENDING_CHUNKS:
                self._pending.pop(0)[0].result()
            chunk = tables.slice(start, min(start + BACKGROUND_CHUNK_ROWS, tables.rows))
            future = background_thread("pass1").submit(self._play, chunk, spec, BACKGROUND_THREADS)
            self._pending.append((future, partial(self._play, chunk, spec)))
        return self

    def settle(self) -> Pass1Accumulator:
        """Waits for this accumulator's kernels (re-raising their errors). Chunks the background thread has not
        started are taken back and played here on every core, after the started ones finished (two kernels
        never add into the same histograms at once)."""
        pending, self._pending = self._pending, []
        taken_back = [item for item in reversed(pending) if item[0].cancel()]
        for future, _ in pending:
            if not future.cancelled():
                future.result()
        for _, play in reversed(taken_back):
            play()  # on every core
        return self

    def merge(self, other: Pass1Accumulator) -> Pass1Accumulator:
        self.settle()
        other.settle()
        self.issues += other.issues
        self.batches += other.batches
        if other.priors is not None:
            self.prior_kind = other.prior_kind
            self.priors = other.priors.copy() if self.priors is None else self.priors + other.priors
        if other.checks is not None:
            self.checks = other.checks if self.checks is None else self.checks.merge(other.checks)
        if other.signed is not None:
            self.signed = other.signed.copy() if self.signed is None else self.signed + other.signed
        if other.rows is not None:
            if self.rows is None:
                self.rows, self.correct = other.rows.copy(), other.correct.copy()
            else:
                self.rows += other.rows
                self.correct += other.correct
        return self

    def __getstate__(self) -> dict:
        self.settle()
        state = dict(self.__dict__)
        state["_pending"] = []
        # Pickled between stages and workers: the histograms (19 MB at R = 100) travel in the narrowest unsigned
        # type that holds their largest count (uint16 at 1e6 rows), and come back as int64 (`__setstate__`).
        for name in ("rows", "correct"):
            state[name] = _narrowed(state[name])
        return state

    def __setstate__(self, state: dict) -> None:
        for name in ("rows", "correct"):
            if state.get(name) is not None:
                state[name] = state[name].astype(np.int64, copy=False)
        self.__dict__.update(state)

    def save(self, path) -> None:
        self.settle()
        issues = encode(self.issues)
        arrays = {"batches": np.array(self.batches),
                  "issue_keys": np.array(list(issues)), "issue_values": np.array(list(issues.values()))}
        if self.rows is not None:
            arrays.update(rows=self.rows, correct=self.correct)
        if self.priors is not None:
            arrays.update(priors=self.priors, prior_kind=np.array(self.prior_kind))
        if self.checks is not None:
            arrays.update({f"check_{name}": value for name, value in self.checks.arrays().items()})
        if self.signed is not None:
            arrays.update(signed=self.signed)
        np.savez(path, **arrays)

    @classmethod
    def load(cls, path) -> Pass1Accumulator:
        with np.load(path) as data:
            issues = decode(RowCounts, {str(k): int(v) for k, v in zip(data["issue_keys"], data["issue_values"],
                                                                        strict=True)})
            rows = data["rows"] if "rows" in data else None
            correct = data["correct"] if "correct" in data else None
            priors = data["priors"] if "priors" in data else None
            kind = str(data["prior_kind"]) if "prior_kind" in data else "class1"
            checks = (CheckHistograms.from_arrays({name[len("check_"):]: data[name] for name in data.files
                                                   if name.startswith("check_")})
                      if "check_selection_rows" in data else None)
            signed = data["signed"] if "signed" in data else None
            return cls(rows=rows, correct=correct, issues=issues, batches=int(data["batches"]), priors=priors,
                       prior_kind=kind, checks=checks, signed=signed)


# ------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class SweepPlan:
    """What pass 2 needs: each slot's grid and boundaries, and which bins' rows to bring back."""

    m: int  # rows per repetition (the audited examples)
    slot_rows: tuple  # rows counted in each slot
    grids: tuple  # one int64 grid per slot
    boundaries: tuple  # one `Boundaries` per slot
    exact_masks: np.ndarray  # (slots, bins) bool: the cut bins of each slot
    filter_masks: np.ndarray  # (repetitions, bins) bool: cut bins of a repetition's slots, widened by the margin
    union_filter: np.ndarray  # (bins,) bool: any repetition's filter
    issues: RowCounts

    @property
    def boundary_rows(self) -> int:
        return int(sum(b.boundary_rows() for b in self.boundaries))

    def repetitions_with_cuts(self) -> np.ndarray:
        return np.flatnonzero(self.filter_masks.any(axis=1))


def make_plan(accumulator: Pass1Accumulator, spec: GameSpec) -> SweepPlan:
    """Grids and boundaries from the merged pass-1 histograms. Raises when nothing can be audited."""
    issues = accumulator.issues
    if accumulator.rows is None or int(accumulator.rows[0].sum()) == 0:
        raise LabelDPInputError(
            f"no rows to audit: {issues.rows_read} row(s) read, {issues.rows_without_row_id} "
            f"without row_id, {issues.rows_bad_target_probabilities} with bad target probabilities, "
            f"{issues.rows_bad_reference_probabilities} with bad reference probabilities")
    game = spec.game
    totals = accumulator.rows.sum(axis=1)
    m = int(totals[0])
    if np.any(totals[: game.repetitions] != m) or m != issues.rows_scored:
        raise RuntimeError(f"pass 1 is inconsistent: rows per repetition {sorted(set(totals.tolist()))}, rows "
                           f"scored {issues.rows_scored} (batches lost or counted twice)")
    num_bins = spec.bins.num_bins
    grids = spec.plan.grids(totals)
    bounds = [boundary_bins(accumulator.rows[index], accumulator.correct[index], grid)
              for index, grid in enumerate(grids)]
    exact = np.stack([cut_bin_mask(b, num_bins) for b in bounds])
    widened = np.stack([cut_bin_mask(b, num_bins, margin=FILTER_MARGIN) for b in bounds])
    filters = widened[: game.repetitions].copy()
    for index, slot in enumerate(spec.slots[game.repetitions:], start=game.repetitions):
        filters[slot.repetition] |= widened[index]
    return SweepPlan(m=m, slot_rows=tuple(int(t) for t in totals), grids=tuple(grids), boundaries=tuple(bounds),
                     exact_masks=exact, filter_masks=filters, union_filter=filters.any(axis=0), issues=issues)


# ------------------------------------------------------------------------------------------ pass 2


@dataclass
class BoundaryChunk:
    """Rows of one batch that fall in a slot's cut bins: what `exact_counts` needs."""

    bins: np.ndarray
    abs_scores: np.ndarray
    row_ids: np.ndarray
    correct: np.ndarray


def _concat(chunks: list[BoundaryChunk]) -> BoundaryChunk:
    if not chunks:
        return BoundaryChunk(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool))
    return BoundaryChunk(*(np.concatenate([getattr(c, name) for c in chunks])
                           for name in ("bins", "abs_scores", "row_ids", "correct")))


def boundary_batch(batch: ScoredBatch, spec: GameSpec, plan: SweepPlan):
    """The batch's rows in its slots' cut bins, grouped by slot (`auditing.game.kernel.BoundaryRows`), or None
    when it has none to bring back."""
    if batch.rows == 0 or plan.repetitions_with_cuts().size == 0:
        return None
    # Compiled (auditing.game.kernel.boundary_rows): a row's bin in any repetition is one of its k per-class
    # bins, so only rows with a cut candidate bin are replayed, and only their real bins decide.
    return kernel_boundary_rows(spec.tables(batch), spec.keys, plan.exact_masks)


def boundary_rows(batch: ScoredBatch, spec: GameSpec, plan: SweepPlan) -> Iterator[tuple[int, BoundaryChunk]]:
    """(slot index, chunk) for every slot with rows of this batch in its cut bins."""
    found = boundary_batch(batch, spec, plan)
    if found is None:
        return
    for index in np.flatnonzero(np.diff(found.offsets)):
        yield int(index), BoundaryChunk(*found.of(int(index)))


def finish_counts(plan: SweepPlan, slot: int, chunks: list[BoundaryChunk]) -> np.ndarray:
    """The slot's exact counts (correct guesses at each grid point) from all its boundary chunks."""
    rows = _concat(list(chunks))
    return exact_counts(plan.boundaries[slot], rows.bins, rows.abs_scores, rows.row_ids, rows.correct)


def ranked_slots(plan: SweepPlan, max_rows: int) -> np.ndarray:
    """Slots whose cut bins hold more than ``max_rows`` rows (a model with one score for every row puts a whole
    slot there): too many to rank in memory, so their rows are kept in rank order batch by batch
    (`ranked_order`), merged on the way back and counted as a stream (`count_ranked`)."""
    return np.array([index for index, bounds in enumerate(plan.boundaries) if bounds.boundary_rows() > max_rows],
                    dtype=np.int64)


def ranked_order(found, slots: np.ndarray) -> np.ndarray | None:
    """The order of ``found``'s rows (`auditing.game.kernel.BoundaryRows`) that puts each of ``slots``' rows in
    rank order (`auditing.game.sweep.rank_order`) and leaves the other slots' rows where they are; None when
    no row moves."""
    if slots.size == 0:
        return None
    order = np.arange(found.bins.size)
    for slot in slots.tolist():
        lo, hi = int(found.offsets[slot]), int(found.offsets[slot + 1])
        if hi - lo > 1:
            order[lo:hi] = lo + rank_order(found.abs_scores[lo:hi], found.row_ids[lo:hi])
    return order


def count_ranked(plan: SweepPlan, slot: int, chunks) -> np.ndarray:
    """The slot's exact counts from its boundary rows streamed in rank order, as `BoundaryChunk`s: what
    `finish_counts` gives, in memory O(chunk) (`auditing.game.sweep_reduce.RankedCounts` checks the order)."""
    counter = RankedCounts(plan.boundaries[slot])
    for chunk in chunks:
        counter.add(chunk.bins, chunk.abs_scores, chunk.row_ids, chunk.correct)
    return counter.counts()


def count_batches(batches, spec: GameSpec, plan: SweepPlan) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    """Pass 2 over audited batches held in memory: ({slot: exact counts}, {slot: boundary rows}), what grouping
    `boundary_rows`' chunks by slot and `finish_counts` give (the counts do not depend on the chunks' order)."""
    chunks: dict[int, list[BoundaryChunk]] = {}
    for batch in batches:
        for slot, chunk in boundary_rows(batch, spec, plan):
            chunks.setdefault(slot, []).append(chunk)
    return ({slot: finish_counts(plan, slot, found) for slot, found in chunks.items()},
            {slot: int(sum(chunk.bins.size for chunk in found)) for slot, found in chunks.items()})


def sweep_counts(plan: SweepPlan, spec: GameSpec, counts: dict[int, np.ndarray]):
    """(SweepCounts over the repetitions, the halves' SweepCounts or None when a half is empty) from per-slot
    counts (`auditing.game.slots.SlotPlan.counts`).

    Slots missing from `counts` must have no cut bins (their counts follow from the histogram alone)."""
    full = {}
    for index, bounds in enumerate(plan.boundaries):
        if index in counts:
            full[index] = np.asarray(counts[index], dtype=np.int64)
        elif bounds.cut_bins().size:
            raise RuntimeError(f"slot {index} ({spec.slots[index]}) has cut bins but pass 2 returned no counts "
                               f"for it (rows lost between the passes)")
        else:
            full[index] = finish_counts(plan, index, [])
    return spec.plan.counts(plan.m, plan.slot_rows, plan.grids, full)


def scored_rows_table(batch: ScoredBatch, spec: GameSpec) -> pa.Table:
    """row_id plus, per repetition r, the attack score ``score_r``, whether the guess was right
    (``correct_r``), the secret bit ``b_r`` (1: the released label is the counterfactual one drawn from M') and
    the released label ``released_label_r`` (paper Alg. 2): the optional ad-hoc output (``--write-scored``).
    Replays the whole game for the batch."""
    columns = {schema.ROW_ID: pa.array(batch.row_ids)}
    for r in range(spec.game.repetitions):
        game = spec.play(batch, r)
        bit, released = secret_bits_and_released(batch.p_reference, batch.labels, batch.row_ids,
                                                  seed=spec.game.draw_seed, repetition=r)
        columns[f"score_{r}"] = pa.array(game.scores)
        columns[f"correct_{r}"] = pa.array(game.correct)
        columns[f"b_{r}"] = pa.array(bit.astype(np.int8))
        columns[f"released_label_{r}"] = pa.array(released.astype(np.int64))
    return pa.table(columns)


__all__ = [
    "BACKGROUND_CHUNK_ROWS", "FILTER_MARGIN", "MAX_PENDING_CHUNKS", "BoundaryChunk", "GameSpec", "Pass1Accumulator",
    "SweepPlan", "boundary_batch", "boundary_rows", "finish_counts", "make_plan", "scored_rows_table", "sweep_counts"
]
