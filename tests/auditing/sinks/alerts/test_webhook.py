"""Webhook alerts (auditing/sinks/alerts/webhook.py) against a real HTTP server on 127.0.0.1 (an ephemeral port, in a
thread)."""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from auditing.game.config import GameConfig
from auditing.sinks.alerts import (
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
from auditing.verdict.reference_check import ReferenceCheck
from labeldp.codec import decode
from labeldp.errors import LabelDPInputError

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
    from auditing.verdict.types import STATUSES

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
def _reference_check(checked: bool = True) -> dict:
    if not checked:
        return {"calibration": "boost", "checked": False, "note": "reference not checked: no held-out rows"}
    return {"calibration": "boost", "checked": True, "note": None,
            "calibration_figures": {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40, "logloss_before": 0.47,
                                    "logloss_after": 0.45, "ece_before": 0.03, "ece_after": 0.006}}


def test_violation_alert_carries_kappa_and_breaking_kappa_not_tau(webhook_factory, tmp_path):
    """The body states kappa and breaking_kappa (never the legacy tau / breaking_tau beside them), and the text
    reads breaking kappa as a factor on the click odds; a checked reference adds nothing to the text."""
    hook = webhook_factory()
    row = {"kappa": 0.0, "breaking_kappa": 0.35, "reference_calibration": "boost", "fdp_curve": None,
           "gdp_mu_lower_bound": None, "tau": 0.0, "breaking_tau": None, "status": "VIOLATION"}
    fields = kappa_fields(row, decode(ReferenceCheck, _reference_check(), "reference_check"))
    assert fields["reference_check"] == _reference_check()  # written back as it came
    assert set(fields) == {"kappa", "breaking_kappa", "reference_calibration", "fdp_curve", "gdp_mu_lower_bound",
                           "reference_check"}
    payload = {**PAYLOAD, **fields, "tau": 0.0, "breaking_tau": None,
               "robustness_note": "the violation holds for any distribution shift up to tau = 0.3"}
    assert send_alert(hook.url, VIOLATION, payload, tmp_path).status == SENT
    body = _strict(hook.received[0]["body"])
    assert body["kappa"] == 0.0 and body["breaking_kappa"] == 0.35 and "tau" not in body and "breaking_tau" not in body
    assert body["reference_check"]["calibration_figures"]["rounds"] == 40 and body["page"] is True
    assert body["text"] == (
        "[labeldp-audit] VIOLATION: model rr-eps1, partition 2024-01-02: valid epsilon lower bound 2.500 at 95% "
        "confidence and kappa 0 exceeds the claimed epsilon 1.000; it holds unless the reference misjudges some "
        "row's click odds by more than a factor 1.42 (breaking kappa 0.35)")
    assert "tau" not in body["text"]


def test_control_failed_says_what_the_control_voids_and_nothing_of_the_label_blind_control(webhook_factory, tmp_path):
    """The negative control voids the night, the positive control the VIOLATIONs or the PASSes' detectability;
    a CONTROL_FAILED of another kind (a legacy label-blind control) says what a failed control does in general;
    a skipped reference check reads "reference not checked" with its reason."""
    hook = webhook_factory()
    negative = {"model_id": "control-negative", "partition_date": "2024-01-02", "message": "eps_lb 0.4 > 0",
                "control": "negative", "reference_check": _reference_check()}
    assert send_alert(hook.url, CONTROL_FAILED, negative, tmp_path).status == SENT
    assert hook.bodies()[0]["text"] == (
        "[labeldp-audit] CONTROL_FAILED: model control-negative, partition 2024-01-02: the audit itself is broken: "
        "the negative control (a copy of the reference) was not 0, so every verdict of this night is untrusted: "
        "eps_lb 0.4 > 0")
    positive = {**negative, "model_id": "control-positive", "control": "positive", "message": "eps_lb 2.4 > eps_c 2",
                "reference_check": _reference_check(checked=False)}
    assert send_alert(hook.url, CONTROL_FAILED, positive, tmp_path).status == SENT
    text = hook.bodies()[1]["text"]
    assert ("above eps_c the night's VIOLATIONs are untrusted, below its floor the PASSes' detectability figures are "
            "void") in text and text.endswith("; reference not checked: no held-out rows: eps_lb 2.4 > eps_c 2")
    assert "the audit itself is broken" not in text
    legacy = {**negative, "model_id": "control-label-blind", "control": "label-blind", "message": "eps_lb 0.21 > 0"}
    assert send_alert(hook.url, CONTROL_FAILED, legacy, tmp_path).status == SENT
    assert hook.bodies()[2]["text"].endswith("a nightly control failed: what it guards is void tonight: eps_lb 0.21 > 0")
    assert all(b["page"] is True for b in hook.bodies())
    assert not any("label-blind" in b["text"].replace("control-label-blind", "") or "does not fit" in b["text"]
                   for b in hook.bodies())
    skipped = {**PAYLOAD, "model_id": "rr-eps3", "kappa": 0.0, "breaking_kappa": 0.5,
               "reference_check": _reference_check(checked=False)}
    assert send_alert(hook.url, VIOLATION, skipped, tmp_path).status == SENT
    assert hook.bodies()[3]["text"].endswith("; reference not checked: no held-out rows")


# --------------------------------------------------------------------------------------------- trust per verdict
@pytest.fixture(scope="module")
def verdicts():
    """Real verdicts with a capacity check (tests/support/checked_audits.py): a trusted VIOLATION with row groups, one
    the reference's misfit explains, a WEAK_PASS under a misfitting reference, and a VIOLATION nothing checked."""
    from auditing.audit import run_audit
    from auditing.verdict.judge import judge
    from auditing.verdict.trust import NightTrust
    from tests.support import checked_audits

    leaky = checked_audits.leaky(row_groups=checked_audits.groups())
    misfit = checked_audits.misfit()
    unchecked = run_audit(*_unchecked_arrays(), game=GameConfig(repetitions=2))  # no check rows
    night = NightTrust()
    return {"trusted": judge(leaky, 0.5, night=night), "untrusted": judge(misfit, 0.1, night=night),
            "weak": judge(misfit, 3.0, night=night), "unchecked": judge(unchecked, 0.5, night=night),
            "accepted": judge(unchecked, 0.5, night=NightTrust(accept_unchecked=True)),
            "void": judge(leaky, 0.5, night=NightTrust(void_reason="control-negative on 2024-01-02: eps_lb 0.4 > 0"))}


def _unchecked_arrays():
    import numpy as np

    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 4000)
    return np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, 4000), 0.01, 0.99), np.full(4000, 0.5), labels


