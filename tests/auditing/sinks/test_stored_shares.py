"""`auditing.sinks.stored_shares`: the shares the power planner reads from a model's stored nights: one night per
date, the latest first, the plan's audit config preferred, then the verdict computed last; guardrails, re-judged
rows, controls and checks that measured nothing are passed over. Rows from real audits (`tests.support.checked_audits`)
rendered by the real `audit_record`."""

from __future__ import annotations

import dataclasses
import datetime as dt

from auditing.sinks.stored_shares import stored_night_shares
from auditing.sinks.warehouse import audit_record
from auditing.verdict.judge import judge
from auditing.verdict.power import NightShares
from tests.support import checked_audits

D1, D2, D3 = dt.date(2026, 9, 1), dt.date(2026, 9, 2), dt.date(2026, 9, 3)


def _row(result, day: dt.date, *, model: str = "m", run_kind: str = "nightly", minute: int = 0):
    finished = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(1, minute), tzinfo=dt.UTC)
    row, _ = audit_record(judge(result, 1.0), run_kind=run_kind, model_id=model, partition_date=day,
                          lineage={"finished_at": finished})
    return row


def test_one_night_per_date_latest_first_the_plans_config_preferred():
    leaky, clean = checked_audits.leaky(seed=1), checked_audits.clean(seed=2)
    other = checked_audits.audit(0.1, 0.0, seed=3, repetitions=3)  # another audit config
    unchecked = dataclasses.replace(checked_audits.clean(seed=4), capacity_check=None)
    rows = [_row(leaky, D1), _row(clean, D2), _row(other, D2, minute=5),  # D2: `other` finished last
            _row(unchecked, D3, minute=9), _row(clean, D3),  # D3: the later verdict's check measured nothing
            _row(leaky, D3, run_kind="guardrail", minute=30),  # not a night
            _row(leaky, D2, model="other-model"),
            dataclasses.replace(_row(leaky, D3, minute=40), kind="control")]

    def expected(result, day):
        return NightShares.of_check(day, result.capacity_check)

    assert stored_night_shares(rows, "m") == [expected(clean, D3), expected(other, D2), expected(leaky, D1)]
    plans_hash = rows[1].audit_config_hash
    assert plans_hash != rows[2].audit_config_hash and expected(clean, D2) != expected(other, D2)
    assert stored_night_shares(rows, "m", plans_hash)[1] == expected(clean, D2)
    assert stored_night_shares(rows, "nobody") == []
    figures = expected(leaky, D1)
    check = leaky.capacity_check
    assert (figures.check_rows, figures.check_guesses, figures.matched_check_guesses) == (
        check.check_rows, check.check_guesses, check.matched_check_guesses)
    assert 0 < figures.guess_share <= 1 and 0 < figures.matched_share <= 1
