"""The scoring job's background threads (pipelines/scoring/background.py): one executor of one thread per name
and process, its thread named after it."""

from __future__ import annotations

import threading

from pipelines.scoring.background import background_thread


def test_one_executor_per_name_running_on_a_thread_named_after_it():
    first = background_thread("unit-a")
    assert background_thread("unit-a") is first
    assert background_thread("unit-b") is not first
    assert first.submit(lambda: threading.current_thread().name).result() == "labeldp-unit-a_0"


def test_an_executor_from_another_process_is_made_again(monkeypatch):
    import pipelines.scoring.background as background

    first = background_thread("unit-fork")
    monkeypatch.setattr(background.os, "getpid", lambda: -1)  # as in a forked child
    again = background_thread("unit-fork")
    assert again is not first
    assert again.submit(lambda: 7).result() == 7
