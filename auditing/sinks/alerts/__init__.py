"""Alerts (a sink of the auditing stage): webhook POSTs deduplicated per model, date and kind.

The Prefect event for the same alert is emitted by the flows with ``alert_event_payload``; nothing here
imports Prefect. ``alert_kind`` chooses the kind a published verdict sends (the flows' one call for it), and
``slice_alert_kind`` whether its slices send SLICE_VIOLATION besides it.
"""

from auditing.sinks.alerts.webhook import (
    ALERT_KINDS,
    AUDIT_FAILED,
    CONTROL_FAILED,
    DATA_MISSING,
    DUPLICATE,
    FAILED,
    PAGES,
    SENT,
    SLICE_VIOLATION,
    VIOLATION,
    VIOLATION_UNTRUSTED,
    WEAK_PASS,
    AlertOutcome,
    alert_event_payload,
    alert_kind,
    default_ledger_dir,
    kappa_fields,
    reference_check_sentence,
    robustness_sentence,
    send_alert,
    slice_alert_kind,
    slice_violation_payload,
)

__all__ = [
    "ALERT_KINDS", "AUDIT_FAILED", "CONTROL_FAILED", "DATA_MISSING", "DUPLICATE", "FAILED", "PAGES", "SENT",
    "SLICE_VIOLATION", "VIOLATION", "VIOLATION_UNTRUSTED", "WEAK_PASS", "AlertOutcome",
    "alert_event_payload", "alert_kind", "default_ledger_dir", "kappa_fields", "reference_check_sentence",
    "robustness_sentence", "send_alert", "slice_alert_kind", "slice_violation_payload",
]
