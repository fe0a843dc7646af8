"""Prefect flows: nightly_audit, release_guardrail and backfill. They read like the runbook and hold no math:
every step is a plain function in `flows.steps`, wrapped here as a task with retries where it does I/O.

Prefect's own result caching is off (`NO_CACHE`): reuse is explicit in the steps and keyed on partition
fingerprint, model fingerprint, audit configuration and code version, with outputs under the data root.

Each flow computes one `flows.exit_codes.Outcome` and ends by it (`finish`): Completed for exit code 0 (and 1
unless ``fail_on_violation``), Failed otherwise, with the outcome (its rows included) on the exception, so the
command line prints the same table and exits with the same code.

A stop (Ctrl-C, SIGTERM from outside, a cancellation requested through Prefect, whose worker sends SIGTERM) is
never an audit failure: where a step's error is caught to publish the other targets, a stop is raised again as
what it is (`_unless_stopped`), and each step checks for one before it starts (`_check_stop`, for a backfill's
threads too). The run then ends Crashed, or Cancelled when Prefect asked; nothing more is written or alerted.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sys
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from auditing.sinks.alerts.payloads import AlertPayload
from auditing.sinks.alerts.webhook import alert_kind, slice_alert_kind, slice_violation_payload
from auditing.sinks.listing import ListedVerdict, SkippedTarget
from auditing.verdict.control_check import POSITIVE, ControlCheck
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.run_kinds import BACKFILL, GUARDRAIL, NIGHTLY
from auditing.verdict.trust import NightTrust
from flows import exit_codes, steps, terminal
from flows.exit_codes import DayOutcome, Outcome, OutcomeFailed
from flows.plan import AuditPlan, ControlSpec, RegisteredTarget, TargetSpec, load_plan
from flows.preflight import plan_for
from flows.progress import StepClock
from flows.rejudge import StoredNight, night_model_of, write_night
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.names import check_claim, check_name, parse_date, resolve_data_root
from pipelines.data.day import Day, Days
from pipelines.models.handle import ModelHandle, resolve_model


class AuditFailed(OutcomeFailed):
    """The run's outcome fails it (exit 2, 3 or 4): bad input met inside the flow, results spooled instead of
    written, a target that could not be audited (alerted as AUDIT_FAILED), or a verdict that is not trusted (a
    VIOLATION the capacity check does not vouch for, a night a control voided, a reference nothing checked); the
    other results were published and are on ``outcome``."""


class GuardrailViolation(OutcomeFailed):
    """A VIOLATION that fails the run (the guardrail, or ``fail_on_violation``): the candidate's valid lower
    bound exceeds its claimed epsilon, so the release must be blocked. ``row``: the (first) violating row."""

    @property
    def row(self) -> ListedVerdict:
        return self.outcome.violations[0]


def _retry_unless_bad_input(task_, task_run, state) -> bool:
    """Retry I/O failures, never bad input (retrying a missing partition or a schema error changes nothing) nor
    after a stop."""
    try:
        state.result()
    except LabelDPInputError:
        return False
    except Exception as exc:
        return terminal.stop_of(exc) is None and terminal.stop_requested() is None
    return False


def _raise_stop(stop: terminal.Stop, cause: BaseException | None = None) -> None:
    """Raises ``stop`` as Prefect reads it: SIGTERM as its TerminationSignal (the run ends Cancelled when the
    cancellation was asked through Prefect, else Crashed), Ctrl-C as KeyboardInterrupt (Crashed)."""
    from prefect.exceptions import TerminationSignal

    raise (TerminationSignal(signal=stop.signal) if stop is terminal.TERMINATE else KeyboardInterrupt()) from cause


def _unless_stopped(exc: Exception) -> None:
    """Re-raises a stop that ``exc`` hides (a library wrapped it: Beam re-raises a DoFn's KeyboardInterrupt as a
    RuntimeError) or that arrived while the step failed; returns when ``exc`` is an ordinary failure."""
    stop = terminal.stop_requested() or terminal.stop_of(exc)  # the first signal decides (`terminal.stop_for`)
    if stop is not None:
        _raise_stop(stop, exc)


def _check_stop() -> None:
    """Before a step starts: a stop already received ends the run here (in a backfill's threads as well)."""
    stop = terminal.stop_requested()
    if stop is not None:
        _raise_stop(stop)


io_task = dict(retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=_retry_unless_bad_input,
               cache_policy=NO_CACHE)


@task(name="check-partition", **io_task)
def check_partition(root: Path, date: dt.date, plan: AuditPlan | None = None) -> Day:
    return steps.check_partition(root, date, plan)


@task(name="ensure-reference", cache_policy=NO_CACHE)
def ensure_reference(day: Day, plan: AuditPlan) -> ModelHandle:
    return steps.ensure_reference(day, plan, progress=_log)


@task(name="ensure-target", cache_policy=NO_CACHE)
def ensure_target(day: Day, spec: TargetSpec | RegisteredTarget, plan: AuditPlan,
                  reference: ModelHandle) -> ModelHandle:
    return steps.ensure_target(day, spec, plan, progress=_log, reference=reference)


@task(name="prepare-reference", cache_policy=NO_CACHE)
def prepare_reference(day: Day, plan: AuditPlan, raw: ModelHandle, audited: list[ModelHandle],
                      name: str | None = None):
    return steps.prepare_reference(day, plan, raw, audited, progress=_log, name=name)


@task(name="ensure-control", cache_policy=NO_CACHE)
def ensure_control(day: Day, spec: ControlSpec, plan: AuditPlan, reference: ModelHandle) -> ModelHandle:
    return steps.ensure_control(day, spec, plan, reference, progress=_log)


@task(name="score-and-audit", cache_policy=NO_CACHE)
def score_and_audit(day: Day, spec: TargetSpec | ControlSpec, model: ModelHandle, plan: AuditPlan,
                    reference: ModelHandle, rows: steps.NightRows, expected_curve: bool = False,
                    days: Days | None = None) -> steps.Scored:
    return steps.score_target(day, model, reference, plan, progress=_log, expected_curve=expected_curve,
                              rows=rows, capacity_check=not isinstance(spec, ControlSpec), days=days)


@task(name="publish", **io_task)
def publish(day: Day, spec: TargetSpec | ControlSpec, record: steps.Scored, warehouse: str | None,
            webhook_url: str | None, run_kind: str, claimed_epsilon: float | None = None,
            control: ControlCheck | None = None, night=None,
            reference_check: ReferenceCheck | None = None, run_id: str | None = None,
            night_fingerprint: str | None = None) -> ListedVerdict:
    """`steps.publish` of a verdict on ``day``'s partition (its handle: the verdict's data root and date)."""
    return steps.publish(day.root, day.date, spec, record, warehouse=warehouse, run_kind=run_kind, webhook_url=webhook_url,
                         flow_run_id=_run_id(), claimed_epsilon=claimed_epsilon, progress=_log, control=control,
                         night=night, reference_check=reference_check, run_id=run_id,
                         night_fingerprint=night_fingerprint)


@task(name="drain-spool", cache_policy=NO_CACHE)
def drain_spool(root: Path, warehouse: str | None) -> dict:
    """Writes the results an earlier run spooled for this run's warehouse; the others stay, with a warning."""
    from auditing.sinks.report import text
    from auditing.sinks.warehouse import default_spool_dir
    from auditing.sinks.warehouse import drain_spool as drain

    spool = default_spool_dir(root)
    outcome = drain(warehouse, spool, data_root=root)
    if outcome.written:
        _log(f"wrote {len(outcome.written)} spooled result(s) from an earlier run")
    for line in text.spool_elsewhere_lines(outcome.elsewhere, spool):
        _log(f"warning: {line}")
    if outcome.unaddressed:
        _log(f"warning: {text.spool_unaddressed_line(outcome.unaddressed, spool)}")
    return {name: [str(x) for x in v] if isinstance(v, list) else v for name, v in vars(outcome).items()}


def _log(message: str) -> None:
    """Progress: to the Prefect run log and to stderr (command-line runs keep Prefect's own logs quiet)."""
    print(f"[labeldp-audit] {message}", file=sys.stderr, flush=True)
    try:
        get_run_logger().info(message)
    except Exception:  # outside a run context (plain calls in tests)
        pass


def _recover(root: Path) -> None:
    """What processes killed mid-write left under the data root, finished or removed (`labeldp.files`)."""
    from labeldp.files import recover_interrupted

    for line in recover_interrupted(root):
        _log(f"recovered after an interrupted run: {line}")


def _new_run(run_id: str | None) -> str:
    """The run's id: the one given (checked), else a new one."""
    from auditing.sinks.warehouse import new_run_id
    from auditing.sinks.warehouse.rows import check_run_id

    return new_run_id() if run_id is None else check_run_id(run_id, "run_id")


def _run_id() -> str | None:
    value = flow_run.id
    return str(value) if value else None


def _emit(kind: str, payload: AlertPayload | dict) -> None:
    from prefect.events import emit_event

    from auditing.sinks.alerts.webhook import alert_event_payload

    emit_event(**alert_event_payload(kind, payload))


def _emit_alerts(row: ListedVerdict) -> None:
    """A published verdict's Prefect events: its own alert's kind, and SLICE_VIOLATION beside it (as the webhook)."""
    if kind := alert_kind(row.row):
        _emit(kind, encode(row))
    if row.verdict is not None and (sliced := slice_alert_kind(row.verdict)):
        _emit(sliced, slice_violation_payload(row.verdict, model_id=row.row.model_id,
                                              partition_date=row.row.partition_date.isoformat(), report=row.report,
                                              flow_run_id=_run_id(), run_kind=row.row.run_kind))


_SUMMARY_COLUMNS = ("model_id", "kind", "run_kind", "partition_date", "status", "claimed_epsilon",
                    "epsilon_lower_bound", "confidence", "strategy", "method", "max_certifiable_epsilon",
                    "control_passed", "trust", "untrusted_reason", "risk_headline")


def _publish_summary(rows: list[ListedVerdict], title: str) -> None:
    from prefect.artifacts import create_link_artifact, create_table_artifact

    table = []
    for v in rows:
        cells = {name: getattr(v.row, name) for name in _SUMMARY_COLUMNS}
        cells["partition_date"] = v.row.partition_date.isoformat()
        cells["claimed_epsilon"] = "inf" if math.isinf(v.row.claimed_epsilon) else v.row.claimed_epsilon
        table.append({**cells, "report": v.report})
    create_table_artifact(table=table, key="labeldp-audit-summary", description=title)
    for v in rows:
        # Artifact keys allow lowercase letters, digits and dashes only.
        key = "report-" + re.sub(r"[^a-z0-9-]", "-", v.row.model_id.lower())
        create_link_artifact(link=Path(v.report).resolve().as_uri(), key=key,
                             link_text=f"{v.row.model_id} {v.row.partition_date.isoformat()}: {v.row.status} "
                                       "(HTML report)")


def night_partition(root: Path, date: dt.date, plan: AuditPlan, webhook_url: str | None) -> Day:
    """The night's partition, resolved once (`check_partition`) for the whole run; a missing one alerts
    DATA_MISSING for every target of the plan, then raises (`steps.DataMissingError`)."""
    try:
        return check_partition(root, date, plan)
    except steps.DataMissingError as exc:
        for spec in plan.targets:
            steps.send_failure_alert(root, "DATA_MISSING", spec.name, date, str(exc), webhook_url, _run_id())
            _emit("DATA_MISSING", {"model_id": spec.name, "partition_date": date.isoformat(), "message": str(exc)})
        raise


def audit_day(partition: Day, plan: AuditPlan, warehouse: str | None, webhook_url: str | None,
              fail_on_violation: bool = False, run_kind: str = NIGHTLY,
              accept_unchecked_reference: bool | None = None, run_id: str | None = None) -> Outcome:
    """One day, every target: reference, train or load, recalibrate the reference on the held-out rows, controls,
    score, audit, publish (rows of ``run_kind``: nightly or backfill), alert. ``partition``: the day's handle
    (`night_partition`), whose data root the models, records and reports live under. Returns the day's
    `Outcome`."""
    root, date = partition.root, partition.date
    raw_reference = ensure_reference(partition, plan)
    days = Days(root, {date: partition})  # every day this run reads, each listed and hashed once
    outcome, ready, skipped = Outcome(fail_on_violation=fail_on_violation), {}, []
    clock = StepClock(len(plan.targets), estimate=False)  # a model that exists takes no time, training minutes
    for spec in plan.targets:
        _check_stop()
        _log(f"{spec.name}: making sure the model is there ({clock.step()})")
        try:
            ready[spec.name] = ensure_target(partition, spec, plan, raw_reference)
        except steps.TargetSkipped as exc:  # the plan says skip: a reason in the result, not a failure
            _log(f"{spec.name}: skipped ({exc})")
            skipped.append(SkippedTarget(spec.name, date, str(exc)))
        except Exception as exc:  # one target's failure must not hide the others' results
            _target_failed(partition, spec, exc, outcome, webhook_url)
    _check_stop()
    reference, check, rows = prepare_reference(partition, plan, raw_reference, list(ready.values()))
    accept = plan.accept_unchecked_reference if accept_unchecked_reference is None else accept_unchecked_reference
    control_rows, night, stored, night_fp = run_controls(partition, plan, warehouse, webhook_url, reference, check,
                                                         rows, run_kind=run_kind, accept_unchecked=accept,
                                                         run_id=run_id, days=days)
    outcome.rows += control_rows
    shift = None
    scored = [spec for spec in plan.targets if spec.name in ready]
    clock = StepClock(len(scored))
    for spec in scored:
        _check_stop()
        _log(f"{spec.name}: scoring and auditing ({clock.step()})")
        try:
            record = score_and_audit(partition, spec, ready[spec.name], plan, reference, rows, days=days)
            _check_stop()
            claimed = steps.claimed_epsilon_of(spec, ready[spec.name])
            row = publish(partition, spec, record, warehouse, webhook_url, run_kind, night=night,
                          reference_check=check, claimed_epsilon=claimed, run_id=run_id, night_fingerprint=night_fp)
        except Exception as exc:
            _target_failed(partition, spec, exc, outcome, webhook_url)
            continue
        stored.append(night_model_of(root, spec, record, claimed_epsilon=claimed))
        shift = record.shift_diagnostic
        _emit_alerts(row)
        outcome.rows.append(row)
    outcome.collect_untrusted()
    if outcome.rows:
        _publish_summary(outcome.rows, f"labeldp-audit results for {date.isoformat()}")
    steps.mark_replaced_reports(root, date)  # a replacement of the day stopped before it marked every page
    steps.write_index(root, warehouse)  # the page across models, with tonight's verdicts
    if stored:  # what `labeldp-audit rejudge` reads to judge this night again at other bound settings
        game = plan.game.with_night(date)  # the game its models were scored with (steps.score_target)
        write_night(root, StoredNight(date, run_kind, game, plan.bound, tuple(stored), check, shift, accept,
                                      dt.datetime.now(dt.UTC).isoformat(), slice_budget=plan.slice_budget))
    outcome.rows += skipped
    return outcome


def _target_failed(day: Day, spec: TargetSpec | RegisteredTarget, exc: Exception, outcome: Outcome,
                   webhook_url: str | None) -> None:
    """Bad input (exit 2) or an audit that failed (exit 4) of a target on ``day``, alerted as AUDIT_FAILED either
    way; a stop is raised again (`_unless_stopped`): a cancelled run is not a failed audit."""
    _unless_stopped(exc)
    (outcome.bad_input if isinstance(exc, LabelDPInputError) else outcome.failures).append(f"{spec.name}: {exc}")
    steps.send_failure_alert(day.root, "AUDIT_FAILED", spec.name, day.date, str(exc), webhook_url, _run_id())
    _emit("AUDIT_FAILED", {"model_id": spec.name, "partition_date": day.date.isoformat(), "message": str(exc)})


def finish(outcome: Outcome, root: Path, warehouse: str | None, command: str):
    """Ends a flow by its outcome: raises `GuardrailViolation` / `AuditFailed` (the run ends Failed, the summary in
    its logs and a ``labeldp.run.<code name>`` event) when the outcome fails the run, else returns."""
    if not outcome.fails_the_run():
        return
    code = outcome.exit_code()
    lines = exit_codes.summary_lines(outcome, command, exit_codes.drain_command(root, warehouse))
    for line in lines:
        try:
            get_run_logger().error(line)
        except Exception:  # outside a run context (plain calls in tests)
            pass
    try:
        from prefect.events import emit_event

        emit_event(event=f"labeldp.run.{exit_codes.NAMES[code]}",
                   resource={"prefect.resource.id": f"labeldp.run.{_run_id() or 'local'}",
                             "labeldp.exit_code": str(code)},
                   payload={"exit_code": code, "codes": outcome.codes(), "summary": lines,
                            "spooled": outcome.spooled, "untrusted": outcome.untrusted, "failures": outcome.failures,
                            "bad_input": outcome.bad_input})
    except Exception as exc:  # an event that cannot be sent must not change the outcome
        _log(f"could not emit the run's event: {exc}")
    raise (GuardrailViolation if code == exit_codes.VIOLATION else AuditFailed)("\n".join(lines), outcome)


def run_controls(day: Day, plan: AuditPlan, warehouse: str | None,
                 webhook_url: str | None, reference: ModelHandle, check: ReferenceCheck, rows: steps.NightRows,
                 specs: tuple[ControlSpec, ...] | None = None, run_kind: str = NIGHTLY,
                 accept_unchecked: bool = False, run_id: str | None = None,
                 days: Days | None = None) -> tuple[list[ListedVerdict], object, list, str]:
    """The night's controls, before the targets: build, score (same Beam job, reference and bounds), judge
    (auditing.verdict.controls), then publish each. A control that fails or cannot run alerts CONTROL_FAILED and voids
    what it guards (`auditing.verdict.trust.night_trust`): the negative control every verdict of the night, the positive
    control the VIOLATIONs (above its eps_c) or the PASSes' detectability (below its floor). Returns the control
    rows, the night's `NightTrust`, which every verdict of the night is judged with, the stored night's models and
    the night's fingerprint (`flows.steps.night_fingerprint`, part of every verdict's inputs).
    specs: the controls to run (default: the plan's); run_kind: the kind of the run publishing their rows;
    accept_unchecked: the plan or command accepts a reference no check row can check; run_id: the run's id;
    day: the night's handle; days: the run's day handles (`pipelines.data.day.Days`)."""
    root, date = day.root, day.date
    specs = plan.control_specs() if specs is None else specs
    records, checks, stored = {}, {}, []
    for spec in specs:
        _check_stop()
        try:
            control = ensure_control(day, spec, plan, reference)
            records[spec.name] = score_and_audit(day, spec, control, plan, reference, rows,
                                                 expected_curve=spec.control == POSITIVE, days=days)
            checks[spec.name] = steps.judge_control(spec, records[spec.name])
        except Exception as exc:  # a control that cannot run proves nothing: what it guards is void tonight
            _unless_stopped(exc)
            checks[spec.name] = f"{type(exc).__name__}: {exc}"
        result = checks[spec.name]
        stored.append(night_model_of(root, spec, records.get(spec.name),
                                     error=result if isinstance(result, str) else None))
        _log(f"{spec.name}: " + (f"could not run: {result}" if isinstance(result, str) else result.message))
    night = steps.night_trust(date, checks, specs, accept_unchecked)
    night_fp = steps.night_fingerprint(specs, records, accept_unchecked)
    control_rows = []
    _check_stop()
    for spec in specs:
        result = checks[spec.name]
        if spec.name in records:
            control_rows.append(publish(day, spec, records[spec.name], warehouse, webhook_url, run_kind,
                                        control=result, night=night, reference_check=check, run_id=run_id,
                                        night_fingerprint=night_fp))
        if isinstance(result, str) or not result.passed:
            message = f"could not run: {result}" if isinstance(result, str) else result.message
            steps.send_failure_alert(root, "CONTROL_FAILED", spec.name, date, message, webhook_url, _run_id(),
                                     control=spec.control, reference_check=check)
            _emit("CONTROL_FAILED", {"model_id": spec.name, "partition_date": date.isoformat(), "message": message})
    return control_rows, night, stored, night_fp


@flow(name="nightly-audit")
def nightly_audit(date: str | None = None, data_root: str | None = None, warehouse: str | None = None,
                  plan_file: str | None = None, models: list[str] | None = None,
                  webhook_url: str | None = None, fail_on_violation: bool = False,
                  accept_unchecked_reference: bool | None = None,
                  run_id: str | None = None) -> list[ListedVerdict | SkippedTarget]:
    """Audits every configured target on one day's partition. `date` defaults to the day before the
    scheduled start. Writes warehouse rows and reports; alerts on VIOLATION, DATA_MISSING and AUDIT_FAILED.
    Returns the rows; ends Failed (`AuditFailed`, the rows on it) when results were spooled, a target failed
    or a control failed, and on VIOLATION too (`GuardrailViolation`) with ``fail_on_violation``. run_id: the run's
    id in the warehouse (default: a new one, `auditing.sinks.warehouse.new_run_id`)."""
    terminal.watch_stops()
    root = resolve_data_root(data_root)
    _recover(root)
    day = parse_date(date) if date else steps.default_audit_date(flow_run.scheduled_start_time)
    plan = plan_for(plan_file, models)
    run_id = _new_run(run_id)
    _log(f"nightly audit of {day.isoformat()}: {len(plan.targets)} target(s), data root {root}, run {run_id}")
    drain_spool(root, warehouse)
    outcome = audit_day(night_partition(root, day, plan, webhook_url), plan, warehouse, webhook_url,
                        fail_on_violation, accept_unchecked_reference=accept_unchecked_reference, run_id=run_id)
    finish(outcome, root, warehouse, "nightly")
    return outcome.rows


@flow(name="release-guardrail")
def release_guardrail(model: str, claimed_epsilon: float, date: str, data_root: str | None = None,
                      warehouse: str | None = None, plan_file: str | None = None,
                      webhook_url: str | None = None, fail_on_violation: bool = True,
                      accept_unchecked_reference: bool | None = None, run_id: str | None = None) -> ListedVerdict:
    """Audits a release candidate (an existing registry model) against its claimed epsilon. Ends Failed on
    VIOLATION (unless ``fail_on_violation`` is false: a release gate fails by default), on an untrusted verdict
    and on a spooled row; INCONCLUSIVE (the audit had no power) and PASS (no evidence of a violation) complete."""
    from pipelines.models.registration import check_registration_matches_day
    from pipelines.scoring.beam_request import check_model_for_day

    terminal.watch_stops()
    root = resolve_data_root(data_root)
    _recover(root)
    day = parse_date(date)
    name = check_name(model, "--model")
    run_id = _new_run(run_id)
    claimed = check_claim(claimed_epsilon, "--claimed-epsilon")
    plan = load_plan(plan_file)
    partition = check_partition(root, day, plan)
    candidate = resolve_model(root, name, day)
    check_model_for_day(candidate.meta, plan.dataset, day, "candidate")
    check_registration_matches_day(partition, candidate.meta, "candidate")
    spec = RegisteredTarget(name)  # judged against the claim given here (`publish`'s claimed_epsilon)
    raw_reference = ensure_reference(partition, plan)
    # A false VIOLATION costs most at the release gate: the candidate is audited against the reference
    # recalibrated on the day (the guardrail's own, held out from the candidate's rows: the nightly's models stay
    # as the night left them), and its VIOLATION is trusted only when the capacity check vouches for it.
    reference, check, rows = prepare_reference(partition, plan, raw_reference, [candidate],
                                               plan.guardrail_reference_name(name))
    accept = plan.accept_unchecked_reference if accept_unchecked_reference is None else accept_unchecked_reference
    night = NightTrust(accept_unchecked=accept)
    record = score_and_audit(partition, spec, candidate, plan, reference, rows, days=Days(root, {day: partition}))
    _check_stop()
    row = publish(partition, spec, record, warehouse, webhook_url, GUARDRAIL, claimed_epsilon=claimed,
                  night=night, reference_check=check, run_id=run_id,
                  night_fingerprint=steps.night_fingerprint((), {}, accept))
    _publish_summary([row], f"release guardrail for {name}@{day.isoformat()}")
    steps.write_index(root, warehouse)
    _emit_alerts(row)
    outcome = Outcome(rows=[row], fail_on_violation=fail_on_violation)
    outcome.collect_untrusted()
    finish(outcome, root, warehouse, "guardrail")
    return row


@task(name="backfill-day", cache_policy=NO_CACHE)
def backfill_day(root: Path, day: dt.date, plan: AuditPlan, warehouse: str | None, webhook_url: str | None,
                 force: bool, fail_on_violation: bool = False,
                 accept_unchecked_reference: bool | None = None, run_id: str | None = None) -> DayOutcome:
    """One day of a backfill: its date, a line for people and the day's `Outcome`."""
    _check_stop()
    if not force and steps.day_is_complete(root, day, plan, warehouse):
        return DayOutcome(day, "skipped: every target has its verdict of this partition at this configuration",
                          Outcome(fail_on_violation=fail_on_violation))
    try:
        outcome = audit_day(night_partition(root, day, plan, webhook_url), plan, warehouse, webhook_url,
                            fail_on_violation, run_kind=BACKFILL,
                            accept_unchecked_reference=accept_unchecked_reference, run_id=run_id)
    except Exception as exc:
        _unless_stopped(exc)
        failed = Outcome(fail_on_violation=fail_on_violation)
        (failed.bad_input if isinstance(exc, LabelDPInputError) else failed.failures).append(f"{day}: {exc}")
        return DayOutcome(day, f"failed: {exc}", failed)
    codes = outcome.codes()
    text = "audited" + (f" (exit {codes[0]}" + "".join(f", also {c}" for c in codes[1:]) + ")" if codes else "")
    return DayOutcome(day, text, outcome)


@flow(name="backfill")
def backfill(start: str, end: str, data_root: str | None = None, warehouse: str | None = None,
             plan_file: str | None = None, webhook_url: str | None = None, force: bool = False,
             concurrency: int = 1, fail_on_violation: bool = False,
             accept_unchecked_reference: bool | None = None, run_id: str | None = None) -> list[DayOutcome]:
    """Nightly audits for every day in [start, end], at most `concurrency` days at once. Idempotent: a day is
    skipped by the one rule `auditing.sinks.report.text.BACKFILL_SKIP_RULE` (`steps.day_is_complete`), so a re-run
    (or a `prefect flow-run retry` of a crashed run) resumes where it stopped. Returns the per-day summary; ends
    Failed (`AuditFailed`, every day's outcome on it) when any day's outcome fails the run."""
    from prefect.task_runners import ThreadPoolTaskRunner

    terminal.watch_stops()
    root = resolve_data_root(data_root)
    _recover(root)
    first, last = parse_date(start, "--start"), parse_date(end, "--end")
    if last < first:
        raise LabelDPInputError(f"--end ({last}) is before --start ({first})")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise LabelDPInputError(f"--concurrency must be a whole number >= 1; got {concurrency!r}")
    plan = load_plan(plan_file)
    run_id = _new_run(run_id)
    _log(f"backfill {first.isoformat()}..{last.isoformat()}: run {run_id}")
    drain_spool(root, warehouse)
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    with ThreadPoolTaskRunner(max_workers=concurrency) as runner:
        futures = [runner.submit(backfill_day, {"root": root, "day": d, "plan": plan, "warehouse": warehouse,
                                                "webhook_url": webhook_url, "force": force,
                                                "fail_on_violation": fail_on_violation,
                                                "accept_unchecked_reference": accept_unchecked_reference,
                                                "run_id": run_id})
                   for d in days]
        summary = [f.result() for f in futures]
    for s in summary:
        _log(f"{s.date.isoformat()}: {s.summary}")
    finish(Outcome.of_days(summary, fail_on_violation), root, warehouse, "backfill")
    return summary
