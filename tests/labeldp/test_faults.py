"""Fault points (`labeldp.faults`): inert unless ``LABELDP_FAULT`` names the point; named, the n-th time this process
reaches it they kill, pause or fill the disk, saying so on stderr first. The points in real commands:
tests/behaviour/test_kill_points.py."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys

import pytest

from labeldp import faults


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch):
    """Each test counts the points reached from zero, as a new process would."""
    monkeypatch.setattr(faults, "_reached", {})
    monkeypatch.delenv(faults.ENV, raising=False)


# ---------------------------------------------------------------------------------------------------- the spec
@pytest.mark.parametrize(("spec", "parsed"), [
    ("spool.write:kill", ("spool.write", 1, "kill", 0.0)),
    ("spool.write@3:kill", ("spool.write", 3, "kill", 0.0)),
    ("warehouse.transaction:pause=2.5", ("warehouse.transaction", 1, "pause", 2.5)),
    ("directory.pair@12:enospc", ("directory.pair", 12, "enospc", 0.0)),
])
def test_a_spec_names_its_point_its_count_and_its_action(spec, parsed):
    assert faults.parse(spec) == parsed


@pytest.mark.parametrize("spec", [
    "nowhere:kill",  # not a point
    "spool.write:explode",  # not an action
    "spool.write",  # no action
    "spool.write@0:kill",  # counts start at 1
    "spool.write@x:kill",
    "spool.write@-1:kill",
])
def test_a_bad_spec_is_refused_naming_the_variable_the_value_and_the_points(spec):
    with pytest.raises(ValueError) as refused:
        faults.parse(spec)
    message = str(refused.value)
    assert message.startswith(f"LABELDP_FAULT={spec!r}: expected <point>[@<n>]:kill|pause=<seconds>|enospc")
    assert str(sorted(faults.POINTS)) in message


@pytest.mark.parametrize("spec", ["spool.write:pause", "spool.write:pause=soon"])
def test_a_pause_without_a_number_of_seconds_is_refused_naming_the_variable(spec):
    with pytest.raises(ValueError, match=f"^LABELDP_FAULT={spec!r}: expected"):
        faults.parse(spec)


# ---------------------------------------------------------------------------------------------------- a point
def test_a_point_is_inert_without_the_variable_and_counts_nothing(capsys):
    for name in faults.POINTS:
        assert faults.point(name) is None
    assert faults._reached == {} and capsys.readouterr().err == ""


def test_a_point_the_spec_does_not_name_is_inert_even_a_prefix_of_it(monkeypatch, capsys):
    monkeypatch.setenv(faults.ENV, "directory.swap:enospc")
    faults.point("spool.write")
    faults.point("directory.s")  # the spec starts with its name, but names another point
    faults.point("directory.pair")
    assert faults._reached == {} and capsys.readouterr().err == ""


def test_a_bad_spec_fails_at_the_point_it_starts_with(monkeypatch):
    monkeypatch.setenv(faults.ENV, "spool.write:explode")
    with pytest.raises(ValueError, match=r"LABELDP_FAULT='spool\.write:explode'"):
        faults.point("spool.write")


def test_a_bad_spec_is_inert_at_the_points_it_does_not_start_with(monkeypatch):
    monkeypatch.setenv(faults.ENV, "spool.write:explode")
    faults.point("night.write")  # returns at once: the spec is read only where it may apply
    assert faults._reached == {}


def test_a_full_disk_from_the_nth_time_on_says_so_first(monkeypatch, capsys):
    monkeypatch.setenv(faults.ENV, "spool.write@2:enospc")
    faults.point("spool.write")  # the first time: nothing
    assert capsys.readouterr().err == ""
    for _ in range(2):  # the second time and every time after: a disk that stays full
        with pytest.raises(OSError) as full:
            faults.point("spool.write")
        assert full.value.errno == errno.ENOSPC
        assert "injected at spool.write by LABELDP_FAULT" in str(full.value)
    assert capsys.readouterr().err == (f"[labeldp-audit fault] spool.write@2: enospc (pid {os.getpid()})\n" * 2)


def test_a_pause_acts_only_the_nth_time(monkeypatch, capsys):
    slept = []
    monkeypatch.setattr(faults.time, "sleep", slept.append)
    monkeypatch.setenv(faults.ENV, "report.write@2:pause=1.5")
    for _ in range(3):
        faults.point("report.write")
    assert slept == [1.5]
    assert capsys.readouterr().err == f"[labeldp-audit fault] report.write@2: pause (pid {os.getpid()})\n"


def test_trace_says_every_point_reached_with_its_count_and_acts_nowhere(monkeypatch, capsys):
    monkeypatch.setenv(faults.ENV, "trace")
    faults.point("spool.write")
    faults.point("spool.write")
    faults.point("night.write")
    pid = os.getpid()
    assert capsys.readouterr().err.splitlines() == [
        f"[labeldp-audit fault] spool.write@1: reached (pid {pid})",
        f"[labeldp-audit fault] spool.write@2: reached (pid {pid})",
        f"[labeldp-audit fault] night.write@1: reached (pid {pid})"]


def test_a_kill_is_a_sigkill_of_the_process_after_its_line():
    code = "from labeldp import faults; faults.point('night.write'); print('after')"
    environment = {**os.environ, faults.ENV: "night.write:kill", "PYTHONPATH": os.environ.get("PYTHONPATH", ".")}
    killed = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                            timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert killed.stdout == ""
    assert killed.stderr.startswith("[labeldp-audit fault] night.write@1: kill (pid ")


def test_every_point_says_what_the_moment_is():
    assert all(isinstance(text, str) and text for text in faults.POINTS.values())
    assert faults.ACTIONS == ("kill", "pause", "enospc")
