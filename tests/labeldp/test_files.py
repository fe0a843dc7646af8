"""Atomic, durable writes (`labeldp.files`): a reader sees the old file or the whole new one, never part of it; the
temporaries name their owner, and `recover_interrupted` cleans up after owners that are gone (finishing a directory
swap a kill interrupted, from its journal or from the directory moved aside). The kill itself, in a real command:
tests/behaviour/test_kill_points.py."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys

import pytest

from labeldp import faults, files
from labeldp.files import (
    _TEMPORARY,
    fsync_path,
    pending_swap,
    recover_interrupted,
    swap_directories,
    temporary_name,
    write_swap_journal,
    write_text_atomically,
)


@pytest.fixture(scope="module")
def gone_pid() -> int:
    """The pid of a process of this host that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _temporary(kind: str, name: str, pid: int, host: str | None = None, token: str = "a" * 12) -> str:
    """A temporary's name as `temporary_name` writes it, for any owner."""
    return f".{kind}-{name}.h{host or files._HOST}p{pid}-{token}"


def _directory(path, text):
    path.mkdir(parents=True)
    (path / "content.txt").write_text(text)
    return path


def _content(path):
    return (path / "content.txt").read_text()


# ------------------------------------------------------------------------------------------------ atomic writes
def test_a_write_creates_the_parents_and_returns_the_path(tmp_path):
    target = tmp_path / "a" / "b" / "c.txt"
    assert write_text_atomically(target, "hello") == target
    assert target.read_text(encoding="utf-8") == "hello"
    assert os.listdir(target.parent) == ["c.txt"]


