"""The warehouse protocol (auditing/sinks/warehouse/base.py), the same tests on both backends: a row written once
and read back whole, runs on identical inputs recorded against it, another key's row never touching it, the
latest verdicts, one transaction per write (a failure or a killed process leaves the previous state), the reads'
filters, bound values, concurrent writers, and a verdict's slices.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from auditing.sinks.warehouse import AuditKey, audit_record, open_warehouse
from auditing.sinks.warehouse.rows import inputs_fingerprint, normalize_row
from labeldp.errors import LabelDPInputError
from tests.support.warehouse_audits import slice_fields as _stripped
from tests.support.warehouse_rows import DAY, FINGERPRINT, make_row
from tests.support.warehouse_targets import only
from tests.support.warehouse_writers import write_rounds as _write_rounds
from tests.support.warehouse_writers import writer_marker as _writer_marker

REPO = Path(__file__).resolve().parents[4]


# --------------------------------------------------------------------------------------------- round trip
def test_write_then_fetch_round_trips_every_value(target):
    row, curve = make_row(claimed_epsilon=math.inf, status="INCONCLUSIVE",
                          model_uri="file:///models/m-1/date=2024-01-02/model.cbm",
                          code_version="0.1.0+g1234", reference_model="m-1@2024-01-01")
    with open_warehouse(target) as wh:
        key, new = wh.write_audit(row, curve)
        inputs = inputs_fingerprint(row)
        assert new and key == AuditKey("m-1", FINGERPRINT, DAY, "nightly", math.inf, "abc123", inputs)
        assert inputs == normalize_row(row)["inputs_fingerprint"] and inputs.startswith("sha256:")
        got = only(wh.fetch_results())
        points = wh.fetch_curve(key)
    assert got.partition_date == DAY and isinstance(got.partition_date, dt.date)
    assert got.claimed_epsilon == math.inf
    assert got.gamma == pytest.approx(0.05)
    assert got.started_at == row["started_at"] and got.started_at.utcoffset() == dt.timedelta(0)
    assert json.loads(got.durations) == {"score": 12.5, "audit": 0.25}
    assert json.loads(got.result_json) == {"marker": 0.5}
    for name in ("epsilon_lower_bound", "selected_guesses", "selected_correct", "m", "status", "strategy",
                 "method", "max_certifiable_epsilon", "model_uri", "code_version", "reference_model", "seed"):
        assert getattr(got, name) == row[name], name
    assert [p["point_index"] for p in points] == [0, 1, 2]
    assert [(p["guesses"], p["correct"]) for p in points] == [(10, 5), (20, 10), (30, 15)]
    assert all(p["point_confidence"] == 0.999 and p["model_id"] == "m-1" for p in points)
    assert all(p["run_kind"] == "nightly" and p["claimed_epsilon"] == math.inf for p in points)


def test_a_rerun_on_identical_inputs_records_its_run_and_changes_nothing(target):
    """A row is written once: a later run on the same inputs (even one that computed something else) is recorded in
    audit_runs with what it computed, and the row, its curve and its slices stay the first run's."""
    with open_warehouse(target) as wh:
        assert wh.write_audit(*make_row(marker=0.5, points=5)).new
        first = only(wh.fetch_results())
        assert not wh.write_audit(*make_row(marker=0.7, points=2, status="VIOLATION")).new
        assert not wh.write_audit(*make_row(marker=0.7, points=2, status="VIOLATION")).new  # the same run: once
        assert wh.write_audit(*make_row(config_hash="other", marker=0.9, points=1)).new
        rows = wh.fetch_results(model_id="m-1")
        assert [(r.audit_config_hash, r.epsilon_lower_bound, r.status, r.run_id) for r in rows] == [
            ("abc123", 0.5, "PASS", "run-0.5"), ("other", 0.9, "PASS", "run-0.9")]
        assert rows[0] == first
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(first)] == [0.5] * 5
        assert [(r["run_id"], r["status"], r["epsilon_lower_bound"]) for r in wh.fetch_runs(first)] == [
            ("run-0.5", "PASS", 0.5), ("run-0.7", "VIOLATION", 0.7)]
        assert [r.audit_config_hash for r in wh.fetch_verdicts(run_id="run-0.7")] == ["abc123"]
        assert len(wh.fetch_curve(rows[1])) == 1


