"""`labeldp-audit plan power` (flows/commands/plan.py): the gaps it prints and its JSON for assumed shares, and with
``--from-warehouse`` the planner's shares read from a real DuckDB warehouse whose nights were written through the
real sinks (run_audit with check rows -> judge -> audit_record -> write_audit). The shares it plans with are the
median of what the stored capacity checks recorded, it names the nights, and a warehouse without such a night is
an error naming the flag (exit 2). The planner itself: tests/auditing/verdict/test_power.py."""

from __future__ import annotations

import datetime as dt
import json
import statistics

import pytest

from auditing.result import AuditResult
from auditing.sinks.warehouse import audit_record, open_warehouse
from auditing.sinks.warehouse.base import open_read_only
from auditing.verdict.judge import judge
from auditing.verdict.power import MATCHED_SHARE
from flows.cli import main
from labeldp.codec import decode
from tests.support import checked_audits

NIGHTS = [dt.date(2026, 9, d) for d in (1, 2, 3, 4)]
LEAKS = (0.3, 0.1, 0.45, 0.2)  # other leaks: other thresholds, other shares a night


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """Four nightly verdicts of model "deep" (claim 0.5), a guardrail on a fifth day (claim 0.75: not a night) and
    nothing else."""
    path = str(tmp_path_factory.mktemp("plan") / "warehouse.duckdb")
    with open_warehouse(path) as wh:
        for index, (day, leak) in enumerate(zip(NIGHTS, LEAKS, strict=True)):
            result = checked_audits.audit(leak, 0.0, seed=index)
            finished = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(1), tzinfo=dt.UTC)
            wh.write_audit(*audit_record(judge(result, 0.5), run_kind="nightly", model_id="deep", partition_date=day,
                                         lineage={"finished_at": finished}))
        later = dt.date(2026, 9, 5)
        wh.write_audit(*audit_record(judge(checked_audits.audit(0.9, 0.0, seed=9), 0.75), run_kind="guardrail",
                                     model_id="deep", partition_date=later))
    return path


def _stored_checks(path: str) -> dict[dt.date, object]:
    with open_read_only(path) as wh:
        rows = wh.fetch_results(model_id="deep")
    return {r.partition_date: decode(AuditResult, json.loads(r.result_json)).capacity_check for r in rows
            if r.run_kind == "nightly"}


def _plan(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["plan", "power", "--rows", "100000", "--holdout", "0.2", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_shares_are_the_median_of_the_stored_checks_latest_nights(warehouse, capsys):
    checks = _stored_checks(warehouse)
    latest = sorted(checks, reverse=True)[:3]
    code, out, _ = _plan(capsys, "--from-warehouse", "--warehouse", warehouse, "--model", "deep",
                         "--claimed-epsilon", "0.5", "--measured-nights", "3", "--json")
    assert code == 0
    [plan] = json.loads(out)
    assert (plan["source"], plan["model_id"], plan["claimed_epsilon"]) == ("measured", "deep", 0.5)
    assert [n["partition_date"] for n in plan["measured_nights"]] == [d.isoformat() for d in latest]
    for night in plan["measured_nights"]:
        check = checks[dt.date.fromisoformat(night["partition_date"])]
        assert (night["check_rows"], night["check_guesses"], night["matched_check_guesses"]) == (
            check.check_rows, check.check_guesses, check.matched_check_guesses)
    guess = statistics.median(checks[d].check_guesses / checks[d].check_rows for d in latest)
    matched = statistics.median(checks[d].matched_check_guesses / checks[d].check_guesses for d in latest)
    assert plan["guess_share"] == pytest.approx(guess) and plan["matched_share"] == pytest.approx(matched)
    assert len({checks[d].check_guesses for d in latest}) == 3  # the nights differ: the median picks among them

    code, out, _ = _plan(capsys, "--from-warehouse", "--warehouse", warehouse, "--model", "deep",
                         "--claimed-epsilon", "0.5")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("claim 0.5 (deep): 72,000 audited and 20,000 check rows")
    assert lines[1].startswith("  planned from 4 nights of deep, 2026-09-01..2026-09-04 (the median): guess share ")
    assert lines[2].startswith("  a night confirms: a leak at eps ")


def test_the_plans_targets_are_planned_at_their_claims(warehouse, capsys, tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"targets": [{"name": "deep", "mechanism": "rr", "epsilon": 2.0}]}))
    code, out, _ = _plan(capsys, "--plan", str(plan_file), "--from-warehouse", "--warehouse", warehouse, "--json")
    assert code == 0
    [plan] = json.loads(out)
    assert (plan["model_id"], plan["claimed_epsilon"], len(plan["measured_nights"])) == ("deep", 2.0, 4)
    # a registered target without a claim in the plan: its stored nights' claim (the guardrail's row is no night)
    plan_file.write_text(json.dumps({"targets": [{"name": "deep", "source": "registered"}]}))
    code, out, _ = _plan(capsys, "--plan", str(plan_file), "--from-warehouse", "--warehouse", warehouse, "--json")
    assert code == 0 and [p["claimed_epsilon"] for p in json.loads(out)] == [0.5]


