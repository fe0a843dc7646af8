"""Alerts that reach a person: a JSON POST to a webhook, retried, sent at most once per (model, date, kind).

- Kinds: VIOLATION (a trusted VIOLATION, or one on a reference the run accepted unchecked: the valid bound
  disproves the claimed epsilon), DATA_MISSING (the partition or a model is absent), AUDIT_FAILED (the audit itself
  crashed), CONTROL_FAILED (a nightly control did not come out as constructed: the negative control voids the
  night, the positive control the night's VIOLATIONs or the PASSes' detectability) page a person.
  VIOLATION_UNTRUSTED (a VIOLATION that is not trusted: the capacity check does not vouch for it, the night is
  void, or nothing checked the reference) and WEAK_PASS (a target's PASS on weak evidence) are for a person to
  read, not pages (the body's ``page`` says which). `alert_kind` chooses a published verdict's kind. Each kind is
  its own alert, sent once.
- SLICE_VIOLATION (docs/slices.md): a target's declared slice is a VIOLATION that is acted on (trusted, or on a
  reference the run accepted unchecked: the rule of VIOLATION). It pages, and is sent besides the verdict's own
  alert: slices have their own status and budget, the global verdict is judged separately. Its payload
  (`slice_violation_payload`) lists every slice VIOLATION with its trust; slice VIOLATIONs that are all untrusted
  send no alert (no read-only kind for them: they are in the report, the warehouse and ``--json``).
  `slice_alert_kind` chooses it from the verdict.
- Retries: connection errors, timeouts, HTTP 5xx and 429 are retried with exponential backoff
  (backoff, 2*backoff, 4*backoff, ... seconds; ``retries`` retries after the first try). Other 4xx answers
  mean the request itself is wrong and are not retried.
- Deduplication: a successful send writes ``<ledger_dir>/<model>__<date>__<kind>.json`` atomically
  (temporary file + rename). A per-key ``flock`` is held from the check to the write, so concurrent senders
  of one key POST once; the OS drops the lock when a process dies, so a crash never blocks later runs.
  Nothing is recorded for a failed send: the next run tries again.
- The body is strict JSON (no NaN/Infinity: non-finite numbers are written as text) with a one-line ``text``
  field that chat webhooks (Slack, Mattermost) display as is.
- A verdict's payload (`violation_payload`) carries its trust (trust, trust_reason), the capacity check's
  figures (epsilon_check, misfit_kappa_upper, check_misfit_kappa, check_rows), the floors' detectability and the
  row groups' figures; the text says each with its confidence. kappa: a payload with ``kappa`` states the
  verdict's kappa and ``breaking_kappa``; the legacy total-variation fields ``tau`` / ``breaking_tau`` are not
  sent beside it. ``reference_check`` (`auditing.verdict.reference_check.ReferenceCheck.to_dict`, read and checked
  before any request) puts the night's reference check in the body; the text says when it was not checked.

- Payloads are typed where each alert is raised (`auditing.sinks.alerts.payloads`: `violation_payload`,
  `slice_violation_payload`, `family_payload`, and a failure's `FailureAlert`) and encoded once, here, into the
  body's fields; a caller's mapping of JSON-able fields is sent as given. The text reads `AlertFields`, read once
  from those fields.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditing.sinks.alerts.payloads import (
    ABSENT,
    PAYLOAD_TYPES,
    AlertFields,
    AlertPayload,
    AlertSlice,
    FamilyAlert,
    SliceAlertItem,
    SliceViolationAlert,
    VerdictAlert,
)
from auditing.sinks.listing import ListedSlices
from auditing.sinks.report import wording
from auditing.sinks.report.wording import STATUS_MEANINGS
from auditing.sinks.warehouse.records import ResultRow
from auditing.verdict import types as verdict
from auditing.verdict.controls import NEGATIVE, POSITIVE
from auditing.verdict.family_evidence import FamilyEvidence
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.types import ACT, EXITS_UNTRUSTED, HEADLINES, SliceVerdict, Verdict
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.files import write_text_atomically
from labeldp.names import check_name, parse_date, resolve_data_root

VIOLATION, DATA_MISSING, AUDIT_FAILED = "VIOLATION", "DATA_MISSING", "AUDIT_FAILED"
CONTROL_FAILED = "CONTROL_FAILED"  # a nightly control failed: what it guards is void tonight (auditing.verdict.trust)
WEAK_PASS = verdict.WEAK_PASS  # a target's verdict on weak evidence (auditing.verdict.types.STATUSES): not a page
VIOLATION_UNTRUSTED = "VIOLATION_UNTRUSTED"  # a VIOLATION that is not trusted (exit 4): not a page
# A model family's nights together confirmed a leak (auditing.verdict.family_evidence): the capacity check's
# kappa-free evidence and the kappa-based evidence both reached 1/alpha, so the nights disprove the claims at
# false-alarm rate alpha if either every night's check assumption or every night's kappa holds (docs/soundness.md
# section 10). It is the decision "act": it pages. The kappa-based evidence alone sends nothing.
FAMILY_CONFIRMED = "FAMILY_CONFIRMED"
# A slice VIOLATION that is acted on: the slice's valid bound disproves the claim at the slices' own confidence
# (their budget, split over the declared slices). It pages like VIOLATION: a false one has probability at most the
# slices' budget, and docs/slices.md counts it in the night's false-alarm rate (global + slices, 10% at defaults).
SLICE_VIOLATION = "SLICE_VIOLATION"
ALERT_KINDS = (VIOLATION, DATA_MISSING, AUDIT_FAILED, CONTROL_FAILED, WEAK_PASS, VIOLATION_UNTRUSTED,
               FAMILY_CONFIRMED, SLICE_VIOLATION)
# the kinds that page a person
PAGES = (VIOLATION, SLICE_VIOLATION, FAMILY_CONFIRMED, DATA_MISSING, AUDIT_FAILED, CONTROL_FAILED)
SLICES_NAMED = wording.SLICE_TABLE_ROWS  # the slices a SLICE_VIOLATION's text names (the body lists them all)
# What a failed control voids, by its kind (the CONTROL_FAILED text).
CONTROL_FAILED_TEXT = {NEGATIVE: wording.NEGATIVE_CONTROL_FAILED, POSITIVE: wording.POSITIVE_CONTROL_FAILED}
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


def alert_kind(row: ResultRow) -> str | None:
    """The alert a published verdict's row sends (None: none), by its decision (auditing.verdict.decision; a row
    written before decisions reads the one its status and trust meant): a VIOLATION to act on pages as VIOLATION,
    an unconfirmed one is VIOLATION_UNTRUSTED, not a page; a target's WEAK_PASS is WEAK_PASS. A family's
    confirmation sends FAMILY_CONFIRMED through its own path. A control alerts CONTROL_FAILED instead."""
    if row.kind not in (None, "target"):
        return None
    if row.status == WEAK_PASS:
        return WEAK_PASS
    if row.status != VIOLATION:
        return None
    return VIOLATION if row.decision == ACT else VIOLATION_UNTRUSTED


def _acted_on(piece: SliceVerdict) -> bool:
    """A slice VIOLATION is acted on under the rule of a verdict's (`alert_kind`): unless its trust exits 4."""
    return piece.status == VIOLATION and piece.trust not in EXITS_UNTRUSTED


