"""Alerts that reach a person: a JSON POST to a webhook, retried, sent at most once per (model, date, kind).

- Kinds: VIOLATION (the valid bound disproves the claimed epsilon), DATA_MISSING (the partition or a model is
  absent), AUDIT_FAILED (the audit itself crashed), CONTROL_FAILED (a nightly positive or negative control
  did not come out as constructed: the audit itself is broken, and the night's verdicts are untrusted). They
  are different alerts: each is sent once.
- Retries: connection errors, timeouts, HTTP 5xx and 429 are retried with exponential backoff
  (backoff, 2*backoff, 4*backoff, ... seconds; ``retries`` retries after the first try). Other 4xx answers
  mean the request itself is wrong and are not retried.
- Deduplication: a successful send writes ``<ledger_dir>/<model>__<date>__<kind>.json`` atomically
  (temporary file + rename). A per-key ``flock`` is held from the check to the write, so concurrent senders
  of one key POST once; the OS drops the lock when a process dies, so a crash never blocks later runs.
  Nothing is recorded for a failed send: the next run tries again.
- The body is strict JSON (no NaN/Infinity: non-finite numbers are written as text) with a one-line ``text``
  field that chat webhooks (Slack, Mattermost) display as is.

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

from auditing.atomic_files import write_text_atomically
from auditing.errors import LabelDPInputError
from auditing.names import check_name, parse_date, resolve_data_root

VIOLATION, DATA_MISSING, AUDIT_FAILED = "VIOLATION", "DATA_MISSING", "AUDIT_FAILED"
CONTROL_FAILED = "CONTROL_FAILED"  # a nightly control failed: the audit itself is broken (auditing.controls)
ALERT_KINDS = (VIOLATION, DATA_MISSING, AUDIT_FAILED, CONTROL_FAILED)
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


def summary_text(kind: str, model_id: str, date: str, payload: Mapping) -> str:
    """One line a person reads first, e.g. in a chat channel."""
    head = f"[labeldp-audit] {kind}: model {model_id}, partition {date}"
    if kind == VIOLATION and "epsilon_lower_bound" in payload and "claimed_epsilon" in payload:
        confidence = payload.get("confidence")
        at = f" at {confidence:.0%} confidence" if isinstance(confidence, float) else ""
        risk = payload.get("risk_headline")  # issue 8: what the claim allows and the bound demonstrates
        robust = payload.get("robustness_note")  # issue 9: "the violation holds for any shift up to tau = X"
        return (f"{head}: valid epsilon lower bound {_fmt(payload['epsilon_lower_bound'])}{at} exceeds the "
                f"claimed epsilon {_fmt(payload['claimed_epsilon'])}" + (f"; {robust}" if robust else "")
                + (f". {risk}" if risk else ""))
    detail = payload.get("message") or payload.get("error") or payload.get("reason")
    if kind == CONTROL_FAILED:
        head = f"{head}: the audit itself is broken (every verdict of this night is untrusted)"
    return f"{head}: {detail}" if detail else head


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
        body = {**json_safe(dict(payload)), "kind": kind, "model_id": model_id, "partition_date": date,
                "dedup_key": name, "sent_at": sent_at, "text": summary_text(kind, model_id, date, payload)}
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

    event: ``labeldp.audit.violation`` / ``.data_missing`` / ``.audit_failed`` / ``.control_failed``; resource: the model
    (``labeldp.model.<model_id>``) with the partition date and kind as labels (Prefect wants text values);
    payload: the alert payload as strict-JSON-safe values.
    """
    kind = check_kind(kind)
    model_id, date = _identify(payload)
    return {
        "event": f"{EVENT_PREFIX}.{kind.lower()}",
        "resource": {
            "prefect.resource.id": f"labeldp.model.{model_id}",
            "prefect.resource.name": model_id,
            "labeldp.partition_date": date,
            "labeldp.alert_kind": kind,
        },
        "payload": {**json_safe(dict(payload)), "kind": kind, "model_id": model_id, "partition_date": date,
                    "text": summary_text(kind, model_id, date, payload)},
    }
