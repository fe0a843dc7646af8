"""The step clock of the flows' progress lines (flows/progress.py): no time left is shown where the pace says
nothing."""

from __future__ import annotations


def test_progress_shows_no_time_left_where_the_pace_says_nothing():
    """Making sure the models are there: a model that exists takes no time and one that is trained minutes, so no
    estimate; elsewhere, steps that took no time give none either (never "~0s left" with steps to go)."""
    from flows.progress import StepClock

    checking = StepClock(3, estimate=False)
    assert [checking.step() for _ in range(3)] == ["target 1 of 3", "target 2 of 3", "target 3 of 3"]
    instant = StepClock(3)
    assert [instant.step() for _ in range(3)] == ["target 1 of 3", "target 2 of 3", "target 3 of 3"]
    scoring = StepClock(3)
    assert scoring.step() == "target 1 of 3"
    scoring.start -= 60  # the first step took a minute: two more take about two
    assert scoring.step() == "target 2 of 3, ~120s left for this one and the rest"
