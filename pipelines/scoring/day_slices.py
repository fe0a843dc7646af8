"""A day's slices (docs/slices.md) from the scoring job: the job writes each scored batch's rows (row id, label,
both models' probabilities, whether it is a check row) when slices are declared, and the driver counts every
slice once the pipeline is done (`auditing.slices.count_slices`), with the slicings' columns read from the
partition and joined by row id. The counts are stored with the day's game and bounded from there
(`auditing.slices.bound_slices`), at the job's bound settings or any other.

Memory: the driver holds the day's scored rows and the slicings' columns (about 40 bytes a row for a binary model
plus the columns), so unlike the job itself it grows with the day: about 0.4 GB at 1e7 rows. A day without
slices writes and reads none of it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditing.audit import CheckRows
from auditing.config import GameConfig
from auditing.slices import SliceCounts, Slicing, count_slices, parse_slicing
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.scoring.scored_batch import ScoredBatch, batch_from_predictions, predictions_table

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


def day_slice_counts(directory: Path, root, date: dt.date, dataset: DatasetSpec, game: GameConfig,
                     slicings: Sequence[Slicing], *, night: dt.date | None) -> SliceCounts:
    """Every declared slice's counts from the slice rows the job wrote under ``directory`` (`slice_rows_table`)."""
    files = sorted(Path(directory).glob("part-*.parquet"))
    if not files:
        raise LabelDPInputError(f"slices: the scoring job wrote no scored rows under {directory}")
    table = pa.concat_tables([pq.read_table(path) for path in files])
    scored = batch_from_predictions(table)
    check = table.column(CHECK).to_numpy(zero_copy_only=False)
    names = tuple(dict.fromkeys(name for slicing in slicings for name in slicing.column_names))
    columns = _columns_by_row_id(root, date, dataset, names, scored.row_ids)
    audited = ~check

    def part(mask):
        return (scored.p_target[mask], scored.p_reference[mask], scored.labels[mask], scored.row_ids[mask])

    check_rows = CheckRows(*part(check)) if check.any() else None
    return count_slices(*part(audited), game, slicings,
                        columns={name: values[audited] for name, values in columns.items()}, check=check_rows,
                        check_columns={name: values[check] for name, values in columns.items()}, night=night)


def _columns_by_row_id(root, date: dt.date, dataset: DatasetSpec, names: Sequence[str],
                       row_ids: np.ndarray) -> dict[str, np.ndarray]:
    """The partition's ``names`` columns at ``row_ids`` (a dictionary column decoded to its values)."""
    if not names:
        return {}
    partition = schema.read_partition(root, date, columns=[dataset.row_key, *names], dataset=dataset)
    keys = partition.column(dataset.row_key).to_numpy()
    order = np.argsort(keys, kind="stable")
    at = order[np.searchsorted(keys, row_ids, sorter=order)]
    out = {}
    for name in names:
        column = partition.column(name)
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        out[name] = np.asarray(column.to_numpy(zero_copy_only=False))[at]
    return out


__all__ = ["CHECK", "day_slice_counts", "slice_rows_table", "slicings_for"]
