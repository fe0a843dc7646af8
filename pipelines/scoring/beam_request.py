"""The Beam scoring job seen from outside, without Apache Beam: what to score (`ScoringRequest`), the reference
model it defaults to, the runner arguments, the input checks and fingerprints, and where and how the job's
outputs are written and read back.

The job itself is `pipelines.scoring.beam_scoring.score_day`. Importing this module does not import ``apache_beam``
(tests/architecture/test_beam_split.py checks it in a fresh interpreter), so the flows, the controls and the
recalibration can build requests, fingerprint models and find or read a job's outputs without loading Beam.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from auditing.config import BoundConfig, flat_settings
from auditing.game.config import GameConfig
from auditing.game.counts import GameCounts
from auditing.game.sweep import SweepCounts
from auditing.game.sweep_reduce import BinSpec
from auditing.result import AuditResult
from auditing.verdict.capacity_check import CHECK_LAYOUT
from labeldp import hints
from labeldp.codec import INF_AS_STRING, decode, encode
from labeldp.errors import LabelDPInputError
from labeldp.names import check_name, require_date
from pipelines.data.dataset_spec import DatasetSpec, criteo
from pipelines.data.day import Day
from pipelines.data.layout import model_dir
from pipelines.models import registry
from pipelines.models.handle import ModelHandle, resolve_model
from pipelines.models.metadata import DatasetRecord, ModelMetadata, TrainingRows, or_none
from pipelines.scoring.partition_batches import partition_schema

FN_API_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
PLAN_MODES = ("auto", "side-input", "two-stage")
# Rows per batch: frame conversion + CatBoost Pool cost ~2x less per row at 262,144 than at 65,536 (fewer
# repeated categories per row; benchmarks/results/beam_scoring.md), and memory stays well under the target.
DEFAULT_BATCH_SIZE = 262_144
SWEEPS = "sweeps"
SCORED = "scored"
RESULT_FILE = "result.json"

# ------------------------------------------------------------------------------------------ request


@dataclass(frozen=True)
class ScoringRequest:
    """What to score and how. ``reference=None`` picks the default reference (`resolve_reference`).

    ``date`` and ``reference_date`` are ``datetime.date`` values parsed at the edge (the command line, the
    flow); a string is refused with a ``TypeError`` (``labeldp.names.require_date``). They pickle as they are
    for Beam workers and are written as ``YYYY-MM-DD`` in ``result.json``.

    ``game`` and ``bound``: the audit's settings. ``night``: the night keying the game's coins with the seed
    (`auditing.game.config.GameConfig.night`), ``date`` or None; ``game`` is played on it (its night is set to
    ``night`` on construction). The flows and ``labeldp-audit score`` pass ``date``, so each night of a model
    family draws fresh coins (docs/soundness.md section 10); None keys them by the seed alone, as
    `auditing.audit.run_audit` with a game without a night does.
    """

    data_root: str
    date: dt.date
    model: str
    game: GameConfig = field(default_factory=GameConfig)
    bound: BoundConfig = field(default_factory=BoundConfig)
    reference: str | None = None
    reference_date: dt.date | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    thread_count: int | None = None  # CatBoost threads per predict call; None: cores for an in-process runner, else 1
    bins: BinSpec = field(default_factory=BinSpec)
    plan_mode: str = "auto"
    combine_shards: int | None = None  # None: 1 (on the Dask runner: pass 1 lifted by hand, no shards)
    write_scored: bool = False
    expected_curve: bool = False  # also the game's expected correct guesses (controls; auditing.verdict.controls)
    # The capacity check's rows (a selection with ``mask(row_ids)`` and ``describe()``, e.g.
    # `pipelines.reference.recalibration.CheckRowSelection`): read and scored too, and kept out of the game; None: no check.
    check_rows: object = None
    # The night's rows left out for sharing a group with another row (`pipelines.scoring.row_grouping.GroupExclusion`),
    # dropped from the audited and the check rows; None: no grouping applied.
    excluded_rows: object = None
    # The target and the reference already resolved by the caller (a flow resolves each model once per run and
    # passes it down); None: resolved from ``model`` and ``reference`` when the job is prepared.
    target_model: ModelHandle | None = None
    reference_model: ModelHandle | None = None
    night: dt.date | None = None
    # Slicings counted per slice in the job's passes (`pipelines.scoring.day_slices`; docs/slices.md): their texts or
    # `auditing.slices.Slicing` objects, checked against the day's dataset when the job is prepared; and the
    # slices' own false-alarm budget (None: 1 - confidence).
    slices: tuple = ()
    slice_budget: float | None = None
    # The day's handle already resolved by the caller (`pipelines.data.day.Day`: its files listed and its bytes
    # hashed once a run); None: listed and hashed when the job is prepared.
    partition: Day | None = None

    def __post_init__(self):
        require_date(self.date, "date")
        if self.partition is not None and (Path(self.partition.root), self.partition.date) != (
                Path(self.data_root), self.date):
            raise ValueError(f"the day handle is of {self.partition.root} {self.partition.date.isoformat()}, the "
                             f"request of {self.data_root} {self.date.isoformat()}")
        if self.night is not None and require_date(self.night, "night") != self.date:
            raise ValueError(f"night {self.night.isoformat()} is not the scored day {self.date.isoformat()}: "
                             "a game's coins are keyed by the day it audits")
        object.__setattr__(self, "game", self.game.with_night(self.night))
        check_name(self.model, "model")
        if self.reference is not None:
            check_name(self.reference, "reference")
        if self.reference_date is not None:
            require_date(self.reference_date, "reference_date")
        for name, low in (("batch_size", 1), ("thread_count", 1), ("combine_shards", 1)):
            value = getattr(self, name)
            if value is None and name != "batch_size":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LabelDPInputError(f"{name.replace('_', '-')} must be a whole number >= {low}; got {value!r}")
        for role, handle, name, date in (("target_model", self.target_model, self.model, self.date),
                                         ("reference_model", self.reference_model, self.reference,
                                          self.reference_date)):
            if handle is None:
                continue
            if not isinstance(handle, ModelHandle):
                raise TypeError(f"{role} must be a resolved ModelHandle; got {type(handle).__name__}")
            if (name is not None and handle.name != name) or (date is not None and handle.date != date):
                raise LabelDPInputError(f"{role} is {handle.id}, but the request names {name}@{date}")
        if self.plan_mode not in PLAN_MODES:
            raise LabelDPInputError(f"plan mode must be one of {list(PLAN_MODES)}; got {self.plan_mode!r}")


def resolve_reference(root, model: str, date: dt.date, reference: str | None = None,
                      reference_date: dt.date | None = None) -> tuple[str, dt.date]:
    """The reference model M' (paper Sec. 6.2: a checkpoint that never saw day D's labels).

    Default: ``model``'s own checkpoint of D-1 if it exists, else the model named ``reference`` of D-1. An
    explicit ``reference`` name is taken at ``reference_date`` (default D-1).
    """
    if reference_date is not None:
        ref_date = require_date(reference_date, "reference_date")
    else:
        ref_date = require_date(date) - dt.timedelta(days=1)
    if reference is not None:
        return reference, ref_date
    if model_dir(root, model, ref_date).is_dir():
        return model, ref_date
    return "reference", ref_date


# ------------------------------------------------------------------------------------------ runner arguments


def runner_from(beam_args: Sequence[str]) -> str | None:
    """The ``--runner`` named in Beam arguments (either ``--runner=X`` or ``--runner X``), or None."""
    for index, arg in enumerate(beam_args):
        if arg.startswith("--runner="):
            return arg.split("=", 1)[1]
        if arg == "--runner" and index + 1 < len(beam_args):
            return beam_args[index + 1]
    return None


def _has_flag(beam_args: Sequence[str], *names: str) -> bool:
    return any(arg == name or arg.startswith(name + "=") for arg in beam_args for name in names)


def is_dask_runner(runner: str | None) -> bool:
    return bool(runner) and runner.rsplit(".", 1)[-1] == "DaskRunner"


def is_local_runner(runner: str | None) -> bool:
    """FnApiRunner or DirectRunner (the default): the runner keeps every PCollection that crosses a stage in
    this process's memory, whatever its worker count."""
    return runner is None or runner.rsplit(".", 1)[-1] in ("FnApiRunner", "DirectRunner")


