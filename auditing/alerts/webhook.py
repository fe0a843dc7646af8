"""Alerts that reach a person: a JSON POST to a webhook, retried, sent at most once per (model, date, kind).

- Kinds: VIOLATION (the valid bound disproves the claimed epsilon), DATA_MISSING (the partition or a model is
  absent), AUDIT_FAILED (the audit itself crashed), CONTROL_FAILED (a nightly positive or negative control
  did not come out as constructed: the audit itself is broken, and the night's verdicts are untrusted),
  WEAK_PASS (a target's PASS on weak evidence: the audit could not have seen a leak smaller than its floor; for
  a person to read, not a page). They are different alerts: each is sent once.
- Retries: connection errors, timeouts, HTTP 5xx and 429 are retried with exponential backoff
  (backoff, 2*backoff, 4*backoff, ... seconds; ``retries`` retries after the first try). Other 4xx answers
  mean the request itself is wrong and are not retried.
- Deduplication: a successful send writes ``<ledger_dir>/<model>__<date>__<kind>.json`` atomically
  (temporary file + rename). A per-key ``flock`` is held from the check to the write, so concurrent senders
  of one key POST once; the OS drops the lock when a process dies, so a crash never blocks later runs.
  Nothing is recorded for a failed send: the next run tries again.
- The body is strict JSON (no NaN/Infinity: non-finite numbers are written as text) with a one-line ``text``
  field that chat webhooks (Slack, Mattermost) display as is.
- kappa: a payload with ``kappa`` (``kappa_fields`` takes it and the other kappa-era figures from a warehouse
  row) states the verdict's kappa and ``breaking_kappa`` ("holds unless the reference misjudges some row's click
  odds by more than a factor e^breaking_kappa"); the legacy total-variation fields ``tau`` / ``breaking_tau``
  are not sent beside it. ``reference_check`` (`auditing.warehouse.rows.check_reference_check`'s shape, checked
  before any request) puts the night's reference check in the body and the text: a flagged label-blind control
  reads "the reference does not fit day D" (in a CONTROL_FAILED alert and in the untrusted part of a VIOLATION);
  so does a CONTROL_FAILED payload with ``control`` "label-blind" (its message carries the figures).

``alert_event_payload`` gives the same alert as arguments for ``prefect.events.emit_event``; this module does
not import Prefect.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import http.client
import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from auditing import verdict
from auditing.atomic_files import write_text_atomically
from auditing.errors import LabelDPInputError
from auditing.names import check_name, parse_date, resolve_data_root
from auditing.report.text import STATUS_MEANINGS
from auditing.verdict import Verdict

VIOLATION, DATA_MISSING, AUDIT_FAILED = "VIOLATION", "DATA_MISSING", "AUDIT_FAILED"
CONTROL_FAILED = "CONTROL_FAILED"  # a nightly control failed: the audit itself is broken (auditing.controls)
WEAK_PASS = verdict.WEAK_PASS  # a target's verdict on weak evidence (auditing.verdict.STATUSES): not a page
ALERT_KINDS = (VIOLATION, DATA_MISSING, AUDIT_FAILED, CONTROL_FAILED, WEAK_PASS)
SENT, DUPLICATE, FAILED = "sent", "duplicate", "failed"
LEDGER_DIR_NAME = "alerts"
EVENT_PREFIX = "labeldp.audit"
USER_AGENT = "labeldp-audit-alerts/1"


@dataclass(frozen=True)
class AlertOutcome:
    """What ``send_alert`` did. status: "sent", "duplicate" (already sent earlier; nothing POSTed) or "failed"."""

    status: str
    kind: str
    model_id: str
    partition_date: str
    attempts: int
    http_status: int | None
    error: str | None
    ledger_file: str

    def to_dict(self) -> dict:
        return asdict(self)


def default_ledger_dir(data_root: str | os.PathLike | None = None) -> Path:
    """``<data_root>/alerts``."""
    return resolve_data_root(data_root) / LEDGER_DIR_NAME


def check_kind(kind: Any) -> str:
    if kind not in ALERT_KINDS:
        raise LabelDPInputError(f"alert kind must be one of {list(ALERT_KINDS)}; got {kind!r}")
    return kind


def check_webhook_url(url: Any) -> str:
    """Only http(s) URLs with a host (urllib would otherwise also open file:// and ftp:// URLs)."""
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise LabelDPInputError(f"webhook url must be an http:// or https:// URL with a host; got {url!r}")
    return url


def json_safe(value: Any) -> Any:
    """A copy that strict JSON can carry: dates as ISO text, numpy values as Python, inf/nan as text."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "inf", "-inf", "nan": strict JSON has no literal for them
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _identify(payload: Any) -> tuple[str, str]:
    if not isinstance(payload, Mapping):
        raise LabelDPInputError(f"alert payload must be a dict; got {type(payload).__name__}")
    for name in ("model_id", "partition_date"):
        if payload.get(name) is None:
            raise LabelDPInputError(f"alert payload: missing {name!r} (alerts are deduplicated per model and date)")
    return check_name(payload["model_id"], "model_id"), parse_date(payload["partition_date"], "partition_date").isoformat()


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) and math.isfinite(value) else str(value)


def _factor(kappa: float) -> str:
    """e^kappa for a reader: 3 significant digits, or 1 + kappa when that would print as 1."""
    kappa = float(kappa)
    return f"{math.exp(kappa):.3g}" if kappa >= 0.005 or kappa == 0.0 else f"1 + {kappa:.2g}"


def robustness_sentence(breaking_kappa: float, kappa: float | None = None) -> str:
    """What a VIOLATION's breaking_kappa means, in one clause (the alert's text; flows may reuse it)."""
    text = (f"it holds unless the reference misjudges some row's click odds by more than a factor "
            f"{_factor(breaking_kappa)} (breaking kappa {float(breaking_kappa):.4g})")
    return text + (f"; the verdict is computed at the plan's kappa = {float(kappa):g}" if kappa is not None else "")


def reference_check_sentence(check: Mapping | None, date: str, kappa: float | None = None) -> str | None:
    """The night's reference check in one clause: "the reference does not fit day D (...)" when the label-blind
    control flagged it, "reference not checked: <note>" when skipped, "the reference fits day D (...)" when it
    passed; None without a check."""
    if not check:
        return None
    if not check.get("checked"):
        note = str(check.get("note") or "no reason recorded").strip()
        if note.lower().startswith("reference not checked:"):
            note = note[len("reference not checked:"):].strip()
        return f"reference not checked: {note}"
    blind = check.get("label_blind")
    if not blind:
        return "the label-blind control did not run" + (f" ({check['note']})" if check.get("note") else "")
    verdict = "does not fit" if blind.get("flagged") else "fits"
    return f"the reference {verdict} day {date} ({_label_blind_details(blind, kappa)})"


def _label_blind_details(blind: Mapping, kappa: float | None) -> str:
    misfit = blind.get("misfit_kappa")
    if misfit is None:
        measured = ""
    elif float(misfit) == 0.0:
        measured = "; measured misfit kappa 0"
    else:
        measured = (f"; measured misfit kappa {float(misfit):.3g}: click odds off by up to a factor "
                    f"{_factor(misfit)}")
    at = "" if kappa is None else f" at kappa {float(kappa):g}"
    return (f"label-blind control: valid eps_lb {float(blind['epsilon_lower_bound']):.3f}{at}, where it must be "
            f"0{measured}")


def kappa_fields(row: Mapping, reference_check: Mapping | None = None) -> dict:
    """The kappa-era fields an alert carries, from a warehouse row (`auditing.warehouse.audit_record`): kappa,
    breaking_kappa, reference_calibration, fdp_curve, gdp_mu_lower_bound, and the night's reference_check."""
    fields = {name: row.get(name) for name in ("kappa", "breaking_kappa", "reference_calibration", "fdp_curve",
                                               "gdp_mu_lower_bound")}
    fields["reference_check"] = None if reference_check is None else dict(reference_check)
    return fields


