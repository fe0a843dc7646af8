"""The audit warehouse (a sink of the auditing stage): DuckDB file by default, PostgreSQL in production.

    from auditing.verdict.judge import judge
    from auditing.sinks.warehouse import audit_record, open_warehouse, slice_record, write_or_spool

    verdict = judge(result, 1.0, reference_check=ReferenceCheck("boost", True, ...))
    row, curve = audit_record(verdict, model_id="rr-eps1", partition_date="2024-01-02", run_kind="nightly",
                              lineage={"run_id": new_run_id(), "model_fingerprint": ..., "partition_fingerprint": ...,
                                       "flow_run_id": ..., "durations": {...}})
    slices = slice_record(verdict)                            # [] when the audit declared no slice
    with open_warehouse(None, data_root=root) as wh:          # <root>/warehouse.duckdb
        wh.write_audit(row, curve, slices)                     # one transaction; a stored key only gets the run
        wh.fetch_results(model_id="rr-eps1", since="2024-01-01")
        wh.fetch_slices(row.key)                               # its slices, the largest bound first
        wh.fetch_runs(row.key)                                 # every run of it, the first first
    write_or_spool("postgresql://...", row, curve, root / "spool", slices=slices)   # "written", "recorded", "spooled"

Tables and their columns: ``auditing.sinks.warehouse.schema`` (and infra/warehouse/*.sql); opening a warehouse
brings an older one to that schema version (``auditing.sinks.warehouse.migrations``, docs/warehouse.md). The
auditing core never imports this package; it imports duckdb and psycopg, lazily per backend.
"""

from __future__ import annotations

import os
from pathlib import Path

from auditing.sinks.warehouse.address import (
    DEFAULT_FILE_NAME,
    POSTGRES_SCHEMES,
    Destination,
    WarehouseUnavailable,
    describe_target,
    destination,
    is_postgres_target,
    warehouse_target,
)
from auditing.sinks.warehouse.base import (
    ReadOnlyWarehouse,
    Warehouse,
    Written,
    open_read_only,
)
from auditing.sinks.warehouse.records import AuditKey, ResultRow, new_run_id, upgrade_row
from auditing.sinks.warehouse.reference_columns import reference_check_from_row
from auditing.sinks.warehouse.rows import (
    LINEAGE_FIELDS,
    as_key,
    audit_record,
    normalize_curve,
    normalize_row,
    normalize_slices,
    slice_record,
)
from auditing.sinks.warehouse.spool import RECORDED, SPOOLED, WRITTEN, drain_spool, spool_path, write_or_spool
from labeldp.errors import LabelDPInputError
from labeldp.names import resolve_data_root

SPOOL_DIR_NAME = "spool"

__all__ = [
    "DEFAULT_FILE_NAME", "LINEAGE_FIELDS", "POSTGRES_SCHEMES", "RECORDED", "SPOOLED", "WRITTEN", "AuditKey",
    "Destination", "ReadOnlyWarehouse", "ResultRow", "Warehouse", "WarehouseUnavailable", "Written", "as_key",
    "audit_record", "default_spool_dir", "describe_target", "destination", "drain_spool",
    "is_postgres_target", "new_run_id", "normalize_curve", "normalize_row", "normalize_slices", "open_read_only",
    "open_warehouse",
    "reference_check_from_row", "slice_record", "spool_path", "upgrade_row", "write_or_spool",
]


def default_spool_dir(data_root: str | os.PathLike | None = None) -> Path:
    """``<data_root>/spool``."""
    return resolve_data_root(data_root) / SPOOL_DIR_NAME


def open_warehouse(
    target: str | os.PathLike | None = None, *, data_root: str | os.PathLike | None = None,
    timeout: float = 30.0, create: bool = True,
) -> Warehouse:
    """Opens the warehouse named by ``target`` and makes sure its tables exist (unless ``create=False``).

    target: a ``postgresql://`` (or ``postgres://``) URL, a DuckDB file path, or None / "" for
    ``<data_root>/warehouse.duckdb`` (data root as ``labeldp.names.resolve_data_root``).
    timeout: seconds to wait for the DuckDB file lock or a PostgreSQL connection before
    ``WarehouseUnavailable``. create=False: a missing DuckDB file or missing tables is an error.
    """
    if not (timeout > 0):
        raise LabelDPInputError(f"timeout must be > 0 seconds; got {timeout!r}")
    target = warehouse_target(target, data_root)
    if is_postgres_target(target):
        from auditing.sinks.warehouse.postgres_backend import PostgresWarehouse

        return PostgresWarehouse(target, timeout=timeout, create=create)
    if "://" in target:
        raise LabelDPInputError(
            f"warehouse must be a DuckDB file path or a postgresql:// URL; got {describe_target(target)!r}"
        )
    from auditing.sinks.warehouse.duckdb_backend import DuckDBWarehouse

    return DuckDBWarehouse(target, timeout=timeout, create=create)