@pytest.mark.parametrize("change", [
    {"run_kind": "guardrail"}, {"claimed_epsilon": math.inf}, {"model_fingerprint": "sha256:" + "cd" * 32},
    {"config_hash": "other"}, {"date": dt.date(2024, 1, 3)}, {"partition_fingerprint": "sha256:" + "3f" * 32},
    {"training_rows_fingerprint": "sha256:" + "4a" * 32}, {"reference_fingerprint": "sha256:" + "5b" * 32},
    {"correction_fingerprint": "sha256:" + "6c" * 32}, {"scoring_key": "0123456789abcdef"},
    {"night_fingerprint": "sha256:" + "7d" * 32},
])
def test_a_run_of_another_key_adds_its_own_row_and_never_touches_the_first(target, change):
    """The nightly's VIOLATION stays as it was, with its curve, when a run of another kind, claim, model file,
    configuration, day or inputs (partition, training rows, reference, its correction, stored game) writes its
    verdict of the same model."""
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(marker=0.7, points=4, status="VIOLATION"))
        first = only(wh.fetch_results())
        wh.write_audit(*make_row(marker=0.2, points=1, status="INCONCLUSIVE", **change))
        rows = wh.fetch_results()
        assert len(rows) == 2 and first in rows
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(first)] == [0.7] * 4
        second = next(r for r in rows if r != first)
        assert (second.status, len(wh.fetch_curve(second))) == ("INCONCLUSIVE", 1)
        assert [r.status for r in wh.fetch_verdicts(status="VIOLATION")] == ["VIOLATION"]
        # the same key again: no row added, both rows as they were
        assert not wh.write_audit(*make_row(marker=0.3, points=2, status="INCONCLUSIVE", **change)).new
        assert sorted(map(str, wh.fetch_results())) == sorted(map(str, rows))


def test_latest_per_model_and_run_kind_is_a_query(target):
    with open_warehouse(target) as wh:
        for day, run_kind, claim, status in ((1, "nightly", 1.0, "PASS"), (2, "nightly", 1.0, "VIOLATION"),
                                             (2, "guardrail", math.inf, "INCONCLUSIVE"), (1, "backfill", 1.0, "PASS")):
            wh.write_audit(*make_row(date=dt.date(2024, 1, day), run_kind=run_kind, claimed_epsilon=claim,
                                      status=status, finished_at=dt.datetime(2024, 1, day + 1, tzinfo=dt.UTC)))
        latest = wh.fetch_verdicts(latest=True)
        assert sorted((r.run_kind, r.partition_date.day, r.status) for r in latest) == [
            ("backfill", 1, "PASS"), ("guardrail", 2, "INCONCLUSIVE"), ("nightly", 2, "VIOLATION")]
        assert [r.status for r in wh.fetch_verdicts(run_kind="nightly")] == ["VIOLATION", "PASS"]
        assert [r.run_kind for r in wh.fetch_verdicts(status="VIOLATION", latest=True)] == ["nightly"]
        with pytest.raises(LabelDPInputError, match="run_kind must be one of"):
            wh.fetch_verdicts(run_kind="hourly")
        assert len(wh.fetch_results()) == 4


def test_failure_inside_the_transaction_leaves_the_previous_state(target, monkeypatch):
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(marker=0.5, points=4))

        def half_then_fail(self, cursor, points):
            type(self).__mro__[1]._insert_curve(self, cursor, points[:1])
            raise RuntimeError("simulated crash after the first curve point")

        monkeypatch.setattr(type(wh), "_insert_curve", half_then_fail)
        with pytest.raises(RuntimeError, match="simulated crash"):
            wh.write_audit(*make_row(marker=0.8, points=3, partition_fingerprint="sha256:" + "3f" * 32))
        monkeypatch.undo()
        got = only(wh.fetch_results())
        assert got.epsilon_lower_bound == 0.5
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(got)] == [0.5] * 4
        assert [r["run_id"] for r in wh.fetch_runs(got)] == ["run-0.5"]
        assert wh._query("SELECT COUNT(*) FROM audit_runs", []) == [(1,)]


