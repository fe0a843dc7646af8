"""The Beam scoring job: one day's partition, a target and a reference model, R repetitions of the game,
reduced to the exact per-repetition sweep counts of the in-process audit (`auditing.audit.run_audit`).

Pipeline (every element is an Arrow batch or a small per-slot object, never a row):

    row groups [--Reshuffle, on multi-worker runners] --read--> Arrow batches
    Arrow batches --RunInference(target)--> --RunInference(reference)--> scored batches
    scored batches --CombinePerKey/CombineGlobally(pass 1: play_repetition, |score|-bin histograms)--> pass1
    scored batches --ParDo(pass 2, pass1 as side input: replay rows near cut bins)--> boundary rows
    boundary rows --GroupByKey(slot)--> ParDo(exact counts) --> per-slot counts
    pass1 + per-slot counts --Flatten--> ParDo(write result files)

Declared slices (docs/slices.md) are counted in the same passes: each batch is read with the slicings' columns
of its rows, and each step of `pipelines.scoring.day_slices.SliceSteps` (the day's statistics the slices are fixed
from, then each slice's pass 1 and pass 2) is a CombineFn (`SliceStepFn`) over the scored batches. The steps follow
one another (a slice's histograms need its values or edges, which are statistics of the whole day): on the
two-stage plan the first rides on pipeline 1, the next on pipeline 2, and each one left is a pipeline of its own
over the predictions pipeline 1 wrote (with the check rows and the slicing columns when slices are declared); on an
in-process runner's side-input plan the driver folds them over the batches the job held, as it plays pass 2 there.
A multi-worker runner's side-input plan is run as two-stage when slices are declared.

Pass 1's compiled kernel releases the GIL and runs on a background thread (one core, `Pass1Accumulator`), so on
a single-process runner it overlaps the single-threaded Python work of the next batch (Parquet reading, the
CatBoost frame and Pool); the CombineFn reads its accumulator only after the kernels finished (``compact``,
``extract_output``, merges and pickling wait for them), and the histograms are integer sums, so the result is
the same whenever the kernels run.

The reduction is exact (`auditing.game.sweep_reduce`): pass 1 histograms |score| in order-preserving bins, the
plan derived from them says which bins each grid point cuts, and pass 2 brings back only those bins' rows,
which `exact_counts` ranks with `auditing.game.sweep.rank_order` itself. Memory is O(bins x R) for the histograms
plus the boundary rows (reported as ``boundary_rows``), independent of the partition's size otherwise.
The counts (with both keyed halves of repetition 0, `auditing.game.slots`) become `auditing.game.counts.GameCounts`;
`auditing.audit.audit_counts` turns them into the same `AuditResult` as in-process.
`exact_counts` checks every cut bin's rows against the histogram, so rows lost or duplicated between the
passes by any runner raise instead of giving a wrong count.

Plan modes:
- ``side-input``: one pipeline; pass 2 reads the merged histograms as a singleton side input. On an in-process
  runner the pipeline instead hands its audited batches and pass 1 to the driver (`HoldBatches`, `HoldPass1`), which plays pass 2 on them
  (`pipelines.scoring.scoring_batches.count_batches`) with the same functions: the runner held them in its
  buffers anyway, and two more stages, a shuffle of the boundary rows and a file per slot cost more than the pass
  (the job's tail after inference went from 0.62 to 0.17 s at 1e6 rows x R = 100, pass 2 0.10 s of it;
  benchmarks/results/beam_scoring.md).
- ``two-stage``: pipeline 1 writes the scored batches (row_id, label, both models' probabilities; ~33 bytes
  a row) and the histograms to a work directory; the driver derives the plan (O(bins x R)) and pipeline 2
  reads the scored batches back and runs pass 2 with the plan as a DoFn argument.
- ``auto`` (`pipelines.scoring.beam_request.plan_for`): two-stage on the Dask runner and on the local runners
  (FnApiRunner, DirectRunner), which would hold every scored batch in memory until pass 1 has seen them all;
  side-input elsewhere.

Beam's Dask runner (apache-beam 2.77) needs four workarounds (how each was found: infra/README.md, "Beam
runners"):
1. Side inputs are computed inside each consuming task, outside the Dask graph, and outputs of earlier
   partitions were appended again: hence the two-stage plan.
2. Outputs emitted from ``finish_bundle`` are dropped, and `BatchElements` emits its last batch there: the
   handlers run ``with_no_batching()`` on batches we build ourselves (Arrow batches of ``batch_size`` rows),
   and no DoFn of ours outputs from ``finish_bundle``.
3. Only the last transform's bag is computed, so each pipeline ends in exactly one sink that every branch is
   flattened into; and ``Create`` puts up to 128 elements in one Dask partition, so ``--dask_npartitions``
   defaults to the number of read tasks (else one worker does all).
4. Not a Beam bug: the nanny's MALLOC_TRIM_THRESHOLD_ turns off glibc's dynamic mmap threshold, so every
   large numpy temporary of the game becomes a fresh mmap; the DoFns set M_MMAP_THRESHOLD back to 32 MiB once
   per such process (`pipelines.scoring.beam_dofns`), unless MALLOC_MMAP_THRESHOLD_ is set.
5. No combiner lifting: a combine gathers its inputs by key before combining them, so the workers' memory grew
   with the day's rows. Pass 1 and the expected histogram use `pipelines.scoring.dask_fixes.LiftedCombineGlobally`
   there (folded per Dask partition, merged in a tree); with ``combine_shards`` set, pass 1 is instead keyed by a
   shard of the batch id, combined per shard and merged.

Modules: this one builds the pipelines and runs the job (`score_day`); the DoFns and CombineFns are in
`pipelines.scoring.beam_dofns`; the request, the runner arguments, the input checks and the output files in
`pipelines.scoring.beam_request`, which imports no Beam; the per-batch work in `pipelines.scoring.partition_batches`,
`pipelines.scoring.scored_batch` and `pipelines.scoring.scoring_batches`, plain functions that the DoFns wrap.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
from apache_beam.options.pipeline_options import PipelineOptions

from auditing.audit import audit_counts
from auditing.config import flat_settings
from auditing.game.attack_curve import attack_curve_from_outcomes
from auditing.game.counts import GameCounts
from auditing.game.expected import expected_record
from auditing.game.score_histogram import coarsen
from auditing.game.sweep import SweepCounts
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.progress import Progress, no_progress
from pipelines.data.layout import atomic_directories, atomic_directory, partition_listing
from pipelines.models.handle import ModelHandle
from pipelines.models.metadata import ModelMetadata
from pipelines.scoring.beam_coders import BATCH, keyed, typed
from pipelines.scoring.beam_dofns import (
    AttachTarget,
    BoundaryRows,
    ExactCounts,
    ExpectedHistogramFn,
    Held,
    HoldBatches,
    HoldPass1,
    MergePass1Fn,
    Pass1CombineFn,
    PassProgress,
    PrepareTarget,
    ReadBatches,
    ReadPredictions,
    ScoredRows,
    SliceStepFn,
    ToScored,
    WriteBoundaryRows,
    WriteResults,
    WriteRowIdBuckets,
    WriteTable,
    audited_part,
    check_duplicates,
    check_row_id_files,
    count_slots_from_files,
    drop_prefetched,
    read_slice_step,
    read_slot_counts,
    shard,
    take_held,
)
from pipelines.scoring.beam_request import (
    FN_API_RUNNER,
    JobLineage,
    JobRecord,
    PreparedScoring,
    ScoringOutcome,
    ScoringRequest,
    in_process,
    is_dask_runner,
    pipeline_args,
    plan_for,
    prepare_scoring,
    runner_from,
    scored_dir,
    sweep_dir,
    write_result,
)
from pipelines.scoring.partition_batches import ReadTask, chain_tasks
from pipelines.scoring.scored_batch import RowCounts, duplicate_row_ids, predictions_table, row_id_buckets
from pipelines.scoring.scoring_batches import (
    GameSpec,
    Pass1Accumulator,
    SweepPlan,
    count_batches,
    make_plan,
    sweep_counts,
)

ROW_ID_BUCKETS = 16
# The two-stage plan's row-id files: the driver checks one bucket at a time (1e8 rows: about 3 MB of ids each).
ROW_ID_FILES = 256

# ------------------------------------------------------------------------------------------ pipelines


@dataclass
class _Job:
    request: ScoringRequest
    target: ModelHandle
    reference: ModelHandle
    spec: GameSpec
    tasks: list[ReadTask]
    total_rows: int
    beam_args: list[str]
    plan_mode: str
    thread_count: int
    shards: int
    work_dir: Path
    scored_dir: Path | None
    progress: Progress
    show_worker_progress: bool
    selection: object = None  # pipelines.scoring.audit_rows selection, or None for every row
    check_rows: object = None  # the capacity check's row selection (pipelines.reference.recalibration), or None
    dataset: object = None  # pipelines.data.dataset_spec.DatasetSpec of the partition
    lifted: bool = False  # the Dask runner, unless combine shards were asked for: the combines are lifted by hand
    slices: object = None  # pipelines.scoring.day_slices.SliceSteps of the declared slices, or None


class _KeyedHandler(KeyedModelHandler):
    """Beam's KeyedModelHandler, except that RunInference's bytes metric does not pickle the keys: a key here holds
    the whole Arrow batch (pickling it cost about 0.3 s per 1e6 rows). The examples are measured by the format's
    own handler, as before."""

    def get_num_bytes(self, batch) -> int:
        return self._unkeyed.get_num_bytes([example for _, example in batch])


def _scored_batches(pipeline, job: _Job):
    request = job.request
    target_format, reference_format = job.target.format, job.reference.format

    def handler(model: ModelHandle):
        base = model.format.handler(model, job.dataset, thread_count=job.thread_count)
        return _KeyedHandler(base).with_no_batching()

    # Every per-batch PCollection is typed BATCH so that Beam's size sampling does not pickle it (beam_coders).
    local = in_process(job.beam_args)
    # One process reads the next batch while it scores this one (ReadBatches); a cluster spreads the row groups.
    chained = chain_tasks(job.tasks) if local else job.tasks
    tasks = pipeline | "RowGroups" >> beam.Create(chained)
    if not local:
        tasks = tasks | "Spread" >> beam.Reshuffle()
    read = ReadBatches(request.batch_size, job.selection, job.dataset, job.check_rows, read_ahead=local,
                       job=str(job.work_dir) if local else None, slice_columns=_slice_columns(job))
    if local and chained:
        read.prefetch(chained[0])  # the first batch is read while the pipeline is built and started
    batches = typed(tasks | "ReadBatches" >> beam.ParDo(read), BATCH)
    examples = typed(batches | "TargetInput" >> beam.Map(PrepareTarget(target_format, job.dataset)), BATCH)
    inferred = typed(examples | "Target" >> RunInference(handler(job.target)), BATCH)
    targeted = typed(inferred | "AttachTarget" >> beam.Map(AttachTarget(reference_format, job.dataset)), BATCH)
    referenced = typed(targeted | "Reference" >> RunInference(handler(job.reference)), BATCH)
    scored = typed(referenced | "Scored" >> beam.Map(ToScored(job.check_rows)), BATCH)
    # Progress counts the audited rows: the training rows the selection records, when it records them.
    rows = getattr(job.selection, "rows", None)
    expected = rows if rows and rows <= job.total_rows else job.total_rows
    return typed(scored | "Progress" >> beam.ParDo(PassProgress("pass 1", expected, job.show_worker_progress)), BATCH)


def _audited(scored):
    """The audited rows of every scored batch (the check rows go to pass 1 and the row-id check only)."""
    return typed(scored | "Audited" >> beam.Map(audited_part), BATCH)


def _pass1(scored, job: _Job):
    if job.lifted:  # the Dask runner: folded per partition, merged in a tree (`pipelines.scoring.dask_fixes`)
        from pipelines.scoring.dask_fixes import LiftedCombineGlobally

        return typed(scored | "Pass1" >> LiftedCombineGlobally(Pass1CombineFn(job.spec)), BATCH)
    if job.shards == 1:  # combiner lifting (FnApiRunner, Dataflow) already plays the batches where they are
        return typed(scored | "Pass1" >> beam.CombineGlobally(Pass1CombineFn(job.spec)).without_defaults(), BATCH)
    sharded = typed(scored | "Shard" >> beam.Map(shard, job.shards), keyed(int))
    per_shard = typed(sharded | "Pass1PerShard" >> beam.CombinePerKey(Pass1CombineFn(job.spec)), keyed(int))
    values = typed(per_shard | "DropShard" >> beam.Values(), BATCH)
    return typed(values | "Pass1Merge" >> beam.CombineGlobally(MergePass1Fn()).without_defaults(), BATCH)


def _expected(scored, job: _Job) -> list:
    """With ``expected_curve``: [("expected", rows, correct)], the game's expected |score| histogram."""
    if not job.request.expected_curve:
        return []
    if job.lifted:
        from pipelines.scoring.dask_fixes import LiftedCombineGlobally

        combine = LiftedCombineGlobally(ExpectedHistogramFn(job.spec))
    else:
        combine = beam.CombineGlobally(ExpectedHistogramFn(job.spec)).without_defaults()
    return [scored
            | "ExpectedHistogram" >> combine
            | "TagExpected" >> beam.Map(lambda acc: ("expected", acc[0], acc[1]))]


