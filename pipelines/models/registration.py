"""Registering a model trained elsewhere (``labeldp-audit models register``), and listing the registry.

A registration puts a team's file (a CatBoost ``.cbm``, an ONNX model, or a table of logged predictions; the
formats of `pipelines.models.formats.registry`) into ``models/<name>/date=D/`` beside a ``metadata.json`` that the audit
reads like a trained model's (docs/model_registry.md lists every key). Everything is checked before anything is
written: the name, the file (by its format's ``inspect``), the claim (eps >= 0 or inf, delta in [0, 1)), the
dataset (the spec day D's partition was written with, when that partition exists) and the training rows (every
key a row of day D). The artifact is copied byte for byte (its sha256 is recorded and re-checked on the copy),
the training keys written sorted as ``training_rows.parquet`` (one int64 column ``row_id``), all inside one
``atomic_directory``: a failed registration leaves no trace and an existing one untouched.

Registering the same file with the same inputs again is a no-op (``already_registered: True``); anything
different under the same name and day is refused unless ``replace``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from labeldp import hints
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError, mention
from labeldp.names import check_claim as _check_epsilon
from labeldp.names import check_name, parse_date, require_date
from pipelines.data import schema
from pipelines.data.column_checks import cast_integer, check_row_ids_unique
from pipelines.data.dataset_spec import INTERNAL_ROW_ID, DatasetSpec, check_same_dataset, criteo, dataset_of
from pipelines.data.day import Day, listed_day
from pipelines.data.layout import (
    MODELS,
    atomic_directory,
    file_fingerprint,
    model_dir,
    partition_listing,
    refuse_empty_file,
)
from pipelines.models import registry
from pipelines.models.formats.base import ModelFormat, Offer
from pipelines.models.formats.registry import format_names, format_of, model_format
from pipelines.models.metadata import (
    ABSENT,
    DatasetRecord,
    MechanismRecord,
    ModelMetadata,
    TrainingRows,
    format_part,
    or_none,
)

SOURCE = "registered"
MECHANISM = "external"  # the mechanism of a registered model: the team's own, known only by its claim
TRAINING_ROWS_FILE = "training_rows.parquet"
_GIVE_ITS_SPEC = "give the partition's spec file with --dataset (the default is the spec it was written with)"
ALL_ROWS = "all"


# ------------------------------------------------------------------------------------------------ checks


def format_for_file(path: str | os.PathLike) -> ModelFormat:
    """The registrable format whose artifact has ``path``'s suffix (``.cbm``, ``.onnx``, ``.parquet``)."""
    suffix = Path(path).suffix.lower()
    found = [model_format(name) for name in format_names(registrable_only=True)
             if Path(model_format(name).file_name).suffix == suffix]
    if len(found) != 1:
        raise LabelDPInputError(f"{path}: cannot tell the model format from the suffix {suffix or '(none)'!r}; pass "
                                f"{mention('format')} (one of {list(format_names(registrable_only=True))})",
                                field="format")
    return found[0]


def check_claim(claimed_epsilon: float, delta: float) -> tuple[float, float]:
    """(eps, delta) if eps >= 0 (or inf) and 0 <= delta < 1."""
    epsilon = _check_epsilon(claimed_epsilon)
    try:
        delta = float(delta)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"delta must be a number; got {delta!r}", field="delta") from None
    if not (0.0 <= delta < 1.0):
        raise LabelDPInputError(f"delta must be in [0, 1); got {delta!r}", field="delta")
    return epsilon, delta


