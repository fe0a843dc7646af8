"""Nothing lost when the warehouse is down: retry, then spool the payload to disk; write it on the next run.

- ``write_or_spool`` validates the payload first (bad input raises and is never spooled), tries the warehouse
  ``attempts`` times with exponential backoff, and if it stays unavailable writes the payload atomically
  (temporary file, fsync, rename) to ``<spool_dir>/<model>__<date>__<config hash>.json``. One file per key:
  spooling the same key again replaces the older payload, as the warehouse upsert would.
- ``drain_spool`` writes every spooled payload (an idempotent upsert) and deletes a file only after its
  transaction committed, and only if the file was not replaced meanwhile. A file that cannot be read or
  validated is renamed ``*.json.rejected`` (kept for a person, never retried forever) and reported.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from auditing.atomic_files import write_text_atomically
from auditing.errors import LabelDPInputError
from auditing.warehouse.base import WarehouseUnavailable, describe_target
from auditing.warehouse.rows import AuditKey, as_key, normalize_curve, normalize_row, to_json_safe

log = logging.getLogger("labeldp.warehouse")

SPOOL_FORMAT = 1
WRITTEN, SPOOLED = "written", "spooled"


def spool_path(spool_dir: str | os.PathLike, key: AuditKey) -> Path:
    """``<spool_dir>/<model_id>__<YYYY-MM-DD>__<config hash>.json`` (every part is a validated name)."""
    key = as_key(key)
    return Path(spool_dir) / f"{key.model_id}__{key.partition_date.isoformat()}__{key.audit_config_hash}.json"


def write_json_atomically(path: Path, payload: Mapping) -> None:
    """Readers see the old file or the complete new one, never a partial write."""
    write_text_atomically(path, json.dumps(payload, sort_keys=True))


def spool_payload(row: Mapping, curve: Sequence[Mapping], spool_dir: str | os.PathLike) -> Path:
    """Writes one validated payload to the spool and returns its path."""
    clean = normalize_row(row)
    key = as_key(clean)
    points = normalize_curve(curve, key)
    path = spool_path(spool_dir, key)
    payload = {
        "format": SPOOL_FORMAT,
        "spooled_at": time.time(),
        "row": to_json_safe(clean),
        "curve": [{k: p[k] for k in ("guesses", "correct", "epsilon_lower_bound", "point_confidence")}
                  for p in points],
    }
    write_json_atomically(path, payload)
    return path


def write_or_spool(
    target: str | os.PathLike | None, row: Mapping, curve: Sequence[Mapping], spool_dir: str | os.PathLike, *,
    attempts: int = 3, backoff: float = 1.0, timeout: float = 10.0, data_root: str | os.PathLike | None = None,
) -> str:
    """Upserts (row, curve) into the warehouse, or spools it; returns "written" or "spooled".

    attempts: tries of open + upsert (each may itself wait up to ``timeout`` s for a DuckDB file lock or a
    PostgreSQL connection); between tries it sleeps backoff, 2*backoff, 4*backoff, ... seconds.
    """
    from auditing.warehouse import open_warehouse

    if int(attempts) != attempts or attempts < 1:
        raise LabelDPInputError(f"attempts must be a whole number >= 1; got {attempts!r}")
    clean = normalize_row(row)
    key = as_key(clean)
    normalize_curve(curve, key)  # validate before the first try: bad input is an error, not an outage
    last_error: Exception | None = None
    for attempt in range(int(attempts)):
        try:
            with open_warehouse(target, data_root=data_root, timeout=timeout) as warehouse:
                warehouse.upsert_audit(clean, curve)
        except WarehouseUnavailable as exc:
            last_error = exc
            log.warning("warehouse write of %s failed (try %d of %d): %s", key, attempt + 1, attempts, exc)
            if attempt + 1 < attempts:
                time.sleep(backoff * 2**attempt)
            continue
        # A payload spooled earlier for this key is older than what was just committed: drop it.
        spool_path(spool_dir, key).unlink(missing_ok=True)
        return WRITTEN
    path = spool_payload(clean, curve, spool_dir)
    log.warning("warehouse %s unavailable after %d tries (%s); spooled %s to %s",
                describe_target(str(target)), attempts, last_error, key, path)
    return SPOOLED


def _spooled_files(spool_dir: Path) -> list[Path]:
    if not spool_dir.is_dir():
        return []
    return sorted(p for p in spool_dir.glob("*.json") if not p.name.startswith(".") and p.is_file())


def _read_payload(path: Path) -> tuple[dict, list[dict]]:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabelDPInputError(f"spool file {path}: not readable JSON ({exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != SPOOL_FORMAT:
        raise LabelDPInputError(f"spool file {path}: expected a format-{SPOOL_FORMAT} payload")
    try:
        row = normalize_row(payload.get("row"))
        curve = normalize_curve(payload.get("curve"), as_key(row))
    except LabelDPInputError as exc:
        raise LabelDPInputError(f"spool file {path}: {exc}") from None
    return row, curve


def drain_spool(
    target: str | os.PathLike | None, spool_dir: str | os.PathLike, *, timeout: float = 10.0,
    data_root: str | os.PathLike | None = None,
) -> dict:
    """Writes spooled payloads to the warehouse; returns what happened.

    Returns {"written": [AuditKey...], "rejected": [paths renamed *.rejected], "remaining": files still in
    the spool afterwards, "error": None or why the warehouse could not be used}. Safe to run concurrently and repeatedly:
    every write is an idempotent upsert, and a file is deleted only after its commit.
    """
    from auditing.warehouse import open_warehouse

    spool_dir = Path(spool_dir)
    report: dict = {"written": [], "rejected": [], "remaining": 0, "error": None}
    files = _spooled_files(spool_dir)
    if not files:
        return report
    try:
        warehouse = open_warehouse(target, data_root=data_root, timeout=timeout)
    except WarehouseUnavailable as exc:
        report.update(remaining=len(files), error=str(exc))
        return report
    with warehouse:
        for path in files:
            try:
                before = path.stat()
                row, curve = _read_payload(path)
            except FileNotFoundError:
                continue  # drained by a concurrent run
            except LabelDPInputError as exc:
                rejected = path.with_name(path.name + ".rejected")
                os.replace(path, rejected)
                log.error("%s; kept as %s", exc, rejected)
                report["rejected"].append(str(rejected))
                continue
            try:
                key = warehouse.upsert_audit(row, [{k: p[k] for k in ("guesses", "correct", "epsilon_lower_bound",
                                                                     "point_confidence")} for p in curve])
            except WarehouseUnavailable as exc:
                report.update(remaining=len(_spooled_files(spool_dir)), error=str(exc))
                return report
            report["written"].append(key)
            try:
                now = path.stat()
            except FileNotFoundError:
                continue
            if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
                path.unlink(missing_ok=True)
            # else: replaced by a newer payload meanwhile; it stays for the next drain
    report["remaining"] = len(_spooled_files(spool_dir))
    return report