def _duplicates(scored):
    """The row-id uniqueness check: ("duplicates", bucket, count, example) per hash bucket of row ids."""
    return (
        scored
        | "RowIdBuckets" >> beam.FlatMap(row_id_buckets, ROW_ID_BUCKETS)
        | "GroupRowIds" >> beam.GroupByKey()
        | "DuplicateRowIds" >> beam.MapTuple(lambda bucket, chunks: ("duplicates", bucket, *duplicate_row_ids(chunks)))
    )


def _tag_pass1(pass1):
    return typed(pass1 | "TagPass1" >> beam.Map(lambda acc: ("pass1", acc)), BATCH)


def _write_scored(scored, job: _Job) -> list:
    """With ``write_scored``: the branch writing the ``--write-scored`` rows."""
    if job.scored_dir is None:
        return []
    return [scored | "WriteScored" >> beam.ParDo(WriteTable(str(job.scored_dir), ScoredRows(job.spec)))]


def _slice_columns(job: _Job) -> tuple[str, ...]:
    if job.slices is None:
        return ()
    from pipelines.scoring.day_slices import slice_column_names

    return slice_column_names(job.slices.slicings)


def _slice_step(scored, job: _Job) -> list:
    """With declared slices: the branch folding the slices' next step (`pipelines.scoring.day_slices.SliceSteps`)
    over the scored batches (audited and check rows, with the slicings' columns), tagged for the sink."""
    step = None if job.slices is None else job.slices.next_step()
    if step is None:
        return []
    name, make = step
    if job.lifted:
        from pipelines.scoring.dask_fixes import LiftedCombineGlobally

        combine = LiftedCombineGlobally(SliceStepFn(make))
    else:
        combine = beam.CombineGlobally(SliceStepFn(make)).without_defaults()
    folded = typed(scored | f"Slices-{name}" >> combine, BATCH)
    return [folded | f"TagSlices-{name}" >> beam.Map(lambda acc, step=name: ("slices", step, acc))]