def slice_alert_kind(judged: Verdict) -> str | None:
    """SLICE_VIOLATION when a target's verdict has a slice VIOLATION that is acted on, else None (no slice, only
    untrusted slice VIOLATIONs, a control). Sent besides `alert_kind`'s alert, whatever the global status."""
    if judged.kind != "target":
        return None
    return SLICE_VIOLATION if any(_acted_on(piece) for piece in judged.slice_violations) else None


def reference_check_sentence(check: ReferenceCheck | None) -> str | None:
    """"reference not checked: <note>" when the night could not check the reference, else None (the capacity
    check's figures say how well it fits)."""
    if check is None or check.checked:
        return None
    return f"reference not checked: {check.not_checked_reason()}"


def kappa_fields(row: Mapping, reference_check: ReferenceCheck | None = None) -> dict:
    """The kappa-era fields an alert carries, from a warehouse row (`auditing.sinks.warehouse.audit_record`): kappa,
    breaking_kappa, reference_calibration, fdp_curve, gdp_mu_lower_bound, and the night's reference_check."""
    fields = {name: row.get(name) for name in ("kappa", "breaking_kappa", "reference_calibration", "fdp_curve",
                                               "gdp_mu_lower_bound")}
    fields["reference_check"] = encode(reference_check)
    return fields


