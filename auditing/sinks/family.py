"""A model family's evidence across nights, read from the warehouse (docs/soundness.md section 10).

The family of a target is its rows of the nightly and backfill runs (a guardrail audits a release on a day the
nightly also audits, and a re-judged row chose its settings after the night: neither enters). Per partition date
the row computed first counts (its ``started_at``, then ``finished_at``; rows without either last), and the nights
enter in the order they were computed. Controls never enter. A later verdict of a night on other inputs (the day
ingested again, a model registered again, other settings: a row of its own, `auditing.sinks.warehouse`) never
changes the night's place or counts; `later_runs` says which nights have one and what changed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from auditing.result import AuditResult
from auditing.sinks.warehouse.records import ResultRow
from auditing.sinks.warehouse.schema import INPUT_FINGERPRINTS
from auditing.verdict.family_evidence import (
    DEFAULT_ALPHA,
    FamilyEvidence,
    NightCounts,
    NightEvidence,
    family_evidence,
)
from auditing.verdict.run_kinds import BACKFILL, NIGHTLY
from labeldp.codec import decode

FAMILY_RUN_KINDS = (NIGHTLY, BACKFILL)
_LAST = dt.datetime.max.replace(tzinfo=dt.UTC)


def _computed_at(row: ResultRow) -> dt.datetime:
    return row.started_at or row.finished_at or _LAST


# What `later_runs` compares between a night's first verdict and a later one: every input's fingerprint, the claim.
COMPARED = (*INPUT_FINGERPRINTS, "claimed_epsilon")


@dataclass(frozen=True)
class LaterRunListing:
    """A `LaterRun` as `results --family --json` lists it."""

    partition_date: dt.date
    first_run_id: str
    run_id: str
    status: str
    epsilon_lower_bound: float
    changed: tuple[str, ...]


@dataclass(frozen=True)
class LaterRun:
    """A verdict of a family night computed after the night's first (``first``) on other inputs: ``changed`` names
    the fingerprints (`COMPARED`) that differ where both recorded them (empty when the first recorded none of them:
    a row written before schema version 9). Written as its `LaterRunListing`."""

    first: ResultRow
    later: ResultRow
    changed: tuple[str, ...]

    def _encoded(self) -> LaterRunListing:
        return LaterRunListing(self.later.partition_date, self.first.run_id, self.later.run_id, self.later.status,
                               self.later.epsilon_lower_bound, self.changed)


def family_members(rows: Sequence[ResultRow], model_id: str, until: dt.date | None = None) -> list[ResultRow]:
    """Every verdict of ``model_id``'s family nights (a target's nightly or backfill row; not a control, a guardrail
    or a re-judged row), all the runs of each night; with ``until``, only nights up to that date."""
    return [row for row in rows if row.model_id == model_id and not row.is_control
            and row.run_kind in FAMILY_RUN_KINDS and (until is None or row.partition_date <= until)]


def later_runs(rows: Sequence[ResultRow], model_id: str, until: dt.date | None = None) -> list[LaterRun]:
    """The verdicts of ``model_id``'s family nights computed after each night's first on other inputs (another
    partition, model file, training rows, reference, correction, stored game, configuration, night or claim), in
    the order computed. The family counts the first; these say that a later run of the night saw other inputs."""
    first = {row.partition_date: row for row in family_rows(rows, model_id, until)}
    out = []
    for row in sorted(family_members(rows, model_id, until), key=lambda r: (_computed_at(r), r.partition_date)):
        night = first.get(row.partition_date)
        if night is None or row.key == night.key:
            continue
        changed = tuple(name for name in COMPARED if getattr(row, name) is not None
                        and getattr(night, name) is not None and getattr(row, name) != getattr(night, name))
        if not changed and row.inputs_fingerprint == night.inputs_fingerprint:
            continue  # the same inputs: a backfill of the night (another run kind)
        out.append(LaterRun(night, row, changed))
    return out


def family_rows(rows: Sequence[ResultRow], model_id: str, until: dt.date | None = None) -> list[ResultRow]:
    """The rows of ``model_id``'s family, one per partition date (the first computed), in the order computed;
    with ``until``, only nights up to that date."""
    first: dict[dt.date, ResultRow] = {}
    for row in family_members(rows, model_id, until):
        known = first.get(row.partition_date)
        if known is None or (_computed_at(row), row.audit_config_hash) < (_computed_at(known), known.audit_config_hash):
            first[row.partition_date] = row
    return sorted(first.values(), key=lambda r: (_computed_at(r), r.partition_date))


def night_numbers(rows: Sequence[ResultRow]) -> dict[tuple[str, dt.date], int]:
    """Each family night's place in its family (1-based, in the order computed), by (model_id, partition_date);
    ``rows``: each model's whole stored history (a filtered listing would miscount)."""
    by_model: dict[str, list[ResultRow]] = {}
    for row in rows:
        by_model.setdefault(row.model_id, []).append(row)
    return {(model, row.partition_date): place for model, history in by_model.items()
            for place, row in enumerate(family_rows(history, model), 1)}


def family_of(rows: Sequence[ResultRow], model_id: str, *, until: dt.date | None = None,
              alpha: float = DEFAULT_ALPHA) -> FamilyEvidence:
    """The family's test over its stored nights (`family_rows`)."""
    return family_evidence([_night(r) for r in family_rows(rows, model_id, until)], alpha)


def _night(row: ResultRow) -> NightCounts:
    result = decode(AuditResult, json.loads(row.result_json), "result")
    return NightCounts.of_result(row.partition_date, row.claimed_epsilon, result)


def family_with(rows: Sequence[ResultRow], model_id: str, night: NightCounts,
                alpha: float = DEFAULT_ALPHA) -> tuple[FamilyEvidence, NightEvidence]:
    """The family's test as it stands once ``night`` (being computed now) joins its stored nights, and that night's
    entry. A night whose date already has a row computed before keeps that first row's place and counts; a new
    night enters last, whatever its date (a backfill enters in the order it was computed)."""
    stored = family_rows(rows, model_id)
    nights = [_night(r) for r in stored]
    if all(r.partition_date != night.partition_date for r in stored):
        nights.append(night)
    test = family_evidence(nights, alpha)
    return test, next(n for n in test.nights if n.partition_date == night.partition_date)
