"""Webhook alerts against a real HTTP server on 127.0.0.1 (an ephemeral port, in a thread)."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from auditing.alerts import (
    AUDIT_FAILED,
    CONTROL_FAILED,
    DATA_MISSING,
    DUPLICATE,
    FAILED,
    SENT,
    VIOLATION,
    WEAK_PASS,
    alert_event_payload,
    kappa_fields,
    send_alert,
)
from auditing.errors import LabelDPInputError

PAYLOAD = {"model_id": "rr-eps1", "partition_date": "2024-01-02", "epsilon_lower_bound": 2.5,
           "claimed_epsilon": 1.0, "confidence": 0.95, "status": "VIOLATION"}


class Webhook:
    """A local webhook receiver: answers each POST with the next scripted status (then 200)."""

    def __init__(self, script=(), delays=()):
        self.script, self.delays = list(script), list(delays)
        self.received: list[dict] = []
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with hook.lock:
                    delay = hook.delays.pop(0) if hook.delays else 0.0
                    status = hook.script.pop(0) if hook.script else 200
                    hook.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):  # keep the test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/audit"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def bodies(self) -> list[dict]:
        return [json.loads(r["body"]) for r in self.received]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook_factory():
    hooks = []

    def make(script=(), delays=()):
        hooks.append(Webhook(script, delays))
        return hooks[-1]

    yield make
    for hook in hooks:
        hook.close()


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks/audit"  # closed again: connections are refused


def _strict(body: bytes) -> dict:
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(body, parse_constant=refuse)


def test_violation_is_posted_as_json_and_recorded(webhook_factory, tmp_path):
    hook = webhook_factory()
    outcome = send_alert(hook.url, VIOLATION, {**PAYLOAD, "claimed_epsilon": math.inf}, tmp_path, backoff=0.01)
    assert outcome.status == SENT and outcome.attempts == 1 and outcome.http_status == 200
    assert len(hook.received) == 1
    request = hook.received[0]
    assert request["path"] == "/hooks/audit" and request["headers"]["Content-Type"] == "application/json"
    body = _strict(request["body"])
    assert body["kind"] == "VIOLATION" and body["model_id"] == "rr-eps1" and body["partition_date"] == "2024-01-02"
    assert body["claimed_epsilon"] == "inf" and body["epsilon_lower_bound"] == 2.5
    assert body["dedup_key"] == "rr-eps1__2024-01-02__VIOLATION"
    assert "valid epsilon lower bound 2.500 at 95% confidence exceeds the claimed epsilon inf" in body["text"]
    ledger = json.loads((tmp_path / "rr-eps1__2024-01-02__VIOLATION.json").read_text())
    assert ledger["http_status"] == 200 and ledger["host"] == "127.0.0.1" and "url" not in ledger
    assert outcome.ledger_file == str(tmp_path / "rr-eps1__2024-01-02__VIOLATION.json")


def test_rerun_does_not_resend_but_another_kind_or_date_does(webhook_factory, tmp_path):
    hook = webhook_factory()
    assert send_alert(hook.url, VIOLATION, PAYLOAD, tmp_path).status == SENT
    again = send_alert(hook.url, VIOLATION, {**PAYLOAD, "epsilon_lower_bound": 3.0}, tmp_path)
    assert again.status == DUPLICATE and again.attempts == 0
    assert send_alert(hook.url, AUDIT_FAILED, {**PAYLOAD, "error": "boom"}, tmp_path).status == SENT
    assert send_alert(hook.url, VIOLATION, {**PAYLOAD, "partition_date": "2024-01-03"}, tmp_path).status == SENT
    assert send_alert(hook.url, VIOLATION, {**PAYLOAD, "model_id": "rr-eps2"}, tmp_path).status == SENT
    kinds = [(b["kind"], b["model_id"], b["partition_date"]) for b in hook.bodies()]
    assert kinds == [("VIOLATION", "rr-eps1", "2024-01-02"), ("AUDIT_FAILED", "rr-eps1", "2024-01-02"),
                     ("VIOLATION", "rr-eps1", "2024-01-03"), ("VIOLATION", "rr-eps2", "2024-01-02")]
    assert hook.bodies()[1]["text"].endswith(": boom")


def test_server_failing_twice_then_succeeding(webhook_factory, tmp_path):
    hook = webhook_factory(script=[503, 502])
    start = time.monotonic()
    outcome = send_alert(hook.url, DATA_MISSING, {**PAYLOAD, "message": "no partition"}, tmp_path, backoff=0.05)
    elapsed = time.monotonic() - start
    assert outcome.status == SENT and outcome.attempts == 3 and outcome.http_status == 200
    assert len(hook.received) == 3
    assert elapsed >= 0.05 + 0.10  # exponential backoff between the tries
    assert len({b["sent_at"] for b in hook.bodies()}) == 1  # the same alert, re-sent


def test_server_down_fails_after_retries_and_records_nothing(webhook_factory, tmp_path):
    url = _dead_url()
    outcome = send_alert(url, VIOLATION, PAYLOAD, tmp_path, retries=2, backoff=0.01, timeout=1)
    assert outcome.status == FAILED and outcome.attempts == 3 and outcome.http_status is None
    assert "refused" in outcome.error.lower()
    assert not (tmp_path / "rr-eps1__2024-01-02__VIOLATION.json").exists()
    hook = webhook_factory()  # the receiver is back: the next run sends, nothing was lost
    assert send_alert(hook.url, VIOLATION, PAYLOAD, tmp_path).status == SENT


def test_client_errors_are_not_retried_but_server_errors_are(webhook_factory, tmp_path):
    bad_request = webhook_factory(script=[400])
    outcome = send_alert(bad_request.url, VIOLATION, PAYLOAD, tmp_path / "a", backoff=0.01)
    assert outcome.status == FAILED and outcome.attempts == 1 and outcome.http_status == 400
    always_down = webhook_factory(script=[500] * 10)
    outcome = send_alert(always_down.url, VIOLATION, PAYLOAD, tmp_path / "b", retries=3, backoff=0.01)
    assert outcome.status == FAILED and outcome.attempts == 4 and outcome.error == "HTTP 500"
    assert len(always_down.received) == 4


def test_slow_server_times_out_and_is_retried(webhook_factory, tmp_path):
    hook = webhook_factory(delays=[1.0])
    outcome = send_alert(hook.url, VIOLATION, PAYLOAD, tmp_path, backoff=0.01, timeout=0.3)
    assert outcome.status == SENT and outcome.attempts == 2


def test_concurrent_senders_post_once(webhook_factory, tmp_path):
    hook = webhook_factory(delays=[0.2])  # the first POST is slow, so the others arrive while it is in flight
    outcomes = []
    threads = [threading.Thread(target=lambda: outcomes.append(send_alert(hook.url, VIOLATION, PAYLOAD, tmp_path)))
               for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(o.status for o in outcomes) == [DUPLICATE] * 4 + [SENT]
    assert len(hook.received) == 1


@pytest.mark.parametrize("args, message", [
    (("file:///etc/passwd", VIOLATION, PAYLOAD), "webhook url"),
    (("http:///nohost", VIOLATION, PAYLOAD), "webhook url"),
    (("http://127.0.0.1:9/x", "INFO", PAYLOAD), "alert kind"),
    (("http://127.0.0.1:9/x", VIOLATION, {"partition_date": "2024-01-02"}), "model_id"),
    (("http://127.0.0.1:9/x", VIOLATION, {**PAYLOAD, "model_id": "../../etc"}), "model_id"),
    (("http://127.0.0.1:9/x", VIOLATION, {**PAYLOAD, "partition_date": "2024-02-30"}), "partition_date"),
])
def test_bad_input_is_refused_before_any_request(tmp_path, args, message):
    with pytest.raises(LabelDPInputError, match=message):
        send_alert(*args, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_event_payload_fits_prefect_events():
    spec = alert_event_payload(VIOLATION, {**PAYLOAD, "claimed_epsilon": math.inf})
    assert spec["event"] == "labeldp.audit.violation"
    assert spec["resource"]["prefect.resource.id"] == "labeldp.model.rr-eps1"
    assert all(isinstance(v, str) for v in spec["resource"].values())
    assert spec["payload"]["claimed_epsilon"] == "inf" and spec["payload"]["kind"] == "VIOLATION"
    json.dumps(spec, allow_nan=False)
    assert alert_event_payload(DATA_MISSING, PAYLOAD)["event"] == "labeldp.audit.data_missing"
    events = pytest.importorskip("prefect.events")
    event = events.Event(**spec)  # validates the shape emit_event(**spec) builds, without emitting
    assert event.resource.id == "labeldp.model.rr-eps1" and event.payload["model_id"] == "rr-eps1"


def test_a_weak_pass_is_its_own_alert_with_its_meaning_and_floor(webhook_factory, tmp_path):
    """A target's WEAK_PASS: its own kind (sent once per model and date, beside a VIOLATION of the same day), whose
    text says what a weak PASS means and the floor behind it."""
    from auditing.verdict import STATUSES

    assert WEAK_PASS == "WEAK_PASS" and WEAK_PASS in STATUSES
    hook = webhook_factory()
    note = ("this audit would have flagged the claim only if at least 4000 labels were fully exposed (flagged then "
            "with 95% probability) (more than 1% of the 20000 audited rows: a weak PASS)")
    payload = {**PAYLOAD, "status": WEAK_PASS, "epsilon_lower_bound": 0.0, "robustness_note": note,
               "run_kind": "guardrail"}
    assert send_alert(hook.url, WEAK_PASS, payload, tmp_path).status == SENT
    assert send_alert(hook.url, WEAK_PASS, payload, tmp_path).status == DUPLICATE
    assert send_alert(hook.url, VIOLATION, PAYLOAD, tmp_path).status == SENT
    body = _strict(hook.received[0]["body"])
    assert body["kind"] == "WEAK_PASS" and body["dedup_key"] == "rr-eps1__2024-01-02__WEAK_PASS"
    assert body["run_kind"] == "guardrail"
    assert body["text"] == (
        "[labeldp-audit] WEAK_PASS: model rr-eps1, partition 2024-01-02: claimed epsilon 1.000: a PASS on weak "
        "evidence: this audit would have flagged the claim only if more than 1% of the audited labels were fully "
        f"exposed (or not even then), so a smaller leak could have gone unseen; {note}")
    assert alert_event_payload(WEAK_PASS, payload)["event"] == "labeldp.audit.weak_pass"


# --------------------------------------------------------------------------------------------- kappa and the reference
def _reference_check(flagged: bool) -> dict:
    return {"calibration": "boost", "checked": True, "note": None,
            "calibration_figures": {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40, "logloss_before": 0.47,
                                    "logloss_after": 0.45, "ece_before": 0.03, "ece_after": 0.006},
            "label_blind": {"epsilon_lower_bound": 0.21 if flagged else 0.0, "misfit_kappa": 0.35 if flagged else 0.0,
                            "flagged": flagged}}


def test_violation_alert_carries_kappa_and_breaking_kappa_not_tau(webhook_factory, tmp_path):
    """The body states kappa and breaking_kappa (never the legacy tau / breaking_tau beside them), and the text
    reads breaking kappa as a factor on the click odds, with the night's reference check."""
    hook = webhook_factory()
    row = {"kappa": 0.0, "breaking_kappa": 0.35, "reference_calibration": "boost", "fdp_curve": None,
           "gdp_mu_lower_bound": None, "tau": 0.0, "breaking_tau": None, "status": "VIOLATION"}
    fields = kappa_fields(row, _reference_check(flagged=False))
    assert set(fields) == {"kappa", "breaking_kappa", "reference_calibration", "fdp_curve", "gdp_mu_lower_bound",
                           "reference_check"}
    payload = {**PAYLOAD, **fields, "tau": 0.0, "breaking_tau": None,
               "robustness_note": "the violation holds for any distribution shift up to tau = 0.3"}
    assert send_alert(hook.url, VIOLATION, payload, tmp_path).status == SENT
    body = _strict(hook.received[0]["body"])
    assert body["kappa"] == 0.0 and body["breaking_kappa"] == 0.35 and "tau" not in body and "breaking_tau" not in body
    assert body["reference_check"]["label_blind"] == {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.0, "flagged": False}
    assert body["text"] == (
        "[labeldp-audit] VIOLATION: model rr-eps1, partition 2024-01-02: valid epsilon lower bound 2.500 at 95% "
        "confidence and kappa 0 exceeds the claimed epsilon 1.000; it holds unless the reference misjudges some "
        "row's click odds by more than a factor 1.42 (breaking kappa 0.35); the reference fits day 2024-01-02 "
        "(label-blind control: valid eps_lb 0.000 at kappa 0, where it must be 0; measured misfit kappa 0)")
    assert "tau" not in body["text"]


