"""A night's stored evidence (`StoredNight`) and its re-judging at other bound settings.

A nightly or backfill run writes ``nights/date=D/<run kind>-<game hash>.json`` after publishing: where each
model's game is stored (`auditing.game.counts.GameCounts`, keyed by `pipelines.scoring.beam_request.scoring_key`), the
claims, the controls, the reference check, the shift diagnostic and whether an unchecked reference was accepted.
`rejudge_night` reads it and judges every model again at another `auditing.config.BoundConfig` (method,
strategy, confidence, delta, kappa): the controls first, then the night's trust, then the targets, each written
as a verdict of run kind ``rejudge`` (`auditing.verdict.run_kinds.REJUDGE`) beside the night's own. A target's
declared slices go with it: each slice is bounded again from the counts stored beside its game
(`auditing.slices.bound_slices`, at the night's slice budget); `sliced_targets` says whose were carried and whose
could not be (a game stored before slice counts were kept). Nothing is trained,
scored or read from the partition, and neither Beam nor Prefect is imported: a few milliseconds of bounds per
model, plus the warehouse and the reports.

Settings chosen after a night was seen are a second look at the same evidence: its rows carry their own run kind
and config hash, so they never replace or stand in for the night's pre-registered verdicts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from auditing.config import BoundConfig, flat_settings
from auditing.game.config import GameConfig
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.run_kinds import BACKFILL, NIGHTLY, REJUDGE
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from flows.exit_codes import Outcome
from flows.plan import ControlSpec, RegisteredTarget
from labeldp.codec import INF_AS_STRING, decode, encode
from labeldp.errors import LabelDPInputError
from labeldp.files import write_text_atomically
from labeldp.progress import Progress, no_progress

if TYPE_CHECKING:
    from flows.steps import Scored

NIGHTS = "nights"
# The run kinds whose nights are stored (a guardrail audits one release candidate, not a night).
STORED_KINDS = (NIGHTLY, BACKFILL)
TARGET, CONTROL = "target", "control"


@dataclass(frozen=True)
class NightModel:
    """One model of a stored night: a target judged against ``claimed_epsilon``, or a control (``control``:
    positive or negative, ``claimed_epsilon`` its eps_c or 0). ``game_dir``: where its game is stored, relative
    to the data root; None with ``error`` when it could not run (a control that could not run voids what it
    guards when re-judged too). ``split_test``: a target's split test of the night, judged with it again."""

    name: str
    kind: str
    claimed_epsilon: float = field(metadata=INF_AS_STRING)  # JSON has no infinity
    control: str | None = None
    game_dir: str | None = None
    error: str | None = None
    split_test: dict | None = None  # the test of a team-supplied split, as judged on the night (its encoded SplitTest)



@dataclass(frozen=True)
class StoredNight:
    """What a night's verdicts were judged from, beyond each model's stored game. Written and read by
    `labeldp.codec` (a night stored before its slice budget reads it as None)."""

    date: dt.date
    run_kind: str
    game: GameConfig
    bound: BoundConfig
    models: tuple[NightModel, ...]
    reference_check: ReferenceCheck | None
    shift_diagnostic: ShiftDiagnostic | None
    accept_unchecked: bool
    written_at: str
    slice_budget: float | None = None  # the plan's slice budget (None: 1 - confidence, the bound's)

    @property
    def targets(self) -> list[NightModel]:
        return [m for m in self.models if m.kind == TARGET]

    @property
    def controls(self) -> list[NightModel]:
        return [m for m in self.models if m.kind == CONTROL]


def nights_dir(root: Path, date: dt.date) -> Path:
    return Path(root) / NIGHTS / f"date={date.isoformat()}"


def night_path(root: Path, date: dt.date, run_kind: str, game: GameConfig) -> Path:
    """``nights/date=D/<run kind>-<game hash>.json``: one stored night per day, kind of run and game settings."""
    return nights_dir(root, date) / f"{run_kind}-{game.game_hash()}.json"


def write_night(root: Path, night: StoredNight) -> Path:
    """Writes ``night`` atomically (a re-run of the same night replaces it) and returns its path."""
    from pipelines.scoring.beam_request import json_safe

    path = night_path(root, night.date, night.run_kind, night.game)
    write_text_atomically(path, json.dumps(json_safe(encode(night)), indent=1, sort_keys=True) + "\n",
                          fault="night.write")
    return path


def read_night(root: Path, date: dt.date, run_kind: str | None = None) -> StoredNight:
    """The latest stored night of ``date`` (of ``run_kind`` if given, else nightly or backfill). LabelDPInputError
    naming the directory when there is none, or a file that cannot be read."""
    directory = nights_dir(root, date)
    kinds = (run_kind,) if run_kind else STORED_KINDS
    nights = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            night = decode(StoredNight, json.loads(path.read_text(encoding="utf-8")), "night")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LabelDPInputError(f"{path}: not a readable stored night ({exc})") from None
        if night.run_kind in kinds:
            nights.append(night)
    if not nights:
        raise LabelDPInputError(f"no stored night for {date.isoformat()} under {directory} (run kinds "
                                f"{', '.join(kinds)}): only a night scored by this version of the nightly or "
                                f"backfill can be re-judged; run it once")
    return max(nights, key=lambda n: n.written_at)


