"""Where things live under the data root, and how directories are published atomically.

The layout, all under one data root:

- ``partitions/date=YYYY-MM-DD/part-*.parquet``: the daily partition (see ``pipelines.data.schema``);
- ``oracle/date=YYYY-MM-DD/``: the true click probability per row_id (synthetic data only, never read by training);
- ``models/<model_name>/date=YYYY-MM-DD/``: a trained model and its metadata.

Only this module and the day's handle (`pipelines.data.day.Day`) build a partition's path (`partition_dir`;
tests/test_layering.py checks): a day that is read is a handle, and code that only asks whether a day is there,
or writes one, asks `partition_listing` and `partition_record`.

Names, dates and the data root are validated by ``labeldp.names`` (the bottom layer, shared with the
auditing sinks); they are re-exported here for the pipelines and the command line. Dates are parsed once, at
the edge (``parse_date``); every function here takes a ``datetime.date`` and refuses anything else with a
``TypeError`` naming the argument (``require_date``): no string is re-parsed on the way in.

Guarantees:

- ``atomic_directory`` never lets a reader see a half-written directory: the content is written to a hidden
  temporary sibling and renamed into place only when the ``with`` block succeeds; on failure the temporary
  directory is removed and the final path is left exactly as it was.
- ``atomic_directories`` does the same for directories replaced together (a synthetic day's oracle and partition):
  after a kill anywhere, the next command that writes under the data root sees all the old ones or all the new
  ones, from one journal (`labeldp.files.swap_directories`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from labeldp import faults
from labeldp.files import fsync_path, swap_directories, temporary_name, write_swap_journal
from labeldp.names import (
    check_name,
    require_date,
)

__all__ = [
    "MODELS", "ORACLE", "PARTITIONS", "PART_GLOB", "PartitionListing", "atomic_directories", "atomic_directory",
    "file_fingerprint", "model_dir", "oracle_dir", "partition_dir", "partition_listing", "partition_record",
    "read_json_object", "refuse_empty_file"
]

PARTITIONS = "partitions"
ORACLE = "oracle"
MODELS = "models"
PART_GLOB = "part-*.parquet"  # a partition's data files (`pipelines.data.schema`)


def _date_component(date: dt.date) -> str:
    return f"date={require_date(date).isoformat()}"


def partition_dir(root: str | os.PathLike, date: dt.date) -> Path:
    """``root/partitions/date=YYYY-MM-DD``."""
    return Path(root) / PARTITIONS / _date_component(date)


@dataclass(frozen=True)
class PartitionListing:
    """What is on disk for one day's partition, unchecked: its directory (named in messages and replaced by a write)
    and its ``part-*.parquet`` files in name order (none when the directory is absent). A day that is read is
    resolved as a handle (`pipelines.data.day.Day`); this is for the code that asks whether a day is there, or
    writes one."""

    directory: Path
    files: tuple[Path, ...]

    @property
    def exists(self) -> bool:
        """The partition's directory exists (it may hold no files)."""
        return self.directory.is_dir()


def partition_listing(root: str | os.PathLike, date: dt.date) -> PartitionListing:
    """Day ``date``'s partition as it is on disk now (`PartitionListing`)."""
    directory = partition_dir(root, date)
    return PartitionListing(directory, tuple(sorted(directory.glob(PART_GLOB))) if directory.is_dir() else ())


def partition_record(root: str | os.PathLike, date: dt.date, name: str) -> Path:
    """The file ``name`` kept beside a day's partition files (its dataset, provenance and replacement records)."""
    return partition_dir(root, date) / name


def oracle_dir(root: str | os.PathLike, date: dt.date) -> Path:
    """``root/oracle/date=YYYY-MM-DD`` (synthetic data only; never read by training)."""
    return Path(root) / ORACLE / _date_component(date)


def model_dir(root: str | os.PathLike, model_name: str, date: dt.date) -> Path:
    """``root/models/<model_name>/date=YYYY-MM-DD``; ``model_name`` is checked with ``check_name``."""
    return Path(root) / MODELS / check_name(model_name) / _date_component(date)


def refuse_empty_file(path: str | os.PathLike) -> None:
    """LabelDPInputError "<path>: the file is empty (0 bytes)" for an existing 0-byte file: called before a
    reader that would say something less plain about it (no graph to run, not Parquet, not JSON)."""
    from labeldp.errors import LabelDPInputError

    try:
        empty = os.path.isfile(path) and os.stat(path).st_size == 0
    except OSError:
        return
    if empty:
        raise LabelDPInputError(f"{path}: the file is empty (0 bytes)")


