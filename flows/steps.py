"""The nightly audit's steps as plain functions: callable and testable without Prefect.

Runbook order: check the partition -> make sure the reference (D-1) exists -> make sure each target (D)
exists -> score with the Beam job and audit -> publish (warehouse row, HTML report, alert).

Reuse ("caching") is explicit and keyed on what determines the numbers. A trained target model is reused when
its registry metadata has the same mechanism, epsilon, seed, partition, dataset and CatBoost parameters
(`pipelines.training.train.reuse_mismatch`); a registered target is used as registered, never trained. A game is reused
when `sweeps/<model>/date=D/<scoring key>/` holds it: the key covers the game's settings, the model, reference
and partition files, the audited, check and grouped rows (`pipelines.scoring.beam_request.scoring_key`), and no bound
setting, so a change of kappa, method, delta, confidence or strategy re-judges the stored counts. Anything else
is recomputed. Both live under the data root, so a re-run after a crash redoes only what is missing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from auditing.config import config_hash
from auditing.sinks.listing import ListedVerdict
from auditing.verdict.control_check import POSITIVE, ControlCheck
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from auditing.verdict.split_test import SplitTest
from auditing.verdict.types import is_void_night, void_night_reason
from flows.plan import AuditPlan, ControlSpec, RegisteredTarget, TargetSpec
from labeldp import faults, hints
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from labeldp.names import parse_date
from labeldp.progress import Progress, live, no_progress
from pipelines.data.layout import model_dir

if TYPE_CHECKING:
    from pipelines.data.day import Day, Days
    from pipelines.models.handle import ModelHandle
    from pipelines.scoring.beam_request import JobRecord


class DataMissingError(LabelDPInputError):
    """The day's partition is not there: a data problem, alerted as DATA_MISSING, never as a violation."""


class TargetSkipped(LabelDPInputError):
    """A target without its model, skipped as the plan says (``on_missing_target`` "skip"); the reason goes
    into the night's result."""


def default_audit_date(scheduled: dt.datetime | None = None) -> dt.date:
    """The partition a nightly run audits: the day before its scheduled start (UTC)."""
    start = scheduled or dt.datetime.now(dt.UTC)
    return (start.astimezone(dt.UTC) if start.tzinfo else start).date() - dt.timedelta(days=1)


def check_partition(root: Path, date: dt.date, plan: AuditPlan | None = None) -> Day:
    """The day's partition as a handle (`pipelines.data.day.resolve_day`: its files, dataset and row count, checked
    from the footers and the row key and label columns; its fingerprint on demand, once): DataMissingError when it
    is absent or empty; LabelDPInputError when it was written for another dataset than the plan's, when a file's
    columns or types do not match its dataset spec, when the keys repeat or every row has the same label."""
    from auditing.sinks.report import text
    from pipelines.data.day import PartitionMissing, resolve_day

    try:
        return resolve_day(root, date, plan.dataset if plan is not None else None, text.plan_dataset_fix(date))
    except PartitionMissing as exc:
        raise DataMissingError(exc.template, field=exc.field) from None


def _settings(plan: AuditPlan, spec: TargetSpec | None = None):
    """The CatBoost settings of a model the night trains: the plan's, with ``spec``'s own capacity over them (a
    target's ``catboost``); the reference and the controls take the plan's."""
    from pipelines.training.fitting import settings_from

    settings = settings_from(iterations=plan.catboost_iterations)
    return settings if spec is None or spec.catboost is None else spec.catboost.apply(settings)


def missing_reference(day: Day, plan: AuditPlan) -> LabelDPInputError:
    """The reference of ``day`` (the D-1 checkpoint) is missing and the plan's ``on_missing_reference``
    is "fail": what to do depends on where the plan's models come from (`text.missing_reference`)."""
    from auditing.sinks.report import text

    ref_day = day.date - dt.timedelta(days=1)
    registered = any(isinstance(spec, RegisteredTarget) for spec in plan.targets)
    return LabelDPInputError(text.missing_reference(model_dir(day.root, plan.reference_name, ref_day),
                                                    plan.reference_name, ref_day, registered))


