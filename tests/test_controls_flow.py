"""Nightly controls end to end: real Prefect (test harness), CatBoost, the Beam job on
FnApiRunner, DuckDB and PostgreSQL, a local webhook.

- A normal night runs both controls through the same Beam job and warehouse as the target: the positive
  control's valid bound is above its floor and at most eps_c, the negative control's is 0, every row is
  trusted, the reports draw the score panel.
- A night whose positive control cannot detect its eps_c (eps_c = 0.01: its pre-registered floor is 0, so
  the audit has no power to show the known leakage) fails: the flow ends AuditFailed, CONTROL_FAILED is
  alerted, and every row of that night carries untrusted_reason, in DuckDB and in PostgreSQL.
- A plan with a control epsilon <= 0 is a one-line error, exit 2, nothing written.
- The label-blind control (trained only on held-out rows) can fail for the failure it guards against: on a
  day whose click odds moved, it flags the raw D-1 reference ("the reference does not fit day D", every row
  untrusted); with the reference recalibrated on the day no trusted row has a valid bound above its true eps.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from test_warehouse import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)
from webhook_receiver import WebhookReceiver

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
    from pipelines.synth import write_synthetic_day

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
    from auditing.warehouse import open_warehouse

    with open_warehouse(warehouse, data_root=root) as store:
        return {r["model_id"]: r for r in store.fetch_verdicts(latest=True)}


def test_night_with_controls(prefect_api, data_root, tmp_path_factory, webhook):
    from auditing.controls import check_control
    from auditing.report.text import format_rows
    from flows.nightly import nightly_audit

    plan = _plan(tmp_path_factory.mktemp("plans"), "good")
    rows = nightly_audit(date=D1, data_root=str(data_root), plan_file=plan, webhook_url=webhook)
    by_model = {r["model_id"]: r for r in rows}
    assert set(by_model) == {"control-positive", "control-negative", "control-label-blind", "rr-eps1"}
    positive, negative = by_model["control-positive"], by_model["control-negative"]
    blind = by_model["control-label-blind"]
    assert blind["kind"] == "control" and blind["control_passed"] == 1 and blind["epsilon_lower_bound"] == 0.0
    # every row carries the night's reference check: recalibrated on held-out rows, checked, not flagged
    for row in rows:
        check = row["reference_check"]
        assert check["calibration"] == "boost" and check["checked"] is True
        assert check["label_blind"] == {"epsilon_lower_bound": 0.0, "misfit_kappa": check["label_blind"]["misfit_kappa"],
                                        "flagged": False}
        assert check["calibration_figures"]["rows_fit"] + check["calibration_figures"]["rows_validation"] > 0
    assert positive["kind"] == negative["kind"] == "control" and by_model["rr-eps1"]["kind"] == "target"
    assert positive["control_passed"] == negative["control_passed"] == 1
    assert positive["control_floor"] < positive["epsilon_lower_bound"] <= 2.0
    assert negative["epsilon_lower_bound"] == 0.0 and negative["claimed_epsilon"] == 0.0
    assert all(r["untrusted_reason"] is None for r in rows)
    assert not any(a["kind"] == "CONTROL_FAILED" for a in HOOK.received)

    stored = _stored(data_root)
    assert stored["control-positive"]["kind"] == "control" and stored["rr-eps1"]["kind"] == "target"
    assert stored["control-positive"]["control_passed"] == 1
    assert stored["control-positive"]["control_floor"] == pytest.approx(positive["control_floor"])
    assert all(r["untrusted_reason"] is None for r in stored.values())
    # the stored result is judgeable again: the same check from the warehouse's result_json
    again = check_control("positive", json.loads(stored["control-positive"]["result_json"]), 2.0)
    assert again.passed and again.floor == pytest.approx(positive["control_floor"])
    # the oracle went through the Beam job and the same row selection (the train split) as the target
    record = json.loads(next((data_root / "sweeps" / "control-positive").rglob("result.json")).read_text())
    assert record["diagnostics"]["audited_rows"]["audit_rows"] == "training"
    assert record["lineage"]["model"]["uri"].endswith("control-positive/date=" + D1)
    for row in rows:
        page = Path(row["report"]).read_text()
        assert "Score histogram not provided" not in page and "hist-correct" in page and "UNTRUSTED" not in page
    assert "Nightly control" in Path(positive["report"]).read_text()
    text = format_rows(rows)
    assert "control ok" in text and "UNTRUSTED" not in text


@pytest.mark.parametrize("backend", ["duckdb", "postgres"])
def test_failing_control_marks_the_night_untrusted(prefect_api, data_root, tmp_path_factory, webhook, backend,
                                                   request):
    from flows.nightly import AuditFailed, nightly_audit

    warehouse = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    plan = _plan(tmp_path_factory.mktemp("plans"), "weak", positive_epsilon=0.01)
    before = len(HOOK.received)
    state = nightly_audit(date=D1, data_root=str(data_root), plan_file=plan, warehouse=warehouse,
                          webhook_url=webhook, return_state=True)
    assert state.is_failed()
    with pytest.raises(AuditFailed, match="the audit itself is broken"):
        state.result()
    stored = _stored(data_root, warehouse)
    assert {"control-positive", "control-negative", "control-label-blind", "rr-eps1"} <= set(stored)
    for model in ("control-positive", "control-negative", "rr-eps1"):
        reason = stored[model]["untrusted_reason"]
        assert reason and "control-positive" in reason and "no power" in reason
    assert stored["control-positive"]["control_passed"] == 0 and stored["control-positive"]["control_floor"] == 0.0
    assert stored["control-negative"]["control_passed"] == 1
    page = Path(next((data_root / "reports" / "rr-eps1" / f"date={D1}").glob("*.html"))).read_text()
    assert "UNTRUSTED: the audit itself is broken tonight." in page
    if backend == "duckdb":  # alerts are deduplicated per model, date and kind: the first night sends it
        sent = [a for a in HOOK.received[before:] if a["kind"] == "CONTROL_FAILED"]
        assert [a["model_id"] for a in sent] == ["control-positive"]
        assert "the audit itself is broken" in sent[0]["text"]


def test_plan_control_epsilon_must_be_positive(tmp_path, capsys):
    from flows.cli import main

    plan = _plan(tmp_path, "bad", positive_epsilon=0)
    code = main(["nightly", "--date", D1, "--data-root", str(tmp_path / "root"), "--plan", plan])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "controls.positive_epsilon must be a finite number > 0" in err[0]
    assert not (tmp_path / "root").exists()


DRIFT_ROWS = 60_000
TRUE_EPS = {"rr-eps1": 1.0, "control-positive": 2.0, "control-negative": 0.0, "control-label-blind": 0.0}


@pytest.fixture(scope="module")
def drifted_root(tmp_path_factory):
    """Two days of one world; the second day's click logit moved by +1.0 on every row (a campaign)."""
    from pipelines.synth import DayShift, write_synthetic_day

    root = tmp_path_factory.mktemp("drift")
    write_synthetic_day(root, dt.date.fromisoformat(D0), rows=DRIFT_ROWS)
    write_synthetic_day(root, dt.date.fromisoformat(D1), rows=DRIFT_ROWS, shift=DayShift(logit=1.0))
    return root


