"""The Beam scoring job seen from outside, without Apache Beam: what to score (`ScoringRequest`), the reference
model it defaults to, the runner arguments, the input checks and fingerprints, and where and how the job's
outputs are written and read back.

The job itself is `pipelines.beam_scoring.score_day`. Importing this module does not import ``apache_beam``
(tests/test_beam_split.py checks it in a fresh interpreter), so the flows, the controls and the
recalibration can build requests, fingerprint models and find or read a job's outputs without loading Beam.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from auditing import hints
from auditing.audit import AuditConfig, AuditResult
from auditing.errors import LabelDPInputError
from auditing.sweep import SweepCounts
from auditing.sweep_reduce import BinSpec
from pipelines import registry
from pipelines.dataset_spec import DatasetSpec, criteo
from pipelines.layout import check_name, model_dir, require_date
from pipelines.model_formats import format_of
from pipelines.partition_batches import partition_files, partition_schema

FN_API_RUNNER = "apache_beam.runners.portability.fn_api_runner.FnApiRunner"
DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"
PLAN_MODES = ("auto", "side-input", "two-stage")
# Rows per batch: frame conversion + CatBoost Pool cost ~2x less per row at 262,144 than at 65,536 (fewer
# repeated categories per row; benchmarks/results/beam_scoring.md), and memory stays well under the target.
DEFAULT_BATCH_SIZE = 262_144
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
    # The capacity check's rows (a selection with ``mask(row_ids)`` and ``describe()``, e.g.
    # `pipelines.recalibration.CheckRowSelection`): read and scored too, and kept out of the game; None: no check.
    check_rows: object = None
    # The night's rows left out for sharing a group with another row (`pipelines.row_grouping.GroupExclusion`),
    # dropped from the audited and the check rows; None: no grouping applied.
    excluded_rows: object = None

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
    runner = runner_from(beam_args)
    local = runner is None or runner.rsplit(".", 1)[-1] in ("FnApiRunner", "DirectRunner")
    return local and not _has_flag(beam_args, "--direct_num_workers")


# ------------------------------------------------------------------------------------------ inputs


def file_fingerprint(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def model_lineage(root, name: str, date: dt.date, metadata: dict) -> dict:
    """A model's identity for ``result.json``: where it is, its file's fingerprint, its mechanism and claim."""
    directory = model_dir(root, name, date)
    return {"name": name, "date": date.isoformat(), "uri": str(directory.resolve()),
            "fingerprint": file_fingerprint(registry.model_path(root, name, date)),
            "format": format_of(metadata).name, "source": metadata.get("source", "trained"),
            "mechanism": metadata.get("mechanism", {}).get("name"),
            "claimed_epsilon": metadata.get("mechanism", {}).get("epsilon"),
            "partition_fingerprint": metadata.get("partition_fingerprint")}


def model_dataset_fingerprint(metadata: dict) -> str:
    """The fingerprint of the dataset a model reads (its metadata's ``dataset``; none recorded: Criteo)."""
    record = metadata.get("dataset")
    return record.get("fingerprint") if isinstance(record, dict) else criteo().fingerprint()


def check_model_for_day(metadata: dict, dataset: DatasetSpec, date: dt.date, role: str) -> None:
    """A model can score day ``date``'s rows: it reads this dataset, and a logged-predictions table holds
    predictions for exactly that day's rows (``predictions_for``)."""
    model = f"the {role} {metadata.get('model_name', '?')!r} of {metadata.get('date', '?')}"
    reads_features = bool(metadata.get("feature_schema")) or "dataset" in metadata  # the RR oracle reads none
    if reads_features and model_dataset_fingerprint(metadata) != dataset.fingerprint():
        found = (metadata.get("dataset") or {}).get("name", "criteo")
        name, day = metadata.get("model_name", "NAME"), metadata.get("date", "D")
        fix = (f"register its file again for that dataset with "
               f"{hints.REGISTER_FOR_DATASET.line(name=name, date=day)} (SPEC: the spec of {dataset.name!r})"
               if metadata.get("source") == "registered" else
               f"train it again on that partition ({hints.TRAIN_MODEL.line(name=name, date=day)})")
        raise LabelDPInputError(f"{model} reads dataset {found!r}, but the partition of {date.isoformat()} is "
                                f"dataset {dataset.name!r}; {fix}")
    scores = metadata.get("predictions_for")
    if scores is not None and scores != date.isoformat():
        raise LabelDPInputError(f"{model} is a table of predictions on the rows of {scores}, not of "
                                f"{date.isoformat()}: a predictions table answers only for the day it scored")


def check_inputs(request: ScoringRequest, reference: tuple[str, dt.date], dataset: DatasetSpec | None = None):
    """Everything that can be checked before any work: partition files and schema, both models' presence,
    dataset, day and feature schemas.

    Returns:
        (files, partition schema, target metadata, reference metadata).

    Raises:
        LabelDPInputError: a missing partition or model file, a model of another dataset or day, or a feature
            schema mismatch.
    """
    dataset = dataset or criteo()
    files = partition_files(request.data_root, request.date, dataset)
    table_schema = partition_schema(files, dataset)
    target_md = registry.read_metadata(request.data_root, request.model, request.date)
    reference_md = registry.read_metadata(request.data_root, *reference)
    for name, date in ((request.model, request.date), reference):
        path = registry.model_path(request.data_root, name, date)
        if not path.is_file():
            raise LabelDPInputError(f"{path}: missing; the model directory is incomplete")
    check_model_for_day(target_md, dataset, request.date, "target")
    check_model_for_day(reference_md, dataset, request.date, "reference")
    registry.check_features(target_md, table_schema)
    registry.check_features(reference_md, table_schema)
    reference_format = format_of(reference_md)
    if reference_format.scores_one_day:  # a table of predictions must answer every row of the day
        from pipelines.schema import read_partition

        keys = read_partition(request.data_root, request.date, columns=[dataset.row_key], dataset=dataset)
        reference_format.check_reference_coverage(request.data_root, *reference,
                                                  keys.column(dataset.row_key).to_numpy())
    return files, table_schema, target_md, reference_md


# ------------------------------------------------------------------------------------------ outputs


def sweep_dir(root, model: str, date: dt.date, config: AuditConfig) -> Path:
    """``sweeps/<model>/date=D/<config hash>/``: where the job writes ``counts.npz`` and ``result.json``."""
    return Path(root) / SWEEPS / check_name(model) / f"date={require_date(date).isoformat()}" / config.config_hash()


def scored_dir(root, model: str, date: dt.date, config: AuditConfig) -> Path:
    """``scored/<model>/date=D/<config hash>/``: the ``--write-scored`` rows."""
    return Path(root) / SCORED / check_name(model) / f"date={require_date(date).isoformat()}" / config.config_hash()


@dataclass
class ScoringOutcome:
    """What `pipelines.beam_scoring.score_day` produced: the audit result, its counts and where they were
    written."""

    result: AuditResult
    counts: SweepCounts
    split_counts: tuple | None
    output_dir: Path
    scored_dir: Path | None
    record: dict  # result.json


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


def write_result(directory: Path, record: dict) -> None:
    """``result.json`` in ``directory``: the record as strict JSON (`json_safe`), keys sorted."""
    (Path(directory) / RESULT_FILE).write_text(json.dumps(json_safe(record), indent=2, sort_keys=True,
                                                          allow_nan=False) + "\n", encoding="utf-8")


def save_counts(directory: Path, counts: SweepCounts, split: tuple | None, histogram: dict) -> None:
    """``counts.npz`` in ``directory``: the sweep counts, the split halves' (if any) and repetition 0's
    |score| histogram. `load_counts` reads the counts back."""
    arrays = {"m": np.array(counts.m), "guesses": counts.guesses, "correct": counts.correct,
              "score_histogram_rows": np.array(histogram["rows"]),
              "score_histogram_correct": np.array(histogram["correct"])}
    if split is not None:
        for name, half in zip(("selection", "bound"), split, strict=True):
            arrays.update({f"{name}_m": np.array(half.m), f"{name}_guesses": half.guesses,
                           f"{name}_correct": half.correct})
    np.savez(Path(directory) / COUNTS_FILE, **arrays)


def load_counts(directory: Path) -> tuple[SweepCounts, tuple | None]:
    """The `SweepCounts` (and split halves, if any) written by `pipelines.beam_scoring.score_day`."""
    with np.load(Path(directory) / COUNTS_FILE) as data:
        counts = SweepCounts(m=int(data["m"]), guesses=data["guesses"], correct=data["correct"])
        split = None
        if "selection_m" in data:
            split = tuple(SweepCounts(m=int(data[f"{n}_m"]), guesses=data[f"{n}_guesses"],
                                      correct=data[f"{n}_correct"]) for n in ("selection", "bound"))
    return counts, split


__all__ = [
    "COUNTS_FILE",
    "DASK_RUNNER",
    "DEFAULT_BATCH_SIZE",
    "FN_API_RUNNER",
    "PLAN_MODES",
    "RESULT_FILE",
    "SCORED",
    "SWEEPS",
    "ScoringOutcome",
    "ScoringRequest",
    "check_inputs",
    "check_model_for_day",
    "file_fingerprint",
    "in_process",
    "is_dask_runner",
    "json_safe",
    "load_counts",
    "model_dataset_fingerprint",
    "model_lineage",
    "pipeline_args",
    "resolve_reference",
    "runner_from",
    "save_counts",
    "scored_dir",
    "sweep_dir",
    "write_result",
]