def ensure_reference(day: Day, plan: AuditPlan, progress: Progress = no_progress) -> ModelHandle:
    """The reference M' of ``day`` (the D-1 checkpoint, registered under the day's data root), trained
    non-privately when missing if the plan says so; resolved."""
    from pipelines.training.train import ensure_reference as ensure

    if plan.on_missing_reference == "fail" and not model_dir(day.root, plan.reference_name,
                                                             day.date - dt.timedelta(days=1)).is_dir():
        raise missing_reference(day, plan)

    _, reference = ensure(day, plan.reference_name, plan.on_missing_reference, plan.seed, _settings(plan), progress)
    return reference


def ensure_target(day: Day, spec: TargetSpec | RegisteredTarget, plan: AuditPlan, progress: Progress = no_progress,
                  reference: ModelHandle | None = None) -> ModelHandle:
    """The target model of ``day``, resolved: a registered one as registered (`ensure_registered`); a trained one
    reused when made exactly as the plan says on the same partition (the day's fingerprint), else (re)trained (or
    refused / skipped, as ``on_missing_target`` says). reference: the night's D-1 reference, resolved
    (`ensure_reference`), which training reads as its prior instead of resolving it again."""
    from pipelines.models.handle import resolve_model
    from pipelines.training.train import reuse_mismatch, train_and_register

    if isinstance(spec, RegisteredTarget):
        return ensure_registered(day, spec, plan, progress)
    root, date = day.root, day.date
    if model_dir(root, spec.name, date).is_dir():
        model = resolve_model(root, spec.name, date)
        differs = reuse_mismatch(model.meta, mechanism=spec.mechanism, epsilon=spec.epsilon, seed=plan.seed,
                                 partition_fingerprint=day.fingerprint, settings=_settings(plan, spec),
                                 dataset=plan.dataset)
        if differs is None:
            progress(f"{spec.name}: reusing the registered model (made exactly as the plan says, on the same "
                     f"partition)")
            return model
        if plan.on_missing_target != "train":
            raise _missing(plan, f"{spec.name}@{date}: the registered model was made differently than the plan "
                                 f"says ({differs})")
        progress(f"{spec.name}: retraining, the registered model differs ({differs})")
    elif plan.on_missing_target != "train":
        raise _missing(plan, f"target model {spec.name} for {date} is missing at {model_dir(root, spec.name, date)}")
    progress(f"{spec.name}: training {spec.mechanism} at eps={spec.epsilon:g}")
    train_and_register(day, spec.mechanism, spec.epsilon, model_name=spec.name, seed=plan.seed,
                       settings=_settings(plan, spec), reference_name=plan.reference_name,
                       on_missing_reference=plan.on_missing_reference, progress=progress, reference=reference)
    return resolve_model(root, spec.name, date)


def _missing(plan: AuditPlan, message: str) -> LabelDPInputError:
    return TargetSkipped(message) if plan.on_missing_target == "skip" else LabelDPInputError(message)


def ensure_registered(day: Day, spec: RegisteredTarget, plan: AuditPlan,
                      progress: Progress = no_progress) -> ModelHandle:
    """A registered target, resolved and checked against the plan (dataset, the day's rows, the claim) before any
    work; a missing model fails or is skipped (``on_missing_target``), never trained. A model registered on another
    partition of the day than today's (the day's fingerprint) is refused, naming what changed
    (`pipelines.models.registration.check_registration_matches_day`): its keys are never intersected silently."""
    from pipelines.models.handle import resolve_model
    from pipelines.models.registration import check_registration_matches_day
    from pipelines.scoring.beam_request import check_model_for_day

    root, date = day.root, day.date
    directory = model_dir(root, spec.name, date)
    if not directory.is_dir():
        raise _missing(plan, f"registered target {spec.name} has no model for {date.isoformat()} at {directory}; "
                             f"register it with {hints.REGISTER_MODEL.line(name=spec.name, date=date.isoformat())}")
    model = resolve_model(root, spec.name, date)
    check_model_for_day(model.meta, plan.dataset, date, "target")
    check_registration_matches_day(day, model.meta)
    registered = model.claimed_epsilon
    if spec.claimed_epsilon is not None and spec.claimed_epsilon != registered:
        raise LabelDPInputError(f"target {spec.name}@{date}: the plan claims eps {spec.claimed_epsilon:g} but the "
                                f"model is registered claiming {registered:g}; re-register it (--replace) or fix the "
                                f"plan")
    progress(f"{spec.name}: registered {model.format.name} model {model.fingerprint[:19]} claiming eps "
             f"{registered:g}")
    return model