def test_a_write_replaces_the_old_file_whole(tmp_path):
    target = tmp_path / "c.txt"
    write_text_atomically(str(target), "old and longer")
    write_text_atomically(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["c.txt"]


def test_a_write_failing_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "c.txt"
    write_text_atomically(target, "old")
    with pytest.raises(TypeError):
        write_text_atomically(target, None)  # the temporary is open when writing it fails
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["c.txt"]


def test_a_write_failing_at_its_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "c.txt"
    write_text_atomically(target, "old")

    def refuse(source, destination):
        raise OSError(errno.EXDEV, "refused by the test")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError, match="refused by the test"):
        write_text_atomically(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["c.txt"]


def test_a_write_failing_after_its_text_is_written_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "c.txt"
    write_text_atomically(target, "old")
    written = []

    def refuse(fd):
        written.append(os.listdir(tmp_path))
        raise OSError(errno.EIO, "disk error injected by the test")

    monkeypatch.setattr(files.os, "fsync", refuse)
    with pytest.raises(OSError, match="disk error"):
        write_text_atomically(target, "new")
    monkeypatch.undo()
    assert len(written[0]) == 2  # the temporary existed, beside the old file
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["c.txt"]


def test_a_first_write_failing_leaves_nothing(tmp_path):
    with pytest.raises(TypeError):
        write_text_atomically(tmp_path / "c.txt", None)
    assert os.listdir(tmp_path) == []


def test_a_full_disk_at_the_writes_fault_point_leaves_the_old_file(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "_reached", {})
    target = tmp_path / "c.txt"
    write_text_atomically(target, "old", fault="report.write")  # inert without LABELDP_FAULT
    monkeypatch.setenv(faults.ENV, "report.write:enospc")
    with pytest.raises(OSError) as full:
        write_text_atomically(target, "new", fault="report.write")
    assert full.value.errno == errno.ENOSPC
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["c.txt"]
    write_text_atomically(target, "newer")  # no fault point named: written
    assert target.read_text() == "newer"


def test_fsync_path_accepts_a_file_a_directory_and_a_missing_path(tmp_path):
    (tmp_path / "f").write_text("x")
    assert fsync_path(tmp_path / "f") is None
    assert fsync_path(tmp_path) is None
    assert fsync_path(tmp_path / "missing") is None  # best effort: nothing raised


# ----------------------------------------------------------------------------------------------------- names
def test_a_temporary_names_its_kind_its_target_and_its_owner():
    name = temporary_name("tmp", "date=2026-10-01", "0123456789ab")
    assert name == f".tmp-date=2026-10-01.h{files._HOST}p{os.getpid()}-0123456789ab"
    match = _TEMPORARY.match(name)
    assert (match["kind"], match["name"], match["pid"], match["token"]) == (
        "tmp", "date=2026-10-01", str(os.getpid()), "0123456789ab")


def test_a_temporary_without_a_token_gets_a_new_one_each_time():
    first, second = temporary_name("old", "model"), temporary_name("old", "model")
    assert first != second
    assert all(_TEMPORARY.match(name)["kind"] == "old" for name in (first, second))
    assert len(_TEMPORARY.match(first)["token"]) == 12


# -------------------------------------------------------------------------------------------------- recovery
def test_recovery_removes_the_temporaries_of_owners_that_are_gone_only(tmp_path, gone_pid):
    gone = tmp_path / "day" / _temporary("tmp", "c.txt", gone_pid)
    gone_directory = tmp_path / _temporary("tmp", "date=2026-10-01", gone_pid)
    running = tmp_path / temporary_name("tmp", "c.txt")
    elsewhere = tmp_path / _temporary("tmp", "c.txt", gone_pid, host="0" * 8 if files._HOST != "0" * 8 else "1" * 8)
    unrelated = tmp_path / ".tmp-by-hand"
    gone.parent.mkdir()
    for path in (gone, running, elsewhere, unrelated):
        path.write_text("x")
    _directory(gone_directory, "half")
    done = recover_interrupted(tmp_path)
    assert sorted(done) == sorted([f"{gone}: removed (a write its process did not finish)",
                                   f"{gone_directory}: removed (a write its process did not finish)"])
    assert not gone.exists() and not gone_directory.exists()
    assert running.exists() and elsewhere.exists() and unrelated.exists()
    assert recover_interrupted(tmp_path) == []


def test_recovery_looks_only_depth_levels_down(tmp_path, gone_pid):
    deep = tmp_path / "1" / "2" / _temporary("tmp", "c.txt", gone_pid)
    deep.parent.mkdir(parents=True)
    deep.write_text("x")
    assert recover_interrupted(tmp_path, depth=2) == [] and deep.exists()
    assert recover_interrupted(tmp_path, depth=3) != [] and not deep.exists()


def test_recovery_finishes_a_directory_swap_killed_between_its_two_moves(tmp_path, gone_pid):
    """The old directory moved aside, the new one not yet in: the new one (complete) moves in."""
    old = _directory(tmp_path / _temporary("old", "model", gone_pid), "old")
    new = _directory(tmp_path / _temporary("tmp", "model", gone_pid), "new")
    done = recover_interrupted(tmp_path)
    assert done == [f"{tmp_path / 'model'}: finished moving the new directory in",
                    f"{old}: removed (the directory it replaced)"]
    assert _content(tmp_path / "model") == "new" and not new.exists() and not old.exists()


def test_recovery_puts_the_old_directory_back_when_the_new_one_is_missing(tmp_path, gone_pid):
    _directory(tmp_path / _temporary("old", "model", gone_pid), "old")
    assert recover_interrupted(tmp_path) == [f"{tmp_path / 'model'}: put back"]
    assert os.listdir(tmp_path) == ["model"] and _content(tmp_path / "model") == "old"


def test_recovery_removes_a_moved_aside_directory_whose_replacement_is_in_place(tmp_path, gone_pid):
    old = _directory(tmp_path / _temporary("old", "model", gone_pid), "old")
    _directory(tmp_path / "model", "new")
    assert recover_interrupted(tmp_path) == [f"{old}: removed (the directory it replaced)"]
    assert os.listdir(tmp_path) == ["model"] and _content(tmp_path / "model") == "new"


def test_recovery_leaves_a_running_owners_directory_swap_alone(tmp_path):
    old = _directory(tmp_path / temporary_name("old", "model"), "old")
    assert recover_interrupted(tmp_path) == [] and old.exists()


def test_recovery_of_a_missing_root_does_nothing(tmp_path):
    assert recover_interrupted(tmp_path / "missing") == []


# ------------------------------------------------------------------------------------- directories swapped together
def _pair(tmp_path, token="b" * 12, pid=None):
    """Two final directories holding "old" and their complete replacements, with the journal naming both swaps."""
    moves = []
    for name in ("oracle", "partition"):
        final = _directory(tmp_path / name, "old")
        new = _directory(tmp_path / (_temporary("tmp", name, pid, token=token) if pid else
                                     temporary_name("tmp", name, token)), "new")
        old = tmp_path / (_temporary("old", name, pid, token=token) if pid else temporary_name("old", name, token))
        moves.append((final, new, old))
    return moves


def test_a_journal_names_each_swap_relative_to_its_directory(tmp_path):
    moves = _pair(tmp_path)
    journal = write_swap_journal(tmp_path, "day", "b" * 12, moves)
    assert journal == tmp_path / temporary_name("swap", "day", "b" * 12)
    assert json.loads(journal.read_text()) == {"swaps": [
        {"final": final.name, "new": new.name, "old": old.name} for final, new, old in moves]}


def test_the_swaps_of_a_journal_move_every_new_directory_in_and_remove_the_old_ones_and_the_journal(tmp_path):
    moves = _pair(tmp_path)
    journal = write_swap_journal(tmp_path, "day", "b" * 12, moves)
    done = swap_directories(journal)
    assert done == [f"{tmp_path / 'oracle'}: finished moving the new directory in",
                    f"{tmp_path / 'partition'}: finished moving the new directory in",
                    f"{moves[0][2]}: removed (the directory it replaced)",
                    f"{moves[1][2]}: removed (the directory it replaced)"]
    assert sorted(os.listdir(tmp_path)) == ["oracle", "partition"]
    assert _content(tmp_path / "oracle") == _content(tmp_path / "partition") == "new"


def test_the_swaps_resume_where_a_kill_left_them(tmp_path):
    """Killed in the second swap's window: the first done, the second final directory moved aside."""
    (oracle, oracle_new, oracle_old), (partition, _, partition_old) = moves = _pair(tmp_path)
    journal = write_swap_journal(tmp_path, "day", "b" * 12, moves)
    os.rename(oracle, oracle_old)
    os.rename(oracle_new, oracle)
    os.rename(partition, partition_old)
    done = swap_directories(journal)
    assert done[0] == f"{partition}: finished moving the new directory in"
    assert sorted(os.listdir(tmp_path)) == ["oracle", "partition"]
    assert _content(oracle) == _content(partition) == "new"


def test_a_swap_whose_new_directory_is_gone_puts_the_old_one_back(tmp_path):
    (oracle, oracle_new, oracle_old), _ = moves = _pair(tmp_path)
    journal = write_swap_journal(tmp_path, "day", "b" * 12, moves)
    os.rename(oracle, oracle_old)
    files._remove(oracle_new)
    done = swap_directories(journal)
    assert done[0] == f"{oracle}: put back"
    assert _content(oracle) == "old" and _content(tmp_path / "partition") == "new"


def test_a_swap_killed_at_its_pair_point_keeps_its_journal_for_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "_reached", {})
    moves = _pair(tmp_path)
    journal = write_swap_journal(tmp_path, "day", "b" * 12, moves)
    monkeypatch.setenv(faults.ENV, "directory.pair@2:enospc")  # after the first swap
    with pytest.raises(OSError):
        swap_directories(journal)
    assert journal.exists() and _content(tmp_path / "oracle") == "new"
    assert pending_swap(tmp_path, tmp_path / "partition") == journal
    monkeypatch.delenv(faults.ENV)
    swap_directories(journal)
    assert not journal.exists() and _content(tmp_path / "partition") == "new"


