"""A quiet terminal for the long commands (nightly, guardrail, backfill), and a clean Ctrl-C.

- `Terminal` routes the process's file descriptors 1 and 2 (Python, C libraries and child processes alike)
  through a pipe: every line goes to a debug log (``<data root>/logs/labeldp-<UTC timestamp>.log``); only our
  own progress lines (``[labeldp-audit] ...``, the Beam job's ``[score ...]`` rows-done lines, given an ETA
  here) reach the terminal, unless ``verbose``. Beam's and Prefect's start-up and engine lines stay in the log.
  The results table and the summary are written to the real stdout / stderr (`out`, `err`), so ``--json``
  output is never mixed with a library's print.
- `InterruptWatch`: the first SIGINT raises KeyboardInterrupt as usual (models and sweeps are written through
  atomic directories, warehouse rows in transactions, so unwinding leaves nothing partial). If the process
  has not ended ``grace`` seconds later (a C library holding the main thread), it prints "interrupted",
  removes the hidden ``.tmp-*`` directories this run created, records any it could not remove (the next run
  removes them and says so: `remove_leftovers`) and exits 130.
- `start_prefect_api`: the temporary Prefect API a command-line run uses is started in a session of its own,
  so that Ctrl-C in the terminal reaches this process only and the run can still report its end.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

OUR_PREFIXES = ("[labeldp-audit", "[score ")
LOGS_DIR = "logs"
LEFTOVERS = ".interrupted-{pid}.json"
FS_CLOCK_SLACK = 0.5  # seconds
_SCORED = re.compile(r"^\[score pid (\d+)\] (\w+): \d+ batches, (\d+) of (\d+) rows\s*$")


def debug_log_path(root: Path) -> Path:
    """``<root>/logs/labeldp-<UTC timestamp>.log`` (a suffix when two runs start in the same second)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    directory = Path(root) / LOGS_DIR
    path, n = directory / f"labeldp-{stamp}.log", 1
    while path.exists():
        n += 1
        path = directory / f"labeldp-{stamp}-{n}.log"
    return path


def _terminal_stream(stream, fd: int):
    """A stream to what ``fd`` points at now; ``stream`` itself when it does not write to ``fd`` (a test's
    capture object), so that what is captured stays captured."""
    try:
        same = stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        same = False
    return os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace") if same else stream