def _payload(verdict, model="leaky"):
    from auditing.sinks.alerts.webhook import violation_payload

    return violation_payload(verdict, model_id=model, partition_date="2024-01-02", report="/r/leaky.html",
                             flow_run_id="run-1", run_kind="nightly")


def _row(verdict, model="leaky"):
    """The warehouse row a run publishes for ``verdict`` (what `alert_kind` reads)."""
    from auditing.sinks.warehouse import audit_record

    return audit_record(verdict, model_id=model, partition_date="2024-01-02", run_kind="nightly")[0]


def test_alert_kind_is_chosen_by_status_and_trust(verdicts):
    """One choice for every call site, by the decision: a VIOLATION pages only when its decision is act (trusted,
    or accepted unchecked); an unconfirmed one is VIOLATION_UNTRUSTED; a WEAK_PASS is WEAK_PASS; a control and any
    other status send nothing here. A row written before decisions reads the one its trust meant."""
    from auditing.sinks.alerts import PAGES, VIOLATION_UNTRUSTED, alert_kind
    from auditing.verdict.types import TRUSTED, UNCHECKED, UNTRUSTED

    assert {name: (v.status, v.trust.state) for name, v in verdicts.items()} == {
        "trusted": ("VIOLATION", TRUSTED), "untrusted": ("VIOLATION", UNTRUSTED), "weak": ("WEAK_PASS", TRUSTED),
        "unchecked": ("VIOLATION", UNCHECKED), "accepted": ("VIOLATION", "reference unchecked, accepted"),
        "void": ("VIOLATION", UNTRUSTED)}
    kinds = {name: alert_kind(_row(v)) for name, v in verdicts.items()}
    assert kinds == {"trusted": VIOLATION, "untrusted": VIOLATION_UNTRUSTED, "weak": WEAK_PASS,
                     "unchecked": VIOLATION_UNTRUSTED, "accepted": VIOLATION, "void": VIOLATION_UNTRUSTED}
    assert VIOLATION_UNTRUSTED not in PAGES and WEAK_PASS not in PAGES and VIOLATION in PAGES
    row = _row(verdicts["trusted"])
    assert alert_kind(row.replace(kind="control", status="VIOLATION", trust=TRUSTED)) is None
    assert alert_kind(row.replace(kind="target", status="PASS", trust=UNTRUSTED)) is None
    assert alert_kind(row.replace(kind="target", status="INCONCLUSIVE", trust=TRUSTED)) is None
    from auditing.sinks.warehouse.records import upgrade_row

    def legacy(**columns):  # a row written before decisions and per-verdict trust, as the reader gives it
        return upgrade_row({**row.to_dict(), "kind": "target", "status": "VIOLATION", "trust": None,
                            "untrusted_reason": None, "decision": None, "decision_reason": None, **columns})

    assert legacy().decision == "act" and alert_kind(legacy()) == VIOLATION
    unconfirmed = legacy(untrusted_reason="control failed on 2024-01-02")
    assert unconfirmed.decision == "unconfirmed" and alert_kind(unconfirmed) == VIOLATION_UNTRUSTED


