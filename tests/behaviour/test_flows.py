"""The Prefect flows end to end on small synthetic days: nightly audit, idempotent re-runs, guardrail exit
codes on a planted violation, backfill resume, data-missing alerts, warehouse outage spooling, bad input.

Real parts throughout: Prefect (test harness), CatBoost training, the Beam job on FnApiRunner, DuckDB, a local
HTTP server for the webhook. Sizes are small (20K rows/day, 40 CatBoost iterations, 3 repetitions)."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from labeldp.codec import encode
from tests.support.pg_gate import PostgresGate
from tests.support.pg_schema import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)
from tests.support.planted import register_memorizer
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow

ROWS = 20_000
D0, D1, D2 = "2026-10-01", "2026-10-02", "2026-10-03"  # flow parameters and argv: strings, parsed by the flow


@pytest.fixture(scope="module")
def prefect_api():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(json.dumps({
        "targets": [
            {"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0},
            {"name": "leaky", "source": "registered", "claimed_epsilon": 0.0},
        ],
        "catboost_iterations": 40,
        "audit": {"repetitions": 3, "grid_points": 30},
        "controls": {"enabled": False},  # the nightly controls are tested in tests/behaviour/test_controls_flow.py
    }))
    return str(path)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("data")
    for day in (D0, D1, D2):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    for day in (D1, D2):
        register_memorizer(root, day)
    return root


HOOK = WebhookReceiver()


@pytest.fixture(scope="module")
def webhook():
    yield HOOK.start()
    HOOK.stop()


def warehouse_rows(root):
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as store:
        return store.fetch_results()


def test_nightly_audit_end_to_end_and_idempotent(prefect_api, data_root, plan_file, webhook):
    from auditing.verdict.types import STATUSES
    from flows.nightly import nightly_audit

    rows = nightly_audit(date=D1, data_root=str(data_root), plan_file=plan_file, webhook_url=webhook)
    by_model = {r.row.model_id: r for r in rows}
    assert set(by_model) == {"rr-eps1", "leaky"}
    for listed in rows:
        row = listed.row
        assert listed.warehouse == "written" and row.status in STATUSES and row.run_kind == "nightly"
        assert Path(listed.report).is_file()
        assert row.epsilon_lower_bound >= 0 and row.confidence == 0.95
    # The memoriser claiming eps = 0 is the planted violation, and the capacity check vouches for it (trusted);
    # RR at eps 1 must not be flagged.
    assert by_model["leaky"].row.status == "VIOLATION" and by_model["leaky"].row.trust == "trusted"
    assert by_model["leaky"].row.epsilon_check > 0 and by_model["leaky"].row.check_rows > 1000
    assert by_model["rr-eps1"].row.status != "VIOLATION" and by_model["rr-eps1"].row.trust == "trusted"
    assert any(a["kind"] == "VIOLATION" and a["model_id"] == "leaky" for a in HOOK.received)
    # the risk figures travel with each row and the alert carries the headline sentence
    leaky = by_model["leaky"].row
    assert leaky.risk_headline.startswith("The claimed eps=0 allows")
    assert leaky.risk_lb_posterior_ceiling_median > leaky.risk_posterior_ceiling_median > 0
    assert any(leaky.risk_headline in a.get("text", "") for a in HOOK.received if a["kind"] == "VIOLATION")
    # the training rows were audited; breaking kappa travels with the row and the alert; the diagnostic
    assert leaky.audit_rows == "training" and leaky.breaking_kappa > 0 and leaky.kappa == 0.0
    assert leaky.detection_floor_rows >= 1
    # the data diagnostic compares the reference's own day D-1 with day D (never a day with itself: the same
    # rows would give the same fit and a PSI of exactly 0 on every feature)
    diagnostic = encode(by_model["leaky"].verdict.shift_diagnostic)
    assert diagnostic["days"] == {"previous": D0, "current": D1} and diagnostic["reference"] == f"reference@{D0}"
    fit = diagnostic["reference_fit"]
    assert fit["previous"]["log_loss"] != fit["current"]["log_loss"]
    assert min(diagnostic["feature_shift"]["per_feature"].values()) > 0
    assert any("click odds by more than a factor" in a.get("text", "") and a.get("breaking_kappa") ==
               leaky.breaking_kappa for a in HOOK.received if a["kind"] == "VIOLATION")
    # the reference was recalibrated on the day's held-out rows (the plan's default) and the rows say so
    check = by_model["leaky"].reference_check
    assert check.calibration == "boost" and check.checked is True
    assert check.calibration_figures.rows_fit > 0
    assert {r.model_id: r.reference_calibration for r in warehouse_rows(data_root)} == {
        "rr-eps1": "boost", "leaky": "boost"}
    stored = warehouse_rows(data_root)
    assert len(stored) == 2
    # the game-aware floor (95% power) beside the perfect-attacker floor, in the JSON rows,
    # the warehouse and the alert; None only with a stated reason
    for listed in rows:  # the note and the power are figures of the run's record (--json), not columns
        record = encode(listed)
        assert (listed.row.exposed_rows_floor is None) == (record["exposed_rows_floor_note"] is not None)
    assert leaky.exposed_rows_floor >= leaky.detection_floor_rows
    assert encode(by_model["leaky"])["exposed_rows_floor_power"] == 0.95
    assert {r.model_id: r.exposed_rows_floor for r in stored} == {r.row.model_id: r.row.exposed_rows_floor
                                                                  for r in rows}
    assert any(a.get("exposed_rows_floor") == leaky.exposed_rows_floor for a in HOOK.received
               if a["kind"] == "VIOLATION")

    again = nightly_audit(date=D1, data_root=str(data_root), plan_file=plan_file, webhook_url=webhook)
    assert all(r.reused_scoring for r in again)
    assert [r.row.epsilon_lower_bound for r in again] == [r.row.epsilon_lower_bound for r in rows]
    assert len(warehouse_rows(data_root)) == 2  # exactly one row per key after a re-run
    assert sum(a["kind"] == "VIOLATION" for a in HOOK.received) == 1  # deduplicated per model and date


def test_guardrail_cli_exit_codes(prefect_api, data_root, plan_file, capsys):
    from flows.cli import main

    code = main(["guardrail", "--model", "leaky", "--date", D1, "--claimed-epsilon", "0",
                 "--data-root", str(data_root), "--plan", plan_file])
    out, err = capsys.readouterr()
    assert code == 1 and "VIOLATION" in err and "leaky" in out and "what this means for leaky" in out
    code = main(["guardrail", "--model", "leaky", "--date", D1, "--claimed-epsilon", "1000",
                 "--data-root", str(data_root), "--plan", plan_file, "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)[0]["status"] == "INCONCLUSIVE"
    assert json.loads(out)[0]["risk_mia_advantage_bound"] == 1.0  # eps 1000: the claim allows everything
    code = main(["guardrail", "--model", "../etc", "--date", D1, "--claimed-epsilon", "1",
                 "--data-root", str(data_root)])
    _, err = capsys.readouterr()
    assert code == 2 and "--model" in err


def test_missing_partition_alerts_data_missing_not_violation(prefect_api, data_root, plan_file, webhook):
    from flows.nightly import nightly_audit
    from flows.steps import DataMissingError

    before = len(HOOK.received)
    state = nightly_audit(date="2026-12-31", data_root=str(data_root), plan_file=plan_file, webhook_url=webhook,
                          return_state=True)
    assert state.is_failed()
    with pytest.raises(DataMissingError, match="missing"):
        state.result()
    kinds = {a["kind"] for a in HOOK.received[before:]}
    assert kinds == {"DATA_MISSING"}


def test_backfill_resumes_and_skips_done_days(prefect_api, data_root, plan_file):
    from flows.nightly import backfill

    summary = backfill(start=D1, end=D2, data_root=str(data_root), plan_file=plan_file)
    outcomes = {s.date.isoformat(): s.summary for s in summary}
    assert outcomes[D1].startswith("skipped") and outcomes[D2] == "audited"
    again = backfill(start=D1, end=D2, data_root=str(data_root), plan_file=plan_file)
    assert all(s.summary.startswith("skipped") for s in again)
    keys = [(r.model_id, r.partition_date.isoformat(), r.run_kind, r.claimed_epsilon, r.audit_config_hash)
            for r in warehouse_rows(data_root)]
    assert len(keys) == len(set(keys))
    # the nights: D1 by the nightly run, D2 by the backfill (the guardrail's verdicts of D1 do not count)
    assert {k[:3] for k in keys if k[2] != "guardrail"} == {
        ("rr-eps1", D1, "nightly"), ("leaky", D1, "nightly"), ("rr-eps1", D2, "backfill"), ("leaky", D2, "backfill")}


def test_unreachable_warehouse_spools_then_drains(prefect_api, data_root, plan_file, postgres_url,  # noqa: F811
                                                  capsys):
    from flows.nightly import AuditFailed, nightly_audit

    with PostgresGate(postgres_url) as gate:  # a PostgreSQL warehouse whose address does not answer yet
        # Results that are not in the warehouse end the run Failed (exit 3), the spool path in the message.
        state = nightly_audit(date=D2, data_root=str(data_root), plan_file=plan_file, warehouse=gate.url,
                              models=["rr-eps1"], return_state=True)
        assert state.is_failed()
        with pytest.raises(AuditFailed) as failed:
            state.result()
        rows = failed.value.rows
        assert rows[0].warehouse == "spooled" and failed.value.outcome.exit_code() == 3
        assert Path(rows[0].spool_path).name in str(failed.value)
        spooled = sorted((data_root / "spool").glob("*.json"))
        assert [p.name for p in spooled] == [Path(rows[0].spool_path).name]
        # A night on another warehouse (the data root's DuckDB file) leaves them for theirs, and says so.
        capsys.readouterr()
        nightly_audit(date=D2, data_root=str(data_root), plan_file=plan_file, models=["rr-eps1"])
        assert sorted((data_root / "spool").glob("*.json")) == spooled
        assert f"warning: 1 spooled result(s) in {data_root / 'spool'} are meant for the postgres warehouse " \
               f"postgresql://127.0.0.1:{gate.port}/test" in capsys.readouterr().err
        gate.open()
        nightly_audit(date=D2, data_root=str(data_root), plan_file=plan_file, warehouse=gate.url, models=["rr-eps1"])
    assert not list((data_root / "spool").glob("*.json"))


def test_missing_reference_fails_clearly_when_asked(prefect_api, tmp_path, plan_file):
    from flows.nightly import nightly_audit
    from pipelines.data.synth import write_synthetic_day

    write_synthetic_day(tmp_path, dt.date.fromisoformat(D1), rows=ROWS)
    plan = json.loads(open(plan_file).read())
    plan["on_missing_reference"] = "fail"
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps(plan))
    state = nightly_audit(date=D1, data_root=str(tmp_path), plan_file=str(strict), return_state=True)
    assert state.is_failed()
    with pytest.raises(Exception, match="no reference model"):
        state.result()


def test_plan_validation(tmp_path):
    from flows.plan import load_plan
    from labeldp.errors import LabelDPInputError

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"targets": [{"name": "x/../y", "mechanism": "rr", "epsilon": 1}]}))
    with pytest.raises(LabelDPInputError, match=r"bad\.json"):
        load_plan(bad)
    bad.write_text(json.dumps({"targets": [{"name": "a", "mechanism": "magic", "epsilon": 1}]}))
    with pytest.raises(LabelDPInputError, match="mechanism must be one of"):
        load_plan(bad)
    bad.write_text(json.dumps({"targets": [], "surprise": 1}))
    with pytest.raises(LabelDPInputError, match="unknown field"):
        load_plan(bad)
    assert math.isinf(load_plan(None).target("planted-violation").epsilon)


def test_infra_default_plan_matches_builtin():
    from flows.plan import default_plan, load_plan

    assert load_plan("infra/plans/default.json") == default_plan()


def test_a_bound_setting_change_rejudges_the_stored_night_without_scoring(prefect_api, data_root, plan_file,
                                                                           tmp_path, capsys):
    """After the night of D1 (test_nightly_audit_end_to_end_and_idempotent): a plan that changes only kappa
    reuses every stored game (no Beam job), and `rejudge` gives the same verdicts from the stored night without
    Prefect or Beam; a plan that changes the game scores again."""
    import subprocess
    import sys

    from flows.cli import main
    from flows.nightly import nightly_audit

    plan = json.loads(Path(plan_file).read_text())
    kappa_plan = tmp_path / "kappa.json"
    kappa_plan.write_text(json.dumps({**plan, "audit": {**plan["audit"], "kappa": 0.2}}))
    night = {r.model_id: r for r in warehouse_rows(data_root) if r.run_kind == "nightly"
             and r.partition_date == dt.date.fromisoformat(D1) and r.kappa == 0.0}
    rows = {r.row.model_id: r for r in nightly_audit(date=D1, data_root=str(data_root), plan_file=str(kappa_plan))}
    assert all(r.reused_scoring for r in rows.values()) and set(rows) == set(night)
    leaky = rows["leaky"].row
    assert leaky.kappa == 0.2 and leaky.audit_config_hash != night["leaky"].audit_config_hash
    # the binomial bound at kappa is the bound at 0 minus kappa on the same counts (delta 0)
    assert leaky.epsilon_lower_bound == pytest.approx(night["leaky"].epsilon_lower_bound - 0.2, abs=1e-9)

    capsys.readouterr()
    code = main(["rejudge", "--date", D1, "--kappa", "0.2", "--data-root", str(data_root), "--json"])
    rejudged = {r["model_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert code == 0 and set(rejudged) == set(rows)
    for name, row in rejudged.items():
        assert row["run_kind"] == "rejudge"
        for field in ("epsilon_lower_bound", "status", "trust", "audit_config_hash", "epsilon_check", "m"):
            assert row[field] == encode(rows[name])[field], (name, field)
    # the rejudged verdicts sit beside the night's own, which stay as they were
    stored = warehouse_rows(data_root)
    assert {(r.model_id, r.kappa) for r in stored if r.run_kind == "rejudge"} == {
        (name, 0.2) for name in rows}
    assert {r.model_id: r.epsilon_lower_bound for r in stored if r.run_kind == "nightly"
            and r.kappa == 0.0 and r.partition_date == dt.date.fromisoformat(D1)} == {
        name: r.epsilon_lower_bound for name, r in night.items()}

    # without Beam or Prefect: a fresh interpreter, the modules it loaded
    argv = ["labeldp-audit", "rejudge", "--date", D1, "--method", "fdp", "--data-root", str(data_root)]
    probe = (f"import sys, runpy\nsys.argv = {argv!r}\ntry:\n    runpy.run_module('flows.cli', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in ('apache_beam', 'prefect', 'catboost') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    assert "rejudge" in done.stdout and " at fdp, " in done.stderr  # the table's run column; the method on stderr

    game_plan = tmp_path / "game.json"
    game_plan.write_text(json.dumps({**plan, "audit": {**plan["audit"], "repetitions": 2}}))
    again = nightly_audit(date=D1, data_root=str(data_root), plan_file=str(game_plan))
    assert not any(r.reused_scoring for r in again)


def test_a_nightly_with_slices_stores_and_reports_each_slice(prefect_api, tmp_path):
    """A plan's slices: the nightly bounds each slice of every target (never a control) and the verdict's slices
    reach the warehouse's audit_slices table, the run's --json record and the report's slice panel."""
    from auditing.sinks.warehouse import open_warehouse
    from flows.nightly import nightly_audit
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path / "data"
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    register_memorizer(root, D1)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({
        "targets": [{"name": "leaky", "source": "registered", "claimed_epsilon": 0.0}], "catboost_iterations": 40,
        "audit": {"repetitions": 2, "grid_points": 30}, "controls": {"enabled": False},
        "slices": ["column:C9:top=2", "shown-label"], "slice_budget": 0.04}))
    (listed,) = nightly_audit(date=D1, data_root=str(root), plan_file=str(plan))
    slices = listed.slices
    assert slices.declared == 4 and slices.confidence == pytest.approx(1 - 0.04 / 4)
    assert {s.slicing for s in slices.slices} == {"column:C9:top=2", "shown-label"}
    assert sum(s.rows for s in slices.slices if s.slicing == "shown-label") == listed.row.m
    assert any(s.status == "VIOLATION" for s in slices.slices)  # the memoriser leaks in every slice
    assert encode(listed)["slices"]["declared"] == 4
    with open_warehouse(None, data_root=root) as store:
        stored = store.fetch_slices(listed.row)
    assert sorted((s["slicing"], s["slice_name"]) for s in stored) == sorted(
        (s.slicing, s.name) for s in slices.slices)
    assert "Valid bounds per slice" in Path(listed.report).read_text()


