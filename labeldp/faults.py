"""Fault injection at a few named points of the write paths, for the crash-consistency tests
(tests/behaviour/test_kill_points.py) and benchmark (benchmarks/bench_kill.py, figures in benchmarks/results/kill.md).

Each point calls `point(name)`. Unless the environment variable ``LABELDP_FAULT`` names that point, `point` returns
at once: inert in production (one dictionary lookup). Set, it says what happens there:

    LABELDP_FAULT=<point>[@<n>]:<action>     (n: the n-th time this process reaches the point; default 1)

    kill           SIGKILL this process there: no unwinding, no cleanup, no rollback (a machine losing power)
    pause=<s>      sleep s seconds there (a test signals the process, or terminates its PostgreSQL connection, at
                   that moment)
    enospc         raise OSError(ENOSPC) there, the n-th time and every time after (a disk that stays full)

``LABELDP_FAULT=trace`` acts nowhere and says every point reached (benchmarks/bench_kill.py lists a night's points).

Before acting, `point` writes ``[labeldp-audit fault] <point>@<n>: <action> (pid P)`` to stderr (a progress line:
the terminal shows it), so that a test knows the point was reached. The points (`POINTS`) are the moments a crash could leave something half done: the Beam job
scoring a batch, a verdict between its result file and its warehouse transaction, inside that transaction (after
the row, before its curve and commit), after the commit (before the report), a spool payload, a run report or a
stored night written but not yet renamed into place, a directory (a model, a stored game) between moving the old
one aside and moving the new one in, and directories replaced together (a synthetic day's oracle and partition)
before, between and after their swaps.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import time

ENV = "LABELDP_FAULT"
POINTS = {
    "scoring": "the Beam job has scored a batch of the day (pipelines.scoring.beam_dofns)",
    "publish.before-warehouse": "a verdict judged from its stored game, before its warehouse transaction",
    "warehouse.transaction": "inside the warehouse transaction: the row inserted, its curve, slices, run and commit "
                             "not yet",
    "publish.after-warehouse": "the warehouse transaction committed, the run report not yet written",
    "spool.write": "a spool payload written to its temporary file, not yet renamed into place",
    "report.write": "a run report written to its temporary file, not yet renamed into place",
    "night.write": "the stored night written to its temporary file, not yet renamed into place",
    "directory.swap": "a directory (a model, a stored game, a day's oracle or partition) replacing another: the old "
                      "one moved aside, the new one not yet moved in",
    "directory.pair": "directories replaced together (a synthetic day's oracle and partition): the new ones complete "
                      "and no journal yet; then, the journal written, before each swap and after the last one "
                      "(before the clean-up)",
}
ACTIONS = ("kill", "pause", "enospc")
_reached: dict[str, int] = {}


def parse(spec: str) -> tuple[str, int, str, float]:
    """(point, n, action, seconds) of a ``LABELDP_FAULT`` value; ValueError naming what is wrong."""
    where, _, action = spec.partition(":")
    name, _, count = where.partition("@")
    seconds = 0.0
    if action.startswith("pause="):
        try:
            action, seconds = "pause", float(action.removeprefix("pause="))
        except ValueError:
            action = ""  # refused below, naming the variable
        if not 0.0 <= seconds < float("inf"):
            action = ""
    elif action == "pause":  # a pause says how long: pause=<seconds>
        action = ""
    if name not in POINTS or action not in ACTIONS or (count and not count.isdigit()) or count == "0":
        raise ValueError(f"{ENV}={spec!r}: expected <point>[@<n>]:kill|pause=<seconds>|enospc with a point of "
                         f"{sorted(POINTS)}")
    return name, int(count or 1), action, seconds


def point(name: str) -> None:
    """A fault point (see the module docstring): nothing happens unless ``LABELDP_FAULT`` names ``name``."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    if spec == "trace":
        _reached[name] = _reached.get(name, 0) + 1
        print(f"[labeldp-audit fault] {name}@{_reached[name]}: reached (pid {os.getpid()})", file=sys.stderr,
              flush=True)
        return
    if not spec.startswith(name):
        return
    wanted, count, action, seconds = parse(spec)
    if wanted != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] != count and not (action == "enospc" and _reached[name] > count):
        return
    print(f"[labeldp-audit fault] {name}@{count}: {action} (pid {os.getpid()})", file=sys.stderr, flush=True)
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # the signal is delivered before this returns
    elif action == "pause":
        time.sleep(seconds)
    else:
        raise OSError(errno.ENOSPC, f"No space left on device (injected at {name} by {ENV})")
