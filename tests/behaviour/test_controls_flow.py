"""Nightly controls end to end: real Prefect (test harness), CatBoost, the Beam job on
FnApiRunner, DuckDB and PostgreSQL, a local webhook.

- A normal night runs both controls through the same Beam job and warehouse as the target: the positive
  control's valid bound is above its floor and at most eps_c, the negative control's is 0, every row is
  trusted, the reports draw the score panel.
- A night whose positive control cannot detect its eps_c (eps_c = 0.01: its pre-registered floor is 0, so
  the audit has no power to show the known leakage) voids what that control guards and nothing else: the
  PASSes' detectability figures (detectability "void"), CONTROL_FAILED alerted; the verdicts stand, in DuckDB
  and in PostgreSQL.
- A plan with a control epsilon <= 0 is a one-line error, exit 2, nothing written.
- On a day whose click odds moved, with the raw or the recalibrated reference, no trusted row has a valid bound
  above its true eps (the capacity check on each target replaced the night's label-blind control), and with the
  raw reference the check sees the misfit.
- A night with no held-out rows (the audit plays on every row) checks nothing: every verdict is "reference
  unchecked" and the run fails (exit 4) unless the plan accepts it, which is recorded.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from auditing.config import config_hash as audit_config_hash
from auditing.result import AuditResult
from labeldp.codec import decode, encode
from tests.support.pg_schema import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow

ROWS = 20_000
D0, D1 = "2026-10-01", "2026-10-02"


@pytest.fixture(scope="module")
def prefect_api():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield


def _plan(directory: Path, name: str, **controls) -> str:
    path = directory / f"{name}.json"
    path.write_text(json.dumps({
        "targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
        "catboost_iterations": 40,
        "audit": {"repetitions": 3, "grid_points": 30},
        "controls": {"positive_epsilon": 2.0, **controls},
    }))
    return str(path)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("data")
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    return root


HOOK = WebhookReceiver()


@pytest.fixture(scope="module")
def webhook():
    yield HOOK.start()
    HOOK.stop()


def _stored(root, warehouse=None) -> dict:
    """model -> its latest verdict (a control judged against another claim on another night of these tests is a
    row of its own)."""
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(warehouse, data_root=root) as store:
        return {r.model_id: r for r in store.fetch_verdicts(latest=True)}


def test_night_with_controls(prefect_api, data_root, tmp_path_factory, webhook):
    from auditing.sinks.report.text import format_rows
    from auditing.verdict.controls import check_control
    from flows.nightly import nightly_audit

    plan = _plan(tmp_path_factory.mktemp("plans"), "good")
    rows = nightly_audit(date=D1, data_root=str(data_root), plan_file=plan, webhook_url=webhook)
    by_model = {r.row.model_id: r for r in rows}
    assert set(by_model) == {"control-positive", "control-negative", "rr-eps1"}  # the label-blind control retired
    positive, negative = by_model["control-positive"].row, by_model["control-negative"].row
    # every row carries the night's reference check: recalibrated on held-out rows, checked
    for listed in rows:
        check = listed.reference_check
        assert check.calibration == "boost" and check.checked is True and check.label_blind is None
        assert "label_blind" not in encode(listed)["reference_check"]  # the JSON written since it retired
        assert check.calibration_figures.rows_fit + check.calibration_figures.rows_validation > 0
    target = by_model["rr-eps1"].row
    assert target.trust == "trusted" and target.check_rows > 500 and target.epsilon_check is not None
    assert positive.kind == negative.kind == "control" and target.kind == "target"
    assert positive.control_passed == negative.control_passed == 1
    assert positive.control_floor < positive.epsilon_lower_bound <= 2.0
    assert negative.epsilon_lower_bound == 0.0 and negative.claimed_epsilon == 0.0
    assert all(r.row.untrusted_reason is None for r in rows) and all(r.row.trust == "trusted" for r in rows)
    assert not any(a["kind"] == "CONTROL_FAILED" for a in HOOK.received)

    stored = _stored(data_root)
    assert stored["control-positive"].kind == "control" and stored["rr-eps1"].kind == "target"
    assert stored["control-positive"].control_passed == 1
    assert stored["control-positive"].control_floor == pytest.approx(positive.control_floor)
    assert all(r.untrusted_reason is None for r in stored.values())
    assert stored["rr-eps1"].trust == "trusted" and stored["rr-eps1"].check_rows == target.check_rows
    # the stored result is judgeable again: the same check from the warehouse's result_json
    again = check_control("positive", decode(AuditResult, json.loads(stored["control-positive"].result_json)), 2.0)
    assert again.passed and again.floor == pytest.approx(positive.control_floor)
    # the oracle went through the Beam job and the same row selection (the train split) as the target
    record = json.loads(next((data_root / "sweeps" / "control-positive").rglob("result.json")).read_text())
    assert record["diagnostics"]["audited_rows"]["audit_rows"] == "training"
    assert record["lineage"]["model"]["uri"].endswith("control-positive/date=" + D1)
    for listed in rows:
        page = Path(listed.report).read_text()
        assert "Score histogram not provided" not in page and "hist-correct" in page and "UNTRUSTED" not in page
    assert "Nightly control" in Path(by_model["control-positive"].report).read_text()
    text = format_rows(rows)
    # a control's status is the stored one, in the table as in the warehouse, the CSV and --json; it came out as
    # constructed: trusted
    line = next(line for line in text.splitlines() if line.split()[1:2] == ["control-positive"])
    assert line.split()[3:6] == [positive.status, "nightly", "trusted"] and "UNTRUSTED" not in text
    assert line.split()[0] == "-"  # a control has no decision: it passed or failed
    table = text.splitlines()[:2 + len(rows)]
    assert table[0].startswith("decision ") and max(map(len, table)) <= 100  # the demo night's table fits


@pytest.mark.parametrize("backend", ["duckdb", "postgres"])
def test_a_positive_control_below_its_floor_voids_the_detectability_only(prefect_api, data_root, tmp_path_factory,
                                                                         webhook, backend, request):
    from flows.nightly import nightly_audit

    warehouse = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    plan = _plan(tmp_path_factory.mktemp("plans"), "weak", positive_epsilon=0.01)
    before = len(HOOK.received)
    rows = nightly_audit(date=D1, data_root=str(data_root), plan_file=plan, warehouse=warehouse,
                         webhook_url=webhook)
    stored = _stored(data_root, warehouse)
    assert {"control-positive", "control-negative", "rr-eps1"} <= set(stored)
    target = stored["rr-eps1"]
    assert target.trust == "trusted" and target.untrusted_reason is None  # the verdict stands
    assert target.detectability == "void" and target.status in ("PASS", "WEAK_PASS")
    assert stored["control-positive"].control_passed == 0 and stored["control-positive"].control_floor == 0.0
    assert stored["control-negative"].control_passed == 1
    assert {r.row.model_id: r.row.detectability for r in rows}["rr-eps1"] == "void"
    if backend == "duckdb":  # alerts are deduplicated per model, date and kind: the first night sends it
        sent = [a for a in HOOK.received[before:] if a["kind"] == "CONTROL_FAILED"]
        assert [a["model_id"] for a in sent] == ["control-positive"] and "no power" in sent[0]["text"]


def test_plan_control_epsilon_must_be_positive(tmp_path, capsys):
    from flows.cli import main

    plan = _plan(tmp_path, "bad", positive_epsilon=0)
    code = main(["nightly", "--date", D1, "--data-root", str(tmp_path / "root"), "--plan", plan])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "controls.positive_epsilon must be a finite number > 0" in err[0]
    assert not (tmp_path / "root").exists()


DRIFT_ROWS = 60_000
TRUE_EPS = {"rr-eps1": 1.0, "control-positive": 2.0, "control-negative": 0.0}


@pytest.fixture(scope="module")
def drifted_root(tmp_path_factory):
    """Two days of one world; the second day's click logit moved by +1.0 on every row (a campaign)."""
    from pipelines.data.synth import DayShift, write_synthetic_day

    root = tmp_path_factory.mktemp("drift")
    write_synthetic_day(root, dt.date.fromisoformat(D0), rows=DRIFT_ROWS)
    write_synthetic_day(root, dt.date.fromisoformat(D1), rows=DRIFT_ROWS, shift=DayShift(logit=1.0))
    return root


