"""Training and row selection on a dataset that is not Criteo, with registered targets that list their training
keys (pipelines.training.train, pipelines.scoring.audit_rows, pipelines.reference.recalibration, pipelines.reference.controls,
pipelines.reference.shift_diagnostics).

The dataset: row key ``impression_id`` (large integers, some negative), label ``clicked``, float numerics with
NaN (``price``, ``dwell``), categoricals of words (``country``, with missing values) and of integers (``slot``),
a carried text column; two days of 3,000 rows written with ``write_partition(..., dataset=spec)``. Models are
real CatBoost models (few iterations); the outside target's training keys are a real Parquet file in its model
directory. The last test runs the Beam scoring job on a model whose audited rows are a keys file, with the
capacity check's rows: the held-out rows the reference's correction did not fit.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import math
import pickle
import re
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.special import expit

from auditing.game.config import GameConfig
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema, splits
from pipelines.data.dataset_spec import DatasetSpec
from pipelines.data.day import listed_day
from pipelines.data.id_sets import IdSet
from pipelines.data.layout import file_fingerprint, model_dir
from pipelines.models import registry
from pipelines.models.handle import resolve_model
from pipelines.reference import controls
from pipelines.reference.recalibration import (
    CheckRowSelection,
    RecalibrationSettings,
    ReferenceCheckSkipped,
    check_heldout,
    correction_frame,
    correction_rows,
    recalibrate_reference,
)
from pipelines.reference.shift_diagnostics import shift_diagnostic
from pipelines.scoring import audit_rows
from pipelines.training import train as training
from tests.support.model_handles import metadata_of, unregistered

logging.getLogger("apache_beam").setLevel(logging.ERROR)

PREVIOUS, DAY = dt.date(2024, 7, 1), dt.date(2024, 7, 2)
ROWS = 3000
SPEC = DatasetSpec(name="shop-clicks", label="clicked", classes=2, row_key="impression_id",
                   numeric=("price", "dwell"), categorical=("country", "slot"), carry=("campaign",),
                   numeric_type="float64", source="test spec")
FAST = training.CatBoostSettings(iterations=20, learning_rate=0.3, depth=4, thread_count=2)
RECALIBRATION = RecalibrationSettings(catboost=FAST, max_rounds=30, min_rows=50)
COUNTRIES = np.array(["france", "japan", "brazil", "kenya", "canada", "india"])


def _day_table(seed: int, rows: int = ROWS, classes: int = 2) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**12, size=rows, replace=False).astype(np.int64) - 5 * 10**11
    price = rng.lognormal(3.0, 1.0, rows)
    price[rng.random(rows) < 0.1] = np.nan
    dwell = rng.exponential(20.0, rows)
    dwell[rng.random(rows) < 0.15] = np.nan
    country = COUNTRIES[rng.integers(0, COUNTRIES.size, rows)]
    slot = rng.integers(1, 13, rows)
    z = -1.0 + 1.5 * (country == "japan") - 1.0 * (country == "kenya") + 0.8 * (slot % 3 == 0)
    z += 0.03 * np.nan_to_num(dwell - 20.0)
    label = (rng.random(rows) < expit(z)).astype(np.int8)
    if classes > 2:
        label = label + (rng.random(rows) < 0.2).astype(np.int8)
    country_text = pa.array(country.tolist(), mask=rng.random(rows) < 0.05)
    return pa.table({"impression_id": ids, "clicked": label, "price": price, "dwell": dwell,
                     "country": country_text, "slot": slot, "campaign": [f"c{i % 7}" for i in range(rows)]})


def _write_keys(directory, keys: np.ndarray) -> dict:
    """Writes ``training_rows.parquet`` (sorted int64 ``row_id``) into ``directory``; the keys record."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "training_rows.parquet"
    pq.write_table(pa.table({"row_id": pa.array(np.sort(keys), pa.int64())}), path)
    return {"kind": "keys", "file": path.name, "rows": int(keys.size), "fingerprint": file_fingerprint(path)}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign")
    for seed, date in ((1, PREVIOUS), (2, DAY)):
        schema.write_partition(root, date, _day_table(seed), dataset=SPEC)
    trained = {}
    for name, mechanism, epsilon in (("f-none", "none", math.inf), ("f-rr", "rr", 2.0)):
        _, record = training.train_and_register(listed_day(root, DAY), mechanism, epsilon, model_name=name,
                                                settings=FAST)   # also trains the reference on PREVIOUS
        trained[name] = encode(record)
    table = SPEC.to_internal(schema.read_partition(root, DAY))
    ids = table.column("row_id").to_numpy()
    keys = np.sort(np.random.default_rng(5).choice(ids, size=int(0.6 * ids.size), replace=False))
    outside = {"model_name": "outside", "date": DAY.isoformat(),
               "training_rows": _write_keys(model_dir(root, "outside", DAY), keys)}
    return {"root": root, "trained": trained, "table": table, "ids": ids, "keys": keys, "outside": outside,
            "trains": np.isin(ids, keys)}


