"""Live progress inside long steps (`labeldp.progress`): a CatBoost fit's iterations with the time left, shown on a
terminal and never with --quiet or off one (the train command: tests/flows/commands/test_train.py), and the fit it
watches unchanged. The Beam passes' rows per second are tested with the job
(tests/pipelines/scoring/test_beam_scoring.py). No timed assertion: the clocks are moved by hand."""

from __future__ import annotations

import numpy as np

from labeldp import progress
from labeldp.progress import Countdown
from tests.support.live_progress import not_live  # noqa: F401  (autouse fixture: live progress off)


def test_a_countdown_says_nothing_off_a_terminal_nor_in_its_first_interval():
    said: list[str] = []
    Countdown(said.append, "fit", 200, "iterations")(100)
    assert said == []  # not live
    progress.set_live(True)
    countdown = Countdown(said.append, "fit", 200, "iterations", interval=10.0)
    countdown(50)
    assert said == []  # a step shorter than one interval says nothing
    countdown.start -= 20.0  # 50 iterations took 20 s: 150 more take about 60
    countdown.last -= 20.0
    countdown(50)
    assert said == ["fit: 50 of 200 iterations, ~60s left"]
    countdown(200)
    assert said[-1] == "fit: 200 of 200 iterations" and len(said) == 2  # the end, once, as it said something
    countdown(200)
    assert len(said) == 2


def test_a_countdown_with_a_rate_and_a_final_line(monkeypatch):
    said: list[str] = []
    clock = [1000.0]  # a fixed clock: the rate is exact however loaded the machine is
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    countdown = Countdown(said.append, "pass 1", 60_000, "rows", interval=5.0, rate=True, final=True, enabled=True)
    clock[0] += 2.0
    countdown(60_000)
    assert said == ["pass 1: 60,000 of 60,000 rows, 30,000 rows/s"]  # a short pass still says how fast it went


def test_a_catboost_fit_reports_its_iterations_and_fits_the_same_model(monkeypatch):
    import pandas as pd

    from pipelines.training import fitting

    rng = np.random.default_rng(0)
    features = pd.DataFrame({"a": rng.normal(size=2000), "b": rng.normal(size=2000)})
    labels = (rng.random(2000) < 1 / (1 + np.exp(-features["a"].to_numpy()))).astype(np.int64)
    settings = fitting.CatBoostSettings(iterations=6, thread_count=1)
    quiet, _ = fitting.fit_catboost(features, labels, settings, 3)
    monkeypatch.setattr(fitting, "PROGRESS_SECONDS", 0.0)
    progress.set_live(True)
    said: list[str] = []
    watched, _ = fitting.fit_catboost(features, labels, settings, 3, progress=said.append, what="rr eps=1")
    assert said[0].startswith("CatBoost rr eps=1: 1 of 6 iterations"), said
    assert said[-1] == "CatBoost rr eps=1: 6 of 6 iterations" and len(said) == 6, said
    assert np.array_equal(quiet.predict_proba(features), watched.predict_proba(features))