def read_training_rows(path: Path, dataset: DatasetSpec, day_keys: np.ndarray | None, date: dt.date,
                       partition: Path) -> np.ndarray:
    """The sorted keys of a training-rows file: Parquet, one integer column named like the spec's row key (or
    ``row_id``), non-null, unique, every key a row of day ``date``'s partition (``day_keys``; None: the
    partition directory ``partition``, named in the errors, does not exist)."""
    if not path.is_file():
        raise LabelDPInputError(f"training_rows: {path} is not a file (give a Parquet file of row keys, or 'all')",
                                field="training_rows")
    if day_keys is None:
        raise LabelDPInputError(f"training_rows: checking {path} needs day {date.isoformat()}'s partition, and "
                                f"{partition} does not exist; ingest that day first",
                                field="training_rows")
    parquet = schema.open_parquet(path)
    allowed = [dataset.row_key] + ([INTERNAL_ROW_ID] if dataset.row_key != INTERNAL_ROW_ID else [])
    index = schema.pandas_index_columns(parquet) - set(allowed)  # written by pandas for a filtered frame
    names = [name for name in parquet.schema_arrow.names if name not in index]
    if len(names) != 1 or names[0] not in allowed:
        raise LabelDPInputError(f"{path}: a training-rows file holds one integer column named "
                                f"{' or '.join(allowed)}; it has the columns {names}")
    try:
        column = parquet.read(columns=names).column(0)
    except (pa.ArrowException, OSError) as exc:
        raise LabelDPInputError(f"{path}: corrupt Parquet data ({exc})") from None
    column = cast_integer(column, pa.int64(), names[0], path)
    if column.null_count:
        raise LabelDPInputError(f"{path}: column {names[0]!r}: {column.null_count} row(s) are null")
    keys = column.to_numpy()
    if not keys.size:
        raise LabelDPInputError(f"{path}: no row keys (give 'all' for a model trained on every row of the day)")
    check_row_ids_unique(keys, path, names[0])
    unknown = ~np.isin(keys, day_keys)
    if unknown.any():
        raise LabelDPInputError(f"{path}: {int(unknown.sum())} of {keys.size} key(s) are not rows of day "
                                f"{date.isoformat()} (e.g. {int(keys[np.flatnonzero(unknown)[0]])}); list keys of "
                                f"{partition}")
    return np.sort(keys)


# ------------------------------------------------------------------------------------------------ register


def find_registered(root, name: str, date: dt.date) -> ModelMetadata | None:
    """The metadata of ``models/<name>/date=D`` if that directory exists (LabelDPInputError if it is unreadable)."""
    if not model_dir(root, name, date).is_dir():
        return None
    return registry.read_metadata(root, name, date)


def _stored_keys(directory: Path) -> np.ndarray | None:
    try:
        return pq.read_table(directory / TRAINING_ROWS_FILE, columns=[INTERNAL_ROW_ID]).column(0).to_numpy()
    except (pa.ArrowException, OSError, KeyError):
        return None


def _differences(existing: ModelMetadata, new: ModelMetadata, keys: np.ndarray | None,
                 directory: Path) -> list[str]:
    if existing.origin != SOURCE:
        return ["origin (it was trained by labeldp-audit train)"]
    checks = [(existing.format, new.format, "format"), (existing.fingerprint, new.fingerprint, "file (sha256)"),
              (existing.mechanism, new.mechanism, "claimed epsilon or delta"),
              (existing.predictions_for, new.predictions_for, "predictions day"),
              (existing.partition_fingerprint, new.partition_fingerprint, "partition of the day"),
              (existing.onnx.inputs if existing.onnx else None, new.onnx.inputs if new.onnx else None,
               "ONNX input mapping")]
    out = [label for before, after, label in checks if before != after]
    if (existing.dataset.fingerprint if existing.dataset else None) != new.dataset.fingerprint:
        out.append("dataset")
    before = existing.training_rows.kind if existing.training_rows else ABSENT
    if before != new.training_rows.kind or (
            keys is not None and not np.array_equal(_stored_keys(directory), keys)):
        out.append("training rows")
    return out


@dataclasses.dataclass(frozen=True)
class Registration:
    """What `register_model` returns: the model's metadata as stored (or, with ``check_only``, as it would be
    stored), and whether the same registration was there already (None: ``check_only``, nothing was written)."""

    metadata: ModelMetadata
    already_registered: bool | None


