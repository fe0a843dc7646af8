"""The reference's shift diagnostic (pipelines/reference/shift_diagnostics.py), with real CatBoost on small days: it
compares day D-1 with day D for the reference recalibrated on D (the D-1 checkpoint it corrects, on D-1's unseen rows
and on D, and the features of D-1 against D), and streams each day, sampling a large one by its keyed hash. The
drifted day and the recalibrated reference: tests/support/drifted_reference.py.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pyarrow as pa

from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from labeldp.codec import decode, encode
from pipelines.data import schema, splits
from pipelines.data.day import listed_day
from pipelines.models.handle import resolve_model
from tests.support.drifted_reference import DAY, PREVIOUS, RECALIBRATED


def test_the_data_diagnostic_compares_day_d_minus_1_with_day_d_for_the_recalibrated_reference(drifted_world, drifted_recalibrated):
    """The nightly audits against the reference recalibrated on day D, whose own day is D: the diagnostic measures
    the D-1 checkpoint it corrects, on D-1's unseen rows and on D, and the features of D-1 against D. Compared
    with itself, day D would give the same rows, the same fit and a PSI of exactly 0 for every feature."""
    from pipelines.reference.shift_diagnostics import shift_diagnostic

    diagnostic = shift_diagnostic(listed_day(drifted_world["root"], DAY), resolve_model(drifted_world["root"], RECALIBRATED, DAY))
    assert (diagnostic.previous_day, diagnostic.current_day) == (PREVIOUS, DAY)
    assert diagnostic.reference == f"reference@{PREVIOUS.isoformat()}"
    previous, current = diagnostic.fit_previous, diagnostic.fit_current
    assert previous.rows_rule == "test split"
    # Day D's labels drifted up by 0.8 in logit and more on a segment: its click rate is far above D-1's, and
    # the D-1 reference fits it worse than its own day.
    assert current.click_rate > 1.5 * previous.click_rate
    assert diagnostic.reference_log_loss_shift > 0
    assert all(psi > 0 for psi in diagnostic.feature_shift.per_feature.values())
    data = encode(diagnostic)  # its JSON: the figures' shape, read back as it was
    assert list(data) == ["label", "reference", "days", "reference_fit", "reference_log_loss_shift",
                          "reference_ece_shift", "feature_shift", "feature_shift_max_psi"]
    assert decode(ShiftDiagnostic, json.loads(json.dumps(data)), "shift_diagnostic") == diagnostic

    itself = shift_diagnostic(listed_day(drifted_world["root"], PREVIOUS), resolve_model(drifted_world["root"], "reference", PREVIOUS))  # no day before the reference's
    assert itself.fit_previous is None and "no earlier day" in itself.not_computed
    assert list(encode(itself)) == ["label", "reference", "days", "not_computed"]


def test_the_data_diagnostic_streams_each_day_and_samples_a_large_one(drifted_world, monkeypatch):
    """Below its cap the diagnostic is the one of both whole days read at once; above it, the one of each day's
    keyed sample (the rows of smallest keyed hash, computed here), and its fits say so."""
    from pipelines.data.dataset_spec import dataset_of
    from pipelines.reference import shift_diagnostics

    root = drifted_world["root"]
    model = resolve_model(root, "reference", PREVIOUS)
    dataset = dataset_of(root, DAY)
    whole = {day: dataset.to_internal(schema.read_partition(root, day, dataset=dataset)) for day in (PREVIOUS, DAY)}

    def expected(tables: dict) -> tuple:
        def predict(part):
            return model.format.predict(model, part, dataset)

        ids = {day: table.column("row_id").to_numpy() for day, table in tables.items()}
        test = {day: np.flatnonzero(splits.split_of(ids[day]) == splits.TEST) for day in tables}
        return (shift_diagnostics._fit(predict, tables[DAY], test[DAY]),
                shift_diagnostics._fit(predict, tables[PREVIOUS], test[PREVIOUS]),
                shift_diagnostics.feature_shift(tables[PREVIOUS], tables[DAY], dataset))

    streamed = shift_diagnostics.shift_diagnostic(listed_day(root, DAY), model)
    fit_current, fit_previous, shift = expected(whole)
    assert (streamed.fit_current, streamed.fit_previous) == (fit_current, replace(fit_previous, rows_rule="test split"))
    assert streamed.feature_shift == shift

    monkeypatch.setattr(shift_diagnostics, "SAMPLE_ROWS", 1_500)
    sampled = shift_diagnostics.shift_diagnostic(listed_day(root, DAY), model)
    kept = {}
    for day, table in whole.items():
        ids = table.column("row_id").to_numpy()
        hashes = splits.splitmix64(ids.astype(np.uint64) ^ splits.SAMPLE_SALT)
        chosen = np.sort(ids[np.argsort(hashes, kind="stable")[:1_500]])
        kept[day] = table.filter(pa.array(np.isin(ids, chosen)))
        assert kept[day].num_rows == 1_500 < table.num_rows
    fit_current, fit_previous, shift = expected(kept)
    assert sampled.fit_current.log_loss == fit_current.log_loss and sampled.fit_current.rows == fit_current.rows
    assert sampled.fit_previous.ece == fit_previous.ece and sampled.fit_previous.rows == fit_previous.rows
    assert sampled.feature_shift == shift and sampled.feature_shift != streamed.feature_shift
    assert sampled.fit_current.rows_rule == (f"test split, of a keyed sample of 1,500 of the day's "
                                             f"{whole[DAY].num_rows:,} rows (so is the feature shift)")
    assert "keyed sample of 1,500" in sampled.fit_previous.rows_rule
