"""What a run left on disk: every file under a data root, so a test can say that a run killed or cancelled wrote and
rewrote nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under the data root but the debug logs and the warehouse: (size, mtime in ns, sha256). A file
    rewritten with the same bytes still shows (its mtime)."""
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and relative.parts[0] != "logs" and not relative.name.startswith("warehouse.duckdb"):
            info = path.stat()
            files[str(relative)] = (info.st_size, info.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return files