def claimed_epsilon_of(spec: TargetSpec | RegisteredTarget, model: ModelHandle) -> float:
    """The claim a target is judged against: the plan's, else (a registered target without one) the registry's."""
    return model.claimed_epsilon if spec.claimed_epsilon is None else float(spec.claimed_epsilon)


def score_target(day: Day, model: ModelHandle, reference: ModelHandle, plan: AuditPlan,
                 progress: Progress = no_progress, expected_curve: bool = False, rows: NightRows | None = None,
                 capacity_check: bool = True, days: Days | None = None) -> Scored:
    """Runs the Beam scoring job, or reuses the game it stored under the same key (the same game settings,
    model, reference, partition and rows: `pipelines.scoring.beam_request.scoring_key`), and returns its `Scored`
    record with the audit at the plan's bound settings (`auditing.audit.audit_counts`: a change of kappa, method,
    delta, confidence or strategy re-judges the stored counts, never re-scores).
    model: the audited model and reference: the night's reference (`prepare_reference`), both resolved.
    expected_curve: also the game's expected correct guesses (the positive control's floor needs them).
    rows: the night's `NightRows` (check rows and grouped rows); capacity_check: play the capacity check on the
    check rows (a control does not need it). day: the audited day's handle; days: the run's day handles
    (`pipelines.data.day.Days`: each day listed and hashed once a run, the reference's own day for the shift
    diagnostic); None: listed and hashed by this call's steps."""
    from pipelines.scoring import beam_request

    date = day.date
    name = model.name
    rows = rows or NightRows()
    request = beam_request.ScoringRequest(
        data_root=str(day.root), date=date, model=name, game=plan.game, bound=plan.bound, reference=reference.name,
        reference_date=reference.date, batch_size=plan.batch_size, expected_curve=expected_curve,
        check_rows=rows.check_rows if capacity_check else None, excluded_rows=rows.excluded,
        target_model=model, reference_model=reference, night=date,  # fresh coins each night (docs/soundness.md 10)
        slices=plan.slicings if capacity_check else (), slice_budget=plan.slice_budget,  # a control is not sliced
        partition=day,
    )
    began = dt.datetime.now(dt.UTC).isoformat()
    prepared = beam_request.prepare_scoring(request, plan.beam_args)
    stored = beam_request.stored_scoring(prepared)
    if stored is not None:
        progress(f"{name}: reusing the game stored at {prepared.output_dir} (same game settings, model, reference, "
                 f"partition and rows); judged at this plan's bound settings")
        # judged now: the verdict's times are this run's (the stored job's stay in its result.json)
        job = replace(beam_request.reused_record(stored, request, prepared.output_dir), started_at=began,
                      finished_at=dt.datetime.now(dt.UTC).isoformat())
    else:
        from pipelines.scoring import beam_scoring

        # Each pass's rows, rows per second and time left on stderr ("[score pid N] pass 1: ...") when the job runs
        # here and someone watches (`labeldp.progress.live`).
        outcome = beam_scoring.score_day(request, list(plan.beam_args), progress=progress,
                                         worker_progress=beam_request.in_process(plan.beam_args) and live(),
                                         prepared=prepared)
        job = outcome.job
    # The models' identities as resolved now (the same fingerprints as the stored game's: they are in its key); a
    # game stored by an older version lacks the training rows' and the corrected reference's fingerprints.
    job = replace(job, lineage=replace(job.lineage, model=prepared.lineage.model,
                                       reference=prepared.lineage.reference))
    return Scored(job, reused=stored is not None, game_dir=str(prepared.output_dir),
                  shift_diagnostic=shift_diagnostic(day, reference, progress, days),
                  split_test=rows.split_tests.get(name) if capacity_check else None)


