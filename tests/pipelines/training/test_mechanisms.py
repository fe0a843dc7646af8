"""The mechanisms package as a whole (pipelines/training/mechanisms): its names are the CLI choices. Each
mechanism's own checks sit beside its mirror in tests/pipelines/training/mechanisms/."""

from __future__ import annotations

from pipelines.training.mechanisms import mechanism_names


def test_mechanism_names_are_the_cli_choices():
    assert mechanism_names() == ("none", "rr", "lp-1st", "lp-1st-nc", "lp-2st", "alibi", "pate")
