"""A verdict as a run lists it: its warehouse row, the path of its report, and what the run did with it.

A run (nightly, guardrail, backfill, rejudge) returns ``ListedVerdict``s, one per verdict it published, and a
``SkippedTarget`` per target it could not audit; ``labeldp-audit results`` lists the rows it reads back as
``ListedVerdict``s too. The results table, the exit summary and the exit code read their typed fields; ``to_dict``
is the ``--json`` edge.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditing.sinks.warehouse.records import ResultRow, trust_state
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.types import PASS, Verdict


@dataclass(frozen=True)
class ListedVerdict:
    """One verdict: ``row`` (its audit_results row), ``report`` (its run report's path; None when there is none).

    A published verdict (``verdict`` set) also carries what the run did with it: ``warehouse`` ("written", or
    "spooled" with ``spool_path``: `auditing.sinks.warehouse.spool`), the ``alert`` sent (`AlertOutcome.to_dict`), whether the scoring was reused,
    a control's message and the night's reference check. A row read back from the warehouse has ``verdict`` None
    and ``stored_weak_pass``: whether the floors of a PASS stored before WEAK_PASS was a status make it weak.
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

    @property
    def is_target(self) -> bool:
        return self.row.kind != "control"

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

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` record: a published verdict's summary (the run's figures and what it did), or a stored
        row's columns with its report."""
        row = self.row
        if self.verdict is None:
            return {**row.to_dict(), "partition_date": row.partition_date.isoformat(), "report": self.report,
                    "weak_pass": self.stored_weak_pass}
        return {
            "model_id": row.model_id, "partition_date": row.partition_date.isoformat(), "status": row.status,
            "claimed_epsilon": row.claimed_epsilon, "epsilon_lower_bound": row.epsilon_lower_bound,
            "confidence": row.confidence, "delta": row.delta, "kappa": row.kappa, "strategy": row.strategy,
            "method": row.method, "epsilon_mean": row.epsilon_mean, "epsilon_std": row.epsilon_std,
            "max_certifiable_epsilon": row.max_certifiable_epsilon, "m": row.m,
            "audit_config_hash": row.audit_config_hash, "run_kind": row.run_kind,
            "model_fingerprint": row.model_fingerprint, "warehouse": self.warehouse, "report": self.report,
            "spool_path": self.spool_path, "alert": None if self.alert is None else dict(self.alert),
            "reused_scoring": self.reused_scoring, "kind": row.kind, "untrusted_reason": row.untrusted_reason,
            "control_passed": row.control_passed, "control_floor": row.control_floor,
            "control_message": self.control_message,
            "reference_check": None if self.reference_check is None else self.reference_check.to_dict(),
            **{name: value for name, value in row.to_dict().items()
               if name.startswith(("risk_", "attack_", "family_"))},
            **self.verdict.trust_figures().to_dict(),
            "shift_diagnostic": None if self.verdict.shift_diagnostic is None else self.verdict.shift_diagnostic.to_dict(),
        }


@dataclass(frozen=True)
class SkippedTarget:
    """A target the run could not audit (its model or data was missing), with why: no verdict, no row."""

    model_id: str
    partition_date: dt.date
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "partition_date": self.partition_date.isoformat(), "kind": "skipped",
                "status": "SKIPPED", "reason": self.reason}


Listed = ListedVerdict | SkippedTarget
