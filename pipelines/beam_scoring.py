"""The Beam scoring job: one day's partition, a target and a reference model, R repetitions of the game,
reduced to the exact per-repetition sweep counts of the in-process audit (`auditing.audit.run_audit`).

Pipeline (every element is an Arrow batch or a small per-slot object, never a row):

    row groups [--Reshuffle, on multi-worker runners] --read--> Arrow batches
    Arrow batches --RunInference(target)--> --RunInference(reference)--> scored batches
    scored batches --CombinePerKey/CombineGlobally(pass 1: play_repetition, |score|-bin histograms)--> pass1
    scored batches --ParDo(pass 2, pass1 as side input: replay rows near cut bins)--> boundary rows
    boundary rows --GroupByKey(slot)--> ParDo(exact counts) --> per-slot counts
    pass1 + per-slot counts --Flatten--> ParDo(write result files)

Pass 1's compiled kernel releases the GIL and runs on a background thread (one core, `Pass1Accumulator`), so on
a single-process runner it overlaps the single-threaded Python work of the next batch (Parquet reading, the
CatBoost frame and Pool); the CombineFn reads its accumulator only after the kernels finished (``compact``,
``extract_output``, merges and pickling wait for them), and the histograms are integer sums, so the result is
the same whenever the kernels run.

The reduction is exact (`auditing.sweep_reduce`): pass 1 histograms |score| in order-preserving bins, the
plan derived from them says which bins each grid point cuts, and pass 2 brings back only those bins' rows,
which `exact_counts` ranks with `auditing.sweep.rank_order` itself. Memory is O(bins x R) for the histograms
plus the boundary rows (reported as ``boundary_rows``), independent of the partition's size otherwise.
The counts then go to `auditing.audit.audit_from_counts`, which gives the same `AuditResult` as in-process.

Plan modes:
- ``side-input``: one pipeline; pass 2 reads the merged histograms as a singleton side input.
- ``two-stage``: pipeline 1 writes the scored batches (row_id, label, both models' probabilities; ~33 bytes
  a row) and the histograms to a work directory; the driver derives the plan (O(bins x R)) and pipeline 2
  reads the scored batches back and runs pass 2 with the plan as a DoFn argument.
- ``auto``: two-stage on the Dask runner, side-input elsewhere.

Beam's Dask runner (apache-beam 2.77) needs three workarounds, all found by running small pipelines on a
LocalCluster and reading apache_beam/runners/dask/ (documented in infra/README.md, "Beam runners"):
1. Side inputs are not wired into the Dask graph: `DaskBagWindowedIterator` computes the side input's bag
   inside each consuming task (the upstream ran twice in a probe), and that nested computation runs the
   ParDo translation's shared output receiver in one process, so outputs of earlier partitions were
   appended again (a probe's CombineGlobally(sum) side input read 81480 instead of 44850). Hence the
   two-stage plan.
2. Outputs emitted from ``finish_bundle`` are dropped (`apply_dofn_to_bundle` collects the outputs before
   calling it). `BatchElements` emits its last buffered batch there, so RunInference's batching would lose
   rows: the handlers run ``with_no_batching()`` on batches we build ourselves (Arrow batches of
   ``batch_size`` rows), and no DoFn of ours outputs from ``finish_bundle``.
3. Only the last transform's bag is computed (`DaskRunner.run_pipeline`), so each pipeline ends in exactly
   one sink that every branch is flattened into; and ``Create`` puts up to 128 elements in one Dask
   partition, so ``--dask_npartitions`` defaults to the number of read tasks (else one worker does all).
4. Not a Beam bug but a 5x slowdown of the game on Dask workers: the nanny starts workers with
   MALLOC_TRIM_THRESHOLD_=65536 (``distributed.nanny.pre-spawn-environ``), and setting any glibc malloc
   threshold turns off glibc's dynamic mmap threshold, so every array above 128 KiB is a fresh mmap (page
   faults on each allocation). `_tune_allocator` sets M_MMAP_THRESHOLD back to 32 MiB (the ceiling glibc's
   dynamic threshold would reach anyway) in such worker processes, unless MALLOC_MMAP_THRESHOLD_ is set.
Without combiner lifting on Dask, pass 1 is keyed by a shard of the batch id (``combine_shards``) so the
game runs in parallel before one final merge.

`exact_counts` checks every cut bin's rows against the histogram, so rows lost or duplicated between the
passes by any runner raise instead of giving a wrong count.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditing.audit import AuditConfig, AuditResult, audit_from_counts
from auditing.controls import expected_histogram, expected_record
from auditing.errors import LabelDPInputError
from auditing.score_histogram import coarsen
from auditing.sweep_reduce import BinSpec
from pipelines import registry, schema
from pipelines.audit_rows import row_selection
from pipelines.layout import atomic_directory, check_name, model_dir, partition_dir, require_date
from pipelines.progress import Progress, no_progress
from pipelines.scoring_batches import (
    GameSpec,
    Pass1Accumulator,
    ReadTask,
    ScoredBatch,
    SweepPlan,
    batch_from_predictions,
    boundary_rows,
    duplicate_row_ids,
    finish_counts,
    make_plan,
    partition_files,
    partition_schema,
    predictions_table,
    read_batches,
    read_tasks,
    row_id_buckets,
    scored_batch,
    scored_rows_table,
    sweep_counts,
)

FN_API_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
PLAN_MODES = ("auto", "side-input", "two-stage")
# Rows per batch: frame conversion + CatBoost Pool cost ~2x less per row at 262,144 than at 65,536 (fewer
# repeated categories per row; benchmarks/results/beam_scoring.md), and memory stays well under the target.
DEFAULT_BATCH_SIZE = 262_144
ROW_ID_BUCKETS = 16
SWEEPS = "sweeps"
SCORED = "scored"
COUNTS_FILE = "counts.npz"
RESULT_FILE = "result.json"

# ------------------------------------------------------------------------------------------ request


@dataclass(frozen=True)
class ScoringRequest:
    """What to score and how. ``reference=None`` picks the default reference (`resolve_reference`).

    ``date`` and ``reference_date`` are ``datetime.date`` values parsed at the edge (the command line, the
    flow); a string is refused with a ``TypeError`` (``auditing.names.require_date``). They pickle as they are
    for Beam workers and are written as ``YYYY-MM-DD`` in ``result.json``.
    """

    data_root: str
    date: dt.date
    model: str
    config: AuditConfig = field(default_factory=AuditConfig)
    reference: str | None = None
    reference_date: dt.date | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    thread_count: int | None = None  # CatBoost threads per predict call; None: cores for an in-process runner, else 1
    bins: BinSpec = field(default_factory=BinSpec)
    plan_mode: str = "auto"
    combine_shards: int | None = None  # None: 1, or the Dask partitions on the Dask runner
    write_scored: bool = False
    expected_curve: bool = False  # also the game's expected correct guesses (controls; auditing.controls)

    def __post_init__(self):
        require_date(self.date, "date")
        check_name(self.model, "--model")
        if self.reference is not None:
            check_name(self.reference, "--reference")
        if self.reference_date is not None:
            require_date(self.reference_date, "reference_date")
        for name, low in (("batch_size", 1), ("thread_count", 1), ("combine_shards", 1)):
            value = getattr(self, name)
            if value is None and name != "batch_size":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LabelDPInputError(f"{name.replace('_', '-')} must be a whole number >= {low}; got {value!r}")
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


def _runner_from(beam_args: Sequence[str]) -> str | None:
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


def pipeline_args(beam_args: Sequence[str], partitions: int) -> list[str]:
    """The Beam arguments with our defaults: FnApiRunner named explicitly (the DirectRunner first tries to
    download the Prism binary), and, on the Dask runner, one Dask partition per work item (capped)."""
    args = list(beam_args)
    runner = _runner_from(args)
    if runner is None:
        args.append(f"--runner={FN_API_RUNNER}")
    elif is_dask_runner(runner) and not _has_flag(args, "--dask_npartitions", "--dask_partition_size"):
        args.append(f"--dask_npartitions={max(1, min(int(partitions), 256))}")
    return args


def _in_process(beam_args: Sequence[str]) -> bool:
    runner = _runner_from(beam_args)
    local = runner is None or runner.rsplit(".", 1)[-1] in ("FnApiRunner", "DirectRunner")
    return local and not _has_flag(beam_args, "--direct_num_workers")


# ------------------------------------------------------------------------------------------ DoFns

_ALLOCATOR_TUNED = False
_M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
_MMAP_THRESHOLD_BYTES = 32 << 20


def _tune_allocator() -> None:
    """Once per process: undo the side effect of a fixed MALLOC_TRIM_THRESHOLD_ (Dask workers) on numpy's
    large temporaries (module docstring, workaround 4). A no-op elsewhere."""
    global _ALLOCATOR_TUNED
    if _ALLOCATOR_TUNED:
        return
    _ALLOCATOR_TUNED = True
    if (not sys.platform.startswith("linux") or "MALLOC_TRIM_THRESHOLD_" not in os.environ
            or "MALLOC_MMAP_THRESHOLD_" in os.environ):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)



def _beam():
    import apache_beam as beam

    return beam


def _merge_pass1(accumulators):
    """Folds pass-1 accumulators into the first one (histograms add)."""
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for other in accumulators:
        merged.merge(other)
    return merged


def _dofns():
    """The DoFn and CombineFn classes (built on first use so that importing this module does not import Beam)."""
    global _DOFNS
    if _DOFNS is not None:
        return _DOFNS
    beam = _beam()
    from pipelines.beam_coders import BatchCoder

    class ReadBatches(beam.DoFn):
        """A row group -> (batch id, validated Arrow table) per batch."""

        def __init__(self, batch_size: int, selection=None):
            self._batch_size, self._selection = batch_size, selection

        def process(self, task: ReadTask):
            _tune_allocator()
            yield from read_batches(task, self._batch_size, self._selection)

    class PassProgress(beam.DoFn):
        """Progress lines on stderr (the driver's console on FnApiRunner, the worker logs elsewhere)."""

        def __init__(self, label: str, total_rows: int, enabled: bool):
            self._label, self._total, self._enabled = label, total_rows, enabled

        def setup(self):
            self._rows, self._batches, self._last = 0, 0, 0.0

        def process(self, batch: ScoredBatch):
            if self._enabled:
                self._rows += int(batch.issues.get("rows_read", batch.rows))
                self._batches += 1
                now = time.monotonic()
                if now - self._last > 2.0 or self._rows >= self._total:
                    self._last = now
                    print(f"[score pid {os.getpid()}] {self._label}: {self._batches} batches, {self._rows} of "
                          f"{self._total} rows", file=sys.stderr, flush=True)
            yield batch

    class Pass1CombineFn(beam.CombineFn):
        """Plays every repetition on each batch and adds it to the per-slot |score|-bin histograms."""

        def __init__(self, spec: GameSpec):
            self._spec = spec

        def create_accumulator(self):
            return Pass1Accumulator()

        def add_input(self, accumulator, batch):
            _tune_allocator()
            # The kernel plays in the background while this thread goes on with the next batch's reading,
            # frame and Pool (single-threaded Python); every reader of the accumulator waits for it.
            return accumulator.add_batch(batch, self._spec, background=True)

        def compact(self, accumulator):
            return accumulator.settle()

        def merge_accumulators(self, accumulators):
            return _merge_pass1(accumulators)

        def extract_output(self, accumulator):
            return accumulator.settle()

        def get_accumulator_coder(self):
            return BatchCoder()

    class MergePass1Fn(beam.CombineFn):
        """Merges the per-shard pass-1 accumulators into one."""

        def create_accumulator(self):
            return Pass1Accumulator()

        def add_input(self, accumulator, other):
            return accumulator.merge(other)

        def merge_accumulators(self, accumulators):
            return _merge_pass1(accumulators)

        def extract_output(self, accumulator):
            return accumulator

        def get_accumulator_coder(self):
            return BatchCoder()

    class ExpectedHistogramFn(beam.CombineFn):
        """The game's expected |score| histogram (`auditing.controls.expected_histogram`), added over batches."""

        def __init__(self, spec: GameSpec):
            self._spec = spec

        def create_accumulator(self):
            return None

        def add_input(self, accumulator, batch):
            if batch.rows == 0:
                return accumulator
            rows, hits = expected_histogram(batch.p_target, batch.p_reference, batch.labels, self._spec.score(),
                                            self._spec.bins)
            return (rows, hits) if accumulator is None else (accumulator[0] + rows, accumulator[1] + hits)

        def merge_accumulators(self, accumulators):
            merged = None
            for acc in accumulators:
                if acc is not None:
                    merged = acc if merged is None else (merged[0] + acc[0], merged[1] + acc[1])
            return merged

        def extract_output(self, accumulator):
            return accumulator

    class _PlanUser(beam.DoFn):
        def __init__(self, spec: GameSpec, plan: SweepPlan | None = None):
            self._spec, self._plan = spec, plan
            self._cached = None

        def plan_for(self, pass1) -> SweepPlan:
            if self._plan is not None:
                return self._plan
            if self._cached is None or self._cached[0] is not pass1:
                self._cached = (pass1, make_plan(pass1, self._spec))
            return self._cached[1]

    class BoundaryRows(_PlanUser):
        """Pass 2: (slot, rows of this batch in the slot's cut bins)."""

        def process(self, batch: ScoredBatch, pass1=None):
            _tune_allocator()
            yield from boundary_rows(batch, self._spec, self.plan_for(pass1))

    class ExactCounts(_PlanUser):
        """(slot, chunks) -> ("counts", slot, exact counts, boundary rows)."""

        def process(self, element, pass1=None):
            slot, chunks = element
            chunks = list(chunks)
            counts = finish_counts(self.plan_for(pass1), slot, chunks)
            yield ("counts", int(slot), counts, int(sum(chunk.bins.size for chunk in chunks)))

    class WriteTable(beam.DoFn):
        """Writes one Parquet file per batch (named by the batch id, so a retried batch overwrites itself)."""

        def __init__(self, directory: str, make_table):
            self._directory, self._make_table = directory, make_table

        def process(self, batch: ScoredBatch):
            path = Path(self._directory) / f"part-{batch.batch_id}.parquet"
            pq.write_table(self._make_table(batch), path, compression=schema.PARQUET_COMPRESSION)
            yield ("file", str(path), batch.rows)

    class ReadPredictions(beam.DoFn):
        def process(self, path: str):
            yield batch_from_predictions(pq.read_table(path))

    class WriteResults(beam.DoFn):
        """The one sink: the pass-1 accumulator and each slot's counts become files in the work directory."""

        def __init__(self, directory: str):
            self._directory = directory

        def process(self, element):
            directory = Path(self._directory)
            if element[0] == "pass1":
                _atomic_save(directory / "pass1.npz", element[1].save)
            elif element[0] == "duplicates":
                _, bucket, count, example = element
                _atomic_save(directory / "duplicates" / f"bucket-{bucket:04d}.json",
                             lambda handle: handle.write(json.dumps([count, example]).encode()))
            elif element[0] == "expected":
                _, rows, hits = element
                _atomic_save(directory / "expected.npz", lambda path: np.savez(path, rows=rows, correct=hits))
            elif element[0] == "counts":
                _, slot, counts, rows = element
                _atomic_save(directory / "slots" / f"slot-{slot:06d}.npz",
                             lambda path: np.savez(path, counts=counts, boundary_rows=np.array(rows)))
            # ("file", ...) markers only make the sink depend on the file-writing branches.

    _DOFNS = {name: value for name, value in locals().items() if isinstance(value, type)}
    return _DOFNS


_DOFNS = None


def _atomic_save(path: Path, save) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    with open(tmp, "wb") as handle:
        save(handle)
    os.replace(tmp, path)


def _prepare(element):
    """(batch id, Arrow batch) -> [((batch id, row_id + label), CatBoost frame)]: the frame is built once for
    both models; the key carries what the game needs past inference (pre-batched for with_no_batching)."""
    from pipelines.catboost_handler import catboost_frame

    batch_id, table = element
    return [((batch_id, table.select([schema.ROW_ID, schema.LABEL])), catboost_frame(table))]


def _attach_target(element):
    (batch_id, rows), result = element
    return [((batch_id, rows, result.inference), result.example)]


def _oracle_input(element):
    """The RR-label oracle's example is the (row_id, label) table; the frame rides in the key to the reference."""
    [((batch_id, rows), frame)] = element
    return [(((batch_id, rows), frame), rows)]


def _attach_oracle(element):
    ((batch_id, rows), frame), result = element
    return [((batch_id, rows, result.inference), frame)]


def _to_scored(element) -> ScoredBatch:
    (batch_id, rows, p_target), result = element
    return scored_batch(batch_id, rows, p_target, result.inference)


def _shard(batch: ScoredBatch, shards: int) -> tuple[int, ScoredBatch]:
    return zlib.crc32(batch.batch_id.encode()) % shards, batch


# ------------------------------------------------------------------------------------------ pipelines


@dataclass
class _Job:
    request: ScoringRequest
    reference: tuple[str, str]
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
    selection: object = None  # pipelines.audit_rows.RowSelection, or None for every row
    target_is_oracle: bool = False  # the positive control's RR-label oracle (pipelines.controls)


def _scored_batches(pipeline, job: _Job):
    beam = _beam()
    from apache_beam.ml.inference.base import KeyedModelHandler, RunInference

    from pipelines.beam_coders import BATCH, typed
    from pipelines.catboost_handler import CatBoostModelHandler

    request = job.request

    def handler(name: str, date: dt.date):
        base = CatBoostModelHandler(request.data_root, name, date, thread_count=job.thread_count)
        return KeyedModelHandler(base).with_no_batching()

    dofns = _dofns()
    # Every per-batch PCollection is typed BATCH so that Beam's size sampling does not pickle it (beam_coders).
    tasks = pipeline | "RowGroups" >> beam.Create(job.tasks)
    if not _in_process(job.beam_args):  # spread the row groups over workers (one process has nothing to spread)
        tasks = tasks | "Spread" >> beam.Reshuffle()
    batches = typed(tasks | "ReadBatches" >> beam.ParDo(dofns["ReadBatches"](request.batch_size, job.selection)),
                    BATCH)
    features = typed(batches | "Features" >> beam.Map(_prepare), BATCH)
    if job.target_is_oracle:
        from pipelines.rr_oracle_handler import RROracleModelHandler

        oracle = KeyedModelHandler(RROracleModelHandler(request.data_root, request.model, request.date))
        oracle_input = typed(features | "OracleInput" >> beam.Map(_oracle_input), BATCH)
        inferred = typed(oracle_input | "Target" >> RunInference(oracle.with_no_batching()), BATCH)
        targeted = typed(inferred | "AttachTarget" >> beam.Map(_attach_oracle), BATCH)
    else:
        inferred = typed(features | "Target" >> RunInference(handler(request.model, request.date)), BATCH)
        targeted = typed(inferred | "AttachTarget" >> beam.Map(_attach_target), BATCH)
    referenced = typed(targeted | "Reference" >> RunInference(handler(*job.reference)), BATCH)
    scored = typed(referenced | "Scored" >> beam.Map(_to_scored), BATCH)
    return typed(scored | "Progress" >> beam.ParDo(dofns["PassProgress"]("scored", job.total_rows,
                                                                          job.show_worker_progress)), BATCH)


def _pass1(scored, job: _Job):
    beam = _beam()
    dofns = _dofns()
    from pipelines.beam_coders import BATCH, keyed, typed

    if job.shards == 1:  # combiner lifting (FnApiRunner, Dataflow) already plays the batches where they are
        return typed(scored | "Pass1" >> beam.CombineGlobally(dofns["Pass1CombineFn"](job.spec)).without_defaults(),
                     BATCH)
    sharded = typed(scored | "Shard" >> beam.Map(_shard, job.shards), keyed(int))
    per_shard = typed(sharded | "Pass1PerShard" >> beam.CombinePerKey(dofns["Pass1CombineFn"](job.spec)), keyed(int))
    values = typed(per_shard | "DropShard" >> beam.Values(), BATCH)
    return typed(values | "Pass1Merge" >> beam.CombineGlobally(dofns["MergePass1Fn"]()).without_defaults(), BATCH)


def _expected(scored, job: _Job) -> list:
    """With ``expected_curve``: [("expected", rows, correct)], the game's expected |score| histogram."""
    if not job.request.expected_curve:
        return []
    beam = _beam()
    return [scored
            | "ExpectedHistogram" >> beam.CombineGlobally(_dofns()["ExpectedHistogramFn"](job.spec)).without_defaults()
            | "TagExpected" >> beam.Map(lambda acc: ("expected", acc[0], acc[1]))]


def _duplicates(scored):
    """The row-id uniqueness check: ("duplicates", bucket, count, example) per hash bucket of row ids."""
    beam = _beam()
    return (
        scored
        | "RowIdBuckets" >> beam.FlatMap(row_id_buckets, ROW_ID_BUCKETS)
        | "GroupRowIds" >> beam.GroupByKey()
        | "DuplicateRowIds" >> beam.MapTuple(lambda bucket, chunks: ("duplicates", bucket, *duplicate_row_ids(chunks)))
    )


def _check_duplicates(work_dir: Path, root, date) -> None:
    total, example = 0, None
    for path in sorted((work_dir / "duplicates").glob("bucket-*.json")):
        count, some = json.loads(path.read_text())
        total += count
        example = example if example is not None else some
    if total:
        raise LabelDPInputError(f"{partition_dir(root, date)}: column 'row_id': {total} duplicate value(s) "
                                f"(e.g. {example}); each row needs its own identity (it keys the game's randomness)")


def _options(args: list[str]):
    from apache_beam.options.pipeline_options import PipelineOptions

    return PipelineOptions(args)


def _run(pipeline) -> None:
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


def _single_pipeline(job: _Job) -> None:
    beam = _beam()
    dofns = _dofns()
    from pipelines.beam_coders import BATCH, keyed, typed

    with_pipeline = beam.Pipeline(options=_options(pipeline_args(job.beam_args, len(job.tasks))))
    scored = _scored_batches(with_pipeline, job)
    pass1 = _pass1(scored, job)
    side = beam.pvalue.AsSingleton(pass1)
    chunks = typed(scored | "BoundaryRows" >> beam.ParDo(dofns["BoundaryRows"](job.spec), side), keyed(int))
    counts = (
        chunks
        | "GroupBySlot" >> beam.GroupByKey()
        | "ExactCounts" >> beam.ParDo(dofns["ExactCounts"](job.spec), side)
    )
    outputs = [typed(pass1 | "TagPass1" >> beam.Map(lambda acc: ("pass1", acc)), BATCH), counts, _duplicates(scored),
               *_expected(scored, job)]
    if job.scored_dir is not None:
        outputs.append(scored | "WriteScored" >> beam.ParDo(
            dofns["WriteTable"](str(job.scored_dir), _ScoredRows(job.spec))))
    merged = typed(outputs | "AllOutputs" >> beam.Flatten(), BATCH)
    _ = merged | "WriteResults" >> beam.ParDo(dofns["WriteResults"](str(job.work_dir)))
    _run(with_pipeline)


class _ScoredRows:
    """Picklable callable: the ``--write-scored`` table of a batch."""

    def __init__(self, spec: GameSpec):
        self._spec = spec

    def __call__(self, batch: ScoredBatch) -> pa.Table:
        return scored_rows_table(batch, self._spec)


def _two_stage_first(job: _Job) -> None:
    beam = _beam()
    dofns = _dofns()
    from pipelines.beam_coders import BATCH, typed

    pipeline = beam.Pipeline(options=_options(pipeline_args(job.beam_args, len(job.tasks))))
    scored = _scored_batches(pipeline, job)
    pass1 = _pass1(scored, job)
    predictions = job.work_dir / "predictions"
    predictions.mkdir(parents=True, exist_ok=True)
    outputs = [typed(pass1 | "TagPass1" >> beam.Map(lambda acc: ("pass1", acc)), BATCH), _duplicates(scored), *_expected(scored, job),
               scored | "WritePredictions" >> beam.ParDo(dofns["WriteTable"](str(predictions), predictions_table))]
    if job.scored_dir is not None:
        outputs.append(scored | "WriteScored" >> beam.ParDo(
            dofns["WriteTable"](str(job.scored_dir), _ScoredRows(job.spec))))
    merged = typed(outputs | "AllOutputs" >> beam.Flatten(), BATCH)
    _ = merged | "WriteResults" >> beam.ParDo(dofns["WriteResults"](str(job.work_dir)))
    _run(pipeline)


def _two_stage_second(job: _Job, plan: SweepPlan) -> None:
    beam = _beam()
    dofns = _dofns()
    files = sorted(str(path) for path in (job.work_dir / "predictions").glob("part-*.parquet"))
    if not files:
        return
    pipeline = beam.Pipeline(options=_options(pipeline_args(job.beam_args, len(files))))
    from pipelines.beam_coders import BATCH, keyed, typed

    scored = typed(pipeline
                   | "ScoredFiles" >> beam.Create(files)
                   | "Spread" >> beam.Reshuffle()
                   | "ReadScored" >> beam.ParDo(dofns["ReadPredictions"]()), BATCH)
    chunks = typed(scored | "BoundaryRows" >> beam.ParDo(dofns["BoundaryRows"](job.spec, plan)), keyed(int))
    _ = (
        chunks
        | "GroupBySlot" >> beam.GroupByKey()
        | "ExactCounts" >> beam.ParDo(dofns["ExactCounts"](job.spec, plan))
        | "WriteResults" >> beam.ParDo(dofns["WriteResults"](str(job.work_dir)))
    )
    _run(pipeline)


def _read_slot_counts(work_dir: Path) -> tuple[dict[int, np.ndarray], dict[int, int]]:
    counts, rows = {}, {}
    for path in sorted((work_dir / "slots").glob("slot-*.npz")):
        slot = int(path.stem.split("-")[1])
        with np.load(path) as data:
            counts[slot] = data["counts"]
            rows[slot] = int(data["boundary_rows"])
    return counts, rows


# ------------------------------------------------------------------------------------------ the job


@dataclass
class ScoringOutcome:
    """What `score_day` produced: the audit result, its counts and where they were written."""

    result: AuditResult
    counts: object  # auditing.sweep.SweepCounts
    split_counts: tuple | None
    output_dir: Path
    scored_dir: Path | None
    record: dict  # result.json


def _json_safe(value):
    """Strict-JSON copy: inf -> "inf", NaN -> None, numpy scalars/arrays -> Python, paths -> str."""
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Path):
        return str(value)
    return value


