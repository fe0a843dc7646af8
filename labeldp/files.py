"""Atomic, durable file writes shared by every writer of the project (sinks, spool, ledgers, registry).

A reader sees either the previous file or the complete new one, never a partial write: the content goes to
a temporary sibling, is fsynced, renamed over the target, and the directory is fsynced so that the rename
survives a crash.

Temporaries (``.tmp-<name>.<owner>-<12 hex>``, and ``.old-<name>.<owner>-<12 hex>`` for a directory moved aside
while its replacement moves in: `pipelines.data.layout.atomic_directory`) name their owner, ``h<8 hex of the host
name>p<pid>`` (`temporary_name`). A process killed mid-write (SIGKILL, power loss) leaves them behind, never in the
final name; `recover_interrupted` then removes the ones of owners that are gone and finishes a directory swap a
kill interrupted (the new directory was complete before the old one was moved aside).

Directories that must be replaced together (a synthetic day's partition and its oracle:
`pipelines.data.layout.atomic_directories`) are swapped from one journal, ``.swap-<name>.<owner>-<12 hex>``, written
in their common parent once every new directory is complete and before the first swap: it names each (final, new,
moved-aside) triple. `swap_directories` performs the swaps the journal names, in order, and removes it last;
`recover_interrupted` runs the same `swap_directories` for the journal of an owner that is gone, before anything
else, so a kill at any point leaves the old directories (no journal yet: the new ones are removed as unfinished
writes) or, after recovery, all of the new ones; never some old and some new.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import uuid
from pathlib import Path

from labeldp import faults


def fsync_path(path: str | os.PathLike) -> None:
    """fsyncs a file or a directory (a directory: so that a rename inside it is durable)."""
    path = Path(path)
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if path.is_dir() else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return  # platforms that cannot open directories: durability is best effort there
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_TEMPORARY = re.compile(r"^\.(?P<kind>tmp|old|swap)-(?P<name>.+)\.h(?P<host>[0-9a-f]{8})p(?P<pid>\d+)-(?P<token>[0-9a-f]{12})$")


def temporary_name(kind: str, name: str, token: str | None = None) -> str:
    """``.<kind>-<name>.h<host>p<pid>-<token>`` (kind: tmp, old or swap; token: 12 hex, new when None)."""
    return f".{kind}-{name}.h{_HOST}p{os.getpid()}-{token or uuid.uuid4().hex[:12]}"


def _owner_gone(match: re.Match) -> bool:
    """True when the temporary's owner was a process of this host that no longer runs."""
    if match["host"] != _HOST:
        return False  # another machine's (a shared data root): not ours to judge
    pid = int(match["pid"])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def write_swap_journal(directory: Path, name: str, token: str, moves: list[tuple[Path, Path, Path]]) -> Path:
    """Writes, atomically and durably, the journal ``directory/.swap-<name>.<owner>-<token>`` naming each (final, new,
    moved-aside) directory of ``moves`` (paths under ``directory``, stored relative to it); returns its path. Call it
    once every new directory is complete and fsynced: from then on `swap_directories` can always finish the swaps."""
    entries = [{"final": str(final.relative_to(directory)), "new": str(new.relative_to(directory)),
                "old": str(old.relative_to(directory))} for final, new, old in moves]
    journal = directory / temporary_name("swap", name, token)
    write_text_atomically(journal, json.dumps({"swaps": entries}, indent=2) + "\n")
    return journal