# Up to this many rows of a day a local runner keeps the side-input plan, which holds the scored batches until
# pass 2 (about 100 bytes a row with the joined copy) but runs one pipeline instead of two. At 1e6 rows both plans
# take the same time since the two-stage plan spills one file per batch (5.7 s against 6.0 s, medians of 10 warm
# runs; benchmarks/results/beam_scoring.md), so above it the two-stage plan's flat memory costs nothing.
LOCAL_SIDE_INPUT_ROWS = 1_000_000


def plan_for(plan_mode: str, runner: str | None, rows: int | None = None) -> str:
    """The plan ``auto`` stands for on ``runner`` for a day of ``rows`` rows (any other ``plan_mode`` is kept).

    Two-stage on Dask (its side inputs are wrong: `pipelines.scoring.beam_scoring`, workaround 1), and on the local
    runners above `LOCAL_SIDE_INPUT_ROWS` rows (or an unknown count): with a side input, pass 2 can start only when
    pass 1 has seen every batch, so a local runner holds every scored batch (row_id, label, both models'
    probabilities: ~48 bytes a row, pickled, and a joined copy of them when pass 2 starts) in memory until then,
    which grows the job's peak with the partition's rows (benchmarks/results/memory.md); two-stage writes them to
    the work directory instead, so the peak stays flat. Side-input elsewhere (Dataflow, Flink: their shuffle spills
    what it holds)."""
    if plan_mode != "auto":
        return plan_mode
    if is_dask_runner(runner):
        return "two-stage"
    if is_local_runner(runner):
        return "side-input" if rows is not None and rows <= LOCAL_SIDE_INPUT_ROWS else "two-stage"
    return "side-input"