def _drift_plan(directory: Path, calibration: str) -> str:
    path = directory / f"drift-{calibration}.json"
    path.write_text(json.dumps({
        "targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0, "claimed_epsilon": 0.3}],
        "catboost_iterations": 40,
        "audit": {"repetitions": 3, "grid_points": 30, "reference_calibration": calibration},
    }))
    return str(path)


@pytest.mark.parametrize("calibration", ["none", "boost"])
def test_a_drifted_day_leaves_no_trusted_row_above_its_true_eps(prefect_api, drifted_root, tmp_path_factory,
                                                                calibration):
    """The raw D-1 reference misjudges a day whose click odds moved by +1.0 in logit; the RR eps-1 target is
    claimed at 0.3 (a real violation, true eps 1). Whatever the reference, a trusted row never has a valid bound
    above its true eps; with the raw reference the target's own check rows show the misfit."""
    from flows.nightly import AuditFailed, nightly_audit
    from flows.plan import load_plan

    plan = _drift_plan(tmp_path_factory.mktemp("plans"), calibration)
    state = nightly_audit(date=D1, data_root=str(drifted_root), plan_file=plan, return_state=True)
    loaded = load_plan(plan)
    config_hash = audit_config_hash(loaded.game, loaded.bound)
    rows = [r for r in _stored(drifted_root).values() if r.audit_config_hash == config_hash]
    assert {r.model_id for r in rows} == set(TRUE_EPS)
    for row in rows:
        assert row.reference_calibration == calibration
        if row.trust == "trusted":
            assert row.epsilon_lower_bound <= TRUE_EPS[row.model_id], row
    target = next(r for r in rows if r.model_id == "rr-eps1")
    assert target.check_rows > 1000
    if calibration == "none":
        assert target.check_misfit_kappa > 0  # the misfit is visible to the model on rows it never saw
    else:
        assert target.calibration_log_loss_after < target.calibration_log_loss_before
    untrusted = [r for r in rows if r.trust in ("untrusted", "reference unchecked")]
    if untrusted:
        with pytest.raises(AuditFailed):
            state.result()
    else:
        assert state.is_completed()