def shift_diagnostic(day: Day, reference: ModelHandle, progress: Progress = no_progress,
                     days: Days | None = None) -> ShiftDiagnostic:
    """The reference's fit on D vs D-1 and the features' day-over-day shift (pipelines.reference.shift_diagnostics; a
    diagnostic, not a proof). Computed once per night and reference; a failure is recorded, never fatal."""
    from flows.terminal import stop_of
    from pipelines.reference.shift_diagnostics import LABEL
    from pipelines.reference.shift_diagnostics import shift_diagnostic as compute

    try:
        return compute(day, reference, days)
    except Exception as exc:  # a diagnostic must not block the verdict (but a stop stops the run)
        if stop_of(exc) is not None:
            raise
        progress(f"shift diagnostic not computed: {exc}")
        return ShiftDiagnostic(LABEL, error=str(exc))


@dataclass(frozen=True)
class Scored:
    """A model scored for a night (`score_target`), or a stored game judged again (`flows.rejudge`): the job's record
    (`pipelines.scoring.beam_request.JobRecord`, its result at the bound settings judged now), whether the game was
    reused, where it is stored, the night's shift diagnostic and the model's split test (None: a model of the
    built-in split, or a control)."""

    job: JobRecord
    reused: bool
    game_dir: str
    shift_diagnostic: ShiftDiagnostic | None = None
    split_test: SplitTest | None = None

    def warehouse_lineage(self, flow_run_id: str | None, durations: dict | None, run_id: str | None = None) -> dict:
        """The row's lineage fields (`auditing.sinks.warehouse.LINEAGE_FIELDS`): every input's fingerprint, the run;
        durations: the run's, else the job's timings. A recalibrated reference names the checkpoint it corrects:
        both fingerprints are recorded."""
        job, lineage = self.job, self.job.lineage
        model, reference = lineage.model, lineage.reference
        corrected = None if reference is None else reference.source_fingerprint
        return {"model_uri": model and model.uri, "model_fingerprint": model and model.fingerprint,
                "reference_model": reference and reference.id,
                "partition_fingerprint": lineage.partition and lineage.partition.fingerprint,
                "code_version": lineage.code_version.label(), "flow_run_id": flow_run_id,
                "started_at": job.started_at, "finished_at": job.finished_at, "durations": durations or job.timings,
                "run_id": run_id, "training_rows_fingerprint": model and model.training_rows_fingerprint,
                "reference_fingerprint": corrected or (reference and reference.fingerprint),
                "correction_fingerprint": reference.fingerprint if corrected else None,
                "scoring_key": job.scoring_key}


@dataclass(frozen=True)
class NightRows:
    """The rows a night's audits use beyond each model's training rows: the capacity check's rows
    (`pipelines.reference.recalibration.CheckRowSelection`, None when no row is held out from every audited model), the
    rows left out for sharing a group (`pipelines.scoring.row_grouping.GroupExclusion`), and, per model whose
    training rows a team supplied as keys, the test of that split against the check rows
    (`auditing.verdict.split_test`; a model of the built-in split has none: its split is a keyed random draw)."""

    check_rows: object | None = None
    excluded: object | None = None
    split_tests: Mapping[str, SplitTest] = field(default_factory=dict)

    def describe(self) -> dict:
        """What the scoring of a model depends on (compared before a stored scoring result is reused)."""
        return {"check_rows": None if self.check_rows is None else self.check_rows.describe(),
                "excluded": None if self.excluded is None else self.excluded.describe()}