def pipeline_args(beam_args: Sequence[str], partitions: int) -> list[str]:
    """The Beam arguments with our defaults: FnApiRunner named explicitly (the DirectRunner first tries to
    download the Prism binary), and, on the Dask runner, one Dask partition per work item (capped)."""
    args = list(beam_args)
    runner = runner_from(args)
    if runner is None:
        args.append(f"--runner={FN_API_RUNNER}")
    elif is_dask_runner(runner) and not _has_flag(args, "--dask_npartitions", "--dask_partition_size"):
        args.append(f"--dask_npartitions={max(1, min(int(partitions), 256))}")
    return args


def in_process(beam_args: Sequence[str]) -> bool:
    """True when the arguments run the job in this one process (FnApiRunner or DirectRunner, one worker)."""
    return is_local_runner(runner_from(beam_args)) and not _has_flag(beam_args, "--direct_num_workers")


# ------------------------------------------------------------------------------------------ inputs


def model_dataset_fingerprint(metadata: ModelMetadata) -> str:
    """The fingerprint of the dataset a model reads (its metadata's ``dataset``; none recorded: Criteo)."""
    record = metadata.dataset
    return record.fingerprint if isinstance(record, DatasetRecord) else criteo().fingerprint()


def check_model_for_day(metadata: ModelMetadata, dataset: DatasetSpec, date: dt.date, role: str) -> None:
    """A model can score day ``date``'s rows: it reads this dataset, and a logged-predictions table holds
    predictions for exactly that day's rows (``predictions_for``)."""
    name, day = metadata.model_name, metadata.date.isoformat()
    model = f"the {role} {name!r} of {day}"
    recorded = metadata.dataset if isinstance(metadata.dataset, DatasetRecord) else None
    reads_features = bool(metadata.feature_schema) or recorded is not None  # the RR oracle reads none
    if reads_features and model_dataset_fingerprint(metadata) != dataset.fingerprint():
        found = "criteo" if recorded is None else recorded.name
        fix = (f"register its file again for that dataset with "
               f"{hints.REGISTER_FOR_DATASET.line(name=name, date=day)} (SPEC: the spec of {dataset.name!r})"
               if metadata.source == "registered" else
               f"train it again on that partition ({hints.TRAIN_MODEL.line(name=name, date=day)})")
        raise LabelDPInputError(f"{model} reads dataset {found!r}, but the partition of {date.isoformat()} is "
                                f"dataset {dataset.name!r}; {fix}")
    scores = or_none(metadata.predictions_for)
    if scores is not None and scores != date:
        raise LabelDPInputError(f"{model} is a table of predictions on the rows of {scores}, not of "
                                f"{date.isoformat()}: a predictions table answers only for the day it scored")