def _take_slice_step(job: _Job) -> None:
    """The driver keeps the step the pipeline just folded (`_slice_step`)."""
    step = None if job.slices is None else job.slices.next_step()
    if step is not None:
        job.slices.take(step[0], read_slice_step(job.work_dir, step[0]))


def _write_results(outputs: list, job: _Job) -> None:
    """Flattens every branch into the one sink (module docstring, workaround 3)."""
    merged = typed(outputs | "AllOutputs" >> beam.Flatten(), BATCH)
    _ = merged | "WriteResults" >> beam.ParDo(WriteResults(str(job.work_dir)))


def _new_pipeline(job: _Job, partitions: int) -> beam.Pipeline:
    return beam.Pipeline(options=PipelineOptions(pipeline_args(job.beam_args, partitions)))


def _single_pipeline(job: _Job) -> Held | None:
    """Runs the side-input plan. On an in-process runner pass 2 is left to the driver: the audited batches and pass
    1's accumulator come back (`HoldBatches`, `HoldPass1`); else None, and pass 1 and pass 2's counts are in the
    work directory."""
    pipeline = _new_pipeline(job, len(job.tasks))
    scored = _scored_batches(pipeline, job)
    pass1 = _pass1(scored, job)
    audited = _audited(scored)
    held = str(job.work_dir) if in_process(job.beam_args) else None
    if held is not None:  # with slices the whole scored batches, whose slices the driver counts too
        outputs = [pass1 | "HoldPass1" >> beam.ParDo(HoldPass1(held)),
                   (audited if job.slices is None else scored) | "HoldBatches" >> beam.ParDo(HoldBatches(held))]
    else:
        side = beam.pvalue.AsSingleton(pass1)
        chunks = typed(audited | "BoundaryRows" >> beam.ParDo(BoundaryRows(job.spec), side), keyed(int))
        outputs = [_tag_pass1(pass1), (
            chunks
            | "GroupBySlot" >> beam.GroupByKey()
            | "ExactCounts" >> beam.ParDo(ExactCounts(job.spec), side)
        )]
    _write_results([*outputs, _duplicates(scored), *_expected(audited, job), *_write_scored(audited, job)], job)
    try:
        _run(pipeline)
    finally:
        found = None if held is None else take_held(held)  # forgotten here, whatever the run's outcome
    return found


