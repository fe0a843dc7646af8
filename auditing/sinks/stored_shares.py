"""The shares the power planner takes from a model's stored nights (`auditing.verdict.power.NightShares`): what each
night's capacity check recorded in its result, read back from the warehouse's rows.

A night is a target's nightly or backfill verdict of one partition date (the family's nights: a guardrail or a
re-judged row is not a night). A date with several verdicts (other audit settings, a day scored again) gives the
one whose audit config hash is the plan's, else the one computed last: the settings in use now. A verdict whose
check measured nothing (it did not run, it predates the strata, it had no check rows) is passed over.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

from auditing.result import AuditResult
from auditing.sinks.family import family_members
from auditing.sinks.warehouse.records import ResultRow
from auditing.verdict.power import NightShares
from labeldp.codec import decode

_FIRST = dt.datetime.min.replace(tzinfo=dt.UTC)


def _preference(row: ResultRow, config_hash: str | None) -> tuple:
    return (row.audit_config_hash == config_hash, row.finished_at or row.started_at or _FIRST, row.audit_config_hash)


def stored_night_shares(rows: Sequence[ResultRow], model_id: str,
                        config_hash: str | None = None) -> list[NightShares]:
    """The shares ``model_id``'s stored nights measured, one per partition date, the latest date first (module
    docstring); ``config_hash``: the plan's audit config hash, preferred where a date has several verdicts."""
    by_date: dict[dt.date, list[ResultRow]] = {}
    for row in family_members(rows, model_id):
        by_date.setdefault(row.partition_date, []).append(row)
    out = []
    for day in sorted(by_date, reverse=True):
        for row in sorted(by_date[day], key=lambda r: _preference(r, config_hash), reverse=True):
            result = decode(AuditResult, json.loads(row.result_json), "result")
            shares = NightShares.of_check(day, result.capacity_check)
            if shares is not None:
                out.append(shares)
                break
    return out


__all__ = ["stored_night_shares"]
