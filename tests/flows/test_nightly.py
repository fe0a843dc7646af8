"""The nightly flow (flows/nightly.py) on a day with duplicated events, with real parts: a Prefect test server,
synthetic days, CatBoost and the scoring job. The night leaves the grouped rows out of every audit and records how
many and why (docs/soundness.md section 9; the grouping itself: tests/auditing/game/test_row_groups.py).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest


@pytest.fixture(scope="module")
def prefect_api():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield


@pytest.mark.slow
def test_a_nightly_with_duplicated_events_leaves_them_out_and_says_so(prefect_api, tmp_path):
    """A day whose log carries 600 duplicated events (same features, same label, a new row key): the night
    leaves both copies out of every audit (the grouping is the feature vector by default), records how many and
    why, and the label-agreement diagnostic shows the duplicates agree more than independent labels would."""
    import datetime as dt

    from flows.nightly import nightly_audit
    from pipelines.data import schema, splits, synth

    d0, d1 = dt.date(2026, 10, 1), dt.date(2026, 10, 2)
    synth.write_synthetic_day(tmp_path, d0, rows=20_000)
    day = synth.generate_day(d1, rows=20_000).table
    copies = day.slice(0, 600)
    ids = copies.column(schema.ROW_ID).to_numpy() + 10_000_000
    index = copies.schema.get_field_index(schema.ROW_ID)
    copies = copies.set_column(index, copies.schema.field(index), pa.array(ids))
    schema.write_partition(tmp_path, d1, pa.concat_tables([day, copies]), source="a day with duplicated events")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
                                "catboost_iterations": 30, "audit": {"repetitions": 2, "grid_points": 20},
                                "controls": {"enabled": False}}))
    rows = nightly_audit(date=d1.isoformat(), data_root=str(tmp_path), plan_file=str(plan))
    [row] = [r.row for r in rows if r.row.model_id == "rr-eps1"]
    assert row.group_rule.startswith("rows with the same feature vector")
    # every duplicated row is left out where it was audited: about 80% of the 1,200 rows are training rows
    assert 800 < row.rows_excluded_groups < 1_100
    assert row.group_pairs >= 600 and row.group_label_agreement == 1.0
    assert row.group_label_agreement_expected < 0.99
    record = json.loads(next((tmp_path / "sweeps" / "rr-eps1").rglob("result.json")).read_text())
    groups = record["result"]["row_groups"]
    assert groups["rows_excluded"] == row.rows_excluded_groups and groups["check_rows_excluded"] > 0
    # the audited rows: the training rows, minus the correction's keyed share (its labels fitted the night's
    # reference), minus the grouped rows among the rest
    table = schema.read_partition(tmp_path, d1, columns=[schema.ROW_ID])
    all_ids = table.column(schema.ROW_ID).to_numpy()
    in_share = (splits.split_of(all_ids) != splits.TEST) & splits.correction_share(all_ids, splits.CORRECTION_SHARE)
    assert record["diagnostics"]["audited_rows"]["excluded_for_correction"]["share"] == splits.CORRECTION_SHARE
    assert record["result"]["m"] == (record["diagnostics"]["audited_rows"]["training_rows"] - int(in_share.sum())
                                     - groups["rows_excluded"])
