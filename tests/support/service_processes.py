"""Long-lived service processes for the operations tests (Prefect server and workers, Dask scheduler and
workers): each started through scripts/ops.sh in its own process group, logged to a file, and stopped by
process group id at the end, even when the test failed."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OPS = REPO / "scripts" / "ops.sh"
RUNBOOK = REPO / "infra" / "README.md"
USED_SUBCOMMANDS: set[str] = set()  # every ops.sh subcommand the tests ran (checked against the runbook)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ops_command(*args: str) -> list[str]:
    """The runbook's command line: `bash scripts/ops.sh ARGS...`."""
    USED_SUBCOMMANDS.add(args[0])
    return ["bash", str(OPS), *args]


def runbook_subcommands() -> set[str]:
    """The ops.sh subcommands that infra/README.md tells an operator to run."""
    return set(re.findall(r"bash scripts/ops\.sh ([a-z][a-z-]*)", RUNBOOK.read_text()))


def assert_runbook_has_what_ran() -> None:
    """The runbook's commands are the ones the tests ran: nothing ran here that the runbook does not show."""
    missing = USED_SUBCOMMANDS - runbook_subcommands()
    assert not missing, f"the tests ran `ops.sh {sorted(missing)}` but infra/README.md never shows it"


def run_ops(*args: str, env: dict, timeout: float = 180) -> str:
    """Runs a short ops command to completion; its output, or an AssertionError that shows it."""
    done = subprocess.run(ops_command(*args), env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"`bash scripts/ops.sh {' '.join(args)}` exited {done.returncode}:\n{output[-4000:]}"
    return output


def wait_until(condition, timeout: float, what: str, interval: float = 0.5, on_timeout=None):
    """Polls `condition()` until it returns something truthy; fails with `what` (and `on_timeout()`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            extra = f"\n{on_timeout()}" if on_timeout else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{extra}")
        time.sleep(interval)


def process_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie or a reused pid of another program counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class ServiceProcesses:
    """Starts ops.sh services in new sessions (process group id == pid) and stops them all by group id."""

    def __init__(self, log_dir: Path, env: dict):
        self.log_dir = Path(log_dir)
        self.env = env
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "ab")  # closed in stop()
        proc = subprocess.Popen(ops_command(*args), env=self.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        proc.log_file = log
        self.started.append((name, proc))
        return proc

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.log_dir / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else "(no log)"
        return f"--- {path} (last {chars} chars) ---\n{text[-chars:]}"

    def kill(self, proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to the process group of `proc` (what a crashed host or OOM killer does with SIGKILL)."""
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            proc.wait(timeout=30)

    def stop(self, proc: subprocess.Popen, grace: float = 10.0) -> None:
        """SIGTERM to the group, SIGKILL after `grace` seconds."""
        if proc.poll() is None:
            self.kill(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill(proc, signal.SIGKILL)  # the group may outlive its leader
        proc.log_file.close()

    def stop_all(self) -> None:
        """Stops everything this object started, newest first (workers before the server they talk to)."""
        for _, proc in reversed(self.started):
            self.stop(proc)
        self.started.clear()
