"""A quiet terminal for the long commands (nightly, guardrail, backfill), and a clean Ctrl-C.

- `Terminal` routes the process's file descriptors 1 and 2 (Python, C libraries and child processes alike)
  through a pipe: every line goes to a debug log (``<data root>/logs/labeldp-<UTC timestamp>.log``); only our
  own progress lines (``[labeldp-audit] ...``, the Beam job's live ``[score ...]`` lines) reach the terminal,
  everything with ``verbose``, only our warnings with ``quiet``. Beam's and Prefect's start-up and engine lines stay in the log.
  The results table and the summary are written to the real stdout / stderr (`out`, `err`), so ``--json``
  output is never mixed with a library's print.
- Stopping (`StopWatch`): the first SIGINT raises KeyboardInterrupt as usual, and SIGTERM (what a scheduler,
  Kubernetes, systemd or a Prefect worker sends) `Terminated`, its subclass, so that both unwind alike (models
  and sweeps are written through atomic directories, warehouse rows in transactions, so unwinding leaves
  nothing partial). If the process has not ended ``grace`` seconds later (a C library holding the main
  thread), it prints "interrupted" or "terminated", removes the hidden ``.tmp-*`` directories this run
  created, records any it could not remove (the next run removes them and says so: `remove_leftovers`) and
  exits 130 or 143 (`Stop`). The code is the FIRST signal's, whatever the exception it raised became on the way
  (`stop_for`: CatBoost turns it into a plain KeyboardInterrupt while it trains, Beam wraps it, Prefect raises its
  own TerminationSignal), and a stopped run ends as soon as it has unwound and said so (`end_now`), without
  waiting for Prefect's exit handlers.
- `start_prefect_api`: the temporary Prefect API a command-line run uses is started in a session of its own,
  so that Ctrl-C in the terminal reaches this process only and the run can still report its end.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from flows import exit_codes

OUR_PREFIXES = ("[labeldp-audit", "[score ")
LOGS_DIR = "logs"
LEFTOVERS = ".interrupted-{pid}.json"
FS_CLOCK_SLACK = 0.5  # seconds


def discard_fd(fd: int = 1) -> None:
    """Points ``fd`` (default stdout) at /dev/null: after a closed pipe (``results --json | head``), so that the
    interpreter's last flush does not fail (Python would print an error and exit 120)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


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

    def __init__(self, log_path: Path, verbose: bool = False, quiet: bool = False):
        self.log_path, self.verbose, self.quiet = Path(log_path), verbose, quiet
        self._lock = threading.Lock()
        self._drained: dict[str, threading.Event] = {}
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
                if self.verbose or (line.startswith(OUR_PREFIXES) and (not self.quiet or "warning:" in line)):
                    self._show(line)

    def _show(self, line: str) -> None:
        with self._lock:
            try:
                self.err.write(line if line.endswith("\n") else line + "\n")
                self.err.flush()
            except (OSError, ValueError):
                pass

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

    def drop_stdout(self) -> None:
        """Once stdout's reader went away (``nightly | head``): what is still meant for stdout, now or after the
        run, goes to /dev/null, so that no later write or flush fails; stderr carries on."""
        if self.out not in (sys.stdout, sys.__stdout__):
            discard_fd(self.out.fileno())
        discard_fd(self._saved[1])  # fd 1 once the run ends

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


# --------------------------------------------------------------------------------------------- stopping


@dataclass(frozen=True)
class Stop:
    """A signal that stops a command (Ctrl-C, or SIGTERM from a scheduler, Kubernetes, systemd or a Prefect
    worker): the exit code it ends with (`flows.exit_codes`) and the word printed."""

    signal: int
    code: int
    word: str


INTERRUPT = Stop(signal.SIGINT, exit_codes.INTERRUPTED, "interrupted")
TERMINATE = Stop(signal.SIGTERM, exit_codes.TERMINATED, "terminated")
STOPS = {stop.signal: stop for stop in (INTERRUPT, TERMINATE)}