def register_model(root, name: str, date: dt.date, file: str | os.PathLike, *, fmt: str | ModelFormat,
                   claimed_epsilon: float, delta: float = 0.0, dataset: DatasetSpec | None,
                   training_rows: str | os.PathLike = ALL_ROWS, predictions_for: dt.date | None = None,
                   onnx_inputs: str | os.PathLike | None = None, replace: bool = False,
                   check_only: bool = False) -> Registration:
    """Registers ``file`` as ``models/<name>/date=D`` and returns its typed metadata and whether it was there already
    (`Registration`).

    ``dataset`` None: the spec day D's partition was written with (Criteo when there is none). ``training_rows``:
    ``"all"`` (every row of day D trained it) or a Parquet file of the row keys whose labels trained it.
    ``predictions_for`` (formats of logged predictions only; default ``date``): the day whose rows the table
    scores. ``onnx_inputs`` (ONNX only): a JSON file naming the dataset columns that feed the graph's inputs
    (`pipelines.models.formats.onnx_inputs`). A format that runs the model on real rows (ONNX) gets a keyed
    sample of day D's rows as its probe. Raises LabelDPInputError, with nothing written, on any bad input or a
    different registration already under this name and day (unless ``replace``). ``check_only``: every check,
    then the metadata it would write (``already_registered`` None), writing nothing.
    """
    name = check_name(name, "model name")
    date = require_date(date, "date")
    fmt = model_format(fmt, "format")
    if not fmt.registrable:
        raise LabelDPInputError(f"format {fmt.name!r} is not registered from a file; use one of "
                                f"{list(format_names(registrable_only=True))}", field="format")
    path = Path(file)
    if not path.is_file():
        raise LabelDPInputError(f"file: {path} is not a file", field="file")
    refuse_empty_file(path)
    epsilon, delta = check_claim(claimed_epsilon, delta)
    scores_one_day = fmt.scores_one_day
    if predictions_for is not None and not scores_one_day:
        raise LabelDPInputError(f"predictions_for applies to a table of logged predictions, not to a {fmt.name} "
                                f"model", field="predictions_for")
    predictions_for = require_date(predictions_for or date, "predictions_for") if scores_one_day else None
    mapping = None
    if onnx_inputs is not None:
        if not fmt.takes_input_mapping:
            raise LabelDPInputError(f"onnx_inputs maps the inputs of an ONNX graph, not of a {fmt.name} model",
                                    field="onnx_inputs")
        mapping = Path(onnx_inputs)
        if not mapping.is_file():
            raise LabelDPInputError(f"onnx_inputs: {mapping} is not a file", field="onnx_inputs")

    listing = partition_listing(root, date)
    partition, has_partition = listing.directory, listing.exists
    defaulted = dataset is None
    if defaulted:
        dataset = dataset_of(root, date)
    elif has_partition:
        check_same_dataset(dataset, dataset_of(root, date), f"the partition {partition}", _GIVE_ITS_SPEC)
    scored = None if predictions_for in (None, date) else partition_listing(root, predictions_for)
    if scored is not None and scored.exists:
        check_same_dataset(dataset, dataset_of(root, predictions_for), f"the partition {scored.directory}",
                           _GIVE_ITS_SPEC)
    probe = (schema.read_keyed_sample(listed_day(root, date), dataset, fmt.probe_rows)[0]
             if fmt.probe_rows and has_partition else None)
    try:
        info = fmt.inspect(path, dataset, Offer(probe=probe, input_mapping=mapping))
    except LabelDPInputError as exc:
        if defaulted and not has_partition:  # another team's model met the built-in spec: its own was not given
            raise LabelDPInputError(
                f"{exc.template}; {dataset.name!r} is the default dataset, as no partition of {date.isoformat()} "
                f"records another: give the model's own spec, "
                f"{hints.REGISTER_WITH_DATASET.line(name=name, date=date.isoformat(), file=path, epsilon=f'{epsilon:g}')}",
                field=exc.field) from None
        raise
    fingerprint = file_fingerprint(path)
    day_keys = (schema.read_partition(root, date, columns=[dataset.row_key], dataset=dataset)
                .column(dataset.row_key).to_numpy() if has_partition else None)
    keys = None
    if isinstance(training_rows, str) and training_rows == ALL_ROWS:
        rows_record = TrainingRows(kind=ALL_ROWS, rows=None if day_keys is None else int(day_keys.size))
    else:
        keys = read_training_rows(Path(training_rows), dataset, day_keys, date, partition)
        rows_record = TrainingRows(kind="keys", file=TRAINING_ROWS_FILE, rows=int(keys.size), fingerprint=None)

    metadata = ModelMetadata(
        metadata_version=registry.METADATA_VERSION, model_name=name, date=date,
        mechanism=MechanismRecord(MECHANISM, epsilon, delta), seed=None,
        partition_fingerprint=schema.partition_fingerprint(root, date) if has_partition else None,
        test_metrics=None, code_version=registry.current_code_version(), created_at=registry.created_now(),
        source=SOURCE, format=fmt.name, model_file=fmt.file_name, fingerprint=fingerprint,
        registered_from=path.name,
        dataset=DatasetRecord(dataset.name, dataset.fingerprint(), registry.jsonable(encode(dataset))),
        training_rows=rows_record, predictions_for=ABSENT if predictions_for is None else predictions_for,
        **format_part(registry.jsonable(info), f"{path}: what format {fmt.name!r} reports"))

    final = model_dir(root, name, date)
    try:
        existing = find_registered(root, name, date)
    except LabelDPInputError as exc:
        if not replace:
            raise LabelDPInputError(f"{final} holds an unreadable registration ({exc}); pass {mention('replace')} to "
                                    f"overwrite it", field="replace") from None
        existing = None
    if existing is not None:
        differences = _differences(existing, metadata, keys, final)
        if not differences:
            return Registration(existing, already_registered=True)
        if not replace:
            raise LabelDPInputError(f"model {name!r} of {date.isoformat()} is already registered at {final} with a "
                                    f"different {', '.join(differences)}; pass {mention('replace')} to replace it, "
                                    f"or choose another {mention('name')}", field="replace")

    if check_only:
        return Registration(metadata, already_registered=None)
    metadata = dataclasses.replace(metadata, created_at=registry.created_now())
    with atomic_directory(final) as tmp:
        shutil.copyfile(path, tmp / fmt.file_name)
        if file_fingerprint(tmp / fmt.file_name) != fingerprint:
            raise LabelDPInputError(f"{path}: the file changed while it was being registered; register it again")
        if keys is not None:
            pq.write_table(pa.table({INTERNAL_ROW_ID: pa.array(keys, pa.int64())}), tmp / TRAINING_ROWS_FILE,
                           compression=schema.PARQUET_COMPRESSION)
            metadata = dataclasses.replace(metadata, training_rows=dataclasses.replace(
                rows_record, fingerprint=file_fingerprint(tmp / TRAINING_ROWS_FILE)))
        text = json.dumps(registry.jsonable(encode(metadata)), indent=2, sort_keys=True, allow_nan=False) + "\n"
        (tmp / registry.METADATA_FILE).write_text(text, encoding="utf-8")
    return Registration(metadata, already_registered=False)


