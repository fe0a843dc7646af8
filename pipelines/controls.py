"""The nightly controls as registry entries (the math is in `auditing.controls`).

Both controls are ordinary models of the registry, ``models/<name>/date=D/``, scored by the same Beam job
against the same reference as every target, so a control exercises the whole path (reading, row selection,
inference, both passes, bounds, warehouse, report):

- positive control (``model_type`` ``rr-label-oracle``): ``oracle.json`` holds eps_c, the seed and the class
  count; `pipelines.rr_oracle_handler.RROracleModelHandler` loads it and answers each row with
  `auditing.controls.rr_oracle_probabilities` of the row's (row_id, label): randomized response at eps_c,
  label-DP at exactly eps_c by construction. It reads nothing but the rows it is asked about.
- negative control: a copy of the reference's artifact (the file its metadata names, ``model_file``, with its
  format and a ``training_rows.parquet`` beside it if any; the D-1 checkpoint, which never saw day D's labels),
  registered for day D.
- label-blind control (``model_type`` ``label-blind-control``): CatBoost trained like the targets (no privacy
  mechanism, the plan's `pipelines.training.CatBoostSettings`) but only on the CONTROL half of day D's held-out
  rows (`pipelines.recalibration.check_heldout`: the test split, or with registered targets that list their
  training keys the rows in none of those keys). It never saw an audited label (its eps on the audited rows is 0) yet knows
  day D's rates, so its audit shows "leakage" when the (recalibrated) reference does not fit day D. It does not
  share rows with the reference's recalibration (the CALIBRATION half, `pipelines.recalibration`), or it would
  inherit the recalibration's error and could not fail for it. Its ``fitted_rows`` record says which rows it
  was trained on; its ``training_rows`` record, which decides the audited rows, is the train split as for the
  other controls, or, when the held-out rows are not the test split, the keys of the day's rows that are not
  held out (``training_rows.parquet``, a keys record of `pipelines.audit_rows`): never a row it was fitted on.

Their ``training_rows`` record (`pipelines.audit_rows`) is the day's train split under the recorded split
scheme, so with ``audit_rows: training`` they are audited on the train rows, as the targets are (targets
that used their validation labels also audit the 4% validation rows). Entries are rewritten only when what
determines them changed (eps_c, seed, partition or reference fingerprint, the CatBoost parameters, the held-out
rows); the progress line names what changed. Everything reads the partition with its own dataset spec.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from auditing.controls import LABEL_BLIND, check_control_epsilon
from auditing.errors import LabelDPInputError
from pipelines import registry, schema, splits
from pipelines.beam_request import file_fingerprint
from pipelines.dataset_spec import dataset_of
from pipelines.layout import atomic_directory, model_dir, partition_dir, require_date
from pipelines.model_formats import format_of
from pipelines.progress import Progress, no_progress

ORACLE_FILE = "oracle.json"
ORACLE_TYPE = "rr-label-oracle"
REFERENCE_COPY_TYPE = "reference-copy"
LABEL_BLIND_TYPE = "label-blind-control"
LABEL_BLIND_EVAL_FRACTION = 0.2  # share of the control rows that pick the best iteration (use_best_model)
_LABEL_BLIND_SEED_TAG = 0x626C_696E  # "blin": its CatBoost seed is not a target's for the same plan seed
KEYS_FILE = "training_rows.parquet"  # a keys record's file (pipelines.audit_rows)


def is_oracle(metadata: dict) -> bool:
    return metadata.get("model_type") == ORACLE_TYPE


def _train_split_rows(root, date: dt.date) -> int:
    """How many of the day's rows fall in the train split (the controls' audited rows)."""
    key = dataset_of(root, date).row_key
    total = 0
    for path in sorted(partition_dir(root, date).glob(schema.PART_GLOB)):
        ids = pq.read_table(path, columns=[key]).column(key).drop_null()
        total += int((splits.split_of(ids.to_numpy().astype(np.int64)) == splits.TRAIN).sum())
    return total


def _training_rows(root, date: dt.date) -> dict:
    return {"split": splits.scheme(), "label_splits": ["train"], "validation_labels_used_for": [],
            "unread_row_ids": [], "rows": _train_split_rows(root, date)}


def _current(root, name: str, date: dt.date, expected: dict, progress: Progress = no_progress) -> dict | None:
    from pipelines.recalibration import changed_keys

    try:
        metadata = registry.read_metadata(root, name, date)
    except LabelDPInputError:
        return None
    seen = {key: metadata.get("control", {}).get(key) for key in expected}
    if seen == expected and registry.model_path(root, name, date).is_file():
        return metadata
    progress(f"{name}: rewriting the entry of {date.isoformat()} (changed: "
             f"{', '.join(changed_keys(seen, expected)) or 'incomplete entry'})")
    return None


def _write(root, name: str, date: dt.date, metadata: dict, write_model) -> dict:
    record = dict(metadata)
    record.update({"metadata_version": registry.METADATA_VERSION, "model_name": name, "date": date.isoformat(),
                   "code_version": dict(registry.code_version()),
                   "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
    text = json.dumps(registry.jsonable(record), indent=2, sort_keys=True, allow_nan=False) + "\n"
    with atomic_directory(model_dir(root, name, date)) as tmp:
        write_model(tmp)
        (tmp / registry.METADATA_FILE).write_text(text, encoding="utf-8")
    return registry.read_metadata(root, name, date)


def ensure_positive_control(root: str | os.PathLike, date: dt.date, name: str, epsilon: float, seed: int,
                            partition_fingerprint: str) -> dict:
    """The RR-label oracle at ``epsilon`` for day ``date`` (written when missing or different); its metadata."""
    epsilon = check_control_epsilon(epsilon)
    expected = {"control": "positive", "epsilon": epsilon, "seed": int(seed),
                "partition_fingerprint": partition_fingerprint}
    current = _current(root, name, date, expected)
    if current is not None:
        return current
    oracle = {"type": ORACLE_TYPE, "epsilon": epsilon, "seed": int(seed), "num_classes": dataset_of(root, date).classes,
              "definition": "auditing.controls.rr_oracle_probabilities(row_ids, labels, epsilon, seed, num_classes)"}
    metadata = {
        "model_type": ORACLE_TYPE, "model_file": ORACLE_FILE, "control": expected,
        "mechanism": {"name": ORACLE_TYPE, "epsilon": epsilon, "delta": 0.0,
                      "guarantee": f"{epsilon:g}-label-DP by construction (randomized response on each row's label)"},
        "seed": int(seed), "partition_fingerprint": partition_fingerprint, "feature_schema": [],
        "catboost_params": None, "test_metrics": {}, "reference": None, "training_rows": _training_rows(root, date),
    }
    return _write(root, name, date, metadata,
                  lambda tmp: (tmp / ORACLE_FILE).write_text(json.dumps(oracle, sort_keys=True) + "\n"))


def ensure_negative_control(root: str | os.PathLike, date: dt.date, name: str, reference: tuple[str, dt.date],
                            partition_fingerprint: str) -> dict:
    """A copy of the reference model ``reference`` = (name, date) registered as ``name`` for day ``date``."""
    ref_name, ref_date = reference
    ref_md = registry.read_metadata(root, ref_name, ref_date)
    source = registry.model_path(root, ref_name, ref_date)
    if not source.is_file():
        raise LabelDPInputError(f"{source}: missing; the negative control copies the reference model")
    keys = source.parent / KEYS_FILE
    fingerprint = file_fingerprint(source)
    expected = {"control": "negative", "reference": f"{ref_name}@{ref_date}", "reference_fingerprint": fingerprint,
                "partition_fingerprint": partition_fingerprint}
    current = _current(root, name, date, expected)
    if current is not None:
        return current
    metadata = {
        "model_type": REFERENCE_COPY_TYPE, "control": expected,
        "mechanism": {"name": REFERENCE_COPY_TYPE, "epsilon": 0.0, "delta": 0.0,
                      "guarantee": "0-label-DP for day D: a copy of the D-1 reference, which never saw day D's labels"},
        "seed": ref_md.get("seed"), "partition_fingerprint": partition_fingerprint,
        "feature_schema": ref_md["feature_schema"], "catboost_params": ref_md.get("catboost_params"),
        "test_metrics": {}, "reference": {"name": ref_name, "date": ref_date.isoformat()},
        "training_rows": _training_rows(root, date),
    }
    if ref_md.get("output_correction"):
        metadata["output_correction"] = ref_md["output_correction"]
    # the artifact's format and identity travel with the copy (an ONNX or logged-predictions reference stays one)
    metadata["format"] = format_of(ref_md).name
    for key in ("model_file", "fingerprint", "dataset", "classes", "predictions_for"):
        if key in ref_md:
            metadata[key] = ref_md[key]

    def copy(tmp):
        shutil.copyfile(source, tmp / source.name)
        if keys.is_file() and keys != source:
            shutil.copyfile(keys, tmp / KEYS_FILE)

    return _write(root, name, date, metadata, copy)


def is_label_blind(metadata: dict) -> bool:
    return metadata.get("model_type") == LABEL_BLIND_TYPE


def ensure_label_blind_control(root: str | os.PathLike, date: dt.date, name: str, *, seed: int = 0, settings=None,
                               targets=(), audit_rows: str = "training", progress: Progress = no_progress) -> dict:
    """The label-blind control of day ``date`` registered as ``name`` (written when missing or different); its
    metadata.

    CatBoost with ``settings`` (the plan's `pipelines.training.CatBoostSettings`; default settings when None),
    fitted on the CONTROL half of the day's held-out rows (`pipelines.recalibration.check_heldout`: the test
    split, or the rows in no registered target's training keys); with ``use_best_model`` a fifth of those rows
    (`pipelines.splits.heldout_validation`) picks the best iteration, as the validation split does for the
    targets. ``targets`` / ``audit_rows``: as for `pipelines.recalibration.check_heldout`, which raises
    `pipelines.recalibration.ReferenceCheckSkipped` (with ``reason``) when no row is known to be held out; so
    does a day without control rows or a dataset that is not binary. Metadata: ``model_type``
    ``label-blind-control``, ``control`` (kind ``label-blind`` and what determines the entry), ``mechanism`` eps
    0, ``training_rows`` the audited rows (the train split like the other controls, or the keys of the rows not
    held out), ``fitted_rows`` the rows it was trained on."""
    from pipelines.recalibration import ReferenceCheckSkipped, check_heldout, heldout_part, read_day
    from pipelines.training import CatBoostSettings, dataset_record, evaluate, fit_catboost
    from pipelines.training import predict_probabilities as predict

    date = require_date(date)
    settings = settings or CatBoostSettings()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise LabelDPInputError(f"seed must be a whole number in 0..2^63-1; got {seed!r}")
    heldout = check_heldout(targets, audit_rows, root)
    catboost_seed = int(np.random.SeedSequence([int(seed), _LABEL_BLIND_SEED_TAG]).generate_state(1)[0])
    partition_fingerprint = schema.partition_fingerprint(root, date)
    dataset = dataset_of(root, date)
    expected = {"control": LABEL_BLIND, "seed": int(seed), "partition_fingerprint": partition_fingerprint,
                "catboost_params": settings.params(catboost_seed), "use_best_model": settings.use_best_model,
                "heldout": heldout.describe(), "eval_fraction": LABEL_BLIND_EVAL_FRACTION}
    if dataset_record(dataset) is not None:
        expected["dataset"] = dataset.fingerprint()
    expected = registry.jsonable(expected)
    current = _current(root, name, date, expected, progress)
    if current is not None:
        progress(f"{name}: reusing the label-blind control of {date.isoformat()}")
        return current
    table, dataset = read_day(root, date)
    row_ids, features, labels = heldout_part(table, splits.CONTROL, heldout, dataset)
    if row_ids.size == 0:
        raise ReferenceCheckSkipped(f"partition {date.isoformat()} ({table.num_rows} rows) has no held-out control "
                                    f"rows ({heldout.where()}): the label-blind control cannot be trained")
    is_eval = (splits.heldout_validation(row_ids, LABEL_BLIND_EVAL_FRACTION) if settings.use_best_model
               else np.zeros(row_ids.size, dtype=bool))
    fit, held = np.flatnonzero(~is_eval), np.flatnonzero(is_eval)
    progress(f"{name}: label-blind control on {fit.size} held-out control rows (eval {held.size})")
    model, info = fit_catboost(features.iloc[fit], labels[fit], settings, catboost_seed, features.iloc[held],
                               labels[held])
    metrics = evaluate(predict(model, features.iloc[held]), labels[held]) if held.size else {}
    metrics.update({"evaluated_on": "its own eval rows (control half), which also picked the best iteration"
                    if held.size else None, "train_rows": int(fit.size), "validation_rows": int(held.size),
                    "degenerate": info["degenerate"], "best_iteration": info.get("best_iteration"),
                    "trees": info.get("trees")})
    all_ids = table.column("row_id").to_numpy().astype(np.int64)
    keys = None if heldout.builtin else _keys_file(np.sort(all_ids[~heldout.mask(all_ids)]))
    rule = ("split_of(row_id) == TEST and heldout_role(row_id) == CONTROL" if heldout.builtin else
            "row_id in no audited model's training keys (and in the test split if a target records the built-in "
            "split) and heldout_role_of(row_id) == CONTROL")
    metadata = {
        "model_type": LABEL_BLIND_TYPE, "control": expected,
        "mechanism": {"name": LABEL_BLIND_TYPE, "epsilon": 0.0, "delta": 0.0,
                      "guarantee": f"0-label-DP on the audited rows: trained only on day D's held-out control rows "
                                   f"({heldout.where()}), never on an audited label"},
        "seed": int(seed), "partition_fingerprint": partition_fingerprint, "partition_rows": int(table.num_rows),
        "feature_schema": dataset.feature_schema(), "catboost_params": info["params"], "test_metrics": metrics,
        "reference": None,
        "training_rows": _training_rows(root, date) if keys is None else
        {"kind": "keys", "file": KEYS_FILE, "rows": keys[1], "fingerprint": keys[2]},
        "fitted_rows": {"heldout": heldout.describe(), "split": "test" if heldout.builtin else None,
                        "role": "control", "rows": int(row_ids.size), "fit_rows": int(fit.size),
                        "eval_rows": int(held.size),
                        "eval_fraction": LABEL_BLIND_EVAL_FRACTION if settings.use_best_model else 0.0,
                        "rule": rule + "; disjoint from the audited rows (training_rows) and from the reference's "
                                       "calibration rows"},
    }
    if dataset_record(dataset) is not None:
        metadata["dataset"] = dataset_record(dataset)

    def write(tmp):
        model.save_model(str(tmp / registry.MODEL_FILE), format="cbm")
        if keys is not None:
            (tmp / KEYS_FILE).write_bytes(keys[0])

    return _write(root, name, date, metadata, write)


def _keys_file(keys: np.ndarray) -> tuple[bytes, int, str]:
    """(Parquet bytes, rows, ``sha256:<hex>``) of a keys file listing the sorted int64 ``keys``
    (`pipelines.audit_rows`): built in memory so the metadata can record its fingerprint before it is written."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"row_id": pa.array(keys, pa.int64())}), sink)
    data = sink.getvalue().to_pybytes()
    return data, int(keys.size), "sha256:" + hashlib.sha256(data).hexdigest()
