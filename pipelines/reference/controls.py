"""The nightly controls as registry entries (the math is in `auditing.verdict.controls`).

Both controls are ordinary models of the registry, ``models/<name>/date=D/``, scored by the same Beam job
against the same reference as every target, so a control exercises the whole path (reading, row selection,
inference, both passes, bounds, warehouse, report):

- positive control (``model_type`` ``rr-label-oracle``): ``oracle.json`` holds eps_c, the seed and the class
  count; `pipelines.models.formats.oracle_handler.RROracleModelHandler` loads it and answers each row with
  `auditing.verdict.controls.rr_oracle_probabilities` of the row's (row_id, label): randomized response at eps_c,
  label-DP at exactly eps_c by construction. It reads nothing but the rows it is asked about.
- negative control: a copy of the reference's artifact (the file its metadata names, ``model_file``, with its
  format and a ``training_rows.parquet`` beside it if any; the D-1 checkpoint, which never saw day D's labels),
  registered for day D.
Their ``training_rows`` record (`pipelines.scoring.audit_rows`) is the day's train split under the recorded split
scheme, so with ``audit_rows: training`` they are audited on the train rows, as the targets are (targets
that used their validation labels also audit the 4% validation rows). Entries are rewritten only when what
determines them changed (eps_c, seed, partition or reference fingerprint); the progress line names what
changed. (The night's label-blind control is retired: the capacity check, each target on rows of the day it never
saw, replaced it; docs/soundness.md section 8.6.) Everything reads the partition with its own dataset spec.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Mapping

import numpy as np
import pyarrow.parquet as pq

from auditing.verdict.controls import check_control_epsilon
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.progress import Progress, no_progress
from pipelines.data import splits
from pipelines.data.day import Day
from pipelines.data.layout import atomic_directory, model_dir
from pipelines.models import registry
from pipelines.models.handle import ModelHandle, resolve_model
from pipelines.models.metadata import ABSENT, ModelMetadata, as_metadata

ORACLE_FILE = "oracle.json"
ORACLE_TYPE = "rr-label-oracle"
REFERENCE_COPY_TYPE = "reference-copy"
KEYS_FILE = "training_rows.parquet"  # a keys record's file (pipelines.scoring.audit_rows)


def is_oracle(metadata: ModelMetadata | Mapping) -> bool:
    """Whether ``metadata`` (the record, or its JSON form) is the positive control's."""
    return as_metadata(metadata).model_type == ORACLE_TYPE


def _train_split_rows(day: Day) -> int:
    """How many of the day's rows fall in the train split (the controls' audited rows)."""
    key = day.dataset.row_key
    total = 0
    for path in day.files:
        ids = pq.read_table(path, columns=[key]).column(key).drop_null()
        total += int((splits.split_of(ids.to_numpy().astype(np.int64)) == splits.TRAIN).sum())
    return total


def _training_rows(day: Day) -> dict:
    return {"split": splits.scheme(), "label_splits": ["train"], "validation_labels_used_for": [],
            "unread_row_ids": [], "rows": _train_split_rows(day)}


def _current(day: Day, name: str, expected: dict, progress: Progress = no_progress) -> ModelHandle | None:
    """The control ``name``'s entry of ``day`` when it records ``expected``, else None (missing or different)."""
    from pipelines.reference.recalibration import changed_keys

    date = day.date
    try:
        entry = resolve_model(day.root, name, date)
    except LabelDPInputError:
        return None
    seen = {key: (entry.meta.control or {}).get(key) for key in expected}  # the control's own record
    if seen == expected:
        return entry
    progress(f"{name}: rewriting the entry of {date.isoformat()} (changed: "
             f"{', '.join(changed_keys(seen, expected)) or 'incomplete entry'})")
    return None