def _drift_plan(directory: Path, calibration: str) -> str:
    path = directory / f"drift-{calibration}.json"
    path.write_text(json.dumps({
        "targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
        "catboost_iterations": 40,
        "audit": {"repetitions": 3, "grid_points": 30, "reference_calibration": calibration},
    }))
    return str(path)


def test_label_blind_control_flags_a_reference_that_does_not_fit_the_day(prefect_api, drifted_root,
                                                                         tmp_path_factory):
    from flows.nightly import AuditFailed, nightly_audit

    plan = _drift_plan(tmp_path_factory.mktemp("plans"), "none")
    state = nightly_audit(date=D1, data_root=str(drifted_root), plan_file=plan, return_state=True)
    assert state.is_failed()
    with pytest.raises(AuditFailed, match="the reference does not fit day " + D1):
        state.result()
    stored = _stored(drifted_root)
    blind = stored["control-label-blind"]
    assert blind["control_passed"] == 0 and blind["epsilon_lower_bound"] > 0
    assert blind["label_blind_flagged"] == 1 and blind["reference_misfit_kappa"] > 0
    for row in stored.values():  # every verdict of the night is untrusted, with the reason
        assert "the reference does not fit day" in row["untrusted_reason"]
        assert row["reference_calibration"] == "none"


def test_recalibrated_reference_leaves_no_trusted_row_above_its_true_eps(prefect_api, drifted_root,
                                                                         tmp_path_factory):
    from flows.nightly import nightly_audit

    plan = _drift_plan(tmp_path_factory.mktemp("plans"), "boost")
    state = nightly_audit(date=D1, data_root=str(drifted_root), plan_file=plan, return_state=True)
    from flows.plan import load_plan

    config_hash = load_plan(plan).audit.config_hash()
    rows = [r for r in _stored(drifted_root).values() if r["audit_config_hash"] == config_hash]
    assert {r["model_id"] for r in rows} == set(TRUE_EPS)
    for row in rows:
        assert row["reference_calibration"] == "boost" and row["calibration_rounds"] is not None
        if not row["untrusted_reason"]:
            assert row["epsilon_lower_bound"] <= TRUE_EPS[row["model_id"]], row
    # the correction moved the reference toward the day: its validation log-loss went down
    blind = next(r for r in rows if r["model_id"] == "control-label-blind")
    assert blind["calibration_log_loss_after"] < blind["calibration_log_loss_before"]
    assert state.is_completed() == all(not r["untrusted_reason"] for r in rows)


def test_night_without_held_out_rows_says_the_reference_was_not_checked(prefect_api, data_root, tmp_path_factory):
    """audit_rows 'all' plays the game on every row, the test split included: no row is held out, so the
    label-blind control cannot run; the night goes on and every row says the reference was not checked."""
    from flows.nightly import nightly_audit

    path = tmp_path_factory.mktemp("plans") / "all-rows.json"
    path.write_text(json.dumps({
        "targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
        "catboost_iterations": 40,
        "audit": {"repetitions": 3, "grid_points": 30, "audit_rows": "all", "reference_calibration": "none"},
    }))
    rows = nightly_audit(date=D1, data_root=str(data_root), plan_file=str(path))
    assert {r["model_id"] for r in rows} == {"control-positive", "control-negative", "rr-eps1"}
    for row in rows:
        check = row["reference_check"]
        assert check["checked"] is False and check["label_blind"] is None
        assert check["note"].startswith("reference not checked: audit_rows is 'all'")
        assert row["untrusted_reason"] is None
    from auditing.warehouse import open_warehouse
    from flows.plan import load_plan

    config_hash = load_plan(str(path)).audit.config_hash()
    with open_warehouse(None, data_root=data_root) as store:
        stored = [r for r in store.fetch_results() if r["audit_config_hash"] == config_hash]
    assert {r["model_id"] for r in stored} == {"control-positive", "control-negative", "rr-eps1"}
    assert all(r["reference_checked"] == 0 and "reference not checked" in r["reference_check_note"] for r in stored)