# ------------------------------------------------------------------------------------------ training


def test_training_reads_the_spec_and_records_it(world):
    root, table = world["root"], world["table"]
    for name, metadata in world["trained"].items():
        assert metadata["feature_schema"] == SPEC.feature_schema()
        assert metadata["dataset"] == {"name": SPEC.name, "fingerprint": SPEC.fingerprint(), "spec": encode(SPEC)}
        handle = resolve_model(root, name, DAY)
        model = registry.load_model(handle)
        assert list(model.feature_names_) == list(SPEC.features)
        assert [model.feature_names_[i] for i in model.get_cat_feature_indices()] == list(SPEC.categorical)
        p = model.predict_proba(training.feature_frame(table, SPEC))
        assert p.shape == (table.num_rows, 2) and np.allclose(p.sum(axis=1), 1.0)
        assert np.allclose(handle.format.predict(handle, table, SPEC), p)
        split = splits.split_of(world["ids"])
        assert metadata["training_rows"]["rows"] == int((split != splits.TEST).sum())
    none = world["trained"]["f-none"]["test_metrics"]
    assert none["test_log_loss"] < none["test_log_loss_constant"]  # it learned the spec's features
    reference = encode(registry.read_metadata(root, "reference", PREVIOUS))
    assert reference["dataset"]["fingerprint"] == SPEC.fingerprint()
    assert world["trained"]["f-rr"]["mechanism"]["name"] == "rr"
    assert training.reuse_mismatch(world["trained"]["f-rr"], mechanism="rr", epsilon=2.0, seed=0,
                                   partition_fingerprint=schema.partition_fingerprint(root, DAY), settings=FAST,
                                   dataset=SPEC) is None


def test_feature_frame_keeps_missing_values_and_integer_categories(world):
    day = training.load_day(listed_day(world["root"], DAY))
    assert day.dataset == SPEC and list(day.features.columns) == list(SPEC.features)
    assert day.features["price"].isna().any() and day.features["price"].dtype == np.float64
    assert set(day.features["slot"].cat.categories) == {str(i) for i in range(1, 13)}
    assert (day.features["country"] == "").any()  # missing -> ""
    assert np.array_equal(day.row_ids, world["ids"])


def test_a_dataset_with_three_classes_is_refused(tmp_path):
    three = dataclasses.replace(SPEC, classes=3, name="three")
    schema.write_partition(tmp_path, DAY, _day_table(3, rows=200, classes=3), dataset=three)
    with pytest.raises(LabelDPInputError, match=r"'three'.*3 classes: training fits binary"):
        training.load_day(listed_day(tmp_path, DAY))


# ------------------------------------------------------------------------------------------ row selection