def test_an_untrusted_violation_is_its_own_alert_and_not_a_page(webhook_factory, tmp_path, verdicts):
    """The trusted VIOLATION pages with its epsilon_check; the untrusted one of the same model and day is its own
    alert (VIOLATION_UNTRUSTED, page false), whose text says it is not acted on and why; both bodies carry the
    trust, the capacity check's figures and the row groups' figures."""
    from auditing.sinks.alerts import VIOLATION_UNTRUSTED, alert_kind

    hook = webhook_factory()
    trusted, untrusted = _payload(verdicts["trusted"]), _payload(verdicts["untrusted"])
    trusted_kind, untrusted_kind = alert_kind(_row(verdicts["trusted"])), alert_kind(_row(verdicts["untrusted"]))
    assert send_alert(hook.url, trusted_kind, trusted, tmp_path).status == SENT
    assert send_alert(hook.url, untrusted_kind, untrusted, tmp_path).status == SENT
    assert send_alert(hook.url, untrusted_kind, untrusted, tmp_path).status == DUPLICATE
    first, second = (_strict(r["body"]) for r in hook.received)
    figures = verdicts["trusted"].trust
    assert (first["kind"], first["page"], first["trust"]) == (VIOLATION, True, "trusted")
    assert first["epsilon_check"] == figures.epsilon_check > 0.5 and first["misfit_kappa_upper"] == figures.misfit_kappa_upper
    assert first["check_rows"] == 4000 and first["trust_reason"].startswith("the capacity check vouches for it")
    assert first["group_rule"] == "rows with the same feature vector or rows with the same user_id form a group"
    assert (first["rows_excluded_groups"], first["group_pairs"]) == (311, 152)
    assert (first["group_label_agreement"], first["group_label_agreement_expected"]) == (0.9812, 0.9779)
    assert (f"; trust: trusted: the capacity check vouches for it: epsilon_check {figures.epsilon_check:.4g} > claim "
            "0.5") in first["text"]
    assert (f"capacity check on 4,000 check rows: epsilon_check {figures.epsilon_check:.4g} (a kappa-free lower bound "
            "on eps at 95% confidence, under assumption T of docs/soundness.md section 8); misfit where the guesses "
            f"are: kappa <= {figures.misfit_kappa_upper:.3g} (upper confidence limit)") in first["text"]
    assert ("row groups: rows with the same feature vector or rows with the same user_id form a group; 311 audited "
            "row(s) left out for sharing a group; labels agree in 98.1% of the 152 pairs of rows sharing a group, "
            "against 97.8% for independent labels") in first["text"]

    assert (second["kind"], second["page"], second["trust"]) == (VIOLATION_UNTRUSTED, False, "untrusted")
    assert second["dedup_key"] == "leaky__2024-01-02__VIOLATION_UNTRUSTED" and second["epsilon_check"] == 0.0
    assert second["misfit_kappa_upper"] == verdicts["untrusted"].trust.misfit_kappa_upper > 0.5
    assert second["text"].startswith("[labeldp-audit] VIOLATION_UNTRUSTED: model leaky, partition 2024-01-02: not "
                                     "acted on as a violation (not a page): valid epsilon lower bound ")
    assert "; trust: untrusted: the reference's misfit can explain it: epsilon_check 0 <= claim 0.1" in second["text"]
    assert "row groups" not in second["text"] and second["group_rule"] is None  # no grouping recorded
    spec = alert_event_payload(VIOLATION_UNTRUSTED, untrusted)
    assert spec["event"] == "labeldp.audit.violation_untrusted" and spec["payload"]["page"] is False
    assert spec["resource"]["labeldp.alert_kind"] == VIOLATION_UNTRUSTED


