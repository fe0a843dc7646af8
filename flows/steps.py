"""The nightly audit's steps as plain functions: callable and testable without Prefect.

Runbook order: check the partition -> make sure the reference (D-1) exists -> make sure each target (D)
exists -> score with the Beam job and audit -> publish (warehouse row, HTML report, alert).

Reuse ("caching") is explicit and keyed on what determines the numbers. A target model is reused when its
registry metadata has the same mechanism, epsilon, seed and partition fingerprint. A scoring result is reused
when `sweeps/<model>/date=D/<audit config hash>/result.json` names the same model file, reference file,
partition and code version. Anything else is recomputed. Both live under the data root, so a re-run after a
crash redoes only what is missing.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

from auditing.errors import LabelDPInputError
from auditing.guardrail import VIOLATION
from flows.plan import AuditPlan, TargetSpec
from pipelines.layout import model_dir, parse_date, partition_dir
from pipelines.progress import Progress, no_progress


class DataMissingError(LabelDPInputError):
    """The day's partition is not there: a data problem, alerted as DATA_MISSING, never as a violation."""


def default_audit_date(scheduled: dt.datetime | None = None) -> dt.date:
    """The partition a nightly run audits: the day before its scheduled start (UTC)."""
    start = scheduled or dt.datetime.now(dt.UTC)
    return (start.astimezone(dt.UTC) if start.tzinfo else start).date() - dt.timedelta(days=1)


def check_partition(root: Path, date: dt.date) -> dict:
    """Row count and fingerprint of the day's partition; DataMissingError when it is absent."""
    from pipelines import schema

    directory = partition_dir(root, date)
    if not directory.is_dir() or not any(directory.glob("part-*.parquet")):
        raise DataMissingError(f"partition for {date.isoformat()} is missing: no part-*.parquet under {directory}")
    rows = sum(schema._open_parquet(p).metadata.num_rows for p in sorted(directory.glob("part-*.parquet")))
    if rows == 0:
        raise DataMissingError(f"partition for {date.isoformat()} at {directory} is empty")
    return {"date": date.isoformat(), "rows": int(rows), "fingerprint": schema.partition_fingerprint(root, date)}


def _settings(plan: AuditPlan):
    from pipelines.training import settings_from

    return settings_from(iterations=plan.catboost_iterations)


def ensure_reference(root: Path, date: dt.date, plan: AuditPlan, progress: Progress = no_progress) -> dict:
    """The reference M' of day D (the D-1 checkpoint), trained non-privately when missing if the plan says so."""
    from pipelines.training import ensure_reference as ensure

    _, metadata = ensure(root, date, plan.reference_name, plan.on_missing_reference, plan.seed, _settings(plan),
                         progress)
    return metadata


def _same_training(metadata: dict, spec: TargetSpec, seed: int, fingerprint: str) -> bool:
    from pipelines import registry

    return (metadata.get("mechanism", {}).get("name") == spec.mechanism
            and registry.claimed_epsilon(metadata) == spec.epsilon
            and metadata.get("seed") == seed and metadata.get("partition_fingerprint") == fingerprint)


def ensure_target(root: Path, date: dt.date, spec: TargetSpec, plan: AuditPlan, partition_fp: str,
                  progress: Progress = no_progress) -> dict:
    """The target model of day D: reused when trained the same way on the same partition, else (re)trained."""
    from pipelines import registry
    from pipelines.training import train_and_register

    if model_dir(root, spec.name, date).is_dir():
        metadata = registry.read_metadata(root, spec.name, date)
        if _same_training(metadata, spec, plan.seed, partition_fp):
            progress(f"{spec.name}: reusing the registered model (same mechanism, eps, seed and partition)")
            return metadata
        if plan.on_missing_target == "fail":
            raise LabelDPInputError(f"{spec.name}@{date}: the registered model was trained differently than the plan says")
    elif plan.on_missing_target == "fail":
        raise LabelDPInputError(f"target model {spec.name} for {date} is missing at {model_dir(root, spec.name, date)}")
    progress(f"{spec.name}: training {spec.mechanism} at eps={spec.epsilon:g}")
    _, metadata = train_and_register(root, date, spec.mechanism, spec.epsilon, model_name=spec.name, seed=plan.seed,
                                     settings=_settings(plan), reference_name=plan.reference_name,
                                     on_missing_reference=plan.on_missing_reference, progress=progress)
    return metadata


