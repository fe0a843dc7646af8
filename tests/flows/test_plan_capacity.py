"""A trained target's own CatBoost capacity (``catboost`` in a plan target, `flows.plan.TargetSpec`,
`pipelines.training.fitting.CatBoostOverrides`): it reaches that target's fit and no other model's, it is part of
what a registered model is reused by, it reads and writes through the plan file, and a bad one is refused with
exit 2 naming its key.

Real CatBoost fits on a small synthetic Criteo day; the trained models' own trees say what they were fitted with."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math

import pytest

from flows import steps
from flows.cli import main
from flows.plan import AuditPlan, TargetSpec, default_plan, load_plan
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from pipelines.data import synth
from pipelines.models import registry
from pipelines.models.handle import resolve_model
from pipelines.training.fitting import CatBoostOverrides

D0, D1 = dt.date(2024, 6, 1), dt.date(2024, 6, 2)
DEEP = CatBoostOverrides(iterations=7, depth=3, l2_leaf_reg=0.5, use_best_model=False)


def _plan(capacity: CatBoostOverrides | None, on_missing_target: str = "train") -> AuditPlan:
    return AuditPlan(targets=(TargetSpec("memo", "none", math.inf, claimed_epsilon=0.5, catboost=capacity),
                              TargetSpec("plain", "rr", 1.0)),
                     catboost_iterations=5, on_missing_target=on_missing_target)


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    root = tmp_path_factory.mktemp("capacity")
    for day in (D0, D1):
        synth.write_synthetic_day(root, day, rows=3000)
    plan = _plan(DEEP)
    day = steps.check_partition(root, D1, plan)
    reference = steps.ensure_reference(day, plan)
    models = {spec.name: steps.ensure_target(day, spec, plan, reference=reference) for spec in plan.targets}
    return {"root": root, "day": day, "reference": reference, "models": models}


def _trees(handle) -> tuple[int, int, float]:
    """(trees, depth, l2_leaf_reg) of a registered CatBoost model, read from the model itself."""
    model = registry.load_model(handle)
    params = model.get_all_params()
    return int(model.tree_count_), int(params["depth"]), float(params["l2_leaf_reg"])


def test_the_capacity_reaches_its_targets_fit_and_no_other(night):
    memo, plain, reference = night["models"]["memo"], night["models"]["plain"], night["reference"]
    assert _trees(memo) == (7, 3, 0.5)  # every iteration kept: no best-iteration pick
    assert memo.meta.test_metrics["best_iteration"] is None
    assert memo.meta.catboost_params["use_best_model"] is False
    # no validation label was read, so none is recorded as read
    assert memo.meta.training_rows.label_splits == ("train",)
    # the other target and the reference keep the plan's settings (5 iterations, depth 6, best iteration picked)
    for handle in (plain, reference):
        trees, depth, l2 = _trees(handle)
        assert trees <= 5 and depth == 6 and l2 == 3.0
        assert "use_best_model" not in handle.meta.catboost_params


def test_a_model_trained_with_another_capacity_is_not_reused(night):
    day, reference = night["day"], night["reference"]
    same = _plan(DEEP, on_missing_target="fail")
    messages = []
    model = steps.ensure_target(day, same.target("memo"), same, progress=messages.append, reference=reference)
    assert model.fingerprint == night["models"]["memo"].fingerprint and "reusing" in messages[-1]
    for capacity, named in ((dataclasses.replace(DEEP, depth=4), "catboost depth 3 != 4"),
                            (dataclasses.replace(DEEP, use_best_model=None), "catboost use_best_model False != None"),
                            (None, "catboost depth 3 != 6")):
        other = _plan(capacity, on_missing_target="fail")
        with pytest.raises(LabelDPInputError, match="made differently than the plan says") as info:
            steps.ensure_target(day, other.target("memo"), other, reference=reference)
        assert named in str(info.value)
    # the plain target was trained as its plan says either way
    assert steps.ensure_target(day, same.target("plain"), _plan(None, "fail"), reference=reference).fingerprint \
        == night["models"]["plain"].fingerprint
    assert resolve_model(night["root"], "memo", D1).fingerprint == night["models"]["memo"].fingerprint


def test_the_capacity_reads_and_writes_through_the_plan_file(tmp_path):
    target = TargetSpec("memo", "none", math.inf, claimed_epsilon=0.5, catboost={"depth": 9, "use_best_model": False})
    assert target.catboost == CatBoostOverrides(depth=9, use_best_model=False)
    record = json.loads(json.dumps(encode(target)))
    assert record["catboost"] == {"depth": 9, "use_best_model": False}  # only the keys given
    assert decode(TargetSpec, record, "target") == target
    assert "catboost" not in encode(TargetSpec("plain", "rr", 1.0))
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"targets": [record]}))
    assert load_plan(path).target("memo").catboost == target.catboost
    # the built-in plan and its file copy give the planted violation the same capacity
    planted = default_plan().target("planted-violation").catboost
    assert planted is not None and planted.use_best_model is False
    assert load_plan("infra/plans/default.json").target("planted-violation").catboost == planted


@pytest.mark.parametrize(("capacity", "named"), [
    ({"depth": 17}, "targets[0].catboost.depth"),
    ({"depth": 0}, "targets[0].catboost.depth"),
    ({"dept": 8}, "targets[0].catboost.dept: unknown field; did you mean depth?"),
    ({"l2_leaf_reg": 0}, "targets[0].catboost.l2_leaf_reg"),
    ({"use_best_model": "no"}, "targets[0].catboost.use_best_model"),
    ({"iterations": 2.5}, "targets[0].catboost.iterations"),
], ids=["depth-over-16", "depth-0", "typo", "l2-0", "not-a-bool", "fraction"])
def test_a_bad_capacity_is_refused_with_exit_2_naming_its_key(tmp_path, capsys, capacity, named):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"targets": [{"name": "memo", "mechanism": "none", "epsilon": "inf",
                                             "claimed_epsilon": 0.5, "catboost": capacity}]}))
    assert main(["plan", "check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and named in captured.err and len(captured.err.strip().splitlines()) == 1
    # the nightly refuses it before any work, with the same line
    assert main(["nightly", "--date", "2024-06-02", "--plan", str(path), "--data-root", str(tmp_path / "root"),
                 "--quiet"]) == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "root" / "models").exists()


def test_a_bad_capacity_built_in_code_names_its_target_and_key():
    with pytest.raises(LabelDPInputError, match=r"target memo: catboost\.depth must be at most 16"):
        TargetSpec("memo", "none", math.inf, catboost={"depth": 20})
    with pytest.raises(LabelDPInputError, match=r"depth must be at most 16"):
        CatBoostOverrides(depth=20)


def test_plan_check_text_names_a_targets_capacity_and_reads_targets_without_one(capsys):
    """The built-in plan file: the planted target's capacity is listed on its line, and the targets with the plan's
    own settings (no ``catboost`` key in the encoded plan) print without one."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "infra" / "plans" / "default.json"
    assert main(["plan", "check", str(path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()
             if line.startswith("  ") and len(line.split()) > 1}
    assert "catboost iterations 100, depth 10, l2_leaf_reg 0.1, use_best_model false" in lines["planted-violation"]
    assert "catboost" not in lines["rr-eps1"] and "catboost" not in lines["lp-1st-eps2"]
