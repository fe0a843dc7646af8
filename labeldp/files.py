"""Atomic, durable file writes shared by every writer of the project (sinks, spool, ledgers, registry).

A reader sees either the previous file or the complete new one, never a partial write: the content goes to
a temporary sibling, is fsynced, renamed over the target, and the directory is fsynced so that the rename
survives a crash.
"""

from __future__ import annotations

import os
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


def write_text_atomically(path: str | os.PathLike, text: str, fault: str | None = None) -> Path:
    """Writes `text` to `path` (creating parent directories) so that no reader ever sees half of it. ``fault``: the
    `labeldp.faults` point between the temporary file and its rename (for the crash tests; inert otherwise)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".tmp-{path.name}-{uuid.uuid4().hex[:12]}"
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
