"""A day's slices (docs/slices.md) from the scoring job: the job writes each scored batch's rows (row id, label,
both models' probabilities, whether it is a check row) when slices are declared, and the driver counts every
slice once the pipeline is done, a batch at a time (`day_slice_counts`), each batch with the slicings' columns
of its own row group. The counts are stored with the day's game and bounded from there
(`auditing.slices.bound_slices`), at the job's bound settings or any other.

Memory: a batch, each slicing column's value counts and each slice's histograms; not the day's rows. A day
without slices writes and reads none of it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditing.config import GameConfig
from auditing.game.attack_curve import attack_curve_from_outcomes
from auditing.game.counts import GameCounts
from auditing.game.score_histogram import coarsen
from auditing.game.sweep_reduce import BinSpec
from auditing.slices import DayStatistics, SliceCounts, SliceGame, SliceRows, Slicing, parse_slicing
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.scoring.scored_batch import ScoredBatch, batch_from_predictions, predictions_table
from pipelines.scoring.scoring_batches import (
    GameSpec,
    Pass1Accumulator,
    boundary_rows,
    finish_counts,
    make_plan,
    sweep_counts,
)

CHECK = "check"  # the slice rows' column: True for a capacity-check row


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


def slice_rows_table(batch: ScoredBatch) -> pa.Table:
    """A scored batch's rows for the day's slices: `predictions_table` and the check flag."""
    table = predictions_table(batch)
    check = np.zeros(batch.rows, dtype=bool) if batch.check is None else batch.check
    return table.append_column(CHECK, pa.array(check))


@dataclass
class _Part:
    """One scored batch of the day, cut in its audited and check rows, with the slicings' columns of each."""

    target: np.ndarray
    audited: SliceRows
    check_target: np.ndarray | None
    check: SliceRows | None
    batch_id: str


def day_slice_counts(directory: Path, root, date: dt.date, dataset: DatasetSpec, game: GameConfig,
                     slicings: Sequence[Slicing], *, night: dt.date | None, tasks: Sequence, batch_size: int,
                     bins: BinSpec, capacity_check: bool) -> SliceCounts:
    """Every declared slice's counts from the slice rows the job wrote under ``directory`` (`slice_rows_table`, one
    file per batch), read a batch at a time with the slicing columns of the same batch of the partition (``tasks``
    and ``batch_size``: the job's read tasks and batch size, which name its batches):
    the day's statistics the slices are fixed from (`auditing.slices.DayStatistics`: value counts, the prior's
    exact deciles in two reads), then each slice's pass 1 and pass 2 (`pipelines.scoring.scoring_batches`, as the
    job counts the global game, with R = 1). The counts equal `auditing.slices.count_slices` on the day's rows
    held at once; memory is a batch, the value counts, each slice's histograms (``bins``) and the rows of its cut
    bins (as the job's own pass 2), not the day."""
    played = dataclasses.replace(game.with_night(night), repetitions=1)  # repetition 0 alone bounds
    names = tuple(dict.fromkeys(name for slicing in slicings for name in slicing.column_names))
    files = sorted(Path(directory).glob("part-*.parquet"))
    if not files:
        raise LabelDPInputError(f"slices: the scoring job wrote no scored rows under {directory}")

    def parts():
        return _day_parts(directory, len(files), dataset, names, tasks, batch_size, played.draw_seed)

    statistics = DayStatistics(slicings)
    for part in parts():
        statistics.add(part.audited)
    if statistics.needs_second_pass:
        for part in parts():
            statistics.add_again(part.audited)
    fixed = [slicing.fixed(statistics.result()) for slicing in slicings]
    spec = GameSpec(played, bins, capacity_check=capacity_check)
    labels: list[tuple[str, str]] | None = None
    passes: list[Pass1Accumulator] = []
    rows, check_rows = [], []
    for part in parts():
        pieces = [piece for slicing in fixed for piece in slicing.slices(part.audited, part.check)]
        if labels is None:
            labels = [(piece.slicing, piece.name) for piece in pieces]
            passes = [Pass1Accumulator() for _ in pieces]
            rows, check_rows = [0] * len(pieces), [0] * len(pieces)
        for i, piece in enumerate(pieces):
            batch = _slice_batch(part, piece)
            rows[i] += int(piece.audited.sum())
            check_rows[i] += 0 if piece.check is None else int(piece.check.sum())
            if batch is not None:
                passes[i].add_batch(batch, spec)
    if not labels:
        raise LabelDPInputError("no slice: the slicings declared none", field="slice")
    plans = [make_plan(passes[i], spec) if rows[i] else None for i in range(len(labels))]
    chunks: list[dict[int, list]] = [{} for _ in labels]
    for part in parts():
        pieces = [piece for slicing in fixed for piece in slicing.slices(part.audited, part.check)]
        for i, piece in enumerate(pieces):
            if plans[i] is None or not piece.audited.any():
                continue
            audited = _slice_batch(part, piece, audited_only=True)
            for slot, chunk in boundary_rows(audited, spec, plans[i]):
                chunks[i].setdefault(slot, []).append(chunk)
    out = []
    for i, (slicing, name) in enumerate(labels):
        if plans[i] is None:
            out.append(SliceGame(slicing, name, 0, check_rows[i], None))
            continue
        plan, accumulator = plans[i], passes[i]
        counts, halves = sweep_counts(plan, spec, {slot: finish_counts(plan, slot, found)
                                                   for slot, found in chunks[i].items()})
        counted = GameCounts(
            game=played, counts=counts, halves=halves,
            score_histogram=coarsen(accumulator.rows[0], accumulator.correct[0], bins),
            prior_histogram=accumulator.prior_histogram(),
            check=accumulator.checks if check_rows[i] else None,
            attack_curve=attack_curve_from_outcomes(accumulator.signed, seed=played.draw_seed))
        out.append(SliceGame(slicing, name, rows[i], check_rows[i], counted))
    return SliceCounts(tuple(s.spec for s in slicings), tuple(out))