def request_models(request: ScoringRequest) -> tuple[ModelHandle, ModelHandle]:
    """The request's target and reference, resolved (`pipelines.models.handle.resolve_model`) unless the caller passed
    them; the reference defaults as `resolve_reference` says."""
    target = request.target_model or resolve_model(request.data_root, request.model, request.date)
    if request.reference_model is not None:
        return target, request.reference_model
    name, date = resolve_reference(request.data_root, request.model, request.date, request.reference,
                                   request.reference_date)
    return target, resolve_model(request.data_root, name, date)


def check_inputs(request: ScoringRequest, target: ModelHandle, reference: ModelHandle, day: Day):
    """Everything that can be checked before any work: ``day``'s (the request's partition's handle) files and
    schema, both models' dataset, day and feature schemas (their presence and files were checked when they were
    resolved).

    Returns:
        (files, partition schema).

    Raises:
        LabelDPInputError: a missing partition, a model of another dataset or day, or a feature schema mismatch.
    """
    dataset = day.dataset
    files = list(day.files)
    table_schema = partition_schema(files, dataset)
    check_model_for_day(target.meta, dataset, request.date, "target")
    check_model_for_day(reference.meta, dataset, request.date, "reference")
    registry.check_features(target.meta, table_schema)
    registry.check_features(reference.meta, table_schema)
    if reference.format.scores_one_day:  # a table of predictions must answer every row of the day
        from pipelines.data.schema import read_day

        keys = read_day(day, columns=[dataset.row_key], dataset=dataset)
        reference.format.check_reference_coverage(reference, keys.column(dataset.row_key).to_numpy())
    return files, table_schema


# ------------------------------------------------------------------------------------------ the job's record


@dataclass(frozen=True)
class ModelLineage:
    """A model's identity in a job's record (`pipelines.models.handle.ModelHandle.lineage`): where it is, its
    fingerprint, format, mechanism and claim, the partition it was trained on, its training rows' fingerprint and,
    for a model derived from another (a recalibrated reference), that model's fingerprint."""

    name: str
    date: dt.date
    uri: str | None = None
    fingerprint: str | None = None
    format: str | None = None
    source: str | None = None
    mechanism: str | None = None
    claimed_epsilon: float | None = field(default=None, metadata=INF_AS_STRING)
    partition_fingerprint: str | None = None
    training_rows_fingerprint: str | None = None
    source_fingerprint: str | None = None

    @property
    def id(self) -> str:
        """``name@YYYY-MM-DD``, as the warehouse names a reference."""
        return f"{self.name}@{self.date.isoformat()}"


@dataclass(frozen=True)
class PartitionLineage:
    """The day a job scored: its date and fingerprint (`pipelines.data.day.Day`), files, rows, read tasks and
    dataset."""

    date: dt.date
    fingerprint: str | None = None
    files: tuple[str, ...] = ()
    rows: int | None = None
    row_groups: int | None = None
    dataset: str | None = None
    dataset_fingerprint: str | None = None