def _wire(payload: AlertPayload | Mapping) -> Any:
    """A payload's fields as the body carries them: a typed payload encoded (here, once), a mapping as given."""
    return encode(payload) if isinstance(payload, PAYLOAD_TYPES) else payload


def _prepared(payload: AlertPayload | Mapping) -> tuple[str, str, Mapping, AlertFields]:
    """(model_id, date, the body's fields, what the text reads of them): identified, and the reference check
    read, checked and written with every key (the body's shape)."""
    fields = _wire(payload)
    model_id, date = _identify(fields)
    read = AlertFields.read(fields)
    check = read.reference_check
    if check is not None:
        fields = {**fields, "reference_check": {**encode(check), "label_blind": encode(check.label_blind)}}
    return model_id, date, fields, read


def _trust_clauses(fields: AlertFields) -> list[str]:
    """A verdict's trust, capacity check and row groups as clauses of the text (only those the payload has)."""
    clauses, figures = [], fields.figures
    if figures.trust is not None:
        clauses.append(wording.trust_sentence(figures))
        if figures.check_rows is not None:
            clauses.append(wording.capacity_check_sentence(figures, fields.confidence, brief=True))
    elif figures.untrusted_reason:
        clauses.append(f"UNTRUSTED: {figures.untrusted_reason}")
    if figures.group_rule is not None:
        clauses.append(wording.groups_sentence(figures))
    return clauses


def summary_text(kind: str, model_id: str, date: str, payload: AlertFields | Mapping) -> str:
    """One line a person reads first, e.g. in a chat channel (``payload``: the body's fields, or what was read of
    them: `AlertFields.read`)."""
    fields = payload if isinstance(payload, AlertFields) else AlertFields.read(payload)
    head = f"[labeldp-audit] {kind}: model {model_id}, partition {date}"
    kappa, figures = fields.kappa, fields.figures
    reference = reference_check_sentence(fields.reference_check)
    if kind in (VIOLATION, VIOLATION_UNTRUSTED) and fields.epsilon_lower_bound is not ABSENT \
            and fields.claimed_epsilon is not ABSENT:
        at = f" at {fields.confidence:.0%} confidence" if fields.confidence is not None else ""
        at += f" and kappa {float(kappa):g}" if kappa is not None else ""
        risk = fields.risk_headline  # what the claim allows and the bound demonstrates
        if figures.breaking_kappa is not None:
            robust = robustness_sentence(figures.breaking_kappa)
        else:
            robust = figures.robustness_note
        lead = ("not acted on as a violation (not a page): " if kind == VIOLATION_UNTRUSTED else "")
        clauses = ([robust] if robust else []) + _trust_clauses(fields) + ([reference] if reference else [])
        return (f"{head}: {lead}valid epsilon lower bound {_fmt(fields.epsilon_lower_bound)}{at} exceeds the "
                f"claimed epsilon {_fmt(fields.claimed_epsilon)}" + "".join(f"; {c}" for c in clauses)
                + (f". {risk}" if risk else ""))
    if kind == WEAK_PASS and fields.claimed_epsilon is not ABSENT:
        floor = figures.robustness_note
        detectability = wording.detectability_sentence(figures)
        clauses = ([floor] if floor else []) + ([detectability] if detectability else []) + _trust_clauses(fields)
        return (f"{head}: claimed epsilon {_fmt(fields.claimed_epsilon)}: {STATUS_MEANINGS[WEAK_PASS]}"
                + "".join(f"; {c}" for c in clauses))
    if kind == FAMILY_CONFIRMED and fields.family_sentence:
        return f"{head}: {fields.family_sentence}"
    if kind == SLICE_VIOLATION and fields.lists_slices and fields.claimed_epsilon is not ABSENT:
        return f"{head}: {_slice_sentence(fields)}" + (f"; {reference}" if reference else "")
    detail = fields.message or fields.error or fields.reason
    if kind == CONTROL_FAILED:
        head = f"{head}: {CONTROL_FAILED_TEXT.get(fields.control, wording.CONTROL_FAILED)}"
        head += f"; {reference}" if reference else ""
    return f"{head}: {detail}" if detail else head