def _checked_reference(payload: Mapping) -> dict | None:
    check = payload.get("reference_check")
    if check is None:
        return None
    from auditing.warehouse.rows import check_reference_check

    return check_reference_check(check)


def summary_text(kind: str, model_id: str, date: str, payload: Mapping) -> str:
    """One line a person reads first, e.g. in a chat channel."""
    head = f"[labeldp-audit] {kind}: model {model_id}, partition {date}"
    kappa = payload.get("kappa")
    reference = reference_check_sentence(payload.get("reference_check"), date, kappa)
    flagged = bool(((payload.get("reference_check") or {}).get("label_blind") or {}).get("flagged"))
    if kind == VIOLATION and "epsilon_lower_bound" in payload and "claimed_epsilon" in payload:
        confidence = payload.get("confidence")
        at = f" at {confidence:.0%} confidence" if isinstance(confidence, float) else ""
        at += f" and kappa {float(kappa):g}" if kappa is not None else ""
        risk = payload.get("risk_headline")  # what the claim allows and the bound demonstrates
        if payload.get("breaking_kappa") is not None:
            robust = robustness_sentence(payload["breaking_kappa"])
        else:
            robust = payload.get("robustness_note")
        untrusted = payload.get("untrusted_reason")
        trust = ""
        if untrusted and flagged and f"does not fit day {date}" in untrusted:
            details = _label_blind_details(payload["reference_check"]["label_blind"], kappa)
            trust = f"; UNTRUSTED: {untrusted} ({details})"
        elif untrusted:
            trust = f"; UNTRUSTED: {untrusted}" + (f"; {reference}" if flagged else "")
        elif reference:
            trust = f"; {reference}"
        return (f"{head}: valid epsilon lower bound {_fmt(payload['epsilon_lower_bound'])}{at} exceeds the "
                f"claimed epsilon {_fmt(payload['claimed_epsilon'])}" + (f"; {robust}" if robust else "")
                + trust + (f". {risk}" if risk else ""))
    if kind == WEAK_PASS and "claimed_epsilon" in payload:
        floor = payload.get("robustness_note")
        return (f"{head}: claimed epsilon {_fmt(payload['claimed_epsilon'])}: {STATUS_MEANINGS[WEAK_PASS]}"
                + (f"; {floor}" if floor else "") + (f"; UNTRUSTED: {payload['untrusted_reason']}"
                                                     if payload.get("untrusted_reason") else ""))
    detail = payload.get("message") or payload.get("error") or payload.get("reason")
    if kind == CONTROL_FAILED:
        if flagged:
            head = f"{head}: {reference}: every verdict of this night is untrusted"
        elif payload.get("control") == "label-blind":  # the label-blind control failed, figures in its message
            head = f"{head}: the reference does not fit day {date}: every verdict of this night is untrusted"
        else:
            head = f"{head}: the audit itself is broken (every verdict of this night is untrusted)"
    return f"{head}: {detail}" if detail else head