def test_a_night_without_held_out_rows_checks_nothing(prefect_api, data_root, tmp_path_factory):
    """audit_rows 'all' plays the game on every row, the test split included: no row is held out, so nothing
    checks the reference. Every verdict is "reference unchecked": a VIOLATION is an unconfirmed leak (exit 4), a PASS
    no evidence of one (exit 0); the preflight warns that no VIOLATION could be confirmed. When the plan accepts an
    unchecked reference the run ends by its verdicts, the acceptance recorded on every row."""
    from flows.nightly import AuditFailed, nightly_audit
    from flows.plan import load_plan
    from flows.preflight import holdout_warnings

    path = tmp_path_factory.mktemp("plans") / "all-rows.json"
    plan = {"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}], "catboost_iterations": 40,
            "audit": {"repetitions": 3, "grid_points": 30, "audit_rows": "all", "reference_calibration": "none"}}
    path.write_text(json.dumps(plan))
    assert any("audit_rows 'all'" in w for w in holdout_warnings(load_plan(str(path)), 20_000))
    try:
        refused = nightly_audit(date=D1, data_root=str(data_root), plan_file=str(path))
    except AuditFailed as failed:
        refused = failed.rows
    unchecked = next(r for r in refused if r.row.model_id == "rr-eps1")
    assert unchecked.row.trust == "reference unchecked"
    assert unchecked.row.decision == ("unconfirmed" if unchecked.row.status == "VIOLATION" else "no_evidence")
    path.write_text(json.dumps({**plan, "accept_unchecked_reference": True}))
    rows = nightly_audit(date=D1, data_root=str(data_root), plan_file=str(path))
    assert {r.row.model_id for r in rows} == {"control-positive", "control-negative", "rr-eps1"}
    for listed in rows:
        check = listed.reference_check
        assert check.checked is False and check.note.startswith("reference not checked: audit_rows is 'all'")
    target = next(r for r in rows if r.row.model_id == "rr-eps1")
    # accepted_unchecked: True in the run's record (--json), 1 in the row
    assert target.row.trust == "reference unchecked, accepted" and encode(target)["accepted_unchecked"] is True
    assert target.row.accepted_unchecked == 1
    assert target.row.untrusted_reason and "accepted" in target.row.untrusted_reason
    from auditing.sinks.warehouse import open_warehouse
    from flows.plan import load_plan

    loaded = load_plan(str(path))
    config_hash = audit_config_hash(loaded.game, loaded.bound)
    with open_warehouse(None, data_root=data_root) as store:
        stored = [r for r in store.fetch_results() if r.audit_config_hash == config_hash]
    assert all(r.reference_checked == 0 and "reference not checked" in r.reference_check_note for r in stored)
    # the acceptance is part of the verdict's inputs: the accepting run's rows sit beside the refused run's
    assert sorted((r.run_id == target.row.run_id, r.accepted_unchecked) for r in stored if r.model_id == "rr-eps1") \
        == [(False, 0), (True, 1)]
