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
    DATA_MISSING,
    DUPLICATE,
    FAILED,
    SENT,
    VIOLATION,
    alert_event_payload,
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