class Terminal:
    """fds 1 and 2 through a filter while the ``with`` block runs (see the module docstring)."""

    def __init__(self, log_path: Path, verbose: bool = False):
        self.log_path, self.verbose = Path(log_path), verbose
        self._lock = threading.Lock()
        self._drained: dict[str, threading.Event] = {}
        self._first_scored: dict[tuple[str, str], tuple[float, int]] = {}
        self._active = False

    def __enter__(self) -> Terminal:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_file = open(self.log_path, "x", encoding="utf-8", errors="replace", buffering=1)
        self.log_file.write(f"# labeldp-audit {' '.join(sys.argv[1:])}\n# started {dt.datetime.now(dt.UTC).isoformat()}\n")
        sys.stdout.flush()
        sys.stderr.flush()
        self.out, self.err = _terminal_stream(sys.stdout, 1), _terminal_stream(sys.stderr, 2)
        self._saved = {fd: os.dup(fd) for fd in (1, 2)}
        read, write = os.pipe()
        for fd in (1, 2):
            os.dup2(write, fd)
        os.close(write)
        self._reader = threading.Thread(target=self._pump, args=(read,), name="labeldp-terminal", daemon=True)
        self._reader.start()
        self._active = True
        return self

    def _pump(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace")
                token = line.strip()
                if token in self._drained:
                    self._drained[token].set()
                    continue
                try:
                    self.log_file.write(line)
                except ValueError:  # closed at the end of the run
                    continue
                if self.verbose or line.startswith(OUR_PREFIXES):
                    self._show(self._with_eta(line))

    def _show(self, line: str) -> None:
        with self._lock:
            try:
                self.err.write(line if line.endswith("\n") else line + "\n")
                self.err.flush()
            except (OSError, ValueError):
                pass

    def _with_eta(self, line: str) -> str:
        """The Beam job's "[score pid N] scored: B batches, X of Y rows" line with the time left, from the rate
        since the job's first such line (a count that does not grow starts a new job)."""
        found = _SCORED.match(line)
        if not found:
            return line
        key, done, total = (found.group(1), found.group(2)), int(found.group(3)), int(found.group(4))
        now = time.monotonic()
        start = self._first_scored.get(key)
        if start is None or done <= start[1]:  # the job's first line (one process runs several jobs)
            self._first_scored[key] = (now, done)
            return line
        if done >= total or now <= start[0]:
            return line
        left = (total - done) * (now - start[0]) / (done - start[1])
        if left < 1:  # "~0s left" while rows remain says nothing
            return line
        return line.rstrip("\n") + f" (~{left:.0f}s left)\n"

    def drain(self, timeout: float = 2.0) -> None:
        """Waits until every line written so far has gone through the filter."""
        if not self._active:
            return
        token = f"--labeldp-drain-{os.getpid()}-{time.monotonic_ns()}--"
        event = self._drained[token] = threading.Event()
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(2, (token + "\n").encode())
        event.wait(timeout)
        self._drained.pop(token, None)

    def say(self, text: str, stdout: bool = False) -> None:
        """Writes ``text`` to the real terminal (stderr, or stdout) and to the debug log."""
        stream = self.out if stdout else self.err
        with self._lock:
            stream.write(text if text.endswith("\n") else text + "\n")
            stream.flush()
        try:
            self.log_file.write(text if text.endswith("\n") else text + "\n")
        except ValueError:
            pass

    def __exit__(self, *exc) -> None:
        if not self._active:
            return
        self.drain()
        self._active = False
        for fd, saved in self._saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self._reader.join(0.5)
        for stream in (self.out, self.err):
            if stream not in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                stream.close()
        self.log_file.close()


# --------------------------------------------------------------------------------------------- Ctrl-C


class InterruptWatch:
    """SIGINT raises KeyboardInterrupt (Python's default); this watches from a thread through the signal
    wake-up fd (written by the C-level handler at once, even while a C library holds the main thread) and calls
    ``force()`` when the process is still running ``grace`` seconds after the first SIGINT."""

    def __init__(self, grace: float, force):
        self.grace, self.force = grace, force
        self.done = threading.Event()
        self.fired = threading.Event()

    def __enter__(self) -> InterruptWatch:
        self._read, self._write = socket.socketpair()
        self._write.setblocking(False)
        self._previous_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        threading.Thread(target=self._watch, name="labeldp-interrupt", daemon=True).start()
        return self

    def _watch(self) -> None:
        while not self.done.is_set():
            try:
                data = self._read.recv(64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT in data and not self.fired.is_set():
                self.fired.set()
                if not self.done.wait(self.grace):
                    self.force()

    def __exit__(self, *exc) -> None:
        if not self.fired.is_set():  # after a Ctrl-C the watch stays until the process has ended
            self.done.set()
        signal.set_wakeup_fd(self._previous_fd)
        signal.signal(signal.SIGINT, self._previous_handler)
        self._write.close()
        self._read.close()


def tmp_dirs_since(root: Path, since: float, depth: int = 4) -> list[Path]:
    """The hidden ``.tmp-*`` entries under ``root`` (atomic writes in progress) changed at or after ``since``
    (less ``FS_CLOCK_SLACK``: file times come from a coarser clock than time.time())."""
    found: list[Path] = []
    since -= FS_CLOCK_SLACK

    def walk(directory: Path, level: int) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(".tmp-"):
                try:
                    if entry.stat(follow_symlinks=False).st_ctime >= since:
                        found.append(Path(entry.path))
                except OSError:
                    pass
            elif level < depth and entry.is_dir(follow_symlinks=False) and entry.name != LOGS_DIR:
                walk(Path(entry.path), level + 1)

    walk(Path(root), 1)
    return found


def remove_tmp_dirs(root: Path, since: float) -> list[str]:
    """Removes the ``.tmp-*`` entries this run created (changed since ``since``); returns those that remain,
    recorded in ``<root>/logs/.interrupted-<pid>.json`` for the next run (`remove_leftovers`)."""
    remaining = []
    for path in tmp_dirs_since(root, since):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if path.exists():
            remaining.append(str(path))
    if remaining:
        record = Path(root) / LOGS_DIR / LEFTOVERS.format(pid=os.getpid())
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(remaining))
    return remaining


def remove_leftovers(root: Path) -> list[str]:
    """Removes the temporary directories an interrupted run recorded but could not remove; returns them."""
    removed = []
    for record in sorted((Path(root) / LOGS_DIR).glob(LEFTOVERS.format(pid="*"))):
        try:
            paths = json.loads(record.read_text())
        except (OSError, ValueError):
            paths = []
        for item in paths if isinstance(paths, list) else []:
            path = Path(item)
            if path.name.startswith(".tmp-") and path.exists():
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
                removed.append(str(path))
        record.unlink(missing_ok=True)
    return removed


# --------------------------------------------------------------------------------------------- Prefect


def start_prefect_api(log) -> object | None:
    """Starts the temporary Prefect API of a command-line run (when no PREFECT_API_URL is set) in a session of
    its own, writing to ``log``; Prefect's client then uses it as its ephemeral server. Returns it (None when
    an API is configured)."""
    import subprocess
    from unittest import mock

    from prefect.server.api import server as prefect_server
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return None
    api = prefect_server.SubprocessASGIServer()  # the instance Prefect's get_client() starts and reuses
    popen = subprocess.Popen

    def detached(*args, **kwargs):
        return popen(*args, **{"start_new_session": True, "stdout": log, "stderr": log, **kwargs})

    with mock.patch.object(prefect_server.subprocess, "Popen", detached):
        api.start()
    return api


def quiet_at_exit(log_path: Path) -> None:
    """At interpreter exit (after Prefect has sent the run's logs and before it stops its temporary API, which
    says so), points fds 1 and 2 at the debug log: nothing reaches the terminal after the summary."""
    import atexit

    def redirect() -> None:
        try:
            fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
        except OSError:
            return
        for target in (1, 2):
            os.dup2(fd, target)
        os.close(fd)

    atexit.register(redirect)
