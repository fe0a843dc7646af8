"""A registered model is reused only when everything that made it is the same (`pipelines.training.train.reuse_mismatch`):
real models trained on a small synthetic Criteo day, their metadata compared with what a run would use. Each field
that differs is named (registered value first); identical inputs give None."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import pytest

from pipelines.data import schema, synth
from pipelines.data.dataset_spec import DatasetSpec, criteo
from pipelines.data.day import listed_day
from pipelines.training import train as training
from pipelines.training.mechanisms import mechanism_from
from tests.support.model_handles import FILLER

DAY = dt.date(2024, 6, 2)
FAST = training.CatBoostSettings(iterations=8, learning_rate=0.3, depth=4, thread_count=2)
OTHER = DatasetSpec(name="shop", label="clicked", classes=2, row_key="impression_id", numeric=("price",),
                    categorical=("country",))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("reuse")
    synth.write_synthetic_day(root, DAY, rows=3000)
    models = {}
    for name, mechanism, epsilon in (("rr", "rr", 1.0), ("none", "none", math.inf), ("alibi", "alibi", 2.0)):
        options = training.MechanismOptions(prior="uniform")
        _, models[name] = training.train_and_register(listed_day(root, DAY), mechanism, epsilon, model_name=name, seed=3,
                                                      settings=FAST, options=options, on_missing_reference="skip")
    return {"root": root, "models": models, "fingerprint": schema.partition_fingerprint(root, DAY)}


def _same(world, **changes):
    wanted = {"mechanism": "rr", "epsilon": 1.0, "seed": 3, "partition_fingerprint": world["fingerprint"],
              "settings": FAST, "dataset": criteo()}
    wanted.update(changes)
    return wanted


def test_identical_inputs_reuse_the_model(world):
    models = world["models"]
    assert training.reuse_mismatch(models["rr"], **_same(world)) is None
    assert training.reuse_mismatch(models["rr"], **_same(world, mechanism=mechanism_from("rr"))) is None
    assert training.reuse_mismatch(models["none"], **_same(world, mechanism="none", epsilon=math.inf)) is None
    # ALIBI fits soft labels (CrossEntropy): the recorded loss is the mechanism's, not a setting
    assert models["alibi"].catboost_params["loss_function"] == "CrossEntropy"
    assert training.reuse_mismatch(models["alibi"], **_same(world, mechanism="alibi", epsilon=2.0)) is None


@pytest.mark.parametrize(("changes", "expected"), [
    ({"settings": dataclasses.replace(FAST, iterations=50)}, "catboost iterations 8 != 50"),
    ({"settings": dataclasses.replace(FAST, thread_count=1)}, "catboost thread_count 2 != 1"),
    ({"settings": dataclasses.replace(FAST, use_best_model=False)}, "catboost use_best_model None != False"),
    ({"settings": dataclasses.replace(FAST, extra={"l2_leaf_reg": 10})}, "catboost l2_leaf_reg 3.0 != 10"),
    ({"seed": 4}, "seed 3 != 4"),
    ({"epsilon": 2.0}, "epsilon 1 != 2"),
    ({"mechanism": "lp-1st"}, "mechanism rr != lp-1st"),
])
def test_each_difference_is_named(world, changes, expected):
    assert training.reuse_mismatch(world["models"]["rr"], **_same(world, **changes)) == expected


def test_partition_and_dataset_differences_are_named(world):
    rr = world["models"]["rr"]
    moved = training.reuse_mismatch(rr, **_same(world, partition_fingerprint="sha256:" + "0" * 64))
    assert moved == f"partition {world['fingerprint'][:19]}... != sha256:000000000000..."
    other = training.reuse_mismatch(rr, **_same(world, dataset=OTHER))
    assert other.startswith(f"dataset criteo ({criteo().fingerprint()[:19]}...) != shop (sha256:")


def test_several_differences_are_all_named(world):
    text = training.reuse_mismatch(world["models"]["rr"], **_same(
        world, seed=5, settings=dataclasses.replace(FAST, depth=6, iterations=9)))
    assert text == "seed 3 != 5; catboost depth 4 != 6; catboost iterations 8 != 9"  # no random_seed noise


def test_a_registered_outside_model_is_never_taken_for_a_trained_one(world):
    outside = {**FILLER, "model_name": "outside", "date": DAY.isoformat(),
               "mechanism": {"name": "external", "epsilon": 1.0, "delta": 0.0}, "seed": None,
               "partition_fingerprint": world["fingerprint"], "catboost_params": None}
    text = training.reuse_mismatch(outside, **_same(world))
    assert text == "mechanism external != rr; seed None != 3; no catboost parameters recorded"