def _slice_words(piece: AlertSlice) -> str:
    """'"prior (0.821, 1]" of prior-deciles 1.899 on 600 rows (trusted)'."""
    return (f"\"{piece.name}\" of {piece.slicing} {_fmt(piece.epsilon_lower_bound)} on "
            f"{_rows(piece.rows)} ({piece.trust})")


def _rows(rows: Any) -> str:
    return f"{rows:,} rows" if isinstance(rows, int) and not isinstance(rows, bool) else f"{rows} rows"


def _named(pieces: list) -> str:
    """The first `SLICES_NAMED` slices, then how many more."""
    words = ", ".join(_slice_words(p) for p in pieces[:SLICES_NAMED])
    return words + (f" and {len(pieces) - SLICES_NAMED} more" if len(pieces) > SLICES_NAMED else "")


def _slice_sentence(fields: AlertFields) -> str:
    """A SLICE_VIOLATION's text after its head: the acted-on slices and their bounds against the claim, at the
    slices' confidence and budget, then the untrusted ones, then that the global verdict is judged separately."""
    pieces = fields.slice_violations
    acted = [p for p in pieces if p.acted_on]
    others = [p for p in pieces if not p.acted_on]
    figures = [fields.slice_budget, fields.slices_declared, fields.slice_confidence]
    at = [wording.slices_budget_words(*figures)] if None not in figures else []
    at += [f"kappa {float(fields.kappa):g}"] if fields.kappa is not None else []
    design = f" ({', '.join(at)})" if at else ""
    count = ("1 slice's valid epsilon lower bound exceeds" if len(acted) == 1
             else f"{len(acted)} slices' valid epsilon lower bounds exceed")
    sentence = f"{count} the claimed epsilon {_fmt(fields.claimed_epsilon)}{design}: {_named(acted)}"
    if others:
        sentence += f"; not acted on (untrusted, not a page by itself): {_named(others)}"
    status = fields.verdict_status
    return sentence + (f"; the global verdict ({status}) is judged separately" if status else "")


def _body(kind: str, model_id: str, date: str, fields: Mapping, read: AlertFields) -> dict:
    """The alert's fields as strict-JSON-safe values, without the legacy tau / breaking_tau beside kappa, and its
    text (``read``: what `AlertFields.read` read of ``fields``)."""
    fields = dict(fields)
    if read.kappa is not None:
        fields.pop("tau", None)
        fields.pop("breaking_tau", None)
    return {**json_safe(fields), "kind": kind, "page": kind in PAGES, "model_id": model_id, "partition_date": date,
            "text": summary_text(kind, model_id, date, read)}


def family_payload(family: FamilyEvidence, *, model_id: str, partition_date: str, report: str | None) -> FamilyAlert:
    """The payload of a FAMILY_CONFIRMED alert: the family's kappa-free evidence and its kappa-based evidence,
    alpha, the night it was confirmed, the nights counted and the sentence (`FamilyEvidence.sentence`), with the
    decision it means."""
    return FamilyAlert(model_id=model_id, partition_date=partition_date, decision=ACT,
                       decision_headline=HEADLINES[ACT], family_check_evidence=family.check_evidence,
                       family_evidence=family.evidence, alpha=family.alpha, confirmed_on=family.confirmed_on,
                       nights=len(family.nights), nights_counted=family.counted, family_sentence=family.sentence(),
                       report=report)


