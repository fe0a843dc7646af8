"""The mechanism registry (pipelines/training/mechanisms/base.py): a mechanism is one registered class, and training,
the train CLI and the plan take their choices from the registry.

A toy mechanism registered here (and unregistered after) trains through `train_model` and the CLI without
any other file knowing it; every registered mechanism maps name -> class -> registry metadata; unknown names
and out-of-range parameters are refused with messages that name them. Real CatBoost on a tiny synthetic day.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re

import numpy as np
import pytest

from flows.cli import build_parser, main
from flows.plan import TargetSpec
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data import splits
from pipelines.data.day import listed_day
from pipelines.data.synth import write_synthetic_day
from pipelines.models import registry
from pipelines.training import train as training
from pipelines.training.mechanisms import (
    MECHANISMS,
    LabelContext,
    Mechanism,
    MechanismOptions,
    PriorMechanism,
    Release,
    get_mechanism,
    mechanism_names,
    register,
    unregister,
)
from pipelines.training.mechanisms.alibi import Alibi
from pipelines.training.mechanisms.base import UNIT
from pipelines.training.mechanisms.identity import NoPrivacy
from pipelines.training.mechanisms.pate import Pate
from pipelines.training.mechanisms.rr_with_prior import RRWithPrior
from pipelines.training.mechanisms.two_stage import TwoStage

DAY = dt.date(2024, 5, 2)
ROWS = 3000
FAST = training.CatBoostSettings(iterations=5, learning_rate=0.3, depth=3, thread_count=2)
BUILT_IN = ("none", "rr", "lp-1st", "lp-1st-nc", "lp-2st", "alibi", "pate")
SMALL = MechanismOptions(prior="uniform", pate_teachers=2, pate_queries=100)


@dataclasses.dataclass(frozen=True)
class Coin(Mechanism):
    """Toy: every released label is an independent coin with P(1) = ``coin_bias``, whatever the true label
    (so it is eps-label-DP for every eps). ``coin_bias`` is a parameter no MechanismOptions field carries."""

    name = "toy-coin"
    summary = "a coin per row, labels ignored"

    coin_bias: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 < self.coin_bias < 1.0:
            raise LabelDPInputError(f"coin_bias must be in (0, 1); got {self.coin_bias!r}")

    def privatize(self, context: LabelContext) -> Release:
        coins = (context.rng.random(context.labels.size) < self.coin_bias).astype(np.int64)
        return Release(targets=coins, parameters={"coin_bias": self.coin_bias})


@pytest.fixture
def toy():
    register(Coin)
    try:
        yield Coin
    finally:
        unregister(Coin.name)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("mechanism-registry")
    write_synthetic_day(root, DAY, rows=ROWS)
    return root


@pytest.fixture(scope="module")
def day(data_root):
    return training.load_day(listed_day(data_root, DAY))


# ------------------------------------------------------------------------------------------ a new mechanism


def test_a_registered_toy_mechanism_trains_without_editing_any_other_file(toy, day):
    assert mechanism_names() == (*BUILT_IN, "toy-coin") and get_mechanism("toy-coin") is Coin
    result = training.train_model(day, "toy-coin", 2.0, seed=1, settings=FAST)
    private = day.private_rows
    assert result.privatized_labels.size == private.size
    assert 0.4 < result.privatized_labels.mean() < 0.6                   # coins, not the ~25% click rate
    assert result.mechanism["name"] == "toy-coin" and result.mechanism["delta"] == 0.0
    assert result.mechanism["parameters"] == {"coin_bias": 0.5}
    assert result.mechanism["guarantee"] == "2-label-DP (pure, delta = 0)"
    assert result.training_rows["validation_labels_used_for"] == ["chose the best iteration (use_best_model)"]
    # An instance carries its own parameters; the same seed draws the same coins.
    biased = training.train_model(day, Coin(coin_bias=0.9), 2.0, seed=1, settings=FAST)
    assert biased.mechanism["parameters"] == {"coin_bias": 0.9} and biased.privatized_labels.mean() > 0.8
    again = training.train_model(day, "toy-coin", 2.0, seed=1, settings=FAST)
    assert np.array_equal(again.privatized_labels, result.privatized_labels)


def test_a_registered_toy_mechanism_is_a_train_cli_choice(toy, data_root, capsys):
    args = build_parser().parse_args(["train", "--date", DAY.isoformat(), "--mechanism", "toy-coin",
                                      "--epsilon", "1"])
    assert args.mechanism == "toy-coin"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--help"])
    help_text = capsys.readouterr().out
    assert re.search(r"^  toy-coin   a coin per row, labels ignored +eps-label-DP$", help_text, re.MULTILINE)
    code = main(["train", "--date", DAY.isoformat(), "--mechanism", "toy-coin", "--epsilon", "1",
                 "--model-name", "toy", "--on-missing-reference", "skip", "--data-root", str(data_root),
                 "--iterations", "3", "--depth", "3"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "mechanism  toy-coin  epsilon 1.0" in out.out and "1-label-DP" in out.out
    assert encode(registry.read_metadata(data_root, "toy", DAY))["mechanism"]["parameters"] == {"coin_bias": 0.5}
    assert TargetSpec("t", "toy-coin", 1.0).mechanism == "toy-coin"


def test_unregistering_removes_the_choice(toy):
    unregister(Coin.name)
    assert "toy-coin" not in mechanism_names()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--date", DAY.isoformat(), "--mechanism", "toy-coin", "--epsilon", "1"])


# ------------------------------------------------------------------------------------------ every mechanism


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_mechanism_round_trips_name_class_metadata(name, day, data_root):
    cls = get_mechanism(name)
    assert cls.name == name and MECHANISMS.get(name) is cls and issubclass(cls, Mechanism)
    mechanism = cls.from_options(SMALL)
    options = dataclasses.asdict(SMALL)
    assert all(options[key] == value for key, value in mechanism.parameters().items())   # only its own
    assert not mechanism.needs_reference
    assert cls.from_options(dataclasses.replace(SMALL, prior="reference")).needs_reference == issubclass(
        cls, PriorMechanism)
    epsilon = math.inf if name == "none" else 2.0
    result = training.train_model(day, name, epsilon, seed=4, settings=FAST, options=SMALL)
    record = result.mechanism
    assert get_mechanism(record["name"]) is cls
    assert record["epsilon"] == epsilon and record["unit"] == UNIT
    assert record["guarantee"] == mechanism.guarantee(epsilon, record["delta"])
    assert record["delta"] == (1e-5 if name == "pate" else 0.0)
    directory = training.register(f"round-trip-{name}", day, result)
    stored = encode(registry.read_metadata(data_root, f"round-trip-{name}", DAY))["mechanism"]
    assert directory.is_dir() and stored == registry.jsonable(record)
    assert get_mechanism(stored["name"]).from_options(SMALL) == mechanism
    uses = result.training_rows["validation_labels_used_for"]
    if name in ("lp-2st", "pate", "lp-1st-nc"):
        assert len(uses) >= 1 and ("validation" in result.training_rows["label_splits"])
    if name == "pate":
        assert result.training_rows["rows"] == int(np.sum(day.split != splits.TEST)) - SMALL.pate_queries


# ------------------------------------------------------------------------------------------ refusals


def test_an_unknown_mechanism_is_refused_with_the_known_names(day):
    known = re.escape(str(list(BUILT_IN)))
    with pytest.raises(LabelDPInputError, match=rf"^mechanism must be one of {known}; got 'bogus'$"):
        get_mechanism("bogus")
    with pytest.raises(LabelDPInputError, match=rf"^mechanism must be one of {known}; got 'bogus'$"):
        training.train_model(day, "bogus", 1.0, settings=FAST)
    with pytest.raises(LabelDPInputError, match=rf"^target t1: mechanism must be one of {known}; got 'bogus'$"):
        TargetSpec("t1", "bogus", 1.0)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--date", DAY.isoformat(), "--mechanism", "bogus", "--epsilon", "1"])


@pytest.mark.parametrize(("build", "message"), [
    (lambda: TwoStage(stage_one_fraction=1.5), "stage_one_fraction must be in (0, 1); got 1.5"),
    (lambda: get_mechanism("lp-2st")(stage_one_fraction=0.0), "stage_one_fraction must be in (0, 1); got 0.0"),
    (lambda: Pate(pate_teachers=0), "pate_teachers must be a whole number >= 1; got 0"),
    (lambda: Pate(pate_queries=2.5), "pate_queries must be a whole number >= 1; got 2.5"),
    (lambda: Pate(delta=1.0), "delta must be in [0, 1); got 1.0"),
    (lambda: Alibi(alibi_rounds=0), "alibi_rounds must be a whole number >= 1; got 0"),
    (lambda: RRWithPrior(prior="domain"), "prior must be one of ['reference', 'uniform']; got 'domain'"),
    (lambda: NoPrivacy().check_epsilon(1.0), "mechanism 'none' is non-private: epsilon must be inf; got 1.0"),
    (lambda: MechanismOptions(pate_teachers=0), "pate_teachers must be a whole number >= 1; got 0"),
])
def test_a_bad_parameter_is_refused_naming_it(build, message):
    with pytest.raises(LabelDPInputError, match=f"^{re.escape(message)}$"):
        build()
