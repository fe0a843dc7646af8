"""The label-free inputs of a split's two sides, read from the day, for the split test
(`auditing.verdict.split_test`, docs/soundness.md section 8.7).

For a split a team supplied (a training-rows keys file), a keyed sample of the audited rows and one of the check
rows are read (`pipelines.data.schema.read_keyed_sample`: at most `SAMPLE_ROWS` each, by row id only), and each side
gives its features as stored, the night's reference's probability of the positive class (log-odds) and the rows'
places in the day. Labels are never read into the test.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from auditing.verdict.split_test import SplitTest, split_test
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.data.day import Day
from pipelines.data.schema import read_keyed_sample
from pipelines.models.handle import ModelHandle

# Rows read per side: enough to see a shift of a few hundredths in any input's law.
SAMPLE_ROWS = 50_000
POSITION, REFERENCE = "row_position", "reference_log_odds"


def side_inputs(table: pa.Table, dataset: DatasetSpec, reference: ModelHandle) -> dict[str, np.ndarray]:
    """One side's inputs: the features (categoricals as stored text, None where missing), the reference's
    log-odds of the positive class (the largest class for k labels) and the rows' places in the day."""
    out: dict[str, np.ndarray] = {}
    for name in dataset.numeric:
        out[name] = table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
    for name in dataset.categorical:
        out[name] = np.asarray(table.column(name).cast(pa.string()).to_pylist(), dtype=object)
    if table.num_rows:
        p = np.asarray(reference.format.predict(reference, table, dataset), dtype=np.float64)[:, -1]
        p = np.clip(p, 1e-12, 1 - 1e-12)
        out[REFERENCE] = np.log(p) - np.log1p(-p)
    else:
        out[REFERENCE] = np.zeros(0)
    out[POSITION] = table.column(POSITION).to_numpy().astype(np.float64)
    return out


def split_test_of_day(day: Day, audited, check, reference: ModelHandle, max_rows: int = SAMPLE_ROWS) -> SplitTest:
    """The split test of ``day``'s audited rows (a selection with ``mask(row_ids)``: the target's training keys)
    against its check rows (`pipelines.reference.recalibration.CheckRowSelection`), read with the day's dataset."""
    dataset = day.dataset
    sides = []
    for selection in (audited, check):
        table, _, _ = read_keyed_sample(day, dataset, max_rows, among=selection.mask, positions=True)
        sides.append(side_inputs(table, dataset, reference))
    return split_test(sides[0], sides[1], categorical=set(dataset.categorical))


__all__ = ["POSITION", "REFERENCE", "SAMPLE_ROWS", "side_inputs", "split_test_of_day"]