def slice_violation_payload(judged: Verdict, *, model_id: str, partition_date: str, report: str | None,
                            flow_run_id: str | None = None, run_kind: str | None = None) -> SliceViolationAlert:
    """The payload of a SLICE_VIOLATION alert (`slice_alert_kind`): the claim and kappa, the slices' budget, the
    number declared, their confidence and design sentence (`ListedSlices`), every slice VIOLATION
    (`SliceAlertItem`: the slice's verdict with ``acted_on``, whether it alone would send this alert), largest bound first, and the
    global verdict's status and trust, judged separately."""
    slices = ListedSlices.of_verdict(judged)
    violations = () if slices is None else tuple(SliceAlertItem(piece, _acted_on(piece))
                                                 for piece in slices.violations)
    return SliceViolationAlert(
        model_id=model_id, partition_date=partition_date, claimed_epsilon=judged.claimed_epsilon,
        kappa=judged.result.bound.kappa, delta=judged.result.bound.delta,
        slice_budget=None if slices is None else slices.budget,
        slices_declared=None if slices is None else slices.declared,
        slice_confidence=None if slices is None else slices.confidence,
        slice_design=None if slices is None else slices.design, slice_violations=violations,
        verdict_status=judged.status, verdict_trust=judged.trust.state, report=report, flow_run_id=flow_run_id,
        run_kind=run_kind)


def violation_payload(judged: Verdict, *, model_id: str, partition_date: str, report: str | None,
                      flow_run_id: str | None = None, run_kind: str | None = None) -> VerdictAlert:
    """The payload of a verdict's alert (VIOLATION, VIOLATION_UNTRUSTED or WEAK_PASS: `alert_kind`): a rendering
    of the verdict (its figures are not recomputed here: its trust, the capacity check's figures, the row groups,
    `Verdict.trust_figures`), with the kind of run that wrote it."""
    result = judged.result
    return VerdictAlert(
        model_id=model_id, partition_date=partition_date, status=judged.status,
        epsilon_lower_bound=result.epsilon_lower_bound, claimed_epsilon=judged.claimed_epsilon,
        confidence=result.bound.confidence, delta=result.bound.delta, kappa=result.bound.kappa,
        strategy=result.bound.strategy, method=result.bound.method, report=report, flow_run_id=flow_run_id,
        run_kind=run_kind, kind=judged.kind, untrusted_reason=judged.untrusted_reason, decision=judged.decision,
        risk_headline=judged.risk_headline, figures=judged.trust_figures())


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
    url: str, kind: str, payload: AlertPayload | Mapping, ledger_dir: str | os.PathLike, *, retries: int = 4,
    backoff: float = 0.5, timeout: float = 5,
) -> AlertOutcome:
    """POSTs one alert as JSON unless this (model_id, partition_date, kind) was sent before.

    payload: a typed payload (`auditing.sinks.alerts.payloads`: `VerdictAlert`, `SliceViolationAlert`,
    `FamilyAlert`, `FailureAlert`), encoded here, or a mapping of JSON-able fields with at least ``model_id`` and
    ``partition_date``; every field goes into the body (e.g. epsilon_lower_bound, claimed_epsilon, confidence,
    status, report path, flow run id).
    Never raises for delivery problems: a failed delivery returns status "failed" with the last error.
    """
    url = check_webhook_url(url)
    kind = check_kind(kind)
    model_id, date, fields, read = _prepared(payload)
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
        body = {**_body(kind, model_id, date, fields, read), "dedup_key": name, "sent_at": sent_at}
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


def alert_event_payload(kind: str, payload: AlertPayload | Mapping) -> dict:
    """Keyword arguments for ``prefect.events.emit_event(**alert_event_payload(kind, payload))``.

    event: ``labeldp.audit.violation`` / ``.data_missing`` / ``.audit_failed`` / ``.control_failed`` /
    ``.weak_pass`` / ``.violation_untrusted`` / ``.family_flagged`` / ``.slice_violation``; resource: the model
    (``labeldp.model.<model_id>``) with the partition date and kind as labels (Prefect wants text values);
    payload: the alert payload as strict-JSON-safe values.
    """
    kind = check_kind(kind)
    model_id, date, fields, read = _prepared(payload)
    return {
        "event": f"{EVENT_PREFIX}.{kind.lower()}",
        "resource": {
            "prefect.resource.id": f"labeldp.model.{model_id}",
            "prefect.resource.name": model_id,
            "labeldp.partition_date": date,
            "labeldp.alert_kind": kind,
        },
        "payload": _body(kind, model_id, date, fields, read),
    }
