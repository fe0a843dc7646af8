"""A verdict as a run lists it: its warehouse row, the path of its report, and what the run did with it.

A run (nightly, guardrail, backfill, rejudge) returns ``ListedVerdict``s, one per verdict it published, and a
``SkippedTarget`` per target it could not audit; ``labeldp-audit results`` lists the rows it reads back as
``ListedVerdict``s too. The results table, the exit summary and the exit code read their typed fields;
`labeldp.codec.encode` writes their ``--json`` records. A verdict's slices (``ListedSlices``) come from the verdict a run judged, or from the
``audit_slices`` rows of a stored one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auditing.result import SLICE_DESIGN
from auditing.sinks.warehouse.records import ResultRow, trust_state
from auditing.sinks.warehouse.schema import DECISION_COLUMNS
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.types import PASS, VIOLATION, SliceVerdict, Verdict
from labeldp.codec import encode, encode_fields


@dataclass(frozen=True)
class ListedSlices:
    """A verdict's declared slices as they are listed: their own false-alarm ``budget``, split over the ``declared``
    slices (each slice's bound at ``confidence`` = 1 - budget / declared; the verdict's status is judged
    separately), the ``design`` in a sentence, and the slice verdicts, the largest bound first."""

    budget: float
    declared: int
    confidence: float
    design: str
    slices: tuple[SliceVerdict, ...]

    @property
    def violations(self) -> tuple[SliceVerdict, ...]:
        return tuple(s for s in self.slices if s.status == VIOLATION)

    @classmethod
    def of_verdict(cls, verdict: Verdict) -> ListedSlices | None:
        """The slices a run judged (`Verdict.slices`, with the result's budget); None when it declared none."""
        audit = verdict.result.slices
        if audit is None or not verdict.slices:
            return None
        return cls(audit.budget, audit.declared, audit.confidence, audit.design, tuple(verdict.slices))

    @classmethod
    def of_stored(cls, row: ResultRow, stored: Sequence[Mapping]) -> ListedSlices | None:
        """The slices stored for ``row`` (`Warehouse.fetch_slices`), the largest bound first; the design sentence
        from the row's result_json (the current one when it has none); None when it has no slice."""
        if not stored:
            return None
        pieces = tuple(SliceVerdict(slicing=s["slicing"], name=s["slice_name"], rows=s["rows"],
                                    check_rows=s["check_rows"], confidence=s["confidence"],
                                    epsilon_lower_bound=s["epsilon_lower_bound"],
                                    max_certifiable_epsilon=s["max_certifiable_epsilon"], status=s["status"],
                                    trust=s["trust"], trust_reason=s["trust_reason"], note=s["note"])
                       for s in stored)
        pieces = tuple(sorted(pieces, key=lambda v: (-v.epsilon_lower_bound, v.slicing, v.name)))
        first = stored[0]
        return cls(float(first["budget"]), int(first["declared"]), float(first["confidence"]),
                   _stored_design(row) or SLICE_DESIGN, pieces)


def _stored_design(row: ResultRow) -> str | None:
    """The slices' design sentence the row's stored result carries (None when it cannot be read)."""
    try:
        design = (json.loads(row.result_json).get("slices") or {}).get("design")
    except (AttributeError, TypeError, ValueError):
        return None
    return design if isinstance(design, str) and design else None


def stored_attack_confidence(row: ResultRow) -> float | None:
    """The confidence of the attack curve's bootstrap intervals, from the row's stored result (None when it
    records none)."""
    try:
        confidence = (json.loads(row.result_json).get("attack_curve") or {}).get("bootstrap_confidence")
    except (AttributeError, TypeError, ValueError):
        return None
    return float(confidence) if isinstance(confidence, int | float) and not isinstance(confidence, bool) else None


@dataclass(frozen=True)
class ListedVerdict:
    """One verdict: ``row`` (its audit_results row), ``report`` (its run report's path; None when there is none).

    A published verdict (``verdict`` set) also carries what the run did with it: ``warehouse`` ("written",
    "recorded" against the row a run on identical inputs wrote, or "spooled" with ``spool_path``:
    `auditing.sinks.warehouse.spool`), the ``alert`` sent (`AlertOutcome.to_dict`), whether the scoring was reused,
    a control's message and the night's reference check. A row read back from the warehouse has ``verdict`` None
    and ``stored_weak_pass``: whether the floors of a PASS stored before WEAK_PASS was a status make it weak, and
    ``stored_slices``: its slices as stored (a published verdict's come from the verdict: ``slices``).
    ``family_nights``: the night's place in its family's test (the nights up to it; None: not known here).
    ``inputs_replaced``: when the day's partition the verdict judged was replaced by other data (UTC, ISO-8601;
    None: it was not, or not known here), so that the verdict reads "inputs replaced since".
    """

    row: ResultRow
    report: str | None = None
    verdict: Verdict | None = None
    warehouse: str | None = None
    spool_path: str | None = None
    alert: Mapping[str, Any] | None = None
    reused_scoring: bool = False
    control_message: str | None = None
    reference_check: ReferenceCheck | None = None
    stored_weak_pass: bool | None = None
    stored_slices: ListedSlices | None = None
    family_nights: int | None = None
    inputs_replaced: str | None = None

    @property
    def slices(self) -> ListedSlices | None:
        """Its declared slices (None: none declared, or a row stored without them)."""
        return ListedSlices.of_verdict(self.verdict) if self.verdict is not None else self.stored_slices

    @property
    def attack_confidence(self) -> float | None:
        """The confidence of its attack curve's bootstrap intervals (None: none recorded)."""
        if self.verdict is not None:
            curve = self.verdict.result.attack_curve
            return None if curve is None else curve.bootstrap_confidence
        return stored_attack_confidence(self.row)

    @property
    def is_target(self) -> bool:
        return not self.row.is_control

    @property
    def trust(self) -> str | None:
        """Its trust state (`trust_state`: a row written before per-verdict trust reads from its reason)."""
        return trust_state(self.row.trust, self.row.untrusted_reason)

    @property
    def weak_pass_mark(self) -> bool:
        """True for a PASS stored before WEAK_PASS whose floors make it weak (the table marks it 'w')."""
        return bool(self.stored_weak_pass) and self.row.status == PASS

    @property
    def detectability_reason(self) -> str | None:
        return None if self.verdict is None else self.verdict.trust.detectability_reason

    def with_alert(self, alert: Mapping[str, Any] | None) -> ListedVerdict:
        from dataclasses import replace

        return replace(self, alert=alert)

    def _encoded(self) -> dict[str, Any]:
        """The ``--json`` record `labeldp.codec.encode` writes: a published verdict's summary (the run's figures and
        what it did), or a stored row's columns with its report. A listing for a reader, never read back."""
        row = self.row
        if self.verdict is None:
            return {**encode_fields(row), "report": self.report, "weak_pass": self.stored_weak_pass,
                    "slices": self.slices, "inputs_replaced_since": self.inputs_replaced}
        return {
            "model_id": row.model_id, "partition_date": row.partition_date, "status": row.status,
            "claimed_epsilon": row.claimed_epsilon, "epsilon_lower_bound": row.epsilon_lower_bound,
            "confidence": row.confidence, "delta": row.delta, "kappa": row.kappa, "strategy": row.strategy,
            "method": row.method, "epsilon_mean": row.epsilon_mean, "epsilon_std": row.epsilon_std,
            "max_certifiable_epsilon": row.max_certifiable_epsilon, "m": row.m,
            "audit_config_hash": row.audit_config_hash, "run_kind": row.run_kind,
            "model_fingerprint": row.model_fingerprint, "warehouse": self.warehouse, "report": self.report,
            "spool_path": self.spool_path, "alert": self.alert,
            "reused_scoring": self.reused_scoring, "kind": row.kind, "untrusted_reason": row.untrusted_reason,
            "control_passed": row.control_passed, "control_floor": row.control_floor,
            "control_message": self.control_message,
            "reference_check": self.reference_check,
            **{name: value for name, value in encode_fields(row).items()
               if name.startswith(("risk_", "attack_", "family_")) or name in DECISION_COLUMNS},
            **encode(self.verdict.trust_figures()),
            "shift_diagnostic": self.verdict.shift_diagnostic,
            "slices": self.slices,
        }


@dataclass(frozen=True)
class SkippedTarget:
    """A target the run could not audit (its model or data was missing), with why: no verdict, no row."""

    model_id: str
    partition_date: dt.date
    # Written in its ``--json`` record between the date and the reason, as a verdict's are; not read back.
    kind: str = field(default="skipped", init=False)
    status: str = field(default="SKIPPED", init=False)
    reason: str


Listed = ListedVerdict | SkippedTarget