def _body(kind: str, model_id: str, date: str, payload: Mapping) -> dict:
    """The alert's fields as strict-JSON-safe values, without the legacy tau / breaking_tau beside kappa."""
    fields = dict(payload)
    if fields.get("kappa") is not None:
        fields.pop("tau", None)
        fields.pop("breaking_tau", None)
    return {**json_safe(fields), "kind": kind, "model_id": model_id, "partition_date": date,
            "text": summary_text(kind, model_id, date, fields)}


def violation_payload(judged: Verdict, *, model_id: str, partition_date: str, report: str | None,
                      flow_run_id: str | None = None, run_kind: str | None = None) -> dict:
    """The VIOLATION (or WEAK_PASS) alert's payload: a rendering of the verdict (its figures are not recomputed
    here), with the kind of run that wrote it."""
    data = judged.result
    return {"model_id": model_id, "partition_date": partition_date, "status": judged.status,
            "epsilon_lower_bound": data["epsilon_lower_bound"], "claimed_epsilon": judged.claimed_epsilon,
            "confidence": data["confidence"], "delta": data["delta"], "kappa": data.get("kappa"),
            "strategy": data["strategy"], "method": data["method"], "report": report, "flow_run_id": flow_run_id,
            "run_kind": run_kind, "kind": judged.kind, "untrusted_reason": judged.untrusted_reason,
            "risk_headline": judged.risk_headline, **judged.trust_figures()}


def _dedup_name(model_id: str, date: str, kind: str) -> str:
    return f"{model_id}__{date}__{kind}"


def _write_ledger(path: Path, record: Mapping) -> None:
    write_text_atomically(path, json.dumps(record, sort_keys=True))