def prepare_reference(day: Day, plan: AuditPlan, raw: ModelHandle, audited: list[ModelHandle],
                      progress: Progress = no_progress, name: str | None = None,
                      ) -> tuple[ModelHandle, ReferenceCheck, NightRows]:
    """The reference the night's audits use, and the night's reference check (the warehouse's
    ``reference_check``): with ``audit.reference_calibration`` "boost", the D-1 reference recalibrated on a keyed
    share of day D's training rows (pipelines.reference.recalibration), registered as `AuditPlan.calibrated_reference_name`;
    with "none", the D-1 reference as it is (``raw``, resolved). ``audited``: the night's audited models, resolved
    (the held-out rows must be held out from every one of them). With no usable held-out rows the D-1 reference
    is used and the check says "reference not checked" and why. name: the recalibrated reference's registry name
    (default `AuditPlan.calibrated_reference_name`; a guardrail's is its own, `AuditPlan.guardrail_reference_name`).
    Also the night's `NightRows`: the capacity check's rows (every held-out row) and the rows left out for sharing a
    group (the day's and the reference's training rows, `pipelines.scoring.row_grouping`); the correction's rows
    leave every game played against the corrected reference (`pipelines.reference.recalibration.correction_exclusion`).
    day: the day's handle (`check_partition`), whose fingerprint keys the recalibration."""
    from pipelines.reference.recalibration import (
        CheckRowSelection,
        RecalibrationSettings,
        ReferenceCheckSkipped,
        calibration_figures,
        check_heldout,
        recalibrate_reference,
    )
    from pipelines.scoring.row_grouping import night_exclusion

    calibration = plan.game.reference_calibration
    check = ReferenceCheck(calibration, True)
    try:
        heldout = check_heldout(audited, plan.game.audit_rows)
    except ReferenceCheckSkipped as exc:
        progress(f"reference not checked: {exc.reason}")
        excluded = night_exclusion(day, raw, progress=progress)
        return raw, check.skipped(exc.reason), NightRows(None, excluded)
    reference = raw
    if calibration != "none":
        name = name or plan.calibrated_reference_name
        settings = RecalibrationSettings(catboost=_settings(plan))
        try:
            recalibrated_model = recalibrate_reference(day, name, raw, targets=audited,
                                                       audit_rows=plan.game.audit_rows, settings=settings,
                                                       seed=plan.seed, progress=progress)
        except ReferenceCheckSkipped as exc:  # held-out rows exist, but this reference cannot be corrected
            progress(f"reference not recalibrated: {exc.reason}")
            check = replace(check, note=f"reference not recalibrated: {exc.reason}")
        else:
            check = replace(check, calibration_figures=calibration_figures(
                recalibrated_model.meta.recalibration))
            reference = recalibrated_model
    check_rows = CheckRowSelection(heldout)
    rows = NightRows(check_rows, night_exclusion(day, raw, diagnostic_reference=reference, progress=progress),
                     _split_tests(day, heldout, check_rows, reference, progress))
    return reference, check, rows


def _split_tests(day: Day, heldout, check_rows, reference: ModelHandle, progress: Progress) -> dict[str, SplitTest]:
    """The split test of every audited model whose training rows a team supplied as keys (`heldout.excluded`)
    against the night's check rows: a split that is not random cannot vouch (docs/soundness.md section 8.7)."""
    from pipelines.reference.split_inputs import split_test_of_day

    out = {}
    for selection in heldout.excluded:
        test = split_test_of_day(day, selection, check_rows, reference)
        progress(f"{selection.model}: its training keys' split against the check rows: "
                 + (f"refused ({test.worst.column}, p = {test.worst.p_value:.2g})" if test.refused
                    else f"passed ({len(test.tests)} tests at {test.level:g})"))
        out[selection.model] = test
    return out


def ensure_control(day: Day, spec: ControlSpec, plan: AuditPlan, reference: ModelHandle,
                   progress: Progress = no_progress) -> ModelHandle:
    """The control's registry entry for ``day`` (pipelines.reference.controls), written when missing or different;
    resolved. reference: the night's reference (the negative control copies it)."""
    from pipelines.reference import controls

    if spec.control == POSITIVE:
        progress(f"{spec.name}: positive control, randomized response at eps_c = {spec.claimed_epsilon:g}")
        return controls.ensure_positive_control(day, spec.name, spec.claimed_epsilon, plan.seed)
    progress(f"{spec.name}: negative control, a copy of {reference.id}")
    return controls.ensure_negative_control(day, spec.name, reference)


def judge_control(spec: ControlSpec, scored: Scored) -> ControlCheck:
    """`auditing.verdict.controls.check_control` of a control's scoring."""
    from auditing.result import AuditResult
    from auditing.verdict.controls import check_control

    result = decode(AuditResult, scored.job.result, "result")
    return check_control(spec.control, result, spec.claimed_epsilon if spec.control == POSITIVE else None)