def _write(day: Day, name: str, metadata: dict, write_model) -> ModelHandle:
    """Registers the control ``name`` for ``day`` under its data root (``write_model`` writes its file), resolved."""
    root, date = day.root, day.date
    record = dict(metadata)
    record.update({"metadata_version": registry.METADATA_VERSION, "model_name": name, "date": date.isoformat(),
                   "code_version": dict(registry.code_version()),
                   "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
    text = json.dumps(registry.jsonable(record), indent=2, sort_keys=True, allow_nan=False) + "\n"
    with atomic_directory(model_dir(root, name, date)) as tmp:
        write_model(tmp)
        (tmp / registry.METADATA_FILE).write_text(text, encoding="utf-8")
    return resolve_model(root, name, date)


def ensure_positive_control(day: Day, name: str, epsilon: float, seed: int) -> ModelHandle:
    """The RR-label oracle at ``epsilon`` for ``day`` (written when missing or different, keyed on the day's
    fingerprint), resolved."""
    partition_fingerprint = day.fingerprint
    epsilon = check_control_epsilon(epsilon)
    expected = {"control": "positive", "epsilon": epsilon, "seed": int(seed),
                "partition_fingerprint": partition_fingerprint}
    current = _current(day, name, expected)
    if current is not None:
        return current
    oracle = {"type": ORACLE_TYPE, "epsilon": epsilon, "seed": int(seed), "num_classes": day.dataset.classes,
              "definition": "auditing.controls.rr_oracle_probabilities(row_ids, labels, epsilon, seed, num_classes)"}
    metadata = {
        "model_type": ORACLE_TYPE, "model_file": ORACLE_FILE, "control": expected,
        "mechanism": {"name": ORACLE_TYPE, "epsilon": epsilon, "delta": 0.0,
                      "guarantee": f"{epsilon:g}-label-DP by construction (randomized response on each row's label)"},
        "seed": int(seed), "partition_fingerprint": partition_fingerprint, "feature_schema": [],
        "catboost_params": None, "test_metrics": {}, "reference": None, "training_rows": _training_rows(day),
    }
    return _write(day, name, metadata,
                  lambda tmp: (tmp / ORACLE_FILE).write_text(json.dumps(oracle, sort_keys=True) + "\n"))


def ensure_negative_control(day: Day, name: str, reference: ModelHandle) -> ModelHandle:
    """A copy of the resolved reference model ``reference`` registered as ``name`` for ``day`` (keyed on the day's
    fingerprint), resolved."""
    partition_fingerprint = day.fingerprint
    # The copy's metadata is the reference's with the control's keys: its fields written as the reference's JSON.
    ref_name, ref_date, ref_md = reference.name, reference.date, reference.meta
    source = reference.artifact
    keys = source.parent / KEYS_FILE
    fingerprint = reference.fingerprint
    expected = {"control": "negative", "reference": f"{ref_name}@{ref_date}", "reference_fingerprint": fingerprint,
                "partition_fingerprint": partition_fingerprint}
    current = _current(day, name, expected)
    if current is not None:
        return current
    metadata = {
        "model_type": REFERENCE_COPY_TYPE, "control": expected,
        "mechanism": {"name": REFERENCE_COPY_TYPE, "epsilon": 0.0, "delta": 0.0,
                      "guarantee": "0-label-DP for day D: a copy of the D-1 reference, which never saw day D's labels"},
        "seed": ref_md.seed, "partition_fingerprint": partition_fingerprint,
        "feature_schema": encode(ref_md.feature_schema), "catboost_params": encode(ref_md.catboost_params),
        "test_metrics": {}, "reference": {"name": ref_name, "date": ref_date.isoformat()},
        "training_rows": _training_rows(day),
    }
    if ref_md.output_correction:
        metadata["output_correction"] = encode(ref_md.output_correction)
    # the artifact's format and identity travel with the copy (an ONNX or logged-predictions reference stays one)
    metadata["format"] = reference.format.name
    for key in ("model_file", "fingerprint", "dataset", "classes", "predictions_for"):
        if getattr(ref_md, key) is not ABSENT:
            metadata[key] = encode(getattr(ref_md, key))

    def copy(tmp):
        shutil.copyfile(source, tmp / source.name)
        if keys.is_file() and keys != source:
            shutil.copyfile(keys, tmp / KEYS_FILE)

    return _write(day, name, metadata, copy)