def file_fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _model_lineage(root, name: str, date: dt.date, metadata: dict) -> dict:
    directory = model_dir(root, name, date)
    return {"name": name, "date": date.isoformat(), "uri": str(directory.resolve()),
            "fingerprint": file_fingerprint(registry.model_path(root, name, date)),
            "mechanism": metadata.get("mechanism", {}).get("name"),
            "claimed_epsilon": metadata.get("mechanism", {}).get("epsilon"),
            "partition_fingerprint": metadata.get("partition_fingerprint")}


def check_inputs(request: ScoringRequest, reference: tuple[str, dt.date]):
    """Everything that can be checked before any work: partition files and schema, both models' presence and
    feature schemas. Returns (files, partition schema, target metadata, reference metadata)."""
    files = partition_files(request.data_root, request.date)
    table_schema = partition_schema(files)
    target_md = registry.read_metadata(request.data_root, request.model, request.date)
    reference_md = registry.read_metadata(request.data_root, *reference)
    for name, date in ((request.model, request.date), reference):
        path = registry.model_path(request.data_root, name, date)
        if not path.is_file():
            raise LabelDPInputError(f"{path}: missing; the model directory is incomplete")
    registry.check_features(target_md, table_schema)
    registry.check_features(reference_md, table_schema)
    return files, table_schema, target_md, reference_md