@dataclass(frozen=True)
class RunnerLineage:
    """The Beam runner a job ran on and the arguments it was given."""

    runner: str | None = None
    beam_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class CodeVersion:
    """The code that ran a job (`pipelines.models.registry.code_version`); what is unknown is None."""

    package: str | None = None
    version: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None

    def label(self) -> str:
        """``version+commit[:12]`` with ``-dirty`` when tracked files differed (the warehouse's code_version)."""
        return f"{self.version}+{(self.git_commit or 'unknown')[:12]}" + ("-dirty" if self.git_dirty else "")


@dataclass(frozen=True)
class JobLineage:
    """Where a job's numbers come from: the audited model, the reference, the partition, the runner, the code, and
    the rows the scoring depended on beyond the model's own (``rows``: the check, grouped and correction rows'
    records, part of the output's key). Parts a record lacks are None (a record of an older version)."""

    model: ModelLineage | None = None
    reference: ModelLineage | None = None
    partition: PartitionLineage | None = None
    runner: RunnerLineage = RunnerLineage()
    code_version: CodeVersion = CodeVersion()
    rows: dict | None = None


@dataclass(frozen=True)
class JobRecord:
    """A scoring job's record, its ``result.json`` (`pipelines.scoring.beam_scoring.score_day`): the audit result at
    the request's bound settings and the configuration (their JSON forms), the output's key, the lineage, the
    job's diagnostics (rows read, plan, audited and check rows), timings and times, and where ``--write-scored``
    wrote the scored rows. Read and written by `labeldp.codec` (`read_job_record`, `write_result`)."""

    result: dict
    config: dict = field(default_factory=dict)
    scoring_key: str | None = None
    lineage: JobLineage = JobLineage()
    diagnostics: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None
    scored_rows: str | None = None


def read_job_record(directory: Path) -> JobRecord:
    """The `JobRecord` in ``directory``'s ``result.json``; LabelDPInputError naming the file when it cannot be read
    or is not a job's record."""
    path = Path(directory) / RESULT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabelDPInputError(f"{path}: cannot be read ({exc})") from None
    return decode(JobRecord, data, str(path))


@dataclass(frozen=True)
class PreparedScoring:
    """A request's inputs, checked once before any work, and the key its output is stored under: the resolved
    target and reference, the dataset, the partition's read tasks, the audited and check rows (with the grouped
    rows left out, and their record), the job's lineage and `scoring_key`."""

    target: ModelHandle
    reference: ModelHandle
    dataset: DatasetSpec
    tasks: list
    total_rows: int
    selection: object
    check_rows: object
    row_groups: object
    lineage: JobLineage
    key: str
    output_dir: Path