def candidate_name(root, date: dt.date, file: str | os.PathLike, training_rows: str | os.PathLike,
                   dataset: DatasetSpec | None) -> str:
    """A guardrail candidate's registry name, one per identity: ``candidate-<12 hex of the file's sha256>-rows-<8 hex
    of the sha256 of its sorted training keys, or 'all'>``, so that the same file with other training rows is
    another candidate and both can be found. The keys are read and checked as `register_model` does (the same
    key set in another file has the same name)."""
    file_hex = file_fingerprint(Path(file)).split(":", 1)[1]
    if isinstance(training_rows, str) and training_rows == ALL_ROWS:
        rows = ALL_ROWS
    else:
        dataset = dataset or dataset_of(root, date)
        listing = partition_listing(root, date)
        day_keys = (schema.read_partition(root, date, columns=[dataset.row_key], dataset=dataset)
                    .column(dataset.row_key).to_numpy() if listing.exists else None)
        keys = read_training_rows(Path(training_rows), dataset, day_keys, date, listing.directory)
        rows = hashlib.sha256(np.ascontiguousarray(keys, dtype="<i8").tobytes()).hexdigest()[:8]
    return f"candidate-{file_hex[:12]}-rows-{rows}"


def check_registration_matches_day(partition: Day, metadata: ModelMetadata, role: str = "registered target") -> None:
    """A registered model still fits the day it was registered for (``partition``: that day's handle, under whose
    data root the model is registered): the partition it was registered against is the day's partition now
    (else the day was ingested again since, and its training keys may no longer be the day's rows: the audit
    would intersect them silently), and, when it was registered before the day existed, its training keys are all
    rows of the day. Raises LabelDPInputError naming the model, what changed and the fix (to
    register it again with ``--replace``); a model trained here is not checked (the plan retrains it)."""
    if metadata.origin != SOURCE:
        return
    root, date, partition_fp = partition.root, partition.date, partition.fingerprint
    name, day = metadata.model_name, metadata.date.isoformat()
    fix = f"register it again for the day's rows: {hints.REREGISTER_MODEL.line(name=name, date=day)}"
    recorded = metadata.partition_fingerprint or None
    if recorded is not None and recorded != partition_fp:
        since = schema.replaced_since(root, date, recorded)
        raise LabelDPInputError(
            f"{role} {name}@{day} was registered on the partition {recorded}, but the partition of "
            f"{date.isoformat()} is now {partition_fp}" + (f" (replaced {since})" if since else "")
            + f": its training keys are no longer known to be the day's rows, and its verdict would judge other "
            f"rows than it was registered for; {fix}", field="model")
    record = metadata.training_rows
    if recorded is None and getattr(record, "kind", None) == "keys":
        keys = _stored_keys(model_dir(root, name, metadata.date))
        dataset = partition.dataset
        day_keys = schema.read_day(partition, columns=[dataset.row_key], dataset=dataset) \
            .column(dataset.row_key).to_numpy()
        missing = 0 if keys is None else int((~np.isin(keys, day_keys)).sum())
        if keys is None or missing:
            what = "its training keys cannot be read" if keys is None else \
                f"{missing} of its {keys.size} training keys are not rows of the day"
            raise LabelDPInputError(f"{role} {name}@{day} was registered before the partition of {date.isoformat()} "
                                    f"existed, and {what}; {fix}", field="model")