def _post(url: str, body: bytes, timeout: float) -> int:
    """One POST; returns the HTTP status (raises on connection errors)."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:  # an answer, just not a 2xx one
        exc.close()
        return exc.code


def _retryable_status(status: int) -> bool:
    return status >= 500 or status == 429


def send_alert(
    url: str, kind: str, payload: Mapping, ledger_dir: str | os.PathLike, *, retries: int = 4,
    backoff: float = 0.5, timeout: float = 5,
) -> AlertOutcome:
    """POSTs one alert as JSON unless this (model_id, partition_date, kind) was sent before.

    payload: a dict with at least ``model_id`` and ``partition_date``; everything in it goes into the body
    (e.g. epsilon_lower_bound, claimed_epsilon, confidence, status, report path, flow run id).
    Never raises for delivery problems: a failed delivery returns status "failed" with the last error.
    """
    url = check_webhook_url(url)
    kind = check_kind(kind)
    model_id, date = _identify(payload)
    if payload.get("reference_check") is not None:
        payload = {**payload, "reference_check": _checked_reference(payload)}
    if int(retries) != retries or retries < 0:
        raise LabelDPInputError(f"retries must be a whole number >= 0; got {retries!r}")
    if not (backoff >= 0) or not (timeout > 0):
        raise LabelDPInputError(f"backoff must be >= 0 and timeout > 0 seconds; got {backoff!r}, {timeout!r}")
    ledger_dir = Path(ledger_dir)
    ledger_dir.mkdir(parents=True, exist_ok=True)
    name = _dedup_name(model_id, date, kind)
    ledger_file = ledger_dir / f"{name}.json"
    outcome = dict(kind=kind, model_id=model_id, partition_date=date, ledger_file=str(ledger_file))

    with open(ledger_dir / f".{name}.lock", "a") as lock_handle:
        fcntl.flock(lock_handle, fcntl.LOCK_EX)  # released on close, or by the OS if the process dies
        if ledger_file.exists():
            return AlertOutcome(status=DUPLICATE, attempts=0, http_status=None, error=None, **outcome)
        sent_at = dt.datetime.now(dt.UTC).isoformat()
        body = {**_body(kind, model_id, date, payload), "dedup_key": name, "sent_at": sent_at}
        data = json.dumps(body, allow_nan=False, sort_keys=True).encode("utf-8")
        status: int | None = None
        error: str | None = None
        attempts = 0
        for attempt in range(int(retries) + 1):
            if attempt:
                time.sleep(backoff * 2 ** (attempt - 1))
            attempts += 1
            try:
                status = _post(url, data, timeout)
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                status, error = None, f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
                continue
            if 200 <= status < 300:
                host = urllib.parse.urlsplit(url).hostname  # not the URL: webhook paths often hold secrets
                _write_ledger(ledger_file, {"kind": kind, "model_id": model_id, "partition_date": date,
                                            "sent_at": sent_at, "http_status": status, "attempts": attempts,
                                            "host": host})
                return AlertOutcome(status=SENT, attempts=attempts, http_status=status, error=None, **outcome)
            error = f"HTTP {status}"
            if not _retryable_status(status):
                break
        return AlertOutcome(status=FAILED, attempts=attempts, http_status=status, error=error, **outcome)


def alert_event_payload(kind: str, payload: Mapping) -> dict:
    """Keyword arguments for ``prefect.events.emit_event(**alert_event_payload(kind, payload))``.

    event: ``labeldp.audit.violation`` / ``.data_missing`` / ``.audit_failed`` / ``.control_failed`` /
    ``.weak_pass``; resource: the model
    (``labeldp.model.<model_id>``) with the partition date and kind as labels (Prefect wants text values);
    payload: the alert payload as strict-JSON-safe values.
    """
    kind = check_kind(kind)
    model_id, date = _identify(payload)
    if payload.get("reference_check") is not None:
        payload = {**payload, "reference_check": _checked_reference(payload)}
    return {
        "event": f"{EVENT_PREFIX}.{kind.lower()}",
        "resource": {
            "prefect.resource.id": f"labeldp.model.{model_id}",
            "prefect.resource.name": model_id,
            "labeldp.partition_date": date,
            "labeldp.alert_kind": kind,
        },
        "payload": _body(kind, model_id, date, payload),
    }