def test_a_keys_record_selects_exactly_its_keys(world):
    directory = model_dir(world["root"], "outside", DAY)
    selection = audit_rows.row_selection("training", metadata_of(world["outside"]), directory)
    assert isinstance(selection, audit_rows.KeysSelection)
    assert np.array_equal(selection.mask(world["ids"]), world["trains"])
    assert selection.model == "outside" and selection.rows == world["keys"].size
    described = selection.describe()
    assert described["training_rows_kind"] == "keys" and described["training_rows"] == world["keys"].size
    assert described["audit_rows"] == "training"
    assert np.array_equal(pickle.loads(pickle.dumps(selection)).mask(world["ids"]), world["trains"])
    with pytest.raises(LabelDPInputError, match=r"training_rows\.parquet"):
        audit_rows.training_rows(metadata_of(world["outside"]))  # no model directory to read it from

    every = {"model_name": "outside-all", "date": DAY.isoformat(), "training_rows": {"kind": "all", "rows": ROWS}}
    selection = audit_rows.training_rows(metadata_of(every))
    assert selection.mask(world["ids"]).all() and selection.rows == ROWS
    assert selection.describe()["training_rows_kind"] == "all"
    with pytest.raises(LabelDPInputError, match=r"training_rows\.kind: unknown kind 'some'"):
        metadata_of({"model_name": "m", "date": DAY.isoformat(), "training_rows": {"kind": "some"}})


@pytest.mark.parametrize("damage", ["missing", "not parquet", "unsorted", "changed", "wrong count"])
def test_a_broken_keys_file_is_named(tmp_path, damage):
    keys = np.array([3, 1, 2], dtype=np.int64)
    record = _write_keys(tmp_path, keys)
    path = tmp_path / "training_rows.parquet"
    expected = re.escape(str(path))
    if damage == "missing":
        path.unlink()
    elif damage == "not parquet":
        path.write_bytes(b"not a parquet file")
        record.pop("fingerprint")
    elif damage == "unsorted":
        pq.write_table(pa.table({"row_id": pa.array(keys)}), path)
        record.pop("fingerprint")
        expected += ".*must be sorted and unique"
    elif damage == "changed":
        pq.write_table(pa.table({"row_id": pa.array([1, 2, 4])}), path)
        expected += " changed since registration"
    else:
        record["rows"] = 5
        expected = "rows is 5 but " + expected
    with pytest.raises(LabelDPInputError, match=expected):
        audit_rows.training_rows(metadata_of({"model_name": "m", "date": DAY.isoformat(), "training_rows": record}),
                                 tmp_path)


@pytest.mark.parametrize(("span", "kind"), [(4_000, "bitmap"), (10**15, "array")])
def test_a_keys_file_of_many_row_groups_is_read_in_batches(tmp_path, monkeypatch, span, kind):
    """Keys read a few at a time, the batches not aligned with the row groups, give the set of the whole file."""
    monkeypatch.setattr(audit_rows, "KEY_BATCH_ROWS", 7)
    rng = np.random.default_rng(span % 101)
    keys = np.sort(rng.choice(span, size=1_000, replace=False)).astype(np.int64) - span // 2
    path = tmp_path / "training_rows.parquet"
    pq.write_table(pa.table({"row_id": pa.array(keys, pa.int64())}), path, row_group_size=64)
    assert pq.ParquetFile(path).num_row_groups == 16
    ids_set = audit_rows.read_training_keys(path, "model 'm'", file_fingerprint(path))
    assert ids_set == IdSet.from_sorted(keys) and ids_set.kind == kind
    queries = np.concatenate([keys, keys + 1, rng.integers(-span, span, 2_000), [np.iinfo(np.int64).min]])
    record = {"kind": "keys", "file": path.name, "rows": int(keys.size), "fingerprint": file_fingerprint(path)}
    selection = audit_rows.training_rows(metadata_of({"model_name": "m", "date": DAY.isoformat(),
                                                      "training_rows": record}), tmp_path)
    assert selection.keys == ids_set and selection.rows == keys.size
    np.testing.assert_array_equal(selection.mask(queries), np.isin(queries, keys))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(selection)).mask(queries), np.isin(queries, keys))
    assert selection.describe() == {"audit_rows": "training", "training_rows_kind": "keys", "label_splits": None,
                                    "unread_rows": 0, "training_rows": keys.size,
                                    "training_keys_file": "training_rows.parquet"}