# ------------------------------------------------------------------------------------------------ list / show


def _dates(root, name: str) -> list[dt.date]:
    out = []
    for directory in (Path(root) / MODELS / name).glob("date=*"):
        try:
            out.append(parse_date(directory.name.removeprefix("date="), str(directory)))
        except LabelDPInputError:
            continue
    return sorted(out)


def _summary(metadata: ModelMetadata, directory: Path) -> dict:
    mechanism = metadata.mechanism
    try:
        fmt = format_of(metadata).name
    except LabelDPInputError:
        fmt = or_none(metadata.format)
    return {"name": metadata.model_name, "date": metadata.date.isoformat(),
            "source": metadata.origin, "format": fmt, "mechanism": mechanism.name,
            "claimed_epsilon": encode(mechanism)["epsilon"], "delta": mechanism.delta,
            "dataset": metadata.dataset.name if metadata.dataset else criteo().name,  # no record: Criteo
            "classes": or_none(metadata.classes),
            "training_rows": metadata.training_rows.kind_name if metadata.training_rows else None,
            "predictions_for": metadata.predictions_for.isoformat() if metadata.predictions_for else None,
            "directory": str(directory)}


def list_models(root) -> list[dict]:
    """One summary per ``models/<name>/date=D`` (name, date, source, format, claim, dataset, training rows), by
    name and date; an unreadable one is listed with its ``error``."""
    base = Path(root) / MODELS
    if not base.is_dir():
        return []
    out = []
    for entry in sorted(base.iterdir()):
        try:
            name = check_name(entry.name)
        except LabelDPInputError:
            continue  # .tmp-/.old- directories of a write in progress
        if not entry.is_dir():
            continue
        for date in _dates(root, name):
            directory = model_dir(root, name, date)
            try:
                out.append(_summary(registry.read_metadata(root, name, date), directory))
            except LabelDPInputError as exc:
                out.append({"name": name, "date": date.isoformat(), "directory": str(directory), "error": str(exc)})
    return out


def show_model(root, name: str, date: dt.date | None = None) -> ModelMetadata:
    """The metadata of model ``name`` of ``date`` (default: its latest date)."""
    name = check_name(name, "model name")
    if date is None:
        dates = _dates(root, name)
        if not dates:
            known = sorted({entry["name"] for entry in list_models(root)})
            raise LabelDPInputError(f"no model {name!r} under {Path(root) / MODELS} (models there: "
                                    f"{known or 'none'}); see {hints.LIST_MODELS.line(root=root)}")
        date = dates[-1]
    return registry.read_metadata(root, name, require_date(date, "date"))


__all__ = [
    "ALL_ROWS",
    "MECHANISM",
    "SOURCE",
    "TRAINING_ROWS_FILE",
    "Registration",
    "candidate_name",
    "check_claim",
    "check_registration_matches_day",
    "find_registered",
    "format_for_file",
    "list_models",
    "read_training_rows",
    "register_model",
    "show_model",
]
