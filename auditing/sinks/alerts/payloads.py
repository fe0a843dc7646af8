"""The payloads of the webhook's alerts, typed where each alert is raised, and what an alert's text reads of them.

- `VerdictAlert` (VIOLATION, VIOLATION_UNTRUSTED, WEAK_PASS), `SliceViolationAlert` (SLICE_VIOLATION), `FamilyAlert`
  (FAMILY_CONFIRMED) and `FailureAlert` (DATA_MISSING, AUDIT_FAILED, CONTROL_FAILED) are written by `labeldp.codec`
  as the body's fields, with the keys, in the order, the body has always had (`auditing.sinks.alerts.webhook`
  encodes a payload once, where it builds the body). A caller may still give a mapping of JSON-able fields instead:
  it is sent as given.
- `AlertFields`: what the alert's one-line text reads of a body's fields, read once from them (`AlertFields.read`,
  at the body's JSON edge, whichever kind of payload it came from). A field the body does not carry reads as None,
  the claim and the bound as `ABSENT` (the text asks whether a verdict's figures are there at all).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.types import Decision, SliceVerdict, TrustFigures
from labeldp.codec import decode, encode, encode_fields


@dataclass(frozen=True)
class VerdictAlert:
    """A verdict's alert (`webhook.violation_payload`): a rendering of the verdict, its trust figures written flat
    after its own fields (`Verdict.trust_figures`, whose untrusted_reason is the verdict's); ``kind`` is the
    verdict's (target or control), which the body's alert kind replaces."""

    model_id: str
    partition_date: str
    status: str
    epsilon_lower_bound: float
    claimed_epsilon: float
    confidence: float
    delta: float | None
    kappa: float
    strategy: str
    method: str
    report: str | None
    flow_run_id: str | None
    run_kind: str | None
    kind: str
    untrusted_reason: str | None
    decision: Decision | None
    risk_headline: str
    figures: TrustFigures

    def _encoded(self) -> dict:
        own = encode_fields(self)
        del own["figures"]
        return {**own, **encode(self.figures)}


@dataclass(frozen=True)
class SliceAlertItem:
    """One slice VIOLATION in a SLICE_VIOLATION alert: the slice's verdict, and whether it alone would send the
    alert (``acted_on``), written as the slice's fields followed by ``acted_on``."""

    slice: SliceVerdict
    acted_on: bool

    def _encoded(self) -> dict:
        return {**encode(self.slice), "acted_on": self.acted_on}


@dataclass(frozen=True)
class SliceViolationAlert:
    """A SLICE_VIOLATION alert (`webhook.slice_violation_payload`): the claim and the bound's kappa and delta, the
    slices' budget, count, confidence and design (None without slices), every slice VIOLATION, largest bound
    first, and the global verdict's status and trust, judged separately."""

    model_id: str
    partition_date: str
    claimed_epsilon: float
    kappa: float
    delta: float | None
    slice_budget: float | None
    slices_declared: int | None
    slice_confidence: float | None
    slice_design: str | None
    slice_violations: tuple[SliceAlertItem, ...]
    verdict_status: str
    verdict_trust: str
    report: str | None
    flow_run_id: str | None
    run_kind: str | None


@dataclass(frozen=True)
class FamilyAlert:
    """A FAMILY_CONFIRMED alert (`webhook.family_payload`): the decision it means, the family's two evidences,
    alpha, the night it was confirmed, the nights and those counted, and the family's sentence."""

    model_id: str
    partition_date: str
    decision: str
    decision_headline: str
    family_check_evidence: float
    family_evidence: float
    alpha: float
    confirmed_on: dt.date | None
    nights: int
    nights_counted: int
    family_sentence: str
    report: str | None


@dataclass(frozen=True)
class FailureAlert:
    """A DATA_MISSING, AUDIT_FAILED or CONTROL_FAILED alert: what failed, in a message. A failed control's alert
    also names the control's kind and carries the night's reference check (written only then, null when there was
    none)."""

    model_id: str
    partition_date: str
    message: str
    flow_run_id: str | None = None
    control: str | None = None
    reference_check: ReferenceCheck | None = None

    def _encoded(self) -> dict:
        own = encode_fields(self)
        if self.control is None:
            del own["control"], own["reference_check"]
        return own


AlertPayload = VerdictAlert | SliceViolationAlert | FamilyAlert | FailureAlert
PAYLOAD_TYPES = (VerdictAlert, SliceViolationAlert, FamilyAlert, FailureAlert)


class _Absent:
    """A key an alert's body does not carry (distinct from a null value)."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


def _number(value: Any) -> float | None:
    """A number as a float (a bool or anything else is not one: None)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class AlertSlice:
    """A slice VIOLATION as the text names it, read from the body's list (what a piece lacks is None)."""

    slicing: str | None = None
    name: str | None = None
    epsilon_lower_bound: float | None = None
    rows: int | None = None
    trust: str | None = None
    acted_on: bool | None = None

    @classmethod
    def read(cls, piece: Mapping[str, Any]) -> AlertSlice:
        return cls(**{f.name: piece.get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class AlertFields:
    """What an alert's text reads of its body's fields (`AlertFields.read`): a verdict's bound and claim (`ABSENT`
    when the body has none), confidence (a number, else None), kappa, risk headline and trust figures
    (`TrustFigures`), the night's reference check, a family's sentence, the slice VIOLATIONs (``lists_slices``:
    the body lists any) with the slices' budget, count and confidence and the global verdict's status, and a
    failure's message, error or reason and control kind."""

    epsilon_lower_bound: float | _Absent = ABSENT
    claimed_epsilon: float | _Absent = ABSENT
    confidence: float | None = None
    kappa: float | None = None
    risk_headline: str | None = None
    figures: TrustFigures = field(default_factory=TrustFigures)
    reference_check: ReferenceCheck | None = None
    family_sentence: str | None = None
    lists_slices: bool = False
    slice_violations: tuple[AlertSlice, ...] = ()
    slice_budget: float | None = None
    slices_declared: int | None = None
    slice_confidence: float | None = None
    verdict_status: str | None = None
    message: str | None = None
    error: str | None = None
    reason: str | None = None
    control: str | None = None

    @classmethod
    def read(cls, body: Mapping[str, Any]) -> AlertFields:
        """The fields of ``body`` (a payload's JSON-able fields), its reference check read and checked
        (LabelDPInputError naming it)."""
        raw = {name: body.get(name) for name in _READ}
        listed, confidence, check = raw.pop("slice_violations"), raw.pop("confidence"), raw.pop("reference_check")
        pieces = listed if isinstance(listed, list | tuple) else ()
        return cls(**{name: body[name] for name in ("epsilon_lower_bound", "claimed_epsilon") if name in body},
                   **raw, confidence=_number(confidence), figures=TrustFigures.read(body),
                   reference_check=decode(ReferenceCheck | None, check, "reference_check"), lists_slices=bool(listed),
                   slice_violations=tuple(AlertSlice.read(p) for p in pieces if isinstance(p, Mapping)))


# The body's fields `AlertFields.read` takes as they are (or reads, for the last three).
_READ = ("kappa", "risk_headline", "family_sentence", "slice_budget", "slices_declared", "slice_confidence",
         "verdict_status", "message", "error", "reason", "control", "confidence", "reference_check", "slice_violations")

__all__ = ["ABSENT", "PAYLOAD_TYPES", "AlertFields", "AlertPayload", "AlertSlice", "FailureAlert", "FamilyAlert",
           "SliceAlertItem", "SliceViolationAlert", "VerdictAlert"]
