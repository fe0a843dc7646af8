"""Progress lines on stderr for long jobs (training, scoring): ``[prefix +12.3s] message``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[str], None]


def stderr_progress(prefix: str) -> Progress:
    """A reporter printing each message to stderr with ``prefix`` and the seconds since this call."""
    start = time.monotonic()

    def report(message: str) -> None:
        print(f"[{prefix} +{time.monotonic() - start:.1f}s] {message}", file=sys.stderr, flush=True)

    return report


def no_progress(_message: str) -> None:
    """A reporter that drops every message."""
    pass
