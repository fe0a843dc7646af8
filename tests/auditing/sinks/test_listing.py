"""auditing/sinks/listing.py: a run's listed verdicts and skipped targets as their ``--json`` records, written by
labeldp.codec, and a published verdict's record carrying its one decision (the words of its warehouse row).

tests/auditing/sinks/fixtures/listing_before.json holds the ``--json`` text their hand-written ``to_dict`` gave
(``json.dumps([r.to_dict() for r in rows], default=str)``) for the samples below, captured before the codec."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.game.config import GameConfig
from auditing.sinks.listing import ListedVerdict, SkippedTarget
from auditing.sinks.warehouse import audit_record, normalize_row
from auditing.sinks.warehouse.records import upgrade_row
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from labeldp.codec import decode, encode
from tests.support.report_pages import checked  # noqa: F401  (fixture: audits with a capacity check)
from tests.support.report_pages import listed_verdict as _summary_row
from tests.support.warehouse_rows import make_row

BEFORE = json.loads((Path(__file__).parent / "fixtures" / "listing_before.json").read_text(encoding="utf-8"))


def samples() -> dict:
    """name -> a listed record, built by hand."""
    verdict = judge(run_audit(np.full(3000, 0.7), np.full(3000, 0.5), np.ones(3000, dtype=int),
                              game=GameConfig(repetitions=1)), 50.0)
    row, _ = audit_record(verdict, model_id="rr", partition_date="2024-01-14", run_kind="nightly")
    published = ListedVerdict(row, report="/r/rr.html", verdict=verdict, warehouse="spooled",
                              spool_path="/spool/rr.json", alert={"sent": True, "status": 200}, reused_scoring=True,
                              control_message=None, reference_check=ReferenceCheck("none", True), family_nights=2)
    stored = ListedVerdict(upgrade_row(normalize_row(make_row(started_at=None, finished_at=None)[0])),
                           report="/r/m.html", stored_weak_pass=True, inputs_replaced="2024-01-05T00:00:00+00:00")
    return {"published": published, "published_bare": ListedVerdict(row, verdict=verdict),
            "stored": stored, "skipped": SkippedTarget("late", dt.date(2024, 1, 2), "no model file")}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_listed_record_writes_the_json_it_wrote_before(name):
    assert json.dumps(encode(samples()[name])) == BEFORE[name]


def test_a_skipped_target_reads_back_from_its_record():
    skipped = samples()["skipped"]
    assert decode(SkippedTarget, json.loads(BEFORE["skipped"]), "skipped") == skipped


def test_a_stored_rows_record_writes_its_timestamps_as_iso_text():
    """A row read back from the warehouse (no command prints its listing: `results --json` writes its own) carries
    its run's times as ISO-8601 text, the codec's form (``json.dumps(default=str)`` wrote them with a space)."""
    row = upgrade_row(normalize_row(make_row()[0]))
    record = encode(ListedVerdict(row))
    assert record["started_at"] == row.started_at.isoformat() and "T" in record["started_at"]


def test_a_published_verdicts_json_carries_its_one_decision(checked):  # noqa: F811
    """`nightly --json` / `guardrail --json`: each target's record carries the decision its warehouse row stores (the
    same words as the terminal, the report and the alert), with its reason, its next step and what would confirm it."""
    from auditing.sinks.warehouse.schema import DECISION_COLUMNS

    act = _summary_row("leaky", judge(checked["leaky"], 0.5))
    unconfirmed = _summary_row("drift", judge(checked["misfit"], 0.1))
    for listed, decision in ((act, "act"), (unconfirmed, "unconfirmed")):
        record = encode(listed)
        assert {name: record[name] for name in DECISION_COLUMNS} == {
            name: getattr(listed.row, name) for name in DECISION_COLUMNS}
        assert record["decision"] == decision and record["decision_reason"]
    assert encode(unconfirmed)["decision_next_step"]
