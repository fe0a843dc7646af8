"""The scoring job's background threads: pass 1's game kernels (`pipelines.scoring.scoring_batches`) and reading
ahead (`pipelines.scoring.partition_batches`) each run on one thread of their own per process."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_EXECUTORS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_LOCK = threading.Lock()


def background_thread(name: str) -> ThreadPoolExecutor:
    """The process's single background thread ``name`` (its thread is called ``labeldp-<name>_0``). A forked child
    does not inherit the parent's thread (the parent's executor would take work and never run it), so the
    executor is made again in a new process."""
    with _LOCK:
        found = _EXECUTORS.get(name)
        if found is None or found[0] != os.getpid():
            found = _EXECUTORS[name] = (os.getpid(),
                                        ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"labeldp-{name}"))
        return found[1]


__all__ = ["background_thread"]
