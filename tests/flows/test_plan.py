"""flows/plan.py: a plan as labeldp.codec writes it (its file's keys), as its hand-written ``to_dict`` wrote it.

tests/flows/fixtures/plan_before.json holds, for the default plan, infra/plans/default.json and
tests/flows/fixtures/plans/team.json, what ``AuditPlan.to_dict`` gave and what ``plan check --json`` printed
(`flows.commands.plan.resolved`), captured before the codec (the dataset's path shortened to its file name), with one deliberate change since: the
default plan's planted violation has its own CatBoost capacity (its target's ``catboost`` key)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from flows.commands.plan import resolved
from flows.plan import RegisteredTarget, TargetSpec, load_plan
from labeldp.codec import decode, encode

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
BEFORE = json.loads((FIXTURES / "plan_before.json").read_text(encoding="utf-8"))
PATHS = {"default_file": ROOT / "infra" / "plans" / "default.json", "team": FIXTURES / "plans" / "team.json"}


def _plan(name: str):
    return load_plan(PATHS.get(name))


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_plan_encodes_as_its_to_dict_wrote_it(name):
    before = BEFORE[name]["to_dict"]
    written = json.loads(json.dumps(encode(_plan(name))))
    written["dataset"]["source"] = Path(written["dataset"]["source"]).name
    assert written == before and list(written) == list(before)
    assert [list(t) for t in written["targets"]] == [list(t) for t in before["targets"]]
    assert list(written["audit"]) == list(before["audit"]) and list(written["controls"]) == list(before["controls"])


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_plan_check_prints_what_it_printed_before(name):
    view = resolved(_plan(name), "PLAN")
    view["dataset"]["spec"] = Path(view["dataset"]["spec"]).name
    assert json.dumps(view, indent=1) == BEFORE[name]["check_json"]


def test_a_target_reads_back_from_its_record():
    for target in (TargetSpec("open", "none", math.inf), TargetSpec("rr", "rr", 1.0, 0.5), RegisteredTarget("team"),
                   RegisteredTarget("team", 0.5)):
        record = json.loads(json.dumps(encode(target)))
        assert decode(type(target), record, "target") == target and record["source"] == target.source