def test_flagged_reference_reads_the_reference_does_not_fit_day_d(webhook_factory, tmp_path):
    """A flagged label-blind control: the CONTROL_FAILED alert and the untrusted part of a VIOLATION alert say
    "the reference does not fit day D" with the control's bound and the measured misfit; a skipped check says
    "reference not checked" with its reason; without a reference check the old sentence stays."""
    hook = webhook_factory()
    check = _reference_check(flagged=True)
    message = "label-blind control (trained only on held-out rows, true eps 0 on the audited rows): valid eps_lb 0.21"
    control = {"model_id": "control-label-blind", "partition_date": "2024-01-02", "message": message,
               "reference_check": check, "kappa": 0.0}
    assert send_alert(hook.url, CONTROL_FAILED, control, tmp_path).status == SENT
    assert hook.bodies()[0]["text"] == (
        "[labeldp-audit] CONTROL_FAILED: model control-label-blind, partition 2024-01-02: the reference does not fit "
        "day 2024-01-02 (label-blind control: valid eps_lb 0.210 at kappa 0, where it must be 0; measured misfit "
        f"kappa 0.35: click odds off by up to a factor 1.42): every verdict of this night is untrusted: {message}")
    violation = {**PAYLOAD, "kappa": 0.0, "breaking_kappa": 1.2, "reference_check": check,
                 "untrusted_reason": "the reference does not fit day 2024-01-02"}
    assert send_alert(hook.url, VIOLATION, violation, tmp_path).status == SENT
    text = hook.bodies()[1]["text"]
    assert ("; UNTRUSTED: the reference does not fit day 2024-01-02 (label-blind control: valid eps_lb 0.210 at "
            "kappa 0, where it must be 0; measured misfit kappa 0.35: click odds off by up to a factor 1.42)") in text
    assert text.count("does not fit day") == 1 and "factor 3.32 (breaking kappa 1.2)" in text
    both = {**violation, "model_id": "rr-eps2",
            "untrusted_reason": "control failed on 2024-01-02 (the audit itself is broken): control-negative: eps_lb 0.4"}
    assert send_alert(hook.url, VIOLATION, both, tmp_path).status == SENT
    text = hook.bodies()[2]["text"]
    assert "UNTRUSTED: control failed on 2024-01-02" in text and "; the reference does not fit day 2024-01-02 (" in text

    skipped = {**PAYLOAD, "model_id": "rr-eps3", "kappa": 0.0, "breaking_kappa": 0.5,
               "reference_check": {"calibration": "boost", "checked": False,
                                   "note": "reference not checked: no held-out rows"}}
    assert send_alert(hook.url, VIOLATION, skipped, tmp_path).status == SENT
    assert hook.bodies()[3]["text"].endswith("; reference not checked: no held-out rows")
    plain = {**control, "model_id": "control-negative", "reference_check": None, "message": "eps_lb 0.4 > 0"}
    assert send_alert(hook.url, CONTROL_FAILED, plain, tmp_path).status == SENT
    assert hook.bodies()[4]["text"].endswith("the audit itself is broken (every verdict of this night is untrusted): "
                                             "eps_lb 0.4 > 0")
    by_kind = {**plain, "model_id": "control-label-blind-2", "control": "label-blind", "message": message}
    assert send_alert(hook.url, CONTROL_FAILED, by_kind, tmp_path).status == SENT
    assert hook.bodies()[5]["text"] == (
        "[labeldp-audit] CONTROL_FAILED: model control-label-blind-2, partition 2024-01-02: the reference does not "
        f"fit day 2024-01-02: every verdict of this night is untrusted: {message}")
    spec = alert_event_payload(CONTROL_FAILED, control)
    assert spec["payload"]["text"] == hook.bodies()[0]["text"] and spec["payload"]["reference_check"]["label_blind"]


def test_a_bad_reference_check_is_refused_before_any_request(webhook_factory, tmp_path):
    hook = webhook_factory()
    bad = {**PAYLOAD, "reference_check": {"calibration": "boost", "checked": True,
                                          "label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.1,
                                                          "flagged": True}}}
    with pytest.raises(LabelDPInputError, match=r"reference_check\.label_blind: flagged needs epsilon_lower_bound > 0"):
        send_alert(hook.url, VIOLATION, bad, tmp_path)
    assert hook.received == [] and list(tmp_path.iterdir()) == []