def prepare_scoring(request: ScoringRequest, beam_args: Sequence[str] = (), progress=None) -> PreparedScoring:
    """Checks ``request``'s inputs (`check_inputs`), fingerprints the models and the partition once, and derives
    the output's key and directory. LabelDPInputError before any work, as `check_inputs`."""
    from pipelines.data.day import listed_day
    from pipelines.scoring.audit_rows import row_selection
    from pipelines.scoring.partition_batches import read_tasks

    # the request's day handle; a request without one (the score command's, a user's) lists it here, once, so a
    # missing partition is named before the models
    day = request.partition if request.partition is not None else listed_day(request.data_root, request.date)
    dataset = day.dataset
    target, reference = request_models(request)
    if progress is not None:
        progress(f"checking inputs: partition {request.date}, model {target.id}, reference {reference.id}")
    files, _table_schema = check_inputs(request, target, reference, day)
    if request.slices:
        from pipelines.scoring.day_slices import slicings_for

        slicings_for(request.slices, dataset)
    selection = row_selection(request.game.audit_rows, target.meta, target.directory)
    check_rows, row_groups = request.check_rows, None
    record = target.meta.training_rows  # as stored (a record, or null / absent for a model without one)
    audited_rows = None if selection is None else {
        **selection.describe(), "training_rows": encode(record) if isinstance(record, TrainingRows) else None}
    from pipelines.reference.recalibration import correction_exclusion
    from pipelines.scoring.row_grouping import ExcludingSelection

    correction = correction_exclusion(reference, request.date)
    if correction is not None:  # a reference corrected on this day's rows: its correction's share leaves the audit
        selection = ExcludingSelection(selection, correction)
    if request.excluded_rows is not None:  # rows sharing a group leave the audited and the check rows
        row_groups = request.excluded_rows.record(selection, check_rows)
        selection = ExcludingSelection(selection, request.excluded_rows)
        check_rows = None if check_rows is None else ExcludingSelection(check_rows, request.excluded_rows)
    tasks = read_tasks(files)
    total_rows = sum(task.rows for task in tasks)
    beam_args = list(beam_args)
    lineage = JobLineage(
        model=decode(ModelLineage, target.lineage(), "lineage.model"),
        reference=decode(ModelLineage, reference.lineage(), "lineage.reference"),
        partition=PartitionLineage(
            date=request.date, fingerprint=day.fingerprint,
            files=tuple(p.name for p in files), rows=total_rows, row_groups=len(tasks), dataset=dataset.name,
            dataset_fingerprint=dataset.fingerprint()),
        runner=RunnerLineage(runner_from(beam_args) or FN_API_RUNNER, tuple(beam_args)),
        code_version=decode(CodeVersion, registry.code_version(), "lineage.code_version"),
        # the rows the scoring depended on beyond the model's own (part of the output's key)
        rows={"check_rows": None if request.check_rows is None else request.check_rows.describe(),
              "excluded": None if request.excluded_rows is None else request.excluded_rows.describe(),
              **({} if correction is None else {"correction": correction.describe()})},
    )
    key = scoring_key(request.game, encode(lineage), audited_rows, expected_curve=request.expected_curve,
                      capacity_check=request.check_rows is not None, slices=_slices_key(request))
    return PreparedScoring(target, reference, dataset, tasks, total_rows, selection, check_rows,
                           row_groups, lineage, key, sweep_dir(request.data_root, request.model, request.date, key))


def reused_record(stored: tuple[GameCounts, JobRecord], request: ScoringRequest,
                  directory: Path | None = None) -> JobRecord:
    """A stored job's record (`stored_scoring`) judged at ``request``'s bound settings (`auditing.audit.audit_counts`:
    milliseconds, no scoring), with the day's slices bounded at them too from the slice counts stored in
    ``directory`` (`auditing.slices.bound_slices`; the slicings are part of the key, their bound settings and budget
    are not)."""
    from auditing.audit import audit_counts
    from auditing.slices import SliceCounts, bound_slices

    game, record = stored
    result = audit_counts(game, request.bound)
    if request.slices:
        counts = None if directory is None else SliceCounts.load(directory)
        if counts is not None:
            result = replace(result, slices=bound_slices(counts, request.bound, request.slice_budget))
        elif decode(AuditResult, record.result, "result").slices:  # never bounded again silently from nothing
            raise LabelDPInputError(f"{directory}: the day's game is stored without its slices' counts; score the "
                                    "day again")
        # else the job left no row to play on (`_nothing_left`): no slice, as stored
    return replace(record, result=encode(result), config=flat_settings(request.game, request.bound))


def stored_scoring(prepared: PreparedScoring) -> tuple[GameCounts, JobRecord] | None:
    """The game's output and the job's record stored under ``prepared``'s key, or None when there is none (or
    it cannot be read: then the day is scored again)."""
    try:
        game = GameCounts.load(prepared.output_dir)
        record = read_job_record(prepared.output_dir)
    except (LabelDPInputError, OSError, ValueError):
        return None
    if record.scoring_key != prepared.key:
        return None
    return game, record


# ------------------------------------------------------------------------------------------ outputs


def _slices_key(request: ScoringRequest) -> dict | None:
    """What a day's slice counts depend on beyond the game: the slicings. Their bound settings and budget are not in
    it: a slice is bounded from its stored counts (`auditing.slices.bound_slices`), so a bound change re-judges a
    sliced day without scoring it again."""
    if not request.slices:
        return None
    return {"slicings": [s if isinstance(s, str) else s.spec for s in request.slices]}


