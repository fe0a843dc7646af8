"""Progress lines on stderr for long commands (throttled, so logs stay readable)."""

from __future__ import annotations

import sys
import time


class ProgressPrinter:
    """Callable(done, total): prints "label: done/total (elapsed, eta)" at most every `interval` seconds."""

    def __init__(self, label: str, interval: float = 2.0, stream=None, enabled: bool = True):
        self.label, self.interval, self.enabled = label, interval, enabled
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = -float("inf")

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self.last < self.interval:
            return
        self.last = now
        elapsed = now - self.start
        eta = elapsed / done * (total - done) if done else float("nan")
        print(f"[{self.label}] {done}/{total} ({elapsed:.1f}s elapsed, ~{eta:.0f}s left)", file=self.stream, flush=True)