_received: list[Stop] = []  # the first stop this process received
_sockets: list[tuple[socket.socket, socket.socket]] = []  # `watch_stops`'s wake-up fd pair


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that it unwinds the same way
    (atomic directories, transactions, Prefect's crash handling); Python's default would end the process at
    once and unwind nothing."""


def _record(stop: Stop) -> None:
    if not _received:
        _received.append(stop)


def stop_requested() -> Stop | None:
    """The first stop this process received (seen by a `StopWatch` or `watch_stops`), if any: a step that is
    about to start checks it, so that threads other than the main one (a backfill's days) stop too."""
    return _received[0] if _received else None


def stop_of(exc: BaseException | None) -> Stop | None:
    """The stop ``exc`` stands for, through the exceptions it was raised from: a library may wrap it (Beam
    re-raises a DoFn's KeyboardInterrupt as a RuntimeError). `Terminated` and Prefect's TerminationSignal
    (an exception outside Exception with the signal's number) are SIGTERM; another KeyboardInterrupt is Ctrl-C."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, Terminated):
            return TERMINATE
        if isinstance(exc, KeyboardInterrupt):
            return INTERRUPT
        if not isinstance(exc, Exception) and getattr(exc, "signal", None) in STOPS:
            return STOPS[exc.signal]
        exc = exc.__cause__ or exc.__context__
    return None


def stop_for(exc: BaseException | None, wait: float = 1.0) -> Stop | None:
    """The stop a run that ended with ``exc`` was stopped by: the first signal this process received, else the stop
    ``exc`` stands for (`stop_of`), else None.

    The first signal decides, not the exception: a library may turn the exception a signal raised into another one
    (CatBoost raises a plain KeyboardInterrupt, without context, for the `Terminated` or Prefect TerminationSignal
    that SIGTERM raised while it trained: that read as Ctrl-C and ended a terminated run with 130). The wake-up
    fd's watcher (`StopWatch`, `watch_stops`) records it from a byte the C-level handler wrote before any Python code
    ran; when ``exc`` stands for a stop and nothing is recorded yet, the watcher is given up to ``wait`` seconds to
    read that byte."""
    if stop_requested() is None and stop_of(exc) is not None:
        deadline = time.monotonic() + wait
        while stop_requested() is None and time.monotonic() < deadline:
            time.sleep(0.005)
    return stop_requested() or stop_of(exc)


def _terminate(signum, frame) -> None:
    _record(TERMINATE)
    raise Terminated()


@contextlib.contextmanager
def terminate_like_interrupt():
    """While the block runs, SIGTERM raises `Terminated` in the main thread (outside the main thread: nothing
    changes)."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class StopWatch:
    """Ctrl-C raises KeyboardInterrupt (Python's default) and SIGTERM `Terminated`; this watches both from a
    thread through the signal wake-up fd (written by the C-level handler at once, whichever Python handler is
    installed, Prefect's during a flow run included, and even while a C library holds the main thread),
    records the first (`stop_requested`) and calls ``force(stop)`` when the process is still running ``grace``
    seconds later."""

    def __init__(self, grace: float, force):
        self.grace, self.force = grace, force
        self.done = threading.Event()
        self.fired = threading.Event()

    def __enter__(self) -> StopWatch:
        self._read, self._write = socket.socketpair()
        self._write.setblocking(False)
        self._previous_handlers = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                                   signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate)}
        self._previous_fd = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        threading.Thread(target=self._watch, name="labeldp-stop", daemon=True).start()
        return self

    def _watch(self) -> None:
        while not self.done.is_set():
            try:
                data = self._read.recv(64)
            except OSError:
                return
            if not data:
                return
            stops = [STOPS[number] for number in data if number in STOPS]
            if stops and not self.fired.is_set():
                _record(stops[0])
                self.fired.set()
                if not self.done.wait(self.grace):
                    self.force(stop_requested())

    def __exit__(self, *exc) -> None:
        if not self.fired.is_set():  # after a stop the watch stays until the process has ended
            self.done.set()
        signal.set_wakeup_fd(self._previous_fd)
        for number, handler in self._previous_handlers.items():
            signal.signal(number, handler)
        self._write.close()
        self._read.close()


def watch_stops() -> None:
    """Records the first Ctrl-C or SIGTERM of a process that runs flows without the command line (a deployment's
    flow-run process, where Prefect's own handler turns SIGTERM into its TerminationSignal), so that
    `stop_requested` sees it in every thread. Does nothing outside the main thread or when the wake-up fd is
    taken (the command line's `StopWatch` records already)."""
    if threading.current_thread() is not threading.main_thread():
        return
    read, write = socket.socketpair()
    write.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
    except ValueError:
        read.close()
        write.close()
        return
    if previous != -1:  # someone watches already: leave theirs
        signal.set_wakeup_fd(previous)
        read.close()
        write.close()
        return

    def watch() -> None:
        while True:
            try:
                data = read.recv(64)
            except OSError:
                return
            if not data:
                return
            for number in data:
                if number in STOPS:
                    _record(STOPS[number])

    _sockets.append((read, write))  # kept open for the life of the process
    threading.Thread(target=watch, name="labeldp-stop-record", daemon=True).start()


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


def end_now(stop: Stop, servers=()) -> None:
    """Ends the process with ``stop``'s code at once (after a stop: its line printed, its temporaries removed):
    stops the temporary Prefect API servers it started (`start_prefect_api`), flushes, and exits without the
    interpreter's shutdown, which would wait for Prefect's events worker and for threads a stopped job left."""
    for server in servers:
        process = getattr(server, "server_process", None)
        if process is not None:
            process.kill()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(stop.code)


def rest_to_log(log_path: Path) -> None:
    """Points fds 1 and 2 at the debug log for the rest of the process: once a run has printed its table and its
    summary (or its stop), nothing more reaches the terminal (Prefect's events worker and temporary API still say
    things as the interpreter exits, also after a stop)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return
    for target in (1, 2):
        os.dup2(fd, target)
    os.close(fd)