def scoring_key(game: GameConfig, lineage: dict, audited_rows: dict | None, *, expected_curve: bool,
                capacity_check: bool, slices: dict | None = None) -> str:
    """The 16-hex key of a scoring job's output: everything its counts depend on and nothing else. The game's
    configuration (`GameConfig.game_hash`, with the game's version), the fingerprints of the model, the reference
    and the partition (``lineage``: the job's record), the audited rows (``audited_rows``: the row selection's
    record, with the model's training-rows record), the check and grouped rows, and which optional records were
    asked for. No bound setting enters it: those re-judge stored counts (`auditing.audit.audit_counts`)."""
    payload = {"game": game.game_hash(), "model": lineage["model"]["fingerprint"],
               "reference": lineage["reference"]["fingerprint"], "partition": lineage["partition"]["fingerprint"],
               "dataset": lineage["partition"].get("dataset_fingerprint"), "audited_rows": audited_rows,
               "rows": lineage["rows"], "expected_curve": bool(expected_curve),
               # the check histograms' layout: a game stored in another is scored again
               "capacity_check": CHECK_LAYOUT if capacity_check else False}
    if slices is not None:  # only when declared, so the keys of days without slices are unchanged
        payload["slices"] = slices
    return hashlib.sha256(json.dumps(json_safe(payload), sort_keys=True).encode()).hexdigest()[:16]


def sweep_dir(root, model: str, date: dt.date, key: str) -> Path:
    """``sweeps/<model>/date=D/<scoring key>/``: where the job writes ``counts.npz`` and ``result.json``."""
    return Path(root) / SWEEPS / check_name(model) / f"date={require_date(date).isoformat()}" / key


def scored_dir(root, model: str, date: dt.date, key: str) -> Path:
    """``scored/<model>/date=D/<scoring key>/``: the ``--write-scored`` rows."""
    return Path(root) / SCORED / check_name(model) / f"date={require_date(date).isoformat()}" / key


@dataclass
class ScoringOutcome:
    """What `pipelines.scoring.beam_scoring.score_day` produced: the audit result at the request's settings, the game's
    claim-free output (`auditing.game.counts.GameCounts`) and where they were written."""

    @property
    def counts(self) -> SweepCounts:
        return self.game.counts

    result: AuditResult
    game: GameCounts
    output_dir: Path
    scored_dir: Path | None
    job: JobRecord  # result.json

    @property
    def record(self) -> dict:
        """The job's record in its JSON form (``result.json``)."""
        return encode(self.job)


def json_safe(value):
    """Strict-JSON copy: inf -> "inf", NaN -> None, numpy scalars/arrays -> Python, paths -> str."""
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Path):
        return str(value)
    return value


def write_result(directory: Path, record: JobRecord) -> None:
    """``result.json`` in ``directory``: the job's record as strict JSON (`json_safe`), keys sorted."""
    (Path(directory) / RESULT_FILE).write_text(json.dumps(json_safe(encode(record)), indent=2, sort_keys=True,
                                                          allow_nan=False) + "\n", encoding="utf-8")


__all__ = [
    "DASK_RUNNER",
    "DEFAULT_BATCH_SIZE",
    "FN_API_RUNNER",
    "PLAN_MODES",
    "RESULT_FILE",
    "SCORED",
    "SWEEPS",
    "CodeVersion",
    "JobLineage",
    "JobRecord",
    "ModelLineage",
    "PartitionLineage",
    "PreparedScoring",
    "RunnerLineage",
    "ScoringOutcome",
    "ScoringRequest",
    "check_inputs",
    "check_model_for_day",
    "in_process",
    "is_dask_runner",
    "is_local_runner",
    "json_safe",
    "model_dataset_fingerprint",
    "pipeline_args",
    "plan_for",
    "prepare_scoring",
    "read_job_record",
    "resolve_reference",
    "runner_from",
    "scored_dir",
    "scoring_key",
    "stored_scoring",
    "sweep_dir",
    "write_result",
]