def test_a_dense_keys_file_is_held_as_a_bitmap(tmp_path):
    ids = np.arange(200_000, dtype=np.int64)
    keys = ids[splits.split_of(ids) == splits.TRAIN]  # the train split of ids assigned in order: ~80% of them
    path = tmp_path / "training_rows.parquet"
    pq.write_table(pa.table({"row_id": keys}), path, row_group_size=50_000)
    ids_set = audit_rows.read_training_keys(path, "model 'm'")
    assert ids_set.kind == "bitmap" and ids_set.size == keys.size
    assert ids_set.nbytes == (keys[-1] - keys[0]) // 8 + 1 <= 25_000  # a bit an id, not 8 bytes a key
    np.testing.assert_array_equal(ids_set.contains(ids), splits.split_of(ids) == splits.TRAIN)
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"row_id": pa.array([], pa.int64())}), empty)
    assert audit_rows.read_training_keys(empty, "model 'm'") == IdSet.empty()


@pytest.mark.parametrize(("table", "message"), [
    # one repeat and one decrease, each across a row group (and batch) boundary: counted over the whole file
    (pa.table({"row_id": pa.array([1, 2, 3, 3, 4, 5, 9, 6, 7], pa.int64())}),
     "column 'row_id' must be sorted and unique; 2 of 9 row(s) are not greater than the one before"),
    (pa.table({"row_id": pa.array([1, 2, 3, 4, 4, 6, 7, 8, 9], pa.int32())}),
     "column 'row_id' must be sorted and unique; 1 of 9 row(s) are not greater than the one before"),
    (pa.table({"row_id": pa.array([1, 2, 3, None, 5, 6, None, 8, 9], pa.int64())}),
     "column 'row_id': 2 row(s) are null"),
    (pa.table({"row_id": pa.array([3, 2, 1, None, 5, 6, 7, 8, 9], pa.int64())}),  # nulls first, as before
     "column 'row_id': 1 row(s) are null"),
    (pa.table({"impression_id": pa.array([1, 2, 3], pa.int64())}),
     "a training keys file holds one integer column 'row_id'; found impression_id: int64"),
    (pa.table({"row_id": pa.array(["1", "2"])}),
     "a training keys file holds one integer column 'row_id'; found row_id: string"),
])
def test_a_bad_keys_file_of_many_row_groups_gives_the_whole_file_error(tmp_path, monkeypatch, table, message):
    monkeypatch.setattr(audit_rows, "KEY_BATCH_ROWS", 2)
    path = tmp_path / "training_rows.parquet"
    pq.write_table(table, path, row_group_size=3)
    with pytest.raises(LabelDPInputError, match=re.escape(f"{path}: {message}")) as raised:
        audit_rows.read_training_keys(path, "model 'm'")
    assert str(raised.value).startswith(f"{path}: {message}")


def test_keys_at_the_ends_of_int64_are_sorted(tmp_path):
    """Keys are compared, not subtracted: the difference of int64's smallest and largest keys does not fit."""
    keys = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype=np.int64)
    path = tmp_path / "training_rows.parquet"
    pq.write_table(pa.table({"row_id": keys}), path, row_group_size=2)
    ids_set = audit_rows.read_training_keys(path, "model 'm'")
    np.testing.assert_array_equal(ids_set.contains(np.r_[keys, keys[1:] - 1]), [True] * 3 + [False] * 2)