def _slice_batch(part: _Part, piece, audited_only: bool = False) -> ScoredBatch | None:
    """The rows of ``piece`` in ``part`` as a scored batch: its audited rows, then (unless ``audited_only``) its check
    rows flagged; None when it has none."""
    a = piece.audited
    c = None if audited_only or part.check is None or piece.check is None else piece.check
    n_audited, n_check = int(a.sum()), 0 if c is None else int(c.sum())
    if n_audited + n_check == 0:
        return None
    audited = part.audited
    if c is None:
        return ScoredBatch(part.batch_id, audited.row_ids[a], audited.labels[a], part.target[a], audited.reference[a],
                           {"rows_scored": n_audited}, None)
    check = part.check
    return ScoredBatch(part.batch_id, np.concatenate([audited.row_ids[a], check.row_ids[c]]),
                       np.concatenate([audited.labels[a], check.labels[c]]),
                       np.concatenate([part.target[a], part.check_target[c]]),
                       np.concatenate([audited.reference[a], check.reference[c]]),
                       {"rows_scored": n_audited},
                       np.concatenate([np.zeros(n_audited, bool), np.ones(n_check, bool)]))


def _day_parts(directory: Path, expected_files: int, dataset: DatasetSpec, names: Sequence[str], tasks: Sequence,
               batch_size: int, seed: int) -> Iterator[_Part]:
    """The day's slice rows a batch at a time, each with its rows' slicing columns read from the same batch of the
    partition: the job names batch i of a row group ``<task name>-b<i>`` and reads it with ``batch_size``
    (`pipelines.scoring.partition_batches.read_batches`)."""
    seen = 0
    for task in tasks:
        if not any(Path(directory).glob(f"part-{task.name}-b*.parquet")):
            continue
        for index, columns in enumerate(_batch_columns(task, dataset, names, batch_size)):
            path = Path(directory) / f"part-{task.name}-b{index:05d}.parquet"
            if not path.is_file():
                continue  # a batch none of whose rows were scored
            seen += 1
            table = pq.read_table(path)
            scored = batch_from_predictions(table)
            check = table.column(CHECK).to_numpy(zero_copy_only=False)
            values = _at_row_ids(columns, scored.row_ids, path)
            audited = ~check
            part = _Part(scored.p_target[audited],
                         SliceRows(scored.p_reference[audited], scored.labels[audited], scored.row_ids[audited],
                                   {name: v[audited] for name, v in values.items()}, seed),
                         None, None, scored.batch_id)
            if check.any():
                part.check_target = scored.p_target[check]
                part.check = SliceRows(scored.p_reference[check], scored.labels[check], scored.row_ids[check],
                                       {name: v[check] for name, v in values.items()}, seed)
            yield part
    if seen != expected_files:
        raise RuntimeError(f"slices: {expected_files} scored-row file(s) under {directory}, {seen} of them named "
                           "after the day's batches")


def _batch_columns(task, dataset: DatasetSpec, names: Sequence[str],
                   batch_size: int) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """(row keys, {name: values}) of each batch of one row group, as the job reads it (a dictionary column decoded
    to its values)."""
    columns = [dataset.row_key, *names]
    source = f"{task.path} (row group {task.row_group})"
    try:
        for batch in pq.ParquetFile(task.path).iter_batches(batch_size=int(batch_size), row_groups=[task.row_group],
                                                            columns=columns):
            table = schema.validate_table(pa.Table.from_batches([batch]), source, columns=columns, dataset=dataset)
            out = {}
            for name in names:
                column = table.column(name)
                if pa.types.is_dictionary(column.type):
                    column = column.cast(column.type.value_type)
                out[name] = np.asarray(column.to_numpy(zero_copy_only=False))
            yield table.column(dataset.row_key).to_numpy().astype(np.int64), out
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{source}: cannot be read ({exc})") from None


def _at_row_ids(columns, row_ids: np.ndarray, path: Path) -> dict[str, np.ndarray]:
    keys, values = columns
    if not values:
        return {}
    order = np.argsort(keys, kind="stable")
    where = np.searchsorted(keys, row_ids, sorter=order)
    at = order[np.minimum(where, keys.size - 1)]
    if keys.size == 0 or not np.array_equal(keys[at], row_ids):
        raise RuntimeError(f"slices: {path} holds row ids its row group does not")
    return {name: v[at] for name, v in values.items()}


__all__ = ["CHECK", "day_slice_counts", "slice_rows_table", "slicings_for"]