def sweep_dir(root, model: str, date: dt.date, config: AuditConfig) -> Path:
    return Path(root) / SWEEPS / check_name(model) / f"date={require_date(date).isoformat()}" / config.config_hash()


def scored_dir(root, model: str, date: dt.date, config: AuditConfig) -> Path:
    return Path(root) / SCORED / check_name(model) / f"date={require_date(date).isoformat()}" / config.config_hash()


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


def score_day(request: ScoringRequest, beam_args: Sequence[str] = (), progress: Progress = no_progress,
              worker_progress: bool = False) -> ScoringOutcome:
    """Runs the scoring job for ``request`` and writes ``sweeps/<model>/date=D/<config hash>/``
    (``counts.npz`` + ``result.json``), and with ``write_scored`` ``scored/<model>/date=D/<config hash>/``,
    each atomically. Input errors (missing partition or model, feature schema mismatch) raise
    `LabelDPInputError` before any work and write nothing."""
    started = time.monotonic()
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    timings = {}
    beam_args = list(beam_args)
    runner = _runner_from(beam_args) or FN_API_RUNNER
    reference = resolve_reference(request.data_root, request.model, request.date, request.reference,
                                  request.reference_date)
    progress(f"checking inputs: partition {request.date}, model {request.model}@{request.date}, "
             f"reference {reference[0]}@{reference[1]}")
    files, _table_schema, target_md, reference_md = check_inputs(request, reference)
    selection = row_selection(request.config.audit_rows, target_md)
    tasks = read_tasks(files)
    total_rows = sum(task.rows for task in tasks)
    partition_fp = schema.partition_fingerprint(request.data_root, request.date)
    lineage = {
        "model": _model_lineage(request.data_root, request.model, request.date, target_md),
        "reference": _model_lineage(request.data_root, *reference, reference_md),
        "partition": {"date": request.date.isoformat(), "fingerprint": partition_fp, "files": [p.name for p in files],
                      "rows": total_rows, "row_groups": len(tasks)},
        "runner": {"runner": runner, "beam_args": beam_args},
        "code_version": registry.code_version(),
    }
    timings["checks_s"] = round(time.monotonic() - started, 3)

    dask = is_dask_runner(runner)
    plan_mode = request.plan_mode if request.plan_mode != "auto" else ("two-stage" if dask else "side-input")
    thread_count = request.thread_count or ((os.cpu_count() or 1) if _in_process(beam_args) else 1)
    shards = request.combine_shards or (max(1, min(len(tasks), 256)) if dask else 1)
    spec = GameSpec(request.config, request.bins)
    out_final = sweep_dir(request.data_root, request.model, request.date, request.config)
    scored_final = scored_dir(request.data_root, request.model, request.date, request.config)
    outputs = [out_final] + ([scored_final] if request.write_scored else [])
    progress(f"{total_rows} rows in {len(tasks)} row group(s); runner {runner}, plan {plan_mode}, batch "
             f"{request.batch_size} rows, CatBoost threads {thread_count}, R = {request.config.repetitions}")

    with _cleanup_empty_parents(outputs, Path(request.data_root)), contextlib.ExitStack() as stack:
        out_tmp = stack.enter_context(atomic_directory(out_final))
        scored_tmp = stack.enter_context(atomic_directory(scored_final)) if request.write_scored else None
        work = out_tmp / "_work"
        work.mkdir()
        job = _Job(request, reference, spec, tasks, total_rows, beam_args, plan_mode, thread_count, shards,
                   work, scored_tmp, progress, worker_progress, selection,
                   target_is_oracle=target_md.get("model_type") == "rr-label-oracle")
        t0 = time.monotonic()
        if plan_mode == "side-input":
            progress("pipeline: inference, pass 1 (histograms) and pass 2 (boundary rows) in one run")
            _single_pipeline(job)
            timings["pipeline_s"] = round(time.monotonic() - t0, 3)
            _check_duplicates(work, request.data_root, request.date)
            pass1 = Pass1Accumulator.load(work / "pass1.npz")
            plan = make_plan(pass1, spec)
        else:
            progress("pipeline 1: inference and pass 1 (histograms)")
            _two_stage_first(job)
            timings["pipeline1_s"] = round(time.monotonic() - t0, 3)
            _check_duplicates(work, request.data_root, request.date)
            t1 = time.monotonic()
            pass1 = Pass1Accumulator.load(work / "pass1.npz")
            plan = make_plan(pass1, spec)
            progress(f"plan: {plan.m} rows audited, {plan.boundary_rows} boundary rows to bring back")
            _two_stage_second(job, plan)
            timings["pipeline2_s"] = round(time.monotonic() - t1, 3)
        slot_counts, slot_rows = _read_slot_counts(work)
        counts, split = sweep_counts(plan, spec, slot_counts)
        # Repetition 0's |score| histogram (slot 0 of pass 1) for the report's score panel, and for controls the
        # game's expected correct guesses over repetition 0's grid (auditing.controls).
        histogram = coarsen(pass1.rows[0], pass1.correct[0], request.bins)
        expected = None
        if request.expected_curve:
            with np.load(work / "expected.npz") as data:
                expected = expected_record(data["rows"], data["correct"], request.config.grid_for(plan.m))
        result = audit_from_counts(counts, request.config, split_counts=split, score_histogram=histogram,
                                   expected_correct=expected, prior_histogram=pass1.prior_histogram())
        shutil.rmtree(work)
        timings["total_s"] = round(time.monotonic() - started, 3)
        diagnostics = {
            "rows": dict(plan.issues), "m": plan.m, "plan_mode": plan_mode, "batch_size": request.batch_size,
            "catboost_thread_count": thread_count, "combine_shards": shards, "bins": asdict(request.bins),
            "histogram_bins": request.bins.num_bins, "slots": len(spec.slots),
            "boundary_rows": plan.boundary_rows, "boundary_rows_received": int(sum(slot_rows.values())),
            "audited_rows": _audited_rows(request.config.audit_rows, selection, total_rows, plan.issues, target_md,
                                          partition_fp),
        }
        record = {"result": result.to_dict(), "config": asdict(request.config), "lineage": lineage,
                  "diagnostics": diagnostics, "timings": timings, "started_at": started_at,
                  "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                  "scored_rows": str(scored_final) if request.write_scored else None}
        arrays = {"m": np.array(counts.m), "guesses": counts.guesses, "correct": counts.correct,
                  "score_histogram_rows": np.array(histogram["rows"]),
                  "score_histogram_correct": np.array(histogram["correct"])}
        if split is not None:
            for name, half in zip(("selection", "bound"), split, strict=True):
                arrays.update({f"{name}_m": np.array(half.m), f"{name}_guesses": half.guesses,
                               f"{name}_correct": half.correct})
        np.savez(out_tmp / COUNTS_FILE, **arrays)
        (out_tmp / RESULT_FILE).write_text(json.dumps(_json_safe(record), indent=2, sort_keys=True,
                                                      allow_nan=False) + "\n", encoding="utf-8")
    rows = plan.issues
    progress(f"done: eps_lb {result.epsilon_lower_bound:.4g} over m = {plan.m} rows ({rows['rows_read']} read, "
             f"{rows['rows_without_row_id']} without row_id, {rows['rows_bad_target_probabilities']} / "
             f"{rows['rows_bad_reference_probabilities']} with bad target / reference probabilities); wrote {out_final}")
    return ScoringOutcome(result, counts, split, out_final, scored_final if request.write_scored else None, record)


def _audited_rows(audit_rows: str, selection, total_rows: int, issues: dict, target_md: dict,
                  partition_fp: str) -> dict:
    """Which rows the game saw (result.json diagnostics). With ``training`` on the partition the model was
    trained on, the rows read must be exactly the rows whose labels training read (registry metadata)."""
    out = {"audit_rows": audit_rows, "partition_rows": int(total_rows),
           "rows_not_audited": int(total_rows - issues.get("rows_read", 0))}
    if selection is not None:
        out.update(selection.describe())
        same_partition = target_md.get("partition_fingerprint") == partition_fp
        if same_partition and selection.rows is not None and issues.get("rows_read") != selection.rows:
            raise RuntimeError(f"audit_rows training: read {issues.get('rows_read')} rows but model "
                               f"{selection.model!r} records {selection.rows} training rows on this partition")
    return out


def load_counts(directory: Path):
    """The `SweepCounts` (and split halves, if any) written by `score_day`."""
    from auditing.sweep import SweepCounts

    with np.load(Path(directory) / COUNTS_FILE) as data:
        counts = SweepCounts(m=int(data["m"]), guesses=data["guesses"], correct=data["correct"])
        split = None
        if "selection_m" in data:
            split = tuple(SweepCounts(m=int(data[f"{n}_m"]), guesses=data[f"{n}_guesses"],
                                      correct=data[f"{n}_correct"]) for n in ("selection", "bound"))
    return counts, split