def _two_stage_first(job: _Job) -> None:
    pipeline = _new_pipeline(job, len(job.tasks))
    scored = _scored_batches(pipeline, job)
    pass1 = _pass1(scored, job)
    audited = _audited(scored)
    predictions = job.work_dir / "predictions"
    predictions.mkdir(parents=True, exist_ok=True)
    row_ids = scored | "WriteRowIds" >> beam.ParDo(WriteRowIdBuckets(str(job.work_dir / "row_ids"), ROW_ID_FILES))
    # With slices the predictions keep the check rows and the slicings' columns: the slices' later steps read them.
    written = audited if job.slices is None else scored
    _write_results([_tag_pass1(pass1), row_ids, *_expected(audited, job),
                    written | "WritePredictions" >> beam.ParDo(WriteTable(str(predictions), predictions_table, dictionary=False)),
                    *_write_scored(audited, job), *_slice_step(scored, job)], job)
    _run(pipeline)
    _take_slice_step(job)


# On several workers, a slot with more boundary rows than this is written ranked to the shared work directory and
# merged by the driver (`count_slots_from_files`) instead of going through the group-by-slot: Dask's group-by holds
# what it groups in the workers' memory and its shuffle's tasks in the scheduler's. At 1e8 rows and R = 20 each
# slot's ~0.8M rows took the workers from 1.1 to 1.5 GB and the scheduler from 0.31 to 0.47 GB at the job's end.
# With it the group-by carries at most this many rows a slot, whatever the day's size.
SHUFFLE_ROWS = 1 << 16


