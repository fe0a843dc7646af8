"""The terminal of a run (flows/terminal.py), each case a real subprocess: our lines on the terminal and everything in
the log, --quiet showing only our warnings, and Ctrl-C while C code holds the main thread still exiting 130 and
removing the run's temporary directories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _script(body: str, *args: str, **kwargs):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(body), *args], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_the_terminal_shows_our_lines_and_logs_everything(tmp_path):
    """Noise written by Python, by C code (os.write) and by a child process goes to the log only."""
    log = tmp_path / "logs" / "run.log"
    child = _script("""
        import os, subprocess, sys
        from flows.terminal import Terminal
        with Terminal(sys.argv[1]) as term:
            print("[labeldp-audit] training rr-eps1", file=sys.stderr)
            print("noise from python on stdout")
            os.write(2, b"12:00:00.000 | WARNING | root - Resource module is not available\\n")
            subprocess.run(["sh", "-c", "echo child noise >&2"])
            os.write(2, b"[score pid 7] pass 1: 10 of 40 rows, 5 rows/s, ~6s left\\n")
            term.drain()
            term.say("the table", stdout=True)
        """, str(log))
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out == "the table\n"
    assert err.splitlines() == ["[labeldp-audit] training rr-eps1",
                                "[score pid 7] pass 1: 10 of 40 rows, 5 rows/s, ~6s left"]
    text = log.read_text()
    for line in ("noise from python", "Resource module", "child noise", "training rr-eps1", "the table"):
        assert line in text


def test_a_quiet_terminal_shows_only_our_warnings(tmp_path):
    """--quiet: progress lines go to the log only; a warning, the table and the summary still reach the terminal."""
    log = tmp_path / "logs" / "run.log"
    child = _script("""
        import sys
        from flows.terminal import Terminal
        with Terminal(sys.argv[1], quiet=True) as term:
            print("[labeldp-audit] training rr-eps1", file=sys.stderr)
            print("[score pid 7] pass 1: 10 of 40 rows, 5 rows/s, ~6s left", file=sys.stderr)
            print("[labeldp-audit] warning: wrote 0 spooled result(s)", file=sys.stderr)
            term.drain()
            term.say("the table", stdout=True)
            term.say("labeldp-audit nightly: exit 4: ...")
        """, str(log))
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out == "the table\n"
    assert err.splitlines() == ["[labeldp-audit] warning: wrote 0 spooled result(s)", "labeldp-audit nightly: exit 4: ..."]
    assert "training rr-eps1" in log.read_text() and "pass 1" in log.read_text()


def test_ctrl_c_while_c_code_holds_the_main_thread_still_exits_130_and_removes_its_temporary_dirs(tmp_path):
    """The watch ends a run that cannot unwind (C code that never checks for signals) after the grace period,
    removing the `.tmp-*` directories it made; one it could not remove is recorded and removed next time."""
    old = tmp_path / "models" / "m" / ".tmp-date=2026-10-01-old"
    old.mkdir(parents=True)
    time.sleep(1.0)  # older than the run below (file times are coarse: the watch allows half a second)
    child = _script("""
        import hashlib, os, sys, time
        from pathlib import Path
        from flows import terminal
        root, began = Path(sys.argv[1]), time.time()

        def force(stop):
            print("forced", stop.word, terminal.remove_tmp_dirs(root, began), flush=True)
            os._exit(stop.code)

        with terminal.StopWatch(1.0, force):
            (root / "sweeps" / "m" / "date=2026-10-01" / ".tmp-abc-123" / "_work").mkdir(parents=True)
            print("ready", flush=True)
            hashlib.pbkdf2_hmac("sha256", b"x", b"salt", 10**9)  # minutes of C code that never checks signals
        """, str(tmp_path), start_new_session=True)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.5)  # into the C call
    sent = time.monotonic()
    os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=10)
    assert child.returncode == 130 and time.monotonic() - sent < 5, err
    assert out.strip() == "forced interrupted []"
    assert not list(tmp_path.rglob(".tmp-abc-*")) and old.exists()  # another run's (older) directory is kept

    from flows import terminal

    record = tmp_path / "logs" / ".interrupted-1.json"
    record.parent.mkdir()
    record.write_text(json.dumps([str(old)]))
    assert terminal.remove_leftovers(tmp_path) == [str(old)]
    assert not old.exists() and not record.exists()