def night_fingerprint(specs, records: Mapping[str, Scored], accept_unchecked: bool) -> str:
    """'sha256:<hex>' of what a night's trust is judged from beyond each verdict's own game: each control of
    ``specs`` (name, kind, claim, and its model's fingerprint from its scoring record in ``records``, None when it
    could not run) and whether an unchecked reference is accepted. Equal inputs, equal fingerprint: a run on the
    same night with other controls or acceptance is a verdict of other inputs (`auditing.sinks.warehouse`)."""
    import hashlib
    import json

    def model(name: str) -> str | None:
        scored = records.get(name)
        lineage = None if scored is None else scored.job.lineage.model
        return None if lineage is None else lineage.fingerprint

    controls = [{"name": spec.name, "control": spec.control, "claimed_epsilon": repr(float(spec.claimed_epsilon)),
                 "model": model(spec.name)} for spec in specs]
    payload = json.dumps({"controls": controls, "accept_unchecked": bool(accept_unchecked)}, sort_keys=True)
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def night_trust(date: dt.date, checks: dict[str, ControlCheck | str], specs, accept_unchecked: bool):
    """What the night's controls say about its verdicts (`auditing.verdict.trust.night_trust`); ``checks``: name ->
    the control's check, or why it could not run."""
    from auditing.verdict.trust import night_trust as compute

    return compute(checks, {spec.name: spec.control for spec in specs}, date=date.isoformat(),
                   accept_unchecked=accept_unchecked)