def swap_directories(journal: Path) -> list[str]:
    """Performs the swaps the journal `write_swap_journal` wrote names, in order, from wherever a killed process left
    them, then removes the directories moved aside and the journal: each final directory is moved aside when its new
    one is still there, and the new one moved in. Idempotent, and safe to be killed anywhere itself (run again, it
    finishes the rest). The writer of the journal calls it too, so that the swaps and their recovery are one code.
    Fault points (`labeldp.faults`): ``directory.pair`` before each swap and after the last one (before the clean-up;
    `pipelines.data.layout.atomic_directories` reaches it once before, the journal not yet written),
    ``directory.swap`` in each swap's window (the final directory moved aside, the new one not yet in). Returns what
    it did, one line per directory."""
    directory = journal.parent
    entries = json.loads(journal.read_text(encoding="utf-8"))["swaps"]
    done = []
    for entry in entries:
        faults.point("directory.pair")
        final, new, old = (directory / entry[key] for key in ("final", "new", "old"))
        if new.exists():
            if final.exists():
                os.rename(final, old)
                faults.point("directory.swap")  # neither in place here: the journal finishes the swap
            os.rename(new, final)
            fsync_path(final.parent)
            done.append(f"{final}: finished moving the new directory in")
        elif not final.exists() and old.exists():  # nothing to move in (removed by hand): the old one goes back
            os.rename(old, final)
            fsync_path(final.parent)
            done.append(f"{final}: put back")
    faults.point("directory.pair")
    for entry in entries:
        old = directory / entry["old"]
        if old.exists():
            _remove(old)
            done.append(f"{old}: removed (the directory it replaced)")
    journal.unlink()
    fsync_path(directory)
    return done


def pending_swap(directory: str | os.PathLike, path: str | os.PathLike) -> Path | None:
    """The journal in ``directory`` (`write_swap_journal`) whose swaps, not finished yet, include ``path``'s, if any:
    its writer is swapping it right now, or was killed doing so (then `recover_interrupted` finishes it). A reader
    of one directory of such a group refuses it, rather than read it beside the others' predecessors."""
    directory, path = Path(directory), Path(path)
    try:
        names = sorted(e.name for e in os.scandir(directory) if e.name.startswith(".swap-"))
    except OSError:
        return None
    for name in names:
        match = _TEMPORARY.match(name)
        if match is None or match["kind"] != "swap":
            continue
        try:
            entries = json.loads((directory / name).read_text(encoding="utf-8"))["swaps"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # removed meanwhile: finished
        if any(directory / entry["final"] == path for entry in entries):
            return directory / name
    return None


def recover_interrupted(root: str | os.PathLike, depth: int = 5) -> list[str]:
    """Cleans up after processes killed mid-write under ``root`` (``depth`` levels): the swaps a journal of directories
    replaced together names are finished first (`swap_directories`); a directory swap interrupted between moving the
    old directory aside and moving the new one in is finished (the new one was complete), or undone when the new one
    is missing; the temporaries of owners that are gone are removed. Returns what it did, one line per entry (nothing
    for a running process's temporaries, nor another host's)."""
    done: list[str] = []

    def walk(directory: Path, level: int) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        found, below = {}, []
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match is not None:
                found[entry.name] = match
            elif level < depth and entry.is_dir(follow_symlinks=False):
                below.append(Path(entry.path))
        for name, match in found.items():  # journals first: they name temporaries below, which must not be removed
            if match["kind"] == "swap" and _owner_gone(match) and (directory / name).exists():
                done.extend(swap_directories(directory / name))
                done.append(f"{directory / name}: finished the swaps it names, removed")
        for path in below:
            walk(path, level + 1)
        for name, match in found.items():
            if match["kind"] != "old" or not _owner_gone(match):
                continue
            old, final = directory / name, directory / match["name"]
            new = directory / (".tmp-" + name.removeprefix(".old-"))
            if not old.exists():
                continue  # a journal's swap, finished above
            if not final.exists():
                source = new if new.exists() else old
                os.replace(source, final)
                fsync_path(directory)
                done.append(f"{final}: {'finished moving the new directory in' if source == new else 'put back'}")
            if old.exists():
                _remove(old)
                done.append(f"{old}: removed (the directory it replaced)")
        for name, match in found.items():
            path = directory / name
            if match["kind"] == "tmp" and path.exists() and _owner_gone(match):
                _remove(path)
                done.append(f"{path}: removed (a write its process did not finish)")

    walk(Path(root), 1)
    return done


def write_text_atomically(path: str | os.PathLike, text: str, fault: str | None = None) -> Path:
    """Writes `text` to `path` (creating parent directories) so that no reader ever sees half of it. ``fault``: the
    `labeldp.faults` point between the temporary file and its rename (for the crash tests; inert otherwise)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / temporary_name("tmp", path.name)
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if fault is not None:
            faults.point(fault)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_path(path.parent)
    return path
