"""Where things live under the data root, and how directories are published atomically.

The layout (../shared/DESIGN.md, "Data layout"), all under one data root:

- ``partitions/date=YYYY-MM-DD/part-*.parquet``: the daily partition (see ``pipelines.schema``);
- ``oracle/date=YYYY-MM-DD/``: the true click probability per row_id (synthetic data only, never read by training);
- ``models/<model_name>/date=YYYY-MM-DD/``: a trained model and its metadata.

Guarantees:

- ``resolve_data_root`` picks the root the same way for every command: the argument, else the environment
  variable ``LABELDP_DATA_ROOT``, else ``./.labeldp``.
- ``parse_date`` and ``check_name`` reject bad input with a ``LabelDPInputError`` naming the argument, what
  was expected and the value received; a checked name is always a single safe path component.
- ``atomic_directory`` never lets a reader see a half-written directory: the content is written to a hidden
  temporary sibling and renamed into place only when the ``with`` block succeeds; on failure the temporary
  directory is removed and the final path is left exactly as it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from auditing.atomic_files import fsync_path
from auditing.errors import LabelDPInputError

DATA_ROOT_ENV = "LABELDP_DATA_ROOT"
DEFAULT_DATA_ROOT = ".labeldp"

PARTITIONS = "partitions"
ORACLE = "oracle"
MODELS = "models"

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_MAX_NAME_LENGTH = 128


def resolve_data_root(arg: str | os.PathLike | None) -> Path:
    """The data root: ``arg`` if given, else ``$LABELDP_DATA_ROOT`` if set and non-empty, else ``./.labeldp``.

    The directory is not created here; writers create what they need.
    """
    if arg is not None and str(arg) != "":
        return Path(arg).expanduser()
    env = os.environ.get(DATA_ROOT_ENV, "")
    if env:
        return Path(env).expanduser()
    return Path(DEFAULT_DATA_ROOT)


def parse_date(text: str | dt.date, name: str = "date") -> dt.date:
    """Parses ``YYYY-MM-DD`` (a ``datetime.date`` passes through unchanged).

    Raises ``LabelDPInputError`` naming ``name`` for anything else, including impossible dates (2024-02-30).
    """
    if isinstance(text, dt.datetime):
        raise LabelDPInputError(f"{name} must be a date (YYYY-MM-DD), not a datetime; got {text!r}")
    if isinstance(text, dt.date):
        return text
    if not isinstance(text, str) or not _DATE_RE.match(text.strip()):
        raise LabelDPInputError(f"{name} must be a date written YYYY-MM-DD (e.g. 2024-01-31); got {text!r}")
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError as exc:
        raise LabelDPInputError(f"{name} is not a valid calendar date: {text!r} ({exc})") from None


def check_name(text: str, name: str = "model name") -> str:
    """Returns ``text`` if it is a safe single path component, else raises ``LabelDPInputError``.

    Allowed: letters, digits, '-', '_', '.', at most 128 characters, starting with a letter or digit (so
    '.', '..' and hidden names are impossible); no '/' or '\\', hence no path traversal.
    """
    if not isinstance(text, str) or not text:
        raise LabelDPInputError(f"{name} must be a non-empty string; got {text!r}")
    if len(text) > _MAX_NAME_LENGTH:
        raise LabelDPInputError(f"{name} must be at most {_MAX_NAME_LENGTH} characters; got {len(text)}")
    if not _NAME_RE.match(text):
        raise LabelDPInputError(
            f"{name} may contain only letters, digits, '-', '_' and '.', and must start with a letter or "
            f"digit; got {text!r}"
        )
    return text


def _date_component(date: str | dt.date) -> str:
    return f"date={parse_date(date).isoformat()}"


def partition_dir(root: str | os.PathLike, date: str | dt.date) -> Path:
    """``root/partitions/date=YYYY-MM-DD``."""
    return Path(root) / PARTITIONS / _date_component(date)


def oracle_dir(root: str | os.PathLike, date: str | dt.date) -> Path:
    """``root/oracle/date=YYYY-MM-DD`` (synthetic data only; never read by training)."""
    return Path(root) / ORACLE / _date_component(date)


def model_dir(root: str | os.PathLike, model_name: str, date: str | dt.date) -> Path:
    """``root/models/<model_name>/date=YYYY-MM-DD``; ``model_name`` is checked with ``check_name``."""
    return Path(root) / MODELS / check_name(model_name) / _date_component(date)


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for filename in filenames:
            fsync_path(Path(dirpath) / filename)
        fsync_path(Path(dirpath))


@contextlib.contextmanager
def atomic_directory(final_path: str | os.PathLike) -> Iterator[Path]:
    """Yields a fresh temporary directory; on success it becomes ``final_path``.

    - The temporary directory is a hidden sibling (``.tmp-<name>-<random>``) in the same parent, so the final
      rename stays on one file system and readers that glob ``date=*`` or ``part-*`` never see it.
    - On success: every file is fsynced; if ``final_path`` already exists it is renamed aside
      (``.old-<name>-<random>``), the new directory is renamed in, and the old one is deleted. A reader sees
      the old content or the new, never a mixture (there is a sub-millisecond window where neither exists).
    - On any exception inside the block the temporary directory is removed, and so are the parent directories
      this call created (if still empty); ``final_path`` is untouched and the exception propagates.
    """
    final_path = Path(final_path)
    parent = final_path.parent
    created = [p for p in (parent, *parent.parents) if not p.exists()]  # deepest first
    parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:12]
    tmp = parent / f".tmp-{final_path.name}-{token}"
    tmp.mkdir()
    try:
        yield tmp
        _fsync_tree(tmp)
        if final_path.exists():
            old = parent / f".old-{final_path.name}-{token}"
            os.rename(final_path, old)
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
        shutil.rmtree(tmp, ignore_errors=True)
        for directory in created:  # parents this call created, if still empty: leave no trace
            try:
                directory.rmdir()
            except OSError:
                break
        raise