def _reusable_scoring(output_dir: Path, expected: dict) -> dict | None:
    record_path = output_dir / "result.json"
    if not record_path.is_file():
        return None
    try:
        record = json.loads(record_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    lineage = record.get("lineage", {})
    seen = {
        "model": lineage.get("model", {}).get("fingerprint"),
        "reference": lineage.get("reference", {}).get("fingerprint"),
        "partition": lineage.get("partition", {}).get("fingerprint"),
        "code": lineage.get("code_version", {}).get("git_commit"),
    }
    return record if seen == expected else None


def score_target(root: Path, date: dt.date, spec: TargetSpec, plan: AuditPlan, partition_fp: str,
                 progress: Progress = no_progress, model_name: str | None = None) -> dict:
    """Runs the Beam scoring job (or reuses its persisted result) and returns its result.json record."""
    from auditing.audit import AuditResult
    from pipelines import beam_scoring, registry

    name = model_name or spec.name
    request = beam_scoring.ScoringRequest(
        data_root=str(root), date=date.isoformat(), model=name, config=plan.audit,
        reference=plan.reference_name, batch_size=plan.batch_size,
    )
    ref_name, ref_date = beam_scoring.resolve_reference(root, name, date, plan.reference_name)
    output_dir = beam_scoring.sweep_dir(root, name, date.isoformat(), plan.audit)
    expected = {
        "model": beam_scoring.file_fingerprint(model_dir(root, name, date) / registry.MODEL_FILE),
        "reference": beam_scoring.file_fingerprint(model_dir(root, ref_name, ref_date) / registry.MODEL_FILE)
        if model_dir(root, ref_name, ref_date).is_dir() else None,
        "partition": partition_fp,
        "code": registry.code_version().get("git_commit"),
    }
    cached = _reusable_scoring(output_dir, expected)
    if cached is not None:
        progress(f"{name}: reusing scoring result {output_dir} (same model, reference, partition and code)")
        cached["reused"] = True
        return cached
    outcome = beam_scoring.score_day(request, list(plan.beam_args), progress=progress)
    record = dict(outcome.record)
    record["reused"] = False
    assert isinstance(outcome.result, AuditResult)
    return record


def publish(root: Path, date: dt.date, spec: TargetSpec, record: dict, *, warehouse: str | None,
            webhook_url: str | None = None, flow_run_id: str | None = None, durations: dict | None = None,
            claimed_epsilon: float | None = None, progress: Progress = no_progress) -> dict:
    """Writes the warehouse row (or spools it), renders the HTML report, alerts on VIOLATION."""
    from auditing.alerts.webhook import default_ledger_dir, send_alert
    from auditing.report.pages import render_run_report, run_report_path, write_report
    from auditing.warehouse import audit_record, default_spool_dir, open_warehouse, write_or_spool
    from auditing.warehouse.base import WarehouseUnavailable

    result = record["result"]
    lineage = record.get("lineage", {})
    claimed = spec.claimed_epsilon if claimed_epsilon is None else float(claimed_epsilon)
    model_id = record.get("model_id") or spec.name
    model = lineage.get("model", {})
    reference = lineage.get("reference", {})
    code = lineage.get("code_version", {})
    lineage_row = {
        "model_uri": model.get("uri"), "model_fingerprint": model.get("fingerprint"),
        "reference_model": f"{reference.get('name')}@{reference.get('date')}" if reference else None,
        "partition_fingerprint": lineage.get("partition", {}).get("fingerprint"),
        "code_version": f"{code.get('version')}+{(code.get('git_commit') or 'unknown')[:12]}"
                        + ("-dirty" if code.get("git_dirty") else ""),
        "flow_run_id": flow_run_id, "started_at": record.get("started_at"),
        "finished_at": record.get("finished_at"), "durations": durations or record.get("timings"),
    }
    row, curve = audit_record(result, model_id=model_id, partition_date=date, claimed_epsilon=claimed,
                              lineage=lineage_row)
    outcome = write_or_spool(warehouse, row, curve, default_spool_dir(root), data_root=root)
    progress(f"{model_id}: warehouse {outcome} (status {row['status']}, eps_lb {row['epsilon_lower_bound']:.4f})")

    trend: list[dict] = []
    try:
        store = open_warehouse(warehouse, data_root=root, timeout=5.0)
        try:
            trend = store.fetch_results(model_id=model_id, since=date - dt.timedelta(days=30), until=date)
        finally:
            store.close()
    except (WarehouseUnavailable, LabelDPInputError):
        trend = [row]
    report_path = run_report_path(root, model_id, date, row["audit_config_hash"])
    page_lineage = {"model_id": model_id, "partition_date": date.isoformat(), **lineage_row,
                    "runner": lineage.get("runner", {}).get("runner")}
    write_report(render_run_report(result, page_lineage, trend, None, claimed), report_path)

    alert = None
    if row["status"] == VIOLATION and webhook_url:
        payload = {"model_id": model_id, "partition_date": date.isoformat(), "status": row["status"],
                   "epsilon_lower_bound": row["epsilon_lower_bound"], "claimed_epsilon": claimed,
                   "confidence": row["confidence"], "delta": row["delta"], "tau": row["tau"],
                   "strategy": row["strategy"], "method": row["method"], "report": str(report_path),
                   "flow_run_id": flow_run_id}
        alert = send_alert(webhook_url, "VIOLATION", payload, default_ledger_dir(root)).to_dict()
    return {
        "model_id": model_id, "partition_date": date.isoformat(), "status": row["status"],
        "claimed_epsilon": claimed, "epsilon_lower_bound": row["epsilon_lower_bound"],
        "confidence": row["confidence"], "delta": row["delta"], "tau": row["tau"], "strategy": row["strategy"],
        "method": row["method"], "epsilon_mean": row["epsilon_mean"], "epsilon_std": row["epsilon_std"],
        "max_certifiable_epsilon": row["max_certifiable_epsilon"], "m": row["m"],
        "audit_config_hash": row["audit_config_hash"], "warehouse": outcome, "report": str(report_path),
        "alert": alert, "reused_scoring": bool(record.get("reused")),
    }


def send_failure_alert(root: Path, kind: str, model_id: str, date: dt.date, message: str,
                       webhook_url: str | None, flow_run_id: str | None = None) -> dict | None:
    """DATA_MISSING / AUDIT_FAILED alerts (deduplicated per model, date and kind)."""
    if not webhook_url:
        return None
    from auditing.alerts.webhook import default_ledger_dir, send_alert

    payload = {"model_id": model_id, "partition_date": date.isoformat(), "message": message, "flow_run_id": flow_run_id}
    return send_alert(webhook_url, kind, payload, default_ledger_dir(root)).to_dict()


def format_rows(rows: list[dict]) -> str:
    """The results table printed by the nightly / guardrail / backfill commands."""
    header = (f"{'model':<20} {'date':<10} {'status':<12} {'claimed':>7} {'eps_lb':>7} {'paper mean+-std':>16} "
              f"{'max cert.':>9} {'m':>8}  report")
    lines = [header, "-" * len(header)]
    for r in rows:
        claimed = "inf" if math.isinf(r["claimed_epsilon"]) else f"{r['claimed_epsilon']:g}"
        paper = f"{r['epsilon_mean']:.3f}+-{r['epsilon_std']:.3f}" if r.get("epsilon_mean") is not None else "-"
        lines.append(f"{r['model_id']:<20} {r['partition_date']:<10} {r['status']:<12} {claimed:>7} "
                     f"{r['epsilon_lower_bound']:>7.3f} {paper:>16} {r['max_certifiable_epsilon']:>9.2f} "
                     f"{r['m']:>8}  {r['report']}")
    if rows:
        r = rows[0]
        lines.append(f"eps_lb: valid lower bound at {r['confidence']:.0%} confidence ({r['strategy']} selection, "
                     f"{r['method']}, delta={r['delta']:g}, tau={r['tau']:g}); paper mean+-std: the paper's "
                     "optimistic statistic, for comparison only.")
    return "\n".join(lines)


def parse_day(text: str | dt.date | None, name: str = "--date") -> dt.date | None:
    return None if text is None else parse_date(text, name)


def day_is_complete(root: Path, date: dt.date, plan: AuditPlan, warehouse: str | None) -> bool:
    """True when the warehouse holds a row for every target of the plan on this day (same audit config)."""
    from auditing.warehouse import open_warehouse
    from auditing.warehouse.base import WarehouseUnavailable

    try:
        store = open_warehouse(warehouse, data_root=root, timeout=5.0)
    except (WarehouseUnavailable, LabelDPInputError):
        return False
    try:
        rows = store.fetch_results(since=date, until=date)
    finally:
        store.close()
    have = {(r["model_id"], r["audit_config_hash"]) for r in rows}
    config_hash = plan.audit.config_hash()
    return all((spec.name, config_hash) in have for spec in plan.targets)