def test_a_weak_pass_alert_says_what_its_floors_are_worth(webhook_factory, tmp_path, verdicts):
    """A WEAK_PASS under a reference that misfits: its text says its floors were measured under that misfit."""
    hook = webhook_factory()
    payload = _payload(verdicts["weak"], model="misfit")
    assert send_alert(hook.url, WEAK_PASS, payload, tmp_path).status == SENT
    body = _strict(hook.received[0]["body"])
    assert body["page"] is False and body["detectability"] == "measured under a reference that misfits"
    assert ("; detectability of the floors: measured under a reference that misfits: the model shows misfit up to "
            "kappa ") in body["text"] and "; trust: trusted" in body["text"]


def test_a_bad_reference_check_is_refused_before_any_request(webhook_factory, tmp_path):
    hook = webhook_factory()
    # a legacy night's label-blind figures are still read, and checked like everything else
    bad = {**PAYLOAD, "reference_check": {"calibration": "boost", "checked": True,
                                          "label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.1,
                                                          "flagged": True}}}
    with pytest.raises(LabelDPInputError, match=r"reference_check\.label_blind: flagged needs epsilon_lower_bound > 0"):
        send_alert(hook.url, VIOLATION, bad, tmp_path)
    assert hook.received == [] and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------- slice VIOLATIONs
@pytest.fixture(scope="module")
def sliced_verdicts():
    """tests/support/sliced_audits.py judged: against claim 1 the top decile is a trusted slice VIOLATION and the shown
    label 0 an untrusted one; against claim 3 every slice PASSes; the same audit without slices; a void night."""
    from auditing.verdict.judge import judge
    from auditing.verdict.trust import NightTrust
    from tests.support import sliced_audits

    result = sliced_audits.sliced()
    return {"sliced": judge(result, 1.0), "passing": judge(result, 3.0),
            "unsliced": judge(dataclasses.replace(result, slices=None), 1.0),
            "void": judge(result, 1.0, night=NightTrust(void_reason="control-negative on 2024-01-02: eps_lb 0.4 > 0"))}


def _slice_payload(verdict):
    from auditing.sinks.alerts import slice_violation_payload

    return slice_violation_payload(verdict, model_id="leaky", partition_date="2024-01-02", report="/r/leaky.html",
                                   flow_run_id="run-1", run_kind="nightly")


def test_a_trusted_slice_violation_pages_with_its_slices_and_is_sent_once(tmp_path, sliced_verdicts):
    """SLICE_VIOLATION: a page, sent besides the verdict's own alert; its body carries the claim, the slices'
    budget, count, confidence and design, and every slice VIOLATION with its trust (the untrusted one listed, not
    acted on); its text names the slices and bounds against the claim. Once per model, date and kind."""
    from auditing.result import SLICE_DESIGN
    from auditing.sinks.alerts import ALERT_KINDS, PAGES, SLICE_VIOLATION, alert_kind, slice_alert_kind
    from tests.support.webhook_receiver import WebhookReceiver

    verdict = sliced_verdicts["sliced"]
    top, shown = verdict.slice_violations
    assert (top.slicing, top.name, top.trust) == ("prior-deciles", "prior (0.821, 1]", "trusted")
    assert (shown.slicing, shown.name, shown.trust) == ("shown-label", "shown label 0", "untrusted")
    assert slice_alert_kind(verdict) == SLICE_VIOLATION and SLICE_VIOLATION in PAGES and SLICE_VIOLATION in ALERT_KINDS
    hook = WebhookReceiver()
    hook.start()
    try:
        payload = _slice_payload(verdict)
        assert send_alert(hook.url, SLICE_VIOLATION, payload, tmp_path).status == SENT
        assert send_alert(hook.url, SLICE_VIOLATION, payload, tmp_path).status == DUPLICATE
        next_day = dataclasses.replace(payload, partition_date="2024-01-03")
        assert send_alert(hook.url, SLICE_VIOLATION, next_day, tmp_path).status == SENT
        global_kind = alert_kind(_row(verdict))  # the verdict's own alert is a kind of its own
        assert global_kind == VIOLATION
        assert send_alert(hook.url, global_kind, _payload(verdict), tmp_path).status == SENT
        received = list(hook.received)
    finally:
        hook.stop()
    assert [(b["kind"], b["partition_date"]) for b in received] == [
        (SLICE_VIOLATION, "2024-01-02"), (SLICE_VIOLATION, "2024-01-03"), (VIOLATION, "2024-01-02")]
    body = received[0]
    assert (body["page"], body["model_id"], body["dedup_key"]) == (True, "leaky", "leaky__2024-01-02__SLICE_VIOLATION")
    audit = verdict.result.slices
    assert (body["claimed_epsilon"], body["kappa"], body["report"], body["run_kind"]) == (1.0, 0.0, "/r/leaky.html",
                                                                                          "nightly")
    assert (body["slice_budget"], body["slices_declared"], body["slice_confidence"]) == (
        audit.budget, 12, audit.confidence)
    assert body["slice_confidence"] == pytest.approx(1 - 0.05 / 12) and body["slice_design"] == SLICE_DESIGN
    assert (body["verdict_status"], body["verdict_trust"]) == ("VIOLATION", "trusted")
    assert [(s["slicing"], s["name"], s["rows"], s["epsilon_lower_bound"], s["trust"], s["acted_on"])
            for s in body["slice_violations"]] == [
        ("prior-deciles", "prior (0.821, 1]", 600, top.epsilon_lower_bound, "trusted", True),
        ("shown-label", "shown label 0", shown.rows, shown.epsilon_lower_bound, "untrusted", False)]
    assert body["slice_violations"][0]["trust_reason"].startswith("the capacity check vouches for it")
    assert body["text"] == (
        f"[labeldp-audit] SLICE_VIOLATION: model leaky, partition 2024-01-02: 1 slice's valid epsilon lower bound "
        f"exceeds the claimed epsilon 1.000 (own budget 0.05 over 12 slices, each at confidence 99.58%, kappa 0): "
        f"\"prior (0.821, 1]\" of prior-deciles {top.epsilon_lower_bound:.3f} on 600 rows (trusted); not acted on "
        f"(untrusted, not a page by itself): \"shown label 0\" of shown-label {shown.epsilon_lower_bound:.3f} on "
        f"{shown.rows:,} rows (untrusted); the global verdict (VIOLATION) is judged separately")
    spec = alert_event_payload(SLICE_VIOLATION, payload)
    assert spec["event"] == "labeldp.audit.slice_violation" and spec["payload"]["page"] is True
    json.dumps(spec, allow_nan=False)