def test_slices_follow_a_bound_change_and_rejudge_from_their_stored_counts(prefect_api, tmp_path, capsys):
    """A sliced night: a plan that changes only kappa re-uses the stored scoring, slices included (bounded again
    from the counts stored beside the game); `rejudge` at another kappa carries the slices, bounded from the same
    counts at the night's slice budget, and says so; a game stored without slice counts is named as not carried."""
    import shutil

    from auditing.config import BoundConfig
    from auditing.slices import SLICES_DIR, SliceCounts, bound_slices
    from flows.cli import main
    from flows.nightly import nightly_audit
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path / "data"
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    register_memorizer(root, D1)
    spec = {"targets": [{"name": "leaky", "source": "registered", "claimed_epsilon": 0.0}], "catboost_iterations": 40,
            "audit": {"repetitions": 2, "grid_points": 30}, "controls": {"enabled": False},
            "slices": ["column:C9:top=2", "shown-label"], "slice_budget": 0.04}
    plan, kappa_plan = tmp_path / "plan.json", tmp_path / "kappa.json"
    plan.write_text(json.dumps(spec))
    kappa_plan.write_text(json.dumps({**spec, "audit": {**spec["audit"], "kappa": 0.2}}))
    (night,) = nightly_audit(date=D1, data_root=str(root), plan_file=str(plan))
    (moved,) = nightly_audit(date=D1, data_root=str(root), plan_file=str(kappa_plan))
    assert not night.reused_scoring and moved.reused_scoring and moved.row.kappa == 0.2
    game_dir = next((root / "sweeps" / "leaky").glob("date=*/*"))
    counts = SliceCounts.load(game_dir)
    assert counts is not None and len(counts.slices) == 4
    # the binomial bound at kappa is the bound at 0 minus kappa, slice by slice (delta 0, repetition 0's counts)
    after_of = {s.name: s for s in moved.slices.slices}
    for before in night.slices.slices:
        after = after_of[before.name]
        assert after.epsilon_lower_bound == pytest.approx(max(before.epsilon_lower_bound - 0.2, 0.0), abs=1e-9)

    capsys.readouterr()
    code = main(["rejudge", "--date", D1, "--kappa", "0.3", "--data-root", str(root), "--json"])
    out, err = capsys.readouterr()
    (row,) = json.loads(out)
    expected = bound_slices(counts, BoundConfig(kappa=0.3), 0.04)
    assert code in (0, 1) and row["run_kind"] == "rejudge" and row["kappa"] == 0.3
    assert row["slices"]["budget"] == 0.04 and row["slices"]["declared"] == 4
    assert {s["name"]: s["epsilon_lower_bound"] for s in row["slices"]["slices"]} == {
        s.name: s.epsilon_lower_bound for s in expected.slices}
    assert "slices carried for leaky" in err and "NOT carried" not in err

    shutil.rmtree(game_dir / SLICES_DIR)  # a game stored before slice counts were kept
    main(["rejudge", "--date", D1, "--kappa", "0.3", "--data-root", str(root), "--json"])
    out, err = capsys.readouterr()
    assert "slices NOT carried for leaky" in err and json.loads(out)[0].get("slices") is None
