"""A run's steps counted on its progress lines ("target 2 of 3, ~40s left ..."); the live progress inside one
long step is `labeldp.progress.Countdown`."""

from __future__ import annotations

import time


class StepClock:
    """'target k of n' and, once a step is done, the time the remaining ones take at the mean pace so far: a
    cheap estimate for loops of similar steps (scoring the targets).

    ``estimate=False`` leaves the time out, for loops whose steps are not alike: making sure the models are
    there takes no time for a model that exists and minutes for one that is trained, so the pace of the first
    says nothing about the next. An estimate below a second is not shown either (the steps so far took no
    time, which says nothing about the ones left)."""

    def __init__(self, total: int, what: str = "target", estimate: bool = True):
        self.total, self.what, self.estimate = total, what, estimate
        self.start = time.monotonic()
        self.done = -1

    def step(self) -> str:
        """Call at the start of each step; the text for its progress line."""
        self.done += 1
        text = f"{self.what} {self.done + 1} of {self.total}"
        if self.estimate and self.done > 0:
            left = (time.monotonic() - self.start) / self.done * (self.total - self.done)
            if left >= 1:
                text += f", ~{left:.0f}s left for this one and the rest"
        return text