def _two_stage_second(job: _Job, plan: SweepPlan) -> None:
    files = sorted(str(path) for path in (job.work_dir / "predictions").glob("part-*.parquet"))
    if not files:
        return
    local = in_process(job.beam_args)
    pipeline = _new_pipeline(job, len(files))
    read = _read_predictions(pipeline, files)
    scored = typed(read
                   | "Audited" >> beam.Map(audited_part)
                   | "Progress" >> beam.ParDo(PassProgress("pass 2", plan.m, job.show_worker_progress, read=False)),
                   BATCH)
    if local:  # one process: the boundary rows go to disk, counted a group of slots at a time
        counted = scored | "WriteBoundaryRows" >> beam.ParDo(
            WriteBoundaryRows(str(job.work_dir / "boundary"), job.spec, plan))
    else:  # the small slots through the group-by-slot, the others ranked to the work directory
        chunks = typed(scored | "BoundaryRows" >> beam.ParDo(
            WriteBoundaryRows(str(job.work_dir / "boundary"), job.spec, plan, max_rows=SHUFFLE_ROWS,
                              ranked_only=True)), keyed(int))
        counted = (chunks
                   | "GroupBySlot" >> beam.GroupByKey()
                   | "ExactCounts" >> beam.ParDo(ExactCounts(job.spec, plan)))
    _write_results([counted, *_slice_step(read, job)], job)
    _run(pipeline)
    _take_slice_step(job)
    count_slots_from_files(job.work_dir / "boundary", job.work_dir, plan, max_rows=None if local else SHUFFLE_ROWS)


def _read_predictions(pipeline, files: list[str]):
    return typed(pipeline
                 | "ScoredFiles" >> beam.Create(files)
                 | "Spread" >> beam.Reshuffle()
                 | "ReadScored" >> beam.ParDo(ReadPredictions()), BATCH)


def _slice_pipelines(job: _Job) -> None:
    """The two-stage plan's slice steps left after its two pipelines (each slice's pass 1 and pass 2, and with
    ``prior-deciles`` the deciles' second read): one pipeline each over the predictions the first wrote."""
    files = sorted(str(path) for path in (job.work_dir / "predictions").glob("part-*.parquet"))
    while job.slices.next_step() is not None:
        pipeline = _new_pipeline(job, max(len(files), 1))
        _write_results(_slice_step(_read_predictions(pipeline, files), job), job)
        _run(pipeline)
        _take_slice_step(job)


# Beam's state sampler (a thread per bundle, which times each step) sleeps up to 200 ms between samples, and a
# bundle's end joins it: an in-process job waited 0.1-0.2 s a job for it (py-spy). Every 20 ms at the most keeps
# the step timings and ends the wait sooner; it only changes the sampler's default in this process.
_STATE_SAMPLING_MS = 20


