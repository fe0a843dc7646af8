"""Nothing lost when the warehouse is down: retry, then spool the payload to disk; write it on the next run, to
the warehouse it was meant for and no other.

- ``write_or_spool`` validates the payload and the warehouse address first (bad input raises and is never
  spooled), tries the warehouse ``attempts`` times with exponential backoff, and if it stays unavailable writes
  the payload atomically (temporary file, fsync, rename) to
  ``<spool_dir>/<model>__<date>__<key name>__run-<run>__to-<destination>.json`` (``AuditKey.name``: run kind,
  claim, config hash and inputs fingerprint; 8 hex digits of the run id's sha256; the destination's fingerprint
  prefix). The payload records its destination (`auditing.sinks.warehouse.address.Destination`: backend, address
  without credentials, fingerprint). One file per key, run and destination: two runs on identical inputs spool
  two payloads, and the drain writes them in the order they were computed (the first writes the row, the next
  records its run against it, as `Warehouse.write_audit` does).
- ``drain_spool`` writes the payloads meant for the warehouse it is given (`Warehouse.write_audit`: idempotent),
  and deletes a file only after its transaction committed, and only if the file was not replaced meanwhile.
  Payloads meant
  for another warehouse stay where they are (reported as ``elsewhere``); so do payloads of the spool's first
  format, which recorded no destination (``unaddressed``), unless ``include_unaddressed`` says that this
  warehouse is theirs. A file that cannot be read or validated is renamed ``*.json.rejected`` (kept for a
  person, never retried forever) and reported.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from auditing.sinks.warehouse.address import Destination, WarehouseUnavailable, describe_target, destination
from auditing.sinks.warehouse.records import AuditKey, ResultRow, upgrade_row
from auditing.sinks.warehouse.rows import (
    SLICE_FIELDS,
    as_key,
    normalize_curve,
    normalize_row,
    normalize_slices,
    to_json_safe,
)
from auditing.sinks.warehouse.schema import UNRECORDED
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.files import write_text_atomically

log = logging.getLogger("labeldp.warehouse")

SPOOL_FORMAT = 3  # 2: before schema version 9 (the row has no run id or inputs fingerprint; both are filled in)
ADDRESSED_FORMATS = (2, SPOOL_FORMAT)
UNADDRESSED_FORMAT = 1  # the first format: no destination recorded
# What happened to a verdict: its row written, its run recorded against the row a run on identical inputs wrote,
# or spooled for the warehouse.
WRITTEN, RECORDED, SPOOLED = "written", "recorded", "spooled"
_POINT_FIELDS = ("guesses", "correct", "epsilon_lower_bound", "point_confidence")
_NEVER = dt.datetime.max.replace(tzinfo=dt.UTC)


def spool_path(spool_dir: str | os.PathLike, key: AuditKey, to: Destination, run_id: str) -> Path:
    """``<spool_dir>/<model_id>__<YYYY-MM-DD>__<key name>__run-<8 hex of the run id's sha256>__to-<destination
    fingerprint, 12>.json`` (every part is a validated name; at most 251 characters with the atomic write's
    temporary prefix)."""
    key = as_key(key)
    run = hashlib.sha256(run_id.encode()).hexdigest()[:8]
    return (Path(spool_dir) / f"{key.model_id}__{key.partition_date.isoformat()}__{key.name}__run-{run}__to-"
                              f"{to.fingerprint[:12]}.json")


def write_json_atomically(path: Path, payload: Mapping) -> None:
    """Readers see the old file or the complete new one, never a partial write."""
    write_text_atomically(path, json.dumps(payload, sort_keys=True), fault="spool.write")


def spool_payload(row: ResultRow | Mapping, curve: Sequence[Mapping], spool_dir: str | os.PathLike, to: Destination,
                  slices: Sequence[Mapping] = ()) -> Path:
    """Writes one validated payload, addressed to ``to``, to the spool and returns its path (``slices``: the
    verdict's slice rows, `auditing.sinks.warehouse.rows.slice_record`)."""
    clean = normalize_row(row)
    key = as_key(clean)
    points = normalize_curve(curve, key)
    pieces = normalize_slices(slices, key)
    path = spool_path(spool_dir, key, to, clean["run_id"])
    payload = {
        "format": SPOOL_FORMAT,
        "spooled_at": time.time(),
        "destination": encode(to),
        "row": to_json_safe(clean),
        "curve": [{k: p[k] for k in _POINT_FIELDS} for p in points],
        "slices": [{k: s[k] for k in SLICE_FIELDS} for s in pieces],  # absent in payloads written before slices
    }
    try:
        write_json_atomically(path, payload)
    except OSError as exc:  # a full or read-only disk: say where, the verdict is neither written nor spooled
        raise OSError(exc.errno, f"cannot spool {key.model_id} {key.partition_date} to {path} ({exc.strerror}); "
                                 "nothing was spooled, run again once the data root's disk can take it") from exc
    return path


def write_or_spool(
    target: str | os.PathLike | None, row: ResultRow | Mapping, curve: Sequence[Mapping], spool_dir: str | os.PathLike, *,
    attempts: int = 3, backoff: float = 1.0, timeout: float = 10.0, data_root: str | os.PathLike | None = None,
    slices: Sequence[Mapping] = (),
) -> str:
    """Writes (row, curve, slices) to the warehouse (`Warehouse.write_audit`), or spools it for that warehouse;
    returns "written" (the row is new), "recorded" (a run on identical inputs wrote the row: this run was recorded
    against it, nothing else changed) or "spooled". slices: the verdict's slice rows
    (`auditing.sinks.warehouse.rows.slice_record`; none by default).

    attempts: tries of open + write (each may itself wait up to ``timeout`` s for a DuckDB file lock or a
    PostgreSQL connection); between tries it sleeps backoff, 2*backoff, 4*backoff, ... seconds.
    """
    from auditing.sinks.warehouse import open_warehouse

    if int(attempts) != attempts or attempts < 1:
        raise LabelDPInputError(f"attempts must be a whole number >= 1; got {attempts!r}")
    to = destination(target, data_root)  # an unparsable address is bad input, not an outage
    clean = normalize_row(row)
    key = as_key(clean)
    normalize_curve(curve, key)  # validate before the first try: bad input is an error, not an outage
    normalize_slices(slices, key)
    last_error: Exception | None = None
    for attempt in range(int(attempts)):
        try:
            with open_warehouse(target, data_root=data_root, timeout=timeout) as warehouse:
                written = warehouse.write_audit(clean, curve, slices)
        except WarehouseUnavailable as exc:
            last_error = exc
            log.warning("warehouse write of %s failed (try %d of %d): %s", key, attempt + 1, attempts, exc)
            if attempt + 1 < attempts:
                time.sleep(backoff * 2**attempt)
            continue
        return WRITTEN if written.new else RECORDED
    path = spool_payload(clean, curve, spool_dir, to, slices)
    log.warning("warehouse %s unavailable after %d tries (%s); spooled %s to %s",
                describe_target(str(target)), attempts, last_error, key, path)
    return SPOOLED


def _spooled_files(spool_dir: Path) -> list[Path]:
    if not spool_dir.is_dir():
        return []
    return sorted(p for p in spool_dir.glob("*.json") if not p.name.startswith(".") and p.is_file())


def _read_payload(path: Path) -> tuple[Destination | None, dict, list[dict], list[dict]]:
    """(destination, row, curve, slices) of a spool file; destination None for the first format, which recorded none
    (its rows, written before schema version 4, read run_kind 'unrecorded'); no slices in a payload written
    before them.

    Raises:
        LabelDPInputError: not a payload of a known format, or its row or curve does not validate.
        FileNotFoundError: drained meanwhile by a concurrent run.
    """
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise LabelDPInputError(f"spool file {path}: not readable JSON ({exc})") from None
    formats = (UNADDRESSED_FORMAT, *ADDRESSED_FORMATS)
    if not isinstance(payload, dict) or payload.get("format") not in formats:
        raise LabelDPInputError(f"spool file {path}: expected a payload of format {' or '.join(map(str, formats))}")
    try:
        to = None
        raw = payload.get("row")
        if payload["format"] in ADDRESSED_FORMATS:
            to = Destination(**{k: str(payload["destination"][k]) for k in ("backend", "address", "fingerprint")})
        elif isinstance(raw, dict):
            raw = {"run_kind": UNRECORDED, **raw}
        row = normalize_row(raw)
        curve = normalize_curve(payload.get("curve"), as_key(row))
        slices = normalize_slices(payload.get("slices") or [], as_key(row))
    except (KeyError, TypeError) as exc:
        raise LabelDPInputError(f"spool file {path}: no valid destination ({type(exc).__name__}: {exc})") from None
    except LabelDPInputError as exc:
        raise LabelDPInputError(f"spool file {path}: {exc}") from None
    return to, row, curve, slices


@dataclass(frozen=True)
class SpooledElsewhere:
    """A spooled payload meant for another warehouse, left in place: its file and where it is meant to go."""

    path: str
    backend: str
    address: str


@dataclass
class DrainReport:
    """What one drain did. written: the keys it wrote; rejected: the files it renamed *.rejected (not a valid
    payload); remaining: payloads for this warehouse still in the spool afterwards; error: why the warehouse could
    not be used (None: it could); elsewhere: payloads meant for another warehouse, left in place; unaddressed:
    first-format payloads (no warehouse recorded), left in place unless the drain included them."""

    written: list[AuditKey] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    remaining: int = 0
    error: str | None = None
    elsewhere: list[SpooledElsewhere] = field(default_factory=list)
    unaddressed: list[str] = field(default_factory=list)


def drain_spool(
    target: str | os.PathLike | None, spool_dir: str | os.PathLike, *, timeout: float = 10.0,
    data_root: str | os.PathLike | None = None, include_unaddressed: bool = False,
) -> DrainReport:
    """Writes the spooled payloads meant for this warehouse; returns what happened (`DrainReport`; first-format
    payloads are left in place unless ``include_unaddressed``). The
    warehouse is opened only when a payload is meant for it. Safe to run concurrently and repeatedly: every
    write is idempotent (`Warehouse.write_audit`), and a file is deleted only after its commit.

    Raises:
        LabelDPInputError: ``target`` is not a warehouse address (nothing is read or moved).
    """
    from auditing.sinks.warehouse import open_warehouse

    here = destination(target, data_root)
    spool_dir = Path(spool_dir)
    report = DrainReport()
    mine = []
    for path in _spooled_files(spool_dir):
        try:
            before = path.stat()
            to, row, curve, slices = _read_payload(path)
        except FileNotFoundError:
            continue  # drained by a concurrent run
        except LabelDPInputError as exc:
            rejected = path.with_name(path.name + ".rejected")
            os.replace(path, rejected)
            log.error("%s; kept as %s", exc, rejected)
            report.rejected.append(str(rejected))
            continue
        if to is None and not include_unaddressed:
            report.unaddressed.append(str(path))
        elif to is not None and to.fingerprint != here.fingerprint:
            report.elsewhere.append(SpooledElsewhere(str(path), to.backend, to.address))
        else:
            mine.append((path, before, row, curve, slices))
    if not mine:
        return report
    # In the order computed: of two runs on identical inputs the first writes the row, the next records its run.
    mine.sort(key=lambda item: (item[2]["started_at"] or _NEVER, item[2]["finished_at"] or _NEVER, item[0].name))
    try:
        warehouse = open_warehouse(target, data_root=data_root, timeout=timeout)
    except WarehouseUnavailable as exc:
        report.remaining, report.error = len(mine), str(exc)
        return report
    with warehouse:
        for done, (path, before, row, curve, slices) in enumerate(mine):
            try:
                key, _ = warehouse.write_audit(row, [{k: p[k] for k in _POINT_FIELDS} for p in curve],
                                               [{k: s[k] for k in SLICE_FIELDS} for s in slices])
            except WarehouseUnavailable as exc:
                report.remaining, report.error = sum(p.is_file() for p, *_ in mine[done:]), str(exc)
                return report
            report.written.append(key)
            try:
                now = path.stat()
            except FileNotFoundError:
                continue
            if (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
                path.unlink(missing_ok=True)
            # else: replaced by a newer payload meanwhile; it stays for the next drain
    report.remaining = sum(p.is_file() for p, *_ in mine)
    return report


@dataclass(frozen=True)
class SpoolListing:
    """A spool file as `spool list --json` and the discard log show it (its verdict's figures None when its row
    cannot be read)."""

    file: str
    model_id: str | None
    partition_date: dt.date | None
    run_kind: str | None
    claimed_epsilon: float | None
    status: str | None
    epsilon_lower_bound: float | None
    run_id: str | None
    destination: Destination | None
    spooled_at: float | None
    error: str | None


@dataclass(frozen=True)
class SpooledPayload:
    """One file of the spool as `spool list` shows it: its path, the warehouse it is meant for (None: a payload of
    the first format, which recorded none), its verdict's row (None with ``error`` for a file that cannot be read or
    validated, and for a ``*.rejected`` file a drain set aside) and when it was spooled. Written as its
    `SpoolListing`."""

    path: Path
    destination: Destination | None
    row: ResultRow | None
    spooled_at: float | None
    error: str | None = None

    def _encoded(self) -> SpoolListing:
        row = self.row
        figures = (None,) * 7 if row is None else (row.model_id, row.partition_date, row.run_kind, row.claimed_epsilon,
                                                   row.status, row.epsilon_lower_bound, row.run_id)
        return SpoolListing(str(self.path), *figures, self.destination, self.spooled_at, self.error)


def spooled_payloads(spool_dir: str | os.PathLike) -> list[SpooledPayload]:
    """Every payload of the spool (``*.json``) and every file a drain set aside (``*.json.rejected``), by name; a
    file that cannot be read is listed with why. Reads only."""
    spool_dir = Path(spool_dir)
    out = []
    for path in _spooled_files(spool_dir):
        try:
            to, row, _curve, _slices = _read_payload(path)
            spooled_at = json.loads(path.read_text(encoding="utf-8")).get("spooled_at")
            out.append(SpooledPayload(path, to, upgrade_row(row), spooled_at))
        except FileNotFoundError:
            continue
        except LabelDPInputError as exc:
            out.append(SpooledPayload(path, None, None, None, str(exc)))
    rejected = sorted(spool_dir.glob("*.json.rejected")) if spool_dir.is_dir() else []
    out += [SpooledPayload(p, None, None, None, "set aside by a drain: not a valid payload") for p in rejected]
    return sorted(out, key=lambda item: item.path.name)


def discard_payloads(payloads: Sequence[SpooledPayload], log_path: str | os.PathLike) -> list[Path]:
    """Removes ``payloads`` from the spool, each only after its whole content was appended to ``log_path`` (JSON
    lines: when, the file, what it held), so that a discarded result can still be read; returns the files removed."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    removed = []
    for item in payloads:
        try:
            content = item.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue  # drained or discarded meanwhile
        record = {"discarded_at": time.time(), "file": str(item.path), **encode(item), "content": content}
        with open(log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        item.path.unlink(missing_ok=True)
        removed.append(item.path)
        listed = item._encoded()
        log.warning("discarded spool file %s (%s %s %s, run %s); its content is in %s", item.path,
                    listed.model_id, encode(listed.partition_date), listed.status, listed.run_id, log_path)
    return removed
