"""Progress lines on stderr for long jobs (training, scoring).

Two kinds of line:

- a step's messages (`Progress`, e.g. `stderr_progress`: ``[prefix +12.3s] message``): what starts, what is
  reused, what was found; written wherever the command writes them;
- live progress inside one long step (`Countdown`: a CatBoost fit's iterations with the time left, a Beam pass's
  rows and rows per second), shown only where someone watches: when `live` is on. The command line turns it on
  once, before anything runs, when stderr is a terminal and the command was not given ``--quiet``
  (`set_live`); a scheduler's log, a pipe and a library caller get none.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[str], None]

_LIVE = {"on": False}


def set_live(on: bool) -> None:
    """Shows (or hides) live progress in this process from now on."""
    _LIVE["on"] = bool(on)


def live() -> bool:
    """Whether live progress is shown (off unless the command line turned it on: `set_live`)."""
    return _LIVE["on"]


def stderr_progress(prefix: str) -> Progress:
    """A reporter printing each message to stderr with ``prefix`` and the seconds since this call."""
    start = time.monotonic()

    def report(message: str) -> None:
        print(f"[{prefix} +{time.monotonic() - start:.1f}s] {message}", file=sys.stderr, flush=True)

    return report


def no_progress(_message: str) -> None:
    """A reporter that drops every message."""
    pass


class Countdown:
    """Live progress of one step with a known total: ``countdown(done)`` reports "<what>: <done> of <total>
    <unit>[, <rate> <unit>/s], ~<N>s left" through ``report``, at most every ``interval`` seconds, the first time
    one interval after the start (a short step says nothing), and once more at the end when it said anything
    (always with ``final``).

    ``enabled`` None: `live()` when made (a Beam DoFn is given the driver's answer instead: it may run in
    another process)."""

    def __init__(self, report: Progress, what: str, total: int, unit: str, interval: float = 10.0,
                 rate: bool = False, final: bool = False, enabled: bool | None = None):
        self.report, self.what, self.total, self.unit = report, what, int(total), unit
        self.interval, self.rate, self.final = interval, rate, final
        self.enabled = live() if enabled is None else bool(enabled)
        self.start = self.last = time.monotonic()
        self.shown = self.ended = False

    def __call__(self, done: int) -> None:
        if not self.enabled or self.ended:
            return
        now = time.monotonic()
        if done >= self.total:
            self.ended = True
            if self.shown or self.final:
                self.report(self.text(done, now - self.start))
            return
        if now - self.last >= self.interval:
            self.last, self.shown = now, True
            self.report(self.text(done, now - self.start))

    def text(self, done: int, elapsed: float) -> str:
        """The line for ``done`` of the total after ``elapsed`` seconds."""
        text = f"{self.what}: {done:,} of {self.total:,} {self.unit}"
        if self.rate and elapsed > 0:
            text += f", {done / elapsed:,.0f} {self.unit}/s"
        if 0 < done < self.total:
            left = elapsed / done * (self.total - done)
            if left >= 1:
                text += f", ~{left:.0f}s left"
        return text