def publish(root: Path, date: dt.date, spec: TargetSpec | ControlSpec, scored: Scored, *, warehouse: str | None,
            run_kind: str, webhook_url: str | None = None, flow_run_id: str | None = None,
            durations: dict | None = None, claimed_epsilon: float | None = None, progress: Progress = no_progress,
            control: ControlCheck | None = None, night=None,
            reference_check: ReferenceCheck | None = None, run_id: str | None = None,
            night_fingerprint: str | None = None) -> ListedVerdict:
    """Writes the warehouse row (or spools it for that warehouse: the row's ``spool_path``), renders the HTML
    report, alerts on VIOLATION (and SLICE_VIOLATION on a slice VIOLATION). Both are named by the verdict's key
    (`auditing.sinks.warehouse.AuditKey`: model, model fingerprint, day, ``run_kind``, claim, audit config and the
    fingerprint of every input it judged): a run of another kind, claim or inputs never replaces them, and a run on
    identical inputs (warehouse "recorded") records ``run_id`` against the stored row and leaves its report as it
    is (writing it only when it is missing: a run stopped after the warehouse's commit). night_fingerprint: what
    the night's trust is judged from (`night_fingerprint`), part of the verdict's inputs.
    control: a control's `judge_control` check (its row is kind 'control'); night: what the night's controls say
    (`auditing.verdict.trust.NightTrust`; the verdict's trust follows from it and the capacity check, and an untrusted
    verdict's reason is stored, shown as a banner and carried in the alert); reference_check: the night's
    reference check (`prepare_reference`)."""
    from auditing.result import AuditResult
    from auditing.sinks.alerts.webhook import (
        FAMILY_CONFIRMED,
        alert_kind,
        default_ledger_dir,
        family_payload,
        send_alert,
        slice_alert_kind,
        slice_violation_payload,
        violation_payload,
    )
    from auditing.sinks.report.pages import render_run_report, run_report_path, write_report
    from auditing.sinks.warehouse import (
        RECORDED,
        SPOOLED,
        audit_record,
        default_spool_dir,
        destination,
        open_warehouse,
        slice_record,
        spool_path,
        write_or_spool,
    )
    from auditing.sinks.warehouse.address import WarehouseUnavailable
    from auditing.verdict.judge import judge

    result = decode(AuditResult, scored.job.result, "result")  # read once, here
    claimed = spec.claimed_epsilon if claimed_epsilon is None else float(claimed_epsilon)
    model_id = spec.name
    lineage_row = {**scored.warehouse_lineage(flow_run_id, durations, run_id), "night_fingerprint": night_fingerprint}
    kind = "control" if control is not None else "target"
    # the family's tests with tonight in them come first: the decision reads the family's confirmation
    family, family_night = _family(root, warehouse, model_id, date, result, claimed, kind, run_kind, night)
    verdict = judge(result, claimed, kind=kind, control=control, night=night,
                    shift_diagnostic=scored.shift_diagnostic, reference_check=reference_check, family=family,
                    split=scored.split_test)
    row, curve = audit_record(verdict, model_id=model_id, partition_date=date, run_kind=run_kind, lineage=lineage_row,
                              family=family_night)
    faults.point("publish.before-warehouse")  # inert unless a crash test asks (labeldp.faults)
    outcome = write_or_spool(warehouse, row, curve, default_spool_dir(root), data_root=root,
                             slices=slice_record(verdict))
    faults.point("publish.after-warehouse")
    progress(f"{model_id}: warehouse {outcome} (status {row.status}, eps_lb {row.epsilon_lower_bound:.4f})")

    trend: list = []
    try:
        store = open_warehouse(warehouse, data_root=root, timeout=5.0)
        try:
            trend = store.fetch_results(model_id=model_id, since=date - dt.timedelta(days=30), until=date)
        finally:
            store.close()
    except (WarehouseUnavailable, LabelDPInputError):
        trend = [row]
    report_path = run_report_path(root, row.key)
    if outcome != RECORDED or not report_path.is_file():
        page_lineage = {"model_id": model_id, "partition_date": date.isoformat(), **lineage_row,
                        "runner": scored.job.lineage.runner.runner}
        write_report(render_run_report(verdict, page_lineage, trend, family=family), report_path)

    listed = ListedVerdict(
        row, report=str(report_path), verdict=verdict, warehouse=outcome,
        spool_path=(str(spool_path(default_spool_dir(root), row.key, destination(warehouse, root), row.run_id))
                    if outcome == SPOOLED else None),
        reused_scoring=scored.reused, control_message=None if control is None else control.message,
        reference_check=reference_check,
        family_nights=None if family_night is None else family.nights.index(family_night) + 1)
    alerted = alert_kind(row)  # None for a control (it alerts CONTROL_FAILED) and for a verdict that sends none
    if alerted and webhook_url:
        payload = violation_payload(verdict, model_id=model_id, partition_date=date.isoformat(),
                                    report=str(report_path), flow_run_id=flow_run_id, run_kind=run_kind)
        listed = listed.with_alert(encode(send_alert(webhook_url, alerted, payload, default_ledger_dir(root))))
    sliced = slice_alert_kind(verdict)  # besides the verdict's own alert: slices are judged apart from it
    if sliced and webhook_url:
        payload = slice_violation_payload(verdict, model_id=model_id, partition_date=date.isoformat(),
                                          report=str(report_path), flow_run_id=flow_run_id, run_kind=run_kind)
        sent = encode(send_alert(webhook_url, sliced, payload, default_ledger_dir(root)))
        listed = listed.with_alert(sent if listed.alert is None else listed.alert)
    if family is not None and family.confirmed_on == date and webhook_url:  # the night the family was confirmed
        payload = family_payload(family, model_id=model_id, partition_date=date.isoformat(), report=str(report_path))
        sent = encode(send_alert(webhook_url, FAMILY_CONFIRMED, payload, default_ledger_dir(root)))
        listed = listed.with_alert(sent if listed.alert is None else listed.alert)
    return listed


def _family(root: Path, warehouse: str | None, model_id: str, date: dt.date, result, claimed: float, kind: str,
            run_kind: str, night=None):
    """(the family's tests with this night, this night's entry) for a target of a nightly or backfill run; (None,
    None) for the others, and when the warehouse cannot be read (the night's place in its family is then unknown).
    A night a control voided (``night``: the night's `NightTrust`) enters with that reason and counts in no test."""
    from auditing.sinks.family import FAMILY_RUN_KINDS, family_with
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.address import WarehouseUnavailable
    from auditing.verdict.family_evidence import NightCounts

    if kind != "target" or run_kind not in FAMILY_RUN_KINDS:
        return None, None
    try:
        store = open_warehouse(warehouse, data_root=root, timeout=5.0)
        try:
            rows = store.fetch_results(model_id=model_id)
        finally:
            store.close()
    except (WarehouseUnavailable, LabelDPInputError):
        return None, None
    counts = NightCounts.of_result(date, claimed, result)
    void = getattr(night, "void_reason", None)
    return family_with(rows, model_id, counts if not void else replace(counts, void=void_night_reason(void)))