def test_no_slice_alert_without_a_slice_violation_acted_on(sliced_verdicts):
    """No slices, only PASS slices, slice VIOLATIONs that are all untrusted (a void night), a control: no
    SLICE_VIOLATION; the global verdict's own alert is unchanged by the slices."""
    from auditing.sinks.alerts import VIOLATION_UNTRUSTED, alert_kind, slice_alert_kind

    assert sliced_verdicts["unsliced"].slices == () and slice_alert_kind(sliced_verdicts["unsliced"]) is None
    passing = sliced_verdicts["passing"]
    assert {s.status for s in passing.slices} == {"PASS"} and slice_alert_kind(passing) is None
    void = sliced_verdicts["void"]
    assert len(void.slice_violations) == 2 and {s.trust for s in void.slice_violations} == {"untrusted"}
    assert slice_alert_kind(void) is None and alert_kind(_row(void)) == VIOLATION_UNTRUSTED
    assert slice_alert_kind(dataclasses.replace(sliced_verdicts["sliced"], kind="control")) is None
    assert alert_kind(_row(sliced_verdicts["sliced"])) == alert_kind(_row(sliced_verdicts["unsliced"])) == VIOLATION


def test_a_slice_alert_names_several_slices_and_how_many_more():
    """Several acted-on slices: the plural, the first SLICES_NAMED named, then how many more; no untrusted clause
    without an untrusted slice."""
    from auditing.sinks.alerts import SLICE_VIOLATION
    from auditing.sinks.alerts.webhook import SLICES_NAMED, summary_text

    pieces = [{"slicing": "column:market", "name": f"market={i}", "rows": 1200, "epsilon_lower_bound": 2.0 - i / 10,
               "trust": "trusted", "acted_on": True} for i in range(SLICES_NAMED + 2)]
    payload = {"claimed_epsilon": 0.5, "kappa": None, "slice_budget": 0.05, "slices_declared": 40,
               "slice_confidence": 0.99875, "slice_violations": pieces, "verdict_status": "PASS"}
    line = summary_text(SLICE_VIOLATION, "m", "2024-01-02", payload)
    assert line.startswith(f"[labeldp-audit] SLICE_VIOLATION: model m, partition 2024-01-02: {SLICES_NAMED + 2} slices' valid epsilon "
                           "lower bounds exceed the claimed epsilon 0.500 (own budget 0.05 over 40 slices, each at "
                           "confidence 99.88%): \"market=0\" of column:market 2.000 on 1,200 rows (trusted), ")
    assert line.endswith(" and 2 more; the global verdict (PASS) is judged separately") and "not acted on" not in line