def test_no_stored_night_is_an_error_naming_the_flag(warehouse, capsys, tmp_path):
    empty = str(tmp_path / "empty.duckdb")
    with open_warehouse(empty):
        pass
    code, out, err = _plan(capsys, "--from-warehouse", "--warehouse", empty, "--model", "deep")
    assert code == 2 and out == ""
    assert "--from-warehouse: no stored night (nightly or backfill) of deep whose capacity check measured" in err
    code, _, err = _plan(capsys, "--from-warehouse", "--warehouse", warehouse, "--model", "nobody")
    assert code == 2 and "of nobody whose capacity check" in err
    code, _, err = _plan(capsys, "--from-warehouse", "--warehouse", str(tmp_path / "missing.duckdb"))
    assert code == 2 and "DuckDB file not found" in err
    code, _, err = _plan(capsys, "--from-warehouse", "--warehouse", warehouse, "--model", "deep", "--guess-share", "0.1")
    assert code == 2 and "--guess-share and --from-warehouse: give one" in err


def test_plan_power_prints_the_gaps_and_json(capsys):
    assert main(["plan", "power", "--rows", "51000", "--holdout", "0.2", "--claimed-epsilon", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("claim 1: 36,720 audited and 10,200 check rows, 95% confidence, the leak on 10% of the "
                             "rows, 50% matched")
    assert out[1].startswith("  shares assumed, not measured") and "nearer 1% (docs/soundness.md 8.9)" in out[1]
    assert out[2].startswith("  a night confirms: a leak at eps ") and "90% power" in out[2]
    assert out[3].startswith("  a family confirms within 7 nights: a leak at eps ")
    # the same day at the other holdout shares, the plan's own left out
    assert out[4] == "  at other holdout shares of the day (the gap a night / a family within 7 nights confirms):"
    assert [line.split(":")[0].strip() for line in out[5:9]] == ["10%", "30%", "40%", "50%"]
    assert out[5].startswith("    10%: 41,310 audited, 5,100 check rows: +")
    assert out[9].startswith("  at a guess share of 1%: a night confirms +")
    assert main(["plan", "power", "--rows", "51000", "--holdout", "0.2", "--claimed-epsilon", "1", "--json"]) == 0
    figures, nearer = json.loads(capsys.readouterr().out)
    assert figures["check_rows"] == 10200 and figures["can_ever_confirm"] and figures["family_gap"] < figures["night_gap"]
    assert (figures["source"], figures["guess_share"], figures["matched_share"]) == ("assumed", 0.1, MATCHED_SHARE)
    assert figures["measured_nights"] == [] and figures["model_id"] is None
    others = {o["holdout"]: o for o in figures["other_holdouts"]}
    assert sorted(others) == [0.1, 0.3, 0.4, 0.5] and others[0.3]["check_rows"] == 15300
    assert others[0.1]["night_gap"] > figures["night_gap"] > others[0.3]["night_gap"]
    assert (nearer["source"], nearer["guess_share"]) == ("assumed", 0.01) and nearer["night_gap"] > figures["night_gap"]
    # a share the user gives is theirs: one plan, no second line
    assert main(["plan", "power", "--rows", "51000", "--holdout", "0.2", "--claimed-epsilon", "1", "--guess-share",
                 "0.02", "--json"]) == 0
    [given] = json.loads(capsys.readouterr().out)
    assert (given["source"], given["guess_share"]) == ("assumed", 0.02)
    assert main(["plan", "power", "--rows", "51000", "--model", "rr-eps1"]) == 2
    assert "--model apply only with --from-warehouse" in capsys.readouterr().err
    assert main(["plan", "power", "--rows", "2000", "--holdout", "0.01", "--claimed-epsilon", "3"]) == 0
    assert "no night can confirm a violation of this claim" in capsys.readouterr().out
    assert main(["plan", "power", "--rows", "2000", "--holdout", "1.5"]) == 2
    assert "--holdout must be in [0, 1)" in capsys.readouterr().err
