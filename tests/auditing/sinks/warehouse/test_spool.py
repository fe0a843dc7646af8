"""The spool (auditing/sinks/warehouse/spool.py) on both backends: an unreachable warehouse spools and drains
without loss, runs on identical inputs drain in the order computed, unreadable payloads are put aside, a payload
drains only into the warehouse it was meant for, and bad input is an error, not an outage."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from auditing.sinks.warehouse import (
    RECORDED,
    SPOOLED,
    AuditKey,
    audit_record,
    destination,
    drain_spool,
    open_warehouse,
    spool_path,
    write_or_spool,
)
from auditing.sinks.warehouse.rows import inputs_fingerprint
from auditing.sinks.warehouse.spool import DrainReport, SpooledElsewhere
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from tests.support.pg_schema import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)
from tests.support.warehouse_audits import slice_fields as _stripped
from tests.support.warehouse_rows import DAY, FINGERPRINT, make_row
from tests.support.warehouse_targets import only


def test_unreachable_warehouse_spools_then_drains_without_loss(target, outage, tmp_path):
    spool = tmp_path / "spool"
    row, curve = make_row(marker=0.4, points=5)
    assert write_or_spool(outage.target, row, curve, spool, attempts=2, backoff=0.05, timeout=0.5) == SPOOLED
    to = destination(outage.target)
    inputs = inputs_fingerprint(row)
    path = spool_path(spool, AuditKey("m-1", FINGERPRINT, DAY, "nightly", 1.0, "abc123", inputs), to, "run-0.4")
    assert [p.name for p in spool.iterdir()] == [path.name]  # no temporary files left behind
    run = hashlib.sha256(b"run-0.4").hexdigest()[:8]
    assert path.name == (f"m-1__2024-01-02__nightly__eps-1__abc123__in-{inputs[7:19]}__run-{run}__to-"
                         f"{to.fingerprint[:12]}.json")
    payload = json.loads(path.read_text())
    assert payload["row"]["epsilon_lower_bound"] == 0.4 and len(payload["curve"]) == 5
    assert payload["destination"] == encode(to) and payload["format"] == 3
    other_row, other_curve = make_row(model_id="m-2", marker=0.6)
    assert write_or_spool(outage.target, other_row, other_curve, spool, attempts=1, timeout=0.5) == SPOOLED

    during = drain_spool(outage.target, spool, timeout=0.5)
    assert during.written == [] and during.remaining == 2
    assert ("127.0.0.1" in during.error) if target.startswith("postgresql") else ("locked" in during.error)
    assert len(list(spool.glob("*.json"))) == 2  # nothing removed while the warehouse is down

    outage.end()
    drained = drain_spool(outage.target, spool)
    assert sorted(k.model_id for k in drained.written) == ["m-1", "m-2"]
    assert drained.remaining == 0 and drained.error is None and not list(spool.iterdir())
    assert drain_spool(outage.target, spool) == DrainReport()  # nothing written, rejected, left or elsewhere
    with open_warehouse(outage.target) as wh:
        rows = wh.fetch_results()
        assert [(r.model_id, r.epsilon_lower_bound) for r in rows] == [("m-1", 0.4), ("m-2", 0.6)]
        assert len(wh.fetch_curve(rows[0])) == 5
        assert rows[0].started_at == row["started_at"]


def test_payloads_of_two_runs_on_identical_inputs_drain_in_the_order_computed(target, tmp_path):
    """Each run spools its own payload (the run is in the file name); the drain writes the first run's row and
    records the later one against it, whatever order the files are in, and a direct write of a third run on the
    same inputs is recorded beside them."""
    spool = tmp_path / "spool"
    from auditing.sinks.warehouse.spool import spool_payload

    later = spool_payload(*make_row(marker=0.2, started_at=dt.datetime(2024, 1, 4, tzinfo=dt.UTC)), spool,
                          destination(target))
    earlier = spool_payload(*make_row(marker=0.1), spool, destination(target))
    elsewhere = spool_payload(*make_row(marker=0.1), spool, destination(str(tmp_path / "other.duckdb")))
    assert len({later, earlier, elsewhere}) == 3
    drained = drain_spool(target, spool)
    assert len(drained.written) == 2 and not later.exists() and not earlier.exists() and elsewhere.exists()
    assert write_or_spool(target, *make_row(marker=0.3), spool) == RECORDED
    with open_warehouse(target) as wh:
        row = only(wh.fetch_results())
        assert (row.epsilon_lower_bound, row.run_id) == (0.1, "run-0.1")
        assert [r["run_id"] for r in wh.fetch_runs(row)] == ["run-0.1", "run-0.3", "run-0.2"]


def test_drain_keeps_unreadable_payloads_aside(target, tmp_path):
    spool = tmp_path / "spool"
    from auditing.sinks.warehouse.spool import spool_payload

    spool_payload(*make_row(marker=0.2), spool, destination(target))
    (spool / "broken.json").write_text('{"format": 1, "row": {"model_id": "m-1"')
    report = drain_spool(target, spool)
    assert [k.model_id for k in report.written] == ["m-1"]
    assert report.rejected == [str(spool / "broken.json.rejected")]
    assert (spool / "broken.json.rejected").exists() and report.remaining == 0


def test_a_payload_drains_only_into_the_warehouse_it_was_meant_for(target, tmp_path):
    """A payload spooled for one warehouse is left alone by a drain aimed at another (none is created there);
    a payload of the first spool format, which recorded no destination, only on request."""
    from auditing.sinks.warehouse.spool import spool_payload

    spool = tmp_path / "spool"
    meant = spool_payload(*make_row(marker=0.2), spool, destination(target))
    legacy = spool / "old.json"
    row, curve = make_row(model_id="m-old")
    legacy.write_text(json.dumps({"format": 1, "spooled_at": 0.0, "row": {
        k: (v.isoformat() if isinstance(v, dt.date | dt.datetime) else v) for k, v in row.items()
        if k not in ("run_kind", "model_fingerprint")}, "curve": curve}))
    other = tmp_path / "elsewhere" / "warehouse.duckdb"
    report = drain_spool(other, spool)
    assert report.written == [] and report.remaining == 0 and report.error is None
    assert report.elsewhere == [SpooledElsewhere(str(meant), destination(target).backend,
                                                 destination(target).address)]
    assert report.unaddressed == [str(legacy)]
    assert meant.exists() and legacy.exists() and not other.parent.exists()  # nothing removed, nothing created

    report = drain_spool(target, spool)
    assert [k.model_id for k in report.written] == ["m-1"] and not meant.exists() and legacy.exists()
    report = drain_spool(target, spool, include_unaddressed=True)
    assert [(k.model_id, k.run_kind, k.model_fingerprint) for k in report.written] == [
        ("m-old", "unrecorded", "unrecorded")]
    assert not legacy.exists() and report.unaddressed == [] and report.elsewhere == []


def test_bad_input_is_an_error_not_an_outage(tmp_path):
    with pytest.raises(LabelDPInputError, match="status"):
        write_or_spool(tmp_path / "w.duckdb", *make_row(status="MAYBE"), tmp_path / "spool")
    assert not (tmp_path / "spool").exists()


def test_slices_spool_with_their_row_and_drain_without_loss(target, outage, tmp_path, sliced_verdict):
    from auditing.sinks.warehouse import slice_record

    spool = tmp_path / "spool"
    row, curve = audit_record(sliced_verdict, model_id="sliced", partition_date=DAY, run_kind="nightly")
    slices = slice_record(sliced_verdict)
    assert write_or_spool(outage.target, row, curve, spool, attempts=1, timeout=0.5, slices=slices) == SPOOLED
    payload = json.loads(spool_path(spool, row.key, destination(outage.target), row.run_id).read_text())
    assert payload["slices"] == slices and payload["format"] == 3
    outage.end()
    assert [k for k in drain_spool(outage.target, spool).written] == [row.key]
    with open_warehouse(outage.target) as wh:
        assert _stripped(wh.fetch_slices(row.key)) == slices
