"""Live progress off around every test of a module that turns it on (`labeldp.progress`), as a library caller has
it: ``from tests.support.live_progress import not_live`` in the progress tests (tests/labeldp/test_progress.py) and
the train command's (tests/flows/commands/test_train.py)."""

from __future__ import annotations

import pytest

from labeldp import progress


@pytest.fixture(autouse=True)
def not_live():
    """Every test starts and ends with live progress off, as a library caller has it."""
    progress.set_live(False)
    yield
    progress.set_live(False)
