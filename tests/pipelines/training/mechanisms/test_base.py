"""The mechanism base class and registry (pipelines/training/mechanisms/base.py): registering, building a
mechanism from a name or taking it as given, the release at eps = inf and the CLI's help table. Every registered
class's metadata and a toy mechanism trained end to end: tests/pipelines/training/test_mechanisms_registry.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from pipelines.training.mechanisms import (
    LabelContext,
    Mechanism,
    MechanismOptions,
    Release,
    get_mechanism,
    help_table,
    mechanism_from,
    mechanism_names,
    register,
)
from pipelines.training.mechanisms.base import IDENTITY_NOTE, NO_GUARANTEE

BUILT_IN = ("none", "rr", "lp-1st", "lp-1st-nc", "lp-2st", "alibi", "pate")


@dataclasses.dataclass(frozen=True)
class _Flip(Mechanism):
    """Toy (never registered): flips every label; the labels unchanged at eps = inf."""

    name = "toy-flip"
    summary = "flips every label"
    identity_at_infinity = True

    alibi_rounds: int = 3  # a MechanismOptions field: from_options takes it
    own_knob: float = 0.25  # no MechanismOptions field: keeps its default

    def privatize(self, context: LabelContext) -> Release:
        return Release(targets=1 - context.labels)


def _context(labels, epsilon):
    def never(*_args):
        raise AssertionError("nothing is fitted here")

    return LabelContext(labels=labels, epsilon=epsilon, rng=np.random.default_rng(0), num_classes=2,
                        learner=never, fit_all=never)


def test_register_refuses_a_taken_name_and_a_class_that_is_not_a_mechanism():
    with pytest.raises(ValueError, match="'rr' is already registered"):
        register(get_mechanism("rr"))
    with pytest.raises(ValueError, match="not a Mechanism subclass"):
        register(int)
    assert mechanism_names() == BUILT_IN


def test_a_mechanism_is_taken_as_given_or_built_from_the_options_by_name():
    flip = _Flip(own_knob=0.5)
    assert mechanism_from(flip) is flip
    assert _Flip.from_options(MechanismOptions(alibi_rounds=7)) == _Flip(alibi_rounds=7, own_knob=0.25)
    assert mechanism_from("alibi", MechanismOptions(alibi_rounds=7)) == get_mechanism("alibi")(alibi_rounds=7)


def test_at_infinite_epsilon_an_identity_mechanism_releases_the_labels_unchanged():
    labels = np.array([0, 1, 1], dtype=np.int64)
    unchanged = _Flip().release(_context(labels, math.inf))
    assert unchanged.identity and unchanged.notes == [IDENTITY_NOTE] and unchanged.targets.tolist() == [0, 1, 1]
    assert unchanged.targets is not labels
    flipped = _Flip().release(_context(labels, 2.0))
    assert not flipped.identity and flipped.targets.tolist() == [1, 0, 0]
    assert _Flip().guarantee(math.inf, 0.0) == NO_GUARANTEE
    assert _Flip().guarantee(2.0, 0.0) == "2-label-DP (pure, delta = 0)"


def test_the_help_table_has_a_line_per_mechanism_with_its_claim_when_it_has_one():
    lines = help_table().splitlines()
    assert [line.split()[0] for line in lines] == list(mechanism_names())
    assert lines[0] == "  none       no privacy (requires --epsilon inf)"
    rr = get_mechanism("rr")
    assert lines[1].startswith(f"  rr         {rr.summary}") and lines[1].endswith(f" {rr.claim}")
    assert len(lines[1]) == 85 + len(rr.claim)