def send_failure_alert(root: Path, kind: str, model_id: str, date: dt.date, message: str,
                       webhook_url: str | None, flow_run_id: str | None = None, control: str | None = None,
                       reference_check: ReferenceCheck | None = None) -> dict | None:
    """DATA_MISSING / AUDIT_FAILED / CONTROL_FAILED alerts (deduplicated per model, date and kind); a
    CONTROL_FAILED alert names the control kind and carries the night's reference check."""
    if not webhook_url:
        return None
    from auditing.sinks.alerts.payloads import FailureAlert
    from auditing.sinks.alerts.webhook import default_ledger_dir, send_alert

    payload = FailureAlert(model_id=model_id, partition_date=date.isoformat(), message=message,
                           flow_run_id=flow_run_id, control=control, reference_check=reference_check)
    return encode(send_alert(webhook_url, kind, payload, default_ledger_dir(root)))


def mark_replaced_reports(root: Path, date: dt.date) -> int:
    """Marks the run reports of ``date`` whose verdict judged a partition replaced since ("inputs replaced since":
    `auditing.sinks.report.pages.mark_replaced_reports` with `pipelines.data.schema.replaced_since`); returns how
    many pages it marked. After `data ingest --replace` and at the end of each night of the day."""
    from auditing.sinks.report.pages import mark_replaced_reports as mark
    from pipelines.data import schema

    return mark(root, date, lambda fingerprint: schema.replaced_since(root, date, fingerprint))


def write_index(root: Path, warehouse: str | None) -> Path | None:
    """Writes the page across models (`auditing.sinks.report.index_page`) from the latest verdict of every model and
    run kind in the warehouse, with links to the run and trend reports under ``root``; returns its path, or None when
    the warehouse could not be read (the page stays as it was: a run's verdicts do not wait on it)."""
    from auditing.sinks.report.index_page import index_report_path, render_index
    from auditing.sinks.report.pages import run_report_path, trend_report_path, write_report
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.address import WarehouseUnavailable

    try:
        store = open_warehouse(warehouse, data_root=root, timeout=5.0)
        try:
            rows = store.fetch_verdicts(latest=True)
            slices = store.slices_of(rows)
        finally:
            store.close()
    except (WarehouseUnavailable, LabelDPInputError):
        return None

    def report(row) -> str | None:
        path = run_report_path(root, row)
        return str(path) if path.is_file() else None

    def trend(model: str) -> str | None:
        path = trend_report_path(root, model)
        return str(path) if path.is_file() else None

    return write_report(render_index(rows, data_root=root, report=report, slices=slices, trend=trend),
                        index_report_path(root))


def parse_day(text: str | dt.date | None, name: str = "--date") -> dt.date | None:
    return None if text is None else parse_date(text, name)


def day_is_complete(root: Path, date: dt.date, plan: AuditPlan, warehouse: str | None) -> bool:
    """The backfill's skip rule (`auditing.sinks.report.text.BACKFILL_SKIP_RULE`): True when every target of the
    plan has a verdict of a nightly or backfill run on this day at the plan's audit configuration, judged on the
    day's partition as it is now (`pipelines.data.schema.replaced_since`), on a night no control voided, trusted or
    not (an untrusted verdict is its decision: the same inputs would give it again; a run on identical inputs only
    records itself: docs/warehouse.md). A guardrail's or a re-judged verdict does not audit the night; an
    unreachable warehouse completes nothing."""
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.address import WarehouseUnavailable
    from auditing.verdict.run_kinds import BACKFILL, NIGHTLY
    from pipelines.data import schema

    try:
        store = open_warehouse(warehouse, data_root=root, timeout=5.0)
    except (WarehouseUnavailable, LabelDPInputError):
        return False
    try:
        rows = store.fetch_results(since=date, until=date)
    finally:
        store.close()
    # A night a control voided is not done: a re-run audits it again.
    have = {(r.model_id, r.audit_config_hash) for r in rows if r.run_kind in (NIGHTLY, BACKFILL)
            and not is_void_night(r.untrusted_reason)
            and schema.replaced_since(root, date, r.partition_fingerprint) is None}
    key = config_hash(plan.game, plan.bound)
    return all((spec.name, key) in have for spec in plan.targets)
