"""A model family's nights read from the warehouse (auditing/sinks/family.py): a target's nightly and backfill rows,
the first computed verdict of each night, in the order computed, and the later runs of a night on other inputs.
The family's test itself: tests/auditing/verdict/test_family_evidence.py; its evidence stored and listed:
tests/auditing/sinks/warehouse/test_rows.py."""

import datetime as dt

from auditing.sinks.family import family_members, family_rows, later_runs, night_numbers
from auditing.sinks.warehouse.records import ResultRow
from auditing.sinks.warehouse.rows import normalize_row
from labeldp.codec import encode
from tests.support.warehouse_rows import make_row

JAN1, JAN2, JAN3 = dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)
OTHER_MODEL_FILE = "sha256:" + "cd" * 32


def _row(date, hour, *, model_id="m", run_kind="nightly", **overrides):
    started = dt.datetime(2024, 1, 5, hour, tzinfo=dt.UTC)
    row, _ = make_row(model_id, date, run_kind=run_kind, started_at=started, finished_at=started,
                      flow_run_id=f"{model_id}-{date}-{run_kind}-{hour}", **overrides)
    return ResultRow(**normalize_row(row))


FIRST_JAN2 = _row(JAN2, 1)
BACKFILL_JAN1 = _row(JAN1, 3, run_kind="backfill")  # computed after Jan 2's night: enters second
AGAIN_JAN2 = _row(JAN2, 5, model_fingerprint=OTHER_MODEL_FILE)  # the night again on another model file
SAME_INPUTS_JAN2 = _row(JAN2, 6, run_kind="backfill")  # a backfill of the night on the same inputs
NOT_FAMILY = [_row(JAN3, 2, run_kind="guardrail"), _row(JAN3, 2, run_kind="rejudge"), _row(JAN3, 2, kind="control"),
              _row(JAN3, 0, model_id="other")]
ROWS = [AGAIN_JAN2, *NOT_FAMILY, SAME_INPUTS_JAN2, BACKFILL_JAN1, FIRST_JAN2]


def test_the_family_is_the_target_s_nightly_and_backfill_rows():
    assert set(family_members(ROWS, "m")) == {FIRST_JAN2, BACKFILL_JAN1, AGAIN_JAN2, SAME_INPUTS_JAN2}
    assert family_members(ROWS, "m", until=JAN1) == [BACKFILL_JAN1]


def test_each_night_counts_its_first_computed_row_in_the_order_computed():
    assert family_rows(ROWS, "m") == [FIRST_JAN2, BACKFILL_JAN1]
    assert family_rows(ROWS, "m", until=JAN1) == [BACKFILL_JAN1]
    assert night_numbers(ROWS) == {("m", JAN2): 1, ("m", JAN1): 2, ("other", JAN3): 1}


def test_a_later_run_of_a_night_on_other_inputs_names_what_changed():
    (later,) = later_runs(ROWS, "m")
    assert (later.first, later.later, later.changed) == (FIRST_JAN2, AGAIN_JAN2, ("model_fingerprint",))
    listing = encode(later)
    assert listing["first_run_id"] == FIRST_JAN2.run_id and listing["run_id"] == AGAIN_JAN2.run_id
    assert listing["changed"] == ["model_fingerprint"] and listing["partition_date"] == "2024-01-02"
    assert later_runs(ROWS, "m", until=JAN1) == []