def test_heldout_rows_of_keys_targets_are_the_rows_no_target_trained_on(world):
    root, ids, trains = world["root"], world["ids"], world["trains"]
    heldout = check_heldout([unregistered(world["outside"], root)])
    assert not heldout.builtin and np.array_equal(heldout.mask(ids), ~trains)
    # the correction fits a keyed share of the rows the target trained on, never a held-out row
    correction = correction_rows(heldout).in_correction(ids)
    assert not (correction & ~trains).any()
    assert np.array_equal(correction, trains & splits.correction_share(ids, splits.CORRECTION_SHARE))
    assert 0.05 < correction.sum() / trains.sum() < 0.15
    row_ids, frame, labels = correction_frame(world["table"], correction_rows(heldout), SPEC)
    assert np.array_equal(row_ids, ids[correction]) and list(frame.columns) == list(SPEC.features)
    assert np.array_equal(labels, world["table"].column("label").to_numpy()[correction])

    # with a target trained here too (split record): only its test split is held out from it
    mixed = check_heldout([unregistered(world["outside"], root), resolve_model(root, "f-rr", DAY)])
    assert np.array_equal(mixed.mask(ids), ~trains & (splits.split_of(ids) == splits.TEST))
    every = {"model_name": "outside-all", "date": DAY.isoformat(), "training_rows": {"kind": "all", "rows": ROWS}}
    with pytest.raises(ReferenceCheckSkipped, match=r"'outside-all' of 2024-07-02 read every row's label of day "
                                                    r"2024-07-02: no row is held out"):
        check_heldout([unregistered(world["outside"], root), unregistered(every, root)])
    with pytest.raises(LabelDPInputError, match=r"training_rows\.parquet"):  # the keys file is where the model is
        check_heldout([unregistered(world["outside"], root / "elsewhere")])


# ------------------------------------------------------------------------------------------ controls, recalibration


def test_check_rows_on_a_foreign_dataset_with_a_keys_target(world):
    """The capacity check's rows of a night whose target lists its training keys: every row in no target's keys
    (the reference's correction fits a share of the target's rows)."""
    root, ids, trains = world["root"], world["ids"], world["trains"]
    heldout = check_heldout([unregistered(world["outside"], root)])
    check_rows = CheckRowSelection(heldout)
    np.testing.assert_array_equal(check_rows.mask(ids), ~trains)
    assert not (check_rows.mask(ids) & trains).any()
    assert check_rows.describe()["scheme"]["excluded_keys"][0]["model"] == "outside"


def test_recalibration_on_a_foreign_dataset_with_a_keys_target(world):
    root, ids, trains = world["root"], world["ids"], world["trains"]
    metadata = recalibrate_reference(listed_day(root, DAY), "recalibrated", resolve_model(root, "reference", PREVIOUS),
                                     targets=[unregistered(world["outside"], root)], settings=RECALIBRATION).metadata
    correction = trains & splits.correction_share(ids, splits.CORRECTION_SHARE)
    assert metadata["correction_rows"]["rows"] == int(correction.sum())
    assert metadata["correction_rows"]["heldout_rows"] == int((~trains).sum())
    assert metadata["correction_rows"]["scheme"]["heldout"]["excluded_keys"][0]["model"] == "outside"
    assert metadata["recalibration"]["sum"]["max_abs_raw_difference"] <= 1e-9
    assert metadata["feature_schema"] == SPEC.feature_schema() and metadata["dataset"]["name"] == SPEC.name
    model = registry.load_model(resolve_model(root, "recalibrated", DAY))
    assert model.predict_proba(training.feature_frame(world["table"], SPEC)).shape == (ids.size, 2)
    lines = []
    again = recalibrate_reference(listed_day(root, DAY), "recalibrated", resolve_model(root, "reference", PREVIOUS),
                                  targets=[unregistered(world["outside"], root)], settings=RECALIBRATION,
                                  progress=lines.append).metadata
    assert again == metadata and "reusing" in lines[-1]
    changed = dataclasses.replace(RECALIBRATION, catboost=dataclasses.replace(FAST, border_count=32))
    refit = recalibrate_reference(listed_day(root, DAY), "recalibrated", resolve_model(root, "reference", PREVIOUS),
                                  targets=[unregistered(world["outside"], root)], settings=changed,
                                  progress=lines.append).metadata
    assert refit["recalibration"]["catboost_params"]["border_count"] == 32
    assert any(line.startswith("recalibrated reference: refitting") and "settings.catboost" in line for line in lines)
    every = {"model_name": "outside-all", "date": DAY.isoformat(), "training_rows": {"kind": "all", "rows": ROWS}}
    with pytest.raises(ReferenceCheckSkipped, match=r"'outside-all'.*no row is held out"):
        recalibrate_reference(listed_day(root, DAY), "recalibrated-all", resolve_model(root, "reference", PREVIOUS),
                              targets=[unregistered(every, root)])