def read_json_object(path: str | os.PathLike) -> dict:
    """The JSON object in the file ``path`` (a record under the data root, a spec); LabelDPInputError naming the
    file when it cannot be read, is empty, is not JSON or holds something else than an object."""
    from labeldp.errors import LabelDPInputError

    refuse_empty_file(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LabelDPInputError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise LabelDPInputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for filename in filenames:
            fsync_path(Path(dirpath) / filename)
        fsync_path(Path(dirpath))


@contextlib.contextmanager
def atomic_directory(final_path: str | os.PathLike) -> Iterator[Path]:
    """Yields a fresh temporary directory; on success it becomes ``final_path``.

    - The temporary directory is a hidden sibling (``.tmp-<name>.<owner>-<random>``, `labeldp.files.temporary_name`)
      in the same parent, so the final
      rename stays on one file system and readers that glob ``date=*`` or ``part-*`` never see it.
    - On success: every file is fsynced; if ``final_path`` already exists it is renamed aside
      (``.old-<name>.<owner>-<random>``), the new directory is renamed in, and the old one is deleted. A reader sees
      the old content or the new, never a mixture (there is a sub-millisecond window where neither exists; a
      process killed in it leaves both names, and `labeldp.files.recover_interrupted` finishes the swap).
    - On any exception inside the block the temporary directory is removed, and so are the parent directories
      this call created (if still empty); ``final_path`` is untouched and the exception propagates.
    """
    final_path = Path(final_path)
    parent = final_path.parent
    created = [p for p in (parent, *parent.parents) if not p.exists()]  # deepest first
    parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:12]
    tmp = parent / temporary_name("tmp", final_path.name, token)
    tmp.mkdir()
    try:
        yield tmp
        _fsync_tree(tmp)
        if final_path.exists():
            old = parent / temporary_name("old", final_path.name, token)
            os.rename(final_path, old)
            faults.point("directory.swap")  # neither exists here: `recover_directories` finishes the swap
            try:
                os.rename(tmp, final_path)
            except BaseException:
                os.rename(old, final_path)  # put the previous content back
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final_path)
        fsync_path(parent)
    except BaseException:
        _discard([tmp], created)
        raise


def _discard(temporaries: list[Path], created: list[Path]) -> None:
    """Removes a failed write's temporary directories, then the parents it created (deepest first) that are still
    empty: the write leaves no trace."""
    for tmp in temporaries:
        shutil.rmtree(tmp, ignore_errors=True)
    for directory in created:
        try:
            directory.rmdir()
        except OSError:
            pass  # not empty: something else lives there now


@contextlib.contextmanager
def atomic_directories(*final_paths: str | os.PathLike) -> Iterator[list[Path]]:
    """Yields one fresh temporary directory per path of ``final_paths``; on success they replace them as one.

    As `atomic_directory` for each, with one difference: once every new directory is complete and fsynced, a journal
    naming the swaps (`labeldp.files.write_swap_journal`) is written in the paths' deepest common parent, and the
    swaps are done in the order given from that journal (`labeldp.files.swap_directories`), which is removed last.
    A process killed before the journal exists leaves the old directories (its temporaries are removed by
    `labeldp.files.recover_interrupted`); killed after, the next recovery finishes every swap the journal names.
    So no command that recovers first ever sees some of the new directories beside some of the old ones. On any
    exception inside the block every temporary directory is removed, with the parents this call created. One path:
    exactly `atomic_directory` (no journal). An error during the swaps themselves (past the journal) propagates and
    leaves the journal to the recovery that follows this process's end.
    """
    finals = [Path(p) for p in final_paths]
    if not finals or len({str(p) for p in finals}) != len(finals):
        raise ValueError(f"atomic_directories: final_paths must be distinct paths, at least one; got {final_paths!r}")
    if len(finals) == 1:  # one directory needs no journal: its swap is finished from its own temporaries' names
        with atomic_directory(finals[0]) as tmp:
            yield [tmp]
        return
    common = Path(os.path.commonpath([p.parent for p in finals]))
    created = []
    for parent in (p.parent for p in finals):
        created += [d for d in (parent, *parent.parents) if not d.exists() and d not in created]
    created.sort(key=lambda d: len(d.parts), reverse=True)  # deepest first
    token = uuid.uuid4().hex[:12]
    tmps = [p.parent / temporary_name("tmp", p.name, token) for p in finals]
    journal = None
    try:
        for tmp in tmps:
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.mkdir()
        yield tmps
        for tmp in tmps:
            _fsync_tree(tmp)
        faults.point("directory.pair")  # complete, no journal yet: a kill here leaves the old directories
        moves = [(final, tmp, final.parent / temporary_name("old", final.name, token))
                 for final, tmp in zip(finals, tmps, strict=True)]
        journal = write_swap_journal(common, finals[0].name, token, moves)
    except BaseException:
        _discard(tmps, created)
        raise
    swap_directories(journal)  # past the journal, only forward: an error here leaves it to the next recovery


def file_fingerprint(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()