def night_model_of(root: Path, spec, scored: Scored | None, error: str | None = None,
                   claimed_epsilon: float | None = None) -> NightModel:
    """The `NightModel` of a target or control spec and its scoring (`flows.steps.Scored`; None with ``error`` when
    it could not run)."""
    control = getattr(spec, "control", None)
    claimed = spec.claimed_epsilon if claimed_epsilon is None else claimed_epsilon
    game_dir = None if scored is None else str(Path(scored.game_dir).relative_to(Path(root)))
    return NightModel(name=spec.name, kind=CONTROL if control else TARGET, claimed_epsilon=float(claimed),
                      control=control, game_dir=game_dir, error=error,
                      split_test=None if scored is None else encode(scored.split_test))


def _record(root: Path, model: NightModel, bound: BoundConfig, night: StoredNight) -> Scored:
    """The model's stored scoring with its result at ``bound`` (the stored game judged again, and its stored slice
    counts, if any, bounded again at ``bound`` and the night's slice budget)."""
    from auditing.audit import audit_counts
    from auditing.game.counts import GameCounts
    from auditing.slices import SliceCounts, bound_slices
    from auditing.verdict.split_test import SplitTest
    from flows.steps import Scored
    from pipelines.scoring.beam_request import read_job_record

    directory = Path(root) / model.game_dir
    game = GameCounts.load(directory)
    if game.game != night.game:
        raise LabelDPInputError(f"{directory}: stored with other game settings than the night's")
    job = read_job_record(directory)
    result = audit_counts(game, bound)
    slices = SliceCounts.load(directory)
    if slices is not None:
        result = dataclasses.replace(result, slices=bound_slices(slices, bound, night.slice_budget))
    return Scored(dataclasses.replace(job, result=encode(result), config=flat_settings(night.game, bound)),
                  reused=True, game_dir=str(directory), shift_diagnostic=night.shift_diagnostic,
                  split_test=decode(SplitTest | None, model.split_test or None, "split_test"))


def sliced_targets(root: Path, night: StoredNight, models: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(targets whose slices a re-judging carries: their slice counts are stored; targets whose night bounded slices
    that cannot be carried: their game was stored before slice counts were kept), among ``models`` (all: empty)."""
    from auditing.result import AuditResult
    from auditing.slices import SLICES_INDEX
    from pipelines.scoring.beam_request import read_job_record

    carried, lost = [], []
    for model in night.targets:
        if model.game_dir is None or (models and model.name not in models):
            continue
        directory = Path(root) / model.game_dir
        if (directory / SLICES_INDEX).is_file():
            carried.append(model.name)
            continue
        try:
            stored = decode(AuditResult, read_job_record(directory).result, "result")
        except LabelDPInputError:
            continue
        if stored.slices:
            lost.append(model.name)
    return carried, lost


def rejudge_night(root: Path, night: StoredNight, bound: BoundConfig, *, warehouse: str | None,
                  models: tuple[str, ...] = (), progress: Progress = no_progress, run_id: str | None = None) -> Outcome:
    """Every model of ``night`` judged again at ``bound``: the controls (their checks decide the night's trust as
    on the night), then the targets (all, or those named in ``models``), each written to the warehouse with its
    report as a verdict of run kind ``rejudge``. Returns the run's `Outcome` (exit codes as the nightly's).
    run_id: the run's id in the warehouse (default: a new one)."""
    from auditing.sinks.warehouse import new_run_id
    from flows import steps

    run_id = run_id or new_run_id()
    unknown = sorted(set(models) - {m.name for m in night.targets})
    if unknown:
        raise LabelDPInputError(f"--model: {unknown} not among the night's targets "
                                f"({', '.join(m.name for m in night.targets)})")
    outcome = Outcome()
    records, checks, specs = {}, {}, []
    for model in night.controls:
        spec = ControlSpec(model.name, model.control, model.claimed_epsilon)
        specs.append(spec)
        if model.game_dir is None:
            checks[spec.name] = model.error or "could not run"
            continue
        records[spec.name] = _record(root, model, bound, night)
        checks[spec.name] = steps.judge_control(spec, records[spec.name])
    trust = steps.night_trust(night.date, checks, tuple(specs), night.accept_unchecked)
    night_fp = steps.night_fingerprint(specs, records, night.accept_unchecked)
    for spec in specs:
        if spec.name in records:
            outcome.rows.append(steps.publish(root, night.date, spec, records[spec.name], warehouse=warehouse,
                                              run_kind=REJUDGE, control=checks[spec.name], night=trust,
                                              reference_check=night.reference_check, progress=progress,
                                              run_id=run_id, night_fingerprint=night_fp))
    for model in night.targets:
        if models and model.name not in models:
            continue
        if model.game_dir is None:
            outcome.failures.append(f"{model.name}: {model.error or 'could not run on the night'}")
            continue
        spec = RegisteredTarget(model.name)  # judged against the night's claim, given below
        outcome.rows.append(steps.publish(root, night.date, spec, _record(root, model, bound, night),
                                          warehouse=warehouse, run_kind=REJUDGE, night=trust,
                                          reference_check=night.reference_check,
                                          claimed_epsilon=model.claimed_epsilon, progress=progress, run_id=run_id,
                                          night_fingerprint=night_fp))
    steps.write_index(root, warehouse)  # the page across models, with the re-judged verdicts
    outcome.collect_untrusted()
    return outcome


__all__ = ["NIGHTS", "NightModel", "StoredNight", "night_model_of", "night_path", "read_night", "rejudge_night",
           "sliced_targets", "write_night"]