def test_a_reference_of_another_format_is_not_recalibrated_but_copied(world):
    root = world["root"]
    oracle = controls.ensure_positive_control(listed_day(root, PREVIOUS), "oracle", 1.0, 0)
    with pytest.raises(ReferenceCheckSkipped, match="'rr-oracle' model"):
        recalibrate_reference(listed_day(root, DAY), "recalibrated-oracle", oracle, targets=[unregistered(world["outside"], root)])
    assert not model_dir(root, "recalibrated-oracle", DAY).exists()
    copy = controls.ensure_negative_control(listed_day(root, DAY), "negative-oracle", oracle)
    assert copy.format.name == "rr-oracle" and copy.metadata["model_file"] == oracle.metadata["model_file"]
    source, target = model_dir(root, "oracle", PREVIOUS), model_dir(root, "negative-oracle", DAY)
    assert (target / "oracle.json").read_bytes() == (source / "oracle.json").read_bytes()


def _registered_reference(world) -> np.ndarray:
    """A copy of the reference as a registered model whose training rows are keys of its day; returns them."""
    root = world["root"]
    source, copy = model_dir(root, "reference", PREVIOUS), model_dir(root, "registered", PREVIOUS)
    if not copy.exists():
        shutil.copytree(source, copy)
    ids = SPEC.to_internal(schema.read_partition(root, PREVIOUS)).column("row_id").to_numpy()
    keys = np.sort(ids[: ids.size // 2])
    metadata = json.loads((copy / registry.METADATA_FILE).read_text())
    metadata.update(model_name="registered", training_rows=_write_keys(copy, keys))
    (copy / registry.METADATA_FILE).write_text(json.dumps(metadata))
    return keys


def test_negative_control_copies_the_keys_file_and_shift_diagnostic_uses_the_spec(world):
    root = world["root"]
    keys = _registered_reference(world)
    copy = controls.ensure_negative_control(listed_day(root, DAY), "negative",
                                            resolve_model(root, "registered", PREVIOUS))
    target = model_dir(root, "negative", DAY)
    assert (target / "training_rows.parquet").is_file() and (target / "model.cbm").is_file()
    assert copy.metadata["feature_schema"] == SPEC.feature_schema() and copy.format.name == "catboost"

    diagnostic = shift_diagnostic(listed_day(root, DAY), resolve_model(root, "registered", PREVIOUS))
    assert set(diagnostic.feature_shift.per_feature) == set(SPEC.features)
    previous = diagnostic.fit_previous
    assert previous.rows_rule == "rows not in its training keys" and previous.rows == ROWS - keys.size
    assert diagnostic.fit_current.rows == int((splits.split_of(world["ids"]) == splits.TEST).sum())
    assert math.isfinite(diagnostic.reference_log_loss_shift)


def test_the_beam_job_audits_a_keys_model_and_checks_it_on_the_held_out_rows(world):
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    root = world["root"]
    target = model_dir(root, "keys-model", DAY)
    if not target.exists():  # the reference's model file, registered for day D with the outside target's keys
        shutil.copytree(model_dir(root, "reference", PREVIOUS), target)
        metadata = json.loads((target / registry.METADATA_FILE).read_text())
        metadata.update(model_name="keys-model", date=DAY.isoformat(),
                        partition_fingerprint=schema.partition_fingerprint(root, DAY),
                        training_rows=_write_keys(target, world["keys"]))
        (target / registry.METADATA_FILE).write_text(json.dumps(metadata))
    check_rows = CheckRowSelection(check_heldout([unregistered(world["outside"], root)]))
    outcome = score_day(ScoringRequest(data_root=str(root), date=DAY, model="keys-model", reference="reference",
                                       reference_date=PREVIOUS, game=GameConfig(repetitions=2, seed=1),
                                       batch_size=1000, check_rows=check_rows))
    assert outcome.result.m == int(world["trains"].sum())
    audited = outcome.record["diagnostics"]["audited_rows"]
    assert audited["training_rows_kind"] == "keys" and audited["training_rows"] == int(world["trains"].sum())
    check = outcome.result.capacity_check
    assert check.checked and check.check_rows == int((~world["trains"]).sum())