def _run(pipeline) -> None:
    from apache_beam.runners.worker import statesampler

    statesampler.StateSampler.__init__.__defaults__ = (_STATE_SAMPLING_MS,)
    result = None
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as exc:  # runners wrap worker errors; surface our input errors as such
        error = _input_error_in(exc)
        if error is not None:
            raise error from None
        raise
    finally:
        # The Dask runner opens a distributed.Client per run and never closes it.
        client = getattr(result, "client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


_INPUT_ERROR_RE = re.compile(r"LabelDPInputError: (.+)")


def _input_error_in(exc: BaseException) -> LabelDPInputError | None:
    seen = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, LabelDPInputError):
            return LabelDPInputError(str(current).split(" [while running")[0])
        current = current.__cause__ or current.__context__
    match = _INPUT_ERROR_RE.search(str(exc))
    if match:
        return LabelDPInputError(match.group(1).split(" [while running")[0].strip())
    return None


@contextlib.contextmanager
def _cleanup_empty_parents(paths: list[Path], stop: Path):
    """Removes directories created for outputs that never appeared, so a failed run writes nothing."""
    existed = {}
    for path in paths:
        parent = path.parent
        while parent != stop and parent != parent.parent:
            existed.setdefault(parent, parent.exists())
            parent = parent.parent
    try:
        yield
    except BaseException:
        for parent in sorted(existed, key=lambda p: len(p.parts), reverse=True):
            if not existed[parent]:
                with contextlib.suppress(OSError):
                    parent.rmdir()
        raise


# ------------------------------------------------------------------------------------------ the job