def test_a_pending_swap_is_found_for_the_directories_its_journal_names_only(tmp_path):
    journal = write_swap_journal(tmp_path, "day", "b" * 12, _pair(tmp_path))
    assert pending_swap(tmp_path, tmp_path / "oracle") == journal
    assert pending_swap(tmp_path, tmp_path / "partition") == journal
    assert pending_swap(tmp_path, tmp_path / "other") is None
    (tmp_path / ".swap-not-a-journal").write_text("{")
    swap_directories(journal)
    assert pending_swap(tmp_path, tmp_path / "oracle") is None
    assert pending_swap(tmp_path / "missing", tmp_path / "missing" / "oracle") is None


def test_a_pending_swap_ignores_an_unreadable_journal(tmp_path):
    (tmp_path / temporary_name("swap", "day", "c" * 12)).write_text("not json")
    assert pending_swap(tmp_path, tmp_path / "oracle") is None


def test_recovery_finishes_the_swaps_of_a_gone_owners_journal_first(tmp_path, gone_pid):
    """The journal names temporaries of its owner, which recovery must move in, not remove as unfinished writes."""
    moves = _pair(tmp_path, pid=gone_pid)
    entries = [{"final": f.name, "new": n.name, "old": o.name} for f, n, o in moves]
    journal = tmp_path / _temporary("swap", "day", gone_pid, token="b" * 12)
    journal.write_text(json.dumps({"swaps": entries}))
    done = recover_interrupted(tmp_path)
    assert done[-1] == f"{journal}: finished the swaps it names, removed"
    assert sorted(os.listdir(tmp_path)) == ["oracle", "partition"]
    assert _content(tmp_path / "oracle") == _content(tmp_path / "partition") == "new"


def test_the_last_pair_point_is_after_every_swap_and_before_the_clean_up(tmp_path, monkeypatch):
    monkeypatch.setattr(faults, "_reached", {})
    moves = _pair(tmp_path)
    journal = write_swap_journal(tmp_path, "day", "b" * 12, moves)
    monkeypatch.setenv(faults.ENV, "directory.pair@3:enospc")  # two swaps: the third time is after both
    with pytest.raises(OSError):
        swap_directories(journal)
    assert _content(tmp_path / "oracle") == _content(tmp_path / "partition") == "new"
    assert journal.exists() and all(old.exists() for _, _, old in moves)