_CRASH_SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {repo!r})
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.base import Warehouse
    from tests.support.warehouse_rows import make_row
    wh = open_warehouse({target!r})
    def half_then_die(self, cursor, points):
        Warehouse._insert_curve(self, cursor, points[:2])
        os._exit(17)  # the process dies mid-transaction: no commit, no rollback, no cleanup
    type(wh)._insert_curve = half_then_die
    wh.write_audit(*make_row(marker=0.9, points=6, partition_fingerprint="sha256:" + "3f" * 32))
""")


def test_process_killed_mid_transaction_then_rerun_gives_one_row(target):
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(marker=0.5, points=4))
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT.format(repo=str(REPO), target=target)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 17, proc.stderr
    with open_warehouse(target) as wh:
        got = only(wh.fetch_results())
        assert got.epsilon_lower_bound == 0.5
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(got)] == [0.5] * 4
        assert wh._query("SELECT COUNT(*) FROM audit_runs", []) == [(1,)]
        wh.write_audit(*make_row(marker=0.9, points=6, partition_fingerprint="sha256:" + "3f" * 32))  # the re-run
        rows = wh.fetch_results()
        assert [(r.epsilon_lower_bound, len(wh.fetch_curve(r))) for r in rows] == [(0.5, 4), (0.9, 6)] or \
            [(r.epsilon_lower_bound, len(wh.fetch_curve(r))) for r in rows] == [(0.9, 6), (0.5, 4)]


# --------------------------------------------------------------------------------------------- reads
def test_fetch_filters_by_model_and_dates(target):
    with open_warehouse(target) as wh:
        for model in ("a", "b"):
            for day in (1, 2, 3):
                wh.write_audit(*make_row(model_id=model, date=dt.date(2024, 1, day)))
        assert len(wh.fetch_results()) == 6
        assert [r.partition_date.day for r in wh.fetch_results(model_id="a")] == [1, 2, 3]
        assert [r.partition_date.day for r in wh.fetch_results(model_id="b", since="2024-01-02")] == [2, 3]
        assert [r.partition_date.day for r in wh.fetch_results(until=dt.date(2024, 1, 1))] == [1, 1]
        assert [r.model_id for r in wh.fetch_results(since="2024-01-02", until="2024-01-02")] == ["a", "b"]
        assert wh.fetch_results(model_id="c") == []
        assert wh.fetch_curve(("c", FINGERPRINT, DAY, "nightly", 1.0, "abc123", "sha256:" + "0" * 64)) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"model_id": "../etc"}, "model_id"),
    ({"model_id": "x'; DROP TABLE audit_results; --"}, "model_id"),
    ({"since": "2024-13-01"}, "since"),
    ({"until": "yesterday"}, "until"),
    ({"since": "2024-01-05", "until": "2024-01-01"}, "must not be after"),
])
def test_fetch_rejects_bad_filters(target, kwargs, message):
    with open_warehouse(target) as wh, pytest.raises(LabelDPInputError, match=message):
        wh.fetch_results(**kwargs)


def test_values_are_bound_never_spliced_into_sql(target):
    hostile = "x'); DROP TABLE audit_results; --"
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(model_uri=hostile, code_version="'; DELETE FROM audit_curves; --"))
        got = only(wh.fetch_results())
        assert got.model_uri == hostile
        assert len(wh.fetch_curve(got)) == 3


# --------------------------------------------------------------------------------------------- concurrency
def _check_after_concurrent_writes(target, writers: int, rounds: int) -> None:
    with open_warehouse(target) as wh:
        rows = wh.fetch_results()
        keys = sorted(r.model_id for r in rows)
        assert keys == sorted(["shared", *[f"own-{w}" for w in range(writers)]]), keys  # one row per key
        for r in rows:
            curve = wh.fetch_curve(r)
            writer = int(r.epsilon_lower_bound)
            # The row and its whole curve come from the same write: same marker, that writer's length.
            assert {p["epsilon_lower_bound"] for p in curve} == {r.epsilon_lower_bound}
            assert len(curve) == 2 + writer
            # every write recorded as a run of the row, the row the first one's
            assert len(wh.fetch_runs(r)) == (writers * rounds if r.model_id == "shared" else rounds)
        for w in range(writers):
            own = only([r for r in rows if r.model_id == f"own-{w}"])
            assert own.epsilon_lower_bound == _writer_marker(w, 0)  # the first write of own key


def test_concurrent_threads_same_and_different_keys(target):
    writers, rounds = 6, 4
    errors: list[BaseException] = []

    def work(w):
        try:
            _write_rounds(target, w, rounds)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    _check_after_concurrent_writes(target, writers, rounds)


def test_concurrent_processes_same_and_different_keys(target, tmp_path):
    writers, rounds = 3, 3
    go = tmp_path / "go"
    code = ("import sys; sys.path.insert(0, {repo!r}); from tests.support.warehouse_writers import write_rounds; "
            "write_rounds({target!r}, {w}, {rounds}, {go!r})")
    procs = [subprocess.Popen([sys.executable, "-c", code.format(repo=str(REPO), target=target, w=w, rounds=rounds,
                                                                 go=str(go))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(writers)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    _check_after_concurrent_writes(target, writers, rounds)


# --------------------------------------------------------------------------------------------- slices

def test_a_verdict_with_slices_writes_and_reads_back_its_slice_rows(target, sliced_verdict):
    """The slices are written with the verdict's row, in its transaction, keyed by its key: every figure read back
    as judged, largest bound first. Another key adds its own; a re-run of the same key changes none of them (not
    even when it declared none): it is recorded as a run of the row; the read-only reader reads them too."""
    from auditing.sinks.warehouse import as_key, slice_record
    from auditing.sinks.warehouse.base import open_read_only

    verdict = sliced_verdict
    lineage = {"model_fingerprint": FINGERPRINT}
    row, curve = audit_record(verdict, model_id="sliced", partition_date=DAY, run_kind="nightly", lineage=lineage)
    slices = slice_record(verdict)
    audit = verdict.result.slices
    assert len(slices) == audit.declared == 12 and {s["budget"] for s in slices} == {audit.budget}
    with open_warehouse(target) as wh:
        assert wh.write_audit(row, curve, slices) == (row.key, True)
        stored = wh.fetch_slices(row.key)
        assert _stripped(stored) == slices and all(as_key(piece) == row.key for piece in stored)
        bounds = [piece["epsilon_lower_bound"] for piece in stored]
        assert bounds == sorted(bounds, reverse=True) and bounds[0] > 1.0
        assert [(p["status"], p["trust"]) for p in stored[:2]] == [("VIOLATION", "trusted"), ("VIOLATION", "untrusted")]
        assert {p["status"] for p in stored[2:]} == {"PASS"}
        assert {(p["declared"], p["confidence"]) for p in stored} == {(12, 1 - audit.budget / 12)}
        # another key (a guardrail's verdict of the same audit) adds its own slices and leaves these alone
        other, other_curve = audit_record(verdict, model_id="sliced", partition_date=DAY, run_kind="guardrail",
                                          lineage=lineage)
        wh.write_audit(other, other_curve, slices[:3])
        found = wh.slices_of([row.key, other.key, row])
        assert _stripped(found[row.key]) == slices and _stripped(found[other.key]) == slices[:3]
        # a re-run of the key changes nothing, not even with no slices
        assert not wh.write_audit(row.replace(run_id="run-2"), curve).new
        assert _stripped(wh.fetch_slices(row.key)) == slices and len(wh.fetch_results()) == 2
        assert sorted(r["run_id"] for r in wh.fetch_runs(row)) == sorted([row.run_id, "run-2"])
    with open_read_only(target) as wh:
        assert _stripped(wh.fetch_slices(row.key)) == slices and len(wh.fetch_slices(other.key)) == 3
        assert wh.fetch_slices(("absent", FINGERPRINT, DAY, "nightly", 1.0, "abc123", row.inputs_fingerprint)) == []