def score_day(request: ScoringRequest, beam_args: Sequence[str] = (), progress: Progress = no_progress,
              worker_progress: bool = False, prepared: PreparedScoring | None = None) -> ScoringOutcome:
    """Runs the scoring job for ``request`` and writes ``sweeps/<model>/date=D/<scoring key>/`` (``counts.npz``:
    the game's claim-free output, `auditing.game.counts.GameCounts`; ``result.json``: the lineage, the diagnostics
    and the audit at the request's bound settings; the key: `pipelines.scoring.beam_request.scoring_key`), and with
    ``write_scored`` ``scored/<model>/date=D/<scoring key>/``,
    each atomically. Input errors (missing partition or model, feature schema mismatch) raise
    `LabelDPInputError` before any work and write nothing. prepared: the request's checked inputs and key
    (`pipelines.scoring.beam_request.prepare_scoring`), when the caller already has them."""
    started = time.monotonic()
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    timings = {}
    beam_args = list(beam_args)
    runner = runner_from(beam_args) or FN_API_RUNNER
    prepared = prepared or prepare_scoring(request, beam_args, progress)
    dataset, lineage, key = prepared.dataset, prepared.lineage, prepared.key
    target_md, tasks, total_rows = prepared.target.meta, prepared.tasks, prepared.total_rows
    selection, check_rows, row_groups = prepared.selection, prepared.check_rows, prepared.row_groups
    partition_fp = lineage.partition.fingerprint
    timings["checks_s"] = round(time.monotonic() - started, 3)

    if row_groups is not None and getattr(selection, "rows", None) == 0:
        return _nothing_left(request, key, row_groups, lineage, timings, started_at, progress)

    dask = is_dask_runner(runner)
    if dask:
        import pipelines.scoring.dask_fixes  # noqa: F401  (registers the Dask runner's fixed translations)
    plan_mode = plan_for(request.plan_mode, runner, total_rows)
    slices = None
    if request.slices:
        from pipelines.scoring.day_slices import SliceSteps, played_game, slicings_for

        slices = SliceSteps(slicings_for(request.slices, dataset),
                            GameSpec(played_game(request.game, request.game.night), request.bins,
                                     capacity_check=request.check_rows is not None))
        if plan_mode == "side-input" and not in_process(beam_args):
            plan_mode = "two-stage"  # the slices' steps follow one another: each is a pipeline over the predictions
    thread_count = request.thread_count or ((os.cpu_count() or 1) if in_process(beam_args) else 1)
    shards = request.combine_shards or 1  # on Dask without shards, pass 1 is lifted by hand (`_Job.lifted`)
    spec = GameSpec(request.game, request.bins, capacity_check=request.check_rows is not None)
    out_final = sweep_dir(request.data_root, request.model, request.date, key)
    scored_final = scored_dir(request.data_root, request.model, request.date, key)
    outputs = [out_final] + ([scored_final] if request.write_scored else [])
    progress(f"{total_rows} rows of dataset {dataset.name} in {len(tasks)} row group(s); target "
             f"{prepared.target.format.name}, reference {prepared.reference.format.name}; runner {runner}, plan "
             f"{plan_mode}, batch {request.batch_size} rows, threads {thread_count}, R = {request.game.repetitions}")

    with _cleanup_empty_parents(outputs, Path(request.data_root)), contextlib.ExitStack() as stack:
        # the sweep and the scored rows are published as one pair (one journal): never one without the other
        out_tmp, *scored = stack.enter_context(atomic_directories(*outputs))
        scored_tmp = scored[0] if scored else None
        work = out_tmp / "_work"
        work.mkdir()
        stack.callback(drop_prefetched, str(work))
        job = _Job(request, prepared.target, prepared.reference, spec, tasks, total_rows, beam_args, plan_mode,
                   thread_count, shards, work, scored_tmp, progress, worker_progress, selection, check_rows, dataset,
                   lifted=dask and not request.combine_shards, slices=slices)
        t0 = time.monotonic()
        if plan_mode == "side-input":
            progress("pipeline: inference, pass 1 (histograms) and pass 2 (boundary rows) in one run")
            held = _single_pipeline(job)
            timings["pipeline_s"] = round(time.monotonic() - t0, 3)
            check_duplicates(work, partition_listing(request.data_root, request.date).directory, dataset.row_key)
            pass1 = Pass1Accumulator.load(work / "pass1.npz") if held is None else held.pass1
            plan = make_plan(pass1, spec)
            if held is not None:  # an in-process runner: pass 2 here, on the batches the pipeline held
                t1 = time.monotonic()
                slot_counts, slot_rows = count_batches([batch.audited() for batch in held.batches], spec, plan)
                if slices is not None:
                    from pipelines.scoring.day_slices import count_held_slices

                    count_held_slices(held.batches, slices)
                del held
                timings["pass2_s"] = round(time.monotonic() - t1, 3)
            else:
                slot_counts, slot_rows = read_slot_counts(work)
        else:
            progress("pipeline 1: inference and pass 1 (histograms)")
            _two_stage_first(job)
            timings["pipeline1_s"] = round(time.monotonic() - t0, 3)
            check_row_id_files(work / "row_ids", partition_listing(request.data_root, request.date).directory,
                               dataset.row_key)
            t1 = time.monotonic()
            pass1 = Pass1Accumulator.load(work / "pass1.npz")
            plan = make_plan(pass1, spec)
            progress(f"plan: {plan.m} rows audited, {plan.boundary_rows} boundary rows to bring back")
            _two_stage_second(job, plan)
            timings["pipeline2_s"] = round(time.monotonic() - t1, 3)
            if slices is not None:
                t2 = time.monotonic()
                _slice_pipelines(job)
                timings["slices_s"] = round(time.monotonic() - t2, 3)
            slot_counts, slot_rows = read_slot_counts(work)
        counts, split = sweep_counts(plan, spec, slot_counts)
        # Repetition 0's |score| histogram (slot 0 of pass 1) for the report's score panel, its attack curve
        # (pass 1's signed counts; the same record as run_audit's), and for controls the game's expected correct
        # guesses over repetition 0's grid (auditing.verdict.controls).
        histogram = coarsen(pass1.rows[0], pass1.correct[0], request.bins)
        attack = attack_curve_from_outcomes(pass1.signed, seed=request.game.draw_seed)
        expected = None
        if request.expected_curve:
            with np.load(work / "expected.npz") as data:
                expected = expected_record(data["rows"], data["correct"], request.game.grid_for(plan.m))
        game = GameCounts(game=request.game, counts=counts, halves=split, score_histogram=histogram,
                          prior_histogram=pass1.prior_histogram(), expected_correct=expected,
                          check=_check_histograms(pass1, spec, dataset.classes), row_groups=row_groups,
                          attack_curve=attack)
        result = audit_counts(game, request.bound)
        slice_counts = None
        if slices is not None:  # counted by the job's passes (`pipelines.scoring.day_slices`), bounded here
            from auditing.slices import bound_slices

            slice_counts = slices.counts()
            result = replace(result, slices=bound_slices(slice_counts, request.bound, request.slice_budget))
        shutil.rmtree(work)
        timings["total_s"] = round(time.monotonic() - started, 3)
        diagnostics = {
            "rows": encode(plan.issues), "m": plan.m, "plan_mode": plan_mode, "batch_size": request.batch_size,
            "catboost_thread_count": thread_count, "combine_shards": shards, "bins": asdict(request.bins),
            "histogram_bins": request.bins.num_bins, "slots": len(spec.slots),
            "boundary_rows": plan.boundary_rows, "boundary_rows_received": int(sum(slot_rows.values())),
            "audited_rows": _audited_rows(request.game.audit_rows, selection, total_rows, plan.issues, target_md,
                                          partition_fp),
            "check_rows": None if check_rows is None else {
                **check_rows.describe(), "read": plan.issues.check_rows_read,
                "scored": plan.issues.check_rows_scored},
        }
        record = JobRecord(encode(result), flat_settings(request.game, request.bound), key, lineage, diagnostics, timings, started_at,
                           finished_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                           scored_rows=str(scored_final) if request.write_scored else None)
        game.save(out_tmp)
        if slice_counts is not None:  # bounded again from here at other bound settings (reused_record, rejudge)
            slice_counts.save(out_tmp)
        write_result(out_tmp, record)
    rows = plan.issues
    missing = rows.rows_without_target_prediction + rows.rows_without_reference_prediction
    progress(f"done: eps_lb {result.epsilon_lower_bound:.4g} over m = {plan.m} rows ({rows.rows_read} read, "
             f"{rows.rows_without_row_id} without row_id, {rows.rows_bad_target_probabilities} / "
             f"{rows.rows_bad_reference_probabilities} with bad target / reference probabilities"
             + (f", of which {rows.rows_without_target_prediction} / "
                f"{rows.rows_without_reference_prediction} without a prediction" if missing else "")
             + f"); wrote {out_final}")
    return ScoringOutcome(result, game, out_final, scored_final if request.write_scored else None, record)


def _nothing_left(request: ScoringRequest, key: str, row_groups, lineage: JobLineage, timings: dict,
                  started_at: str, progress: Progress) -> ScoringOutcome:
    """Every audited row shares a group with another row: nothing to play the game on. The result says so (m = 0,
    INCONCLUSIVE for any claim; `auditing.audit.no_rows_result`) and is written like any other."""
    from auditing.game.row_groups import NO_ROWS_LEFT

    reps = request.game.repetitions
    counts = SweepCounts(m=0, guesses=np.zeros((reps, 0), np.int64), correct=np.zeros((reps, 0), np.int64))
    game = GameCounts(game=request.game, counts=counts, row_groups=row_groups,
                      inconclusive_reason=NO_ROWS_LEFT)
    result = audit_counts(game, request.bound)
    out_final = sweep_dir(request.data_root, request.model, request.date, key)
    record = JobRecord(encode(result), flat_settings(request.game, request.bound), key, lineage,
                       {"m": 0, "row_groups": encode(row_groups)}, timings, started_at,
                       finished_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    with atomic_directory(out_final) as out_tmp:
        game.save(out_tmp)
        write_result(out_tmp, record)
    progress(f"done: {NO_ROWS_LEFT} ({row_groups.rows_excluded} row(s) left out); wrote {out_final}")
    return ScoringOutcome(result, game, out_final, None, record)


def _check_histograms(pass1: Pass1Accumulator, spec: GameSpec, classes: int):
    """The capacity check's histograms (empty ones when the job read no check row), or None without a check."""
    if not spec.capacity_check:
        return None
    from auditing.game.check_histograms import CheckHistograms

    return pass1.checks if pass1.checks is not None else CheckHistograms.empty(classes, spec.game.draw_seed)


def _audited_rows(audit_rows: str, selection, total_rows: int, issues: RowCounts, target_md: ModelMetadata,
                  partition_fp: str) -> dict:
    """Which rows the game saw (result.json diagnostics). With ``training`` on the partition the model was
    trained on, the rows read must be exactly the rows whose labels training read (registry metadata)."""
    out = {"audit_rows": audit_rows, "partition_rows": int(total_rows),
           "rows_not_audited": int(total_rows - issues.rows_read)}
    if selection is not None:
        out.update(selection.describe())
        same_partition = target_md.partition_fingerprint == partition_fp
        if same_partition and selection.rows is not None and issues.rows_read != selection.rows:
            raise RuntimeError(f"audit_rows training: read {issues.rows_read} rows but model "
                               f"{selection.model!r} records {selection.rows} training rows on this partition")
    return out


__all__ = ["score_day"]
