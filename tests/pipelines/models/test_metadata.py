"""A model's metadata as a typed record (`pipelines.models.metadata.ModelMetadata`): ``as_metadata`` is the one
reader of ``metadata.json`` and names the file and the field of a bad, unknown or missing key; an older file
(without the keys added since) reads with its defaults; ``labeldp.codec.encode`` writes back exactly the JSON read (absent keys stay absent,
nulls stay null, numbers keep their JSON type), so files, fingerprints and reports do not change.
It writes what the hand-written ``to_dict`` wrote before the codec (fixtures/metadata_before.json), and an
ONNX model's metadata written before the input mapping reads as its upgrade.

The round trips of metadata written by training (every mechanism) and by registration (every format) are in
tests/pipelines/training/test_train.py and tests/pipelines/models/test_registration.py; the night's own models
(the controls, the
recalibrated reference) are read back here and by benchmarks/golden_outputs.py."""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import pickle
from pathlib import Path

import pytest

from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from pipelines.data.day import listed_day
from pipelines.models.metadata import ABSENT, TrainingRows, as_metadata

DAY = dt.date(2024, 3, 2)

# a model trained before formats, datasets, training rows and lineage were recorded: the required keys only
OLD = {"metadata_version": 1, "model_name": "rr-eps1", "date": DAY.isoformat(),
       "mechanism": {"name": "rr", "epsilon": 1, "delta": 0.0, "unit": "row", "guarantee": "1-label-DP",
                     "parameters": {}},
       "seed": 0, "partition_fingerprint": "sha256:" + "a" * 64,
       "feature_schema": [{"name": "I1", "kind": "numeric"}, {"name": "C1", "kind": "categorical"}],
       "catboost_params": {"depth": 6}, "test_metrics": {"test_log_loss": 0.5},
       "code_version": {"package": "labeldp-audit", "version": None, "git_commit": None, "git_dirty": None},
       "created_at": "2024-03-02T00:00:00+00:00"}


def dumped(metadata: dict) -> str:
    return json.dumps(metadata, indent=2, sort_keys=True, allow_nan=False) + "\n"


def test_an_old_file_reads_with_the_defaults_and_writes_back_unchanged():
    record = as_metadata(copy.deepcopy(OLD), "old/metadata.json")
    assert record.format is ABSENT and record.format_name == "catboost"
    assert record.artifact_name == "model.cbm" and record.origin == "trained"
    assert record.dataset is ABSENT and record.training_rows is ABSENT and record.reference is ABSENT
    assert not record.output_correction and not record.training_rows
    assert record.date == DAY and record.feature_names == ["I1", "C1"] and record.feature_schema[1].kind == "categorical"
    assert record.claimed_epsilon == 1.0 and record.mechanism.catboost_seed is ABSENT
    assert encode(record) == OLD  # no key added
    assert dumped(encode(record)) == dumped(OLD)
    assert json.dumps(encode(record)["mechanism"]["epsilon"]) == "1"  # an int stays an int


def test_null_and_absent_stay_apart_and_inf_stays_a_string():
    data = {**copy.deepcopy(OLD), "reference": None, "output_correction": None, "training_rows": None,
            "mechanism": {"name": "none", "epsilon": "inf", "delta": 0.0}}
    record = as_metadata(data)
    assert record.reference is None and record.output_correction is None and record.training_rows is None
    assert math.isinf(record.claimed_epsilon)
    assert encode(record) == data and encode(record)["mechanism"]["epsilon"] == "inf"
    assert "reference" not in encode(as_metadata(copy.deepcopy(OLD)))


def test_the_record_is_frozen_and_pickles_with_absent_intact():
    record = as_metadata(copy.deepcopy(OLD))
    with pytest.raises(AttributeError):
        record.seed = 1  # type: ignore[misc]
    again = pickle.loads(pickle.dumps(record))
    assert again == record and again.dataset is ABSENT


def test_the_kinds_of_training_rows_records():
    keys = {"kind": "keys", "file": "training_rows.parquet", "rows": 3, "fingerprint": "sha256:" + "b" * 64}
    split = {"split": {"hash": "splitmix64"}, "label_splits": ["train"], "validation_labels_used_for": [],
             "unread_row_ids": [4, 2], "rows": 10}
    for record, kind in ((keys, "keys"), ({"kind": "all", "rows": None}, "all"), (split, "split")):
        read = decode(TrainingRows, record, "f: training_rows")
        assert read.kind_name == kind and encode(read) == record
    assert decode(TrainingRows, split, "f: training_rows").unread_row_ids == (4, 2)


@pytest.mark.parametrize(("change", "message"), [
    ({"colour": "red"}, r"old/metadata\.json: metadata: unknown field\(s\) \['colour'\]"),
    ({"mechanism": {"name": "rr", "epsilon": 1.0, "delta": 0.0, "sigma": 2}},
     r"old/metadata\.json: metadata\.mechanism: unknown field\(s\) \['sigma'\]"),
    ({"mechanism": {"name": "rr", "epsilon": "lots", "delta": 0.0}},
     r"old/metadata\.json: metadata\.mechanism\.epsilon must be a number >= 0 or \"inf\"; got 'lots'"),
    ({"mechanism": {"name": "rr", "delta": 0.0}}, r"old/metadata\.json: metadata\.mechanism: missing field\(s\) \['epsilon'\]"),
    ({"date": "2024-13-01"}, r"old/metadata\.json: metadata\.date must be a date YYYY-MM-DD; got '2024-13-01'"),
    ({"seed": "0"}, r"old/metadata\.json: metadata\.seed must be a whole number; got '0'"),
    ({"feature_schema": [{"name": "I1", "kind": "numeric"}, {"name": "C1", "kind": "text"}]},
     r"old/metadata\.json: metadata\.feature_schema\[1\]\.kind must be 'numeric' or 'categorical'; got 'text'"),
    ({"training_rows": {"kind": "some"}}, r"old/metadata\.json: metadata\.training_rows\.kind: unknown kind 'some'"),
    ({"training_rows": {"kind": "all", "rows": -1}}, r"training_rows\.rows must be a whole number >= 0"),
    ({"onnx": {"input": "x", "output": 3, "zipmap_output": None}}, r"onnx\.output: expected a string; got 3"),
    ({"predictions_for": "yesterday"}, r"predictions_for must be a date YYYY-MM-DD"),
    ({"code_version": []}, r"old/metadata\.json: metadata\.code_version: expected a record \(mapping\); got list"),
])
def test_a_bad_or_unknown_field_is_named_with_the_file(change, message):
    with pytest.raises(LabelDPInputError, match=message):
        as_metadata({**copy.deepcopy(OLD), **change}, "old/metadata.json")


def test_a_missing_required_key_is_named():
    data = {key: value for key, value in OLD.items() if key not in ("seed", "created_at")}
    with pytest.raises(LabelDPInputError, match=r"old/metadata\.json: metadata: missing field\(s\) \['seed', 'created_at'\]"):
        as_metadata(data, "old/metadata.json")


def test_resolving_a_model_reads_its_metadata_once_through_the_reader(tmp_path):
    from pipelines.data.layout import model_dir
    from pipelines.models.handle import resolve_model

    directory = model_dir(tmp_path, "rr-eps1", DAY)
    directory.mkdir(parents=True)
    (directory / "model.cbm").write_bytes(b"not read here")
    (directory / "metadata.json").write_text(dumped(OLD))
    handle = resolve_model(tmp_path, "rr-eps1", DAY)
    assert handle.meta == as_metadata(OLD) and handle.metadata == OLD
    assert handle.format.name == "catboost" and handle.claimed_epsilon == 1.0
    assert handle.lineage()["claimed_epsilon"] == 1 and handle.lineage()["source"] == "trained"
    (directory / "metadata.json").write_text(dumped({**OLD, "format": 7}))
    with pytest.raises(LabelDPInputError, match=rf"{directory / 'metadata.json'}: metadata.format: expected a string; got 7"):
        resolve_model(tmp_path, "rr-eps1", DAY)


def test_the_positive_control_round_trips(tmp_path):
    from pipelines.data import synth
    from pipelines.models.registry import METADATA_FILE
    from pipelines.reference import controls

    synth.write_synthetic_day(tmp_path, DAY, rows=400)
    oracle = controls.ensure_positive_control(listed_day(tmp_path, DAY), "oracle", 1.0, 0)
    text = (oracle.directory / METADATA_FILE).read_text()
    assert dumped(encode(as_metadata(json.loads(text)))) == text
    assert oracle.meta.model_type == "rr-label-oracle" and oracle.meta.format is ABSENT
    assert oracle.format.name == "rr-oracle" and oracle.meta.reference is None


# A recalibrated reference's keys as main wrote them (benchmarks/golden_outputs.py's reference-calibrated@2026-09-02,
# its recalibration record cut to two of its keys): the source it corrects is read from the record once.
SOURCE = {"date": "2026-09-01", "fingerprint": "sha256:a9eec72dac2ab7856e5d9820974ab54410bad259b7548a3b3ff46fb8987d8aeb",
          "name": "reference",
          "partition_fingerprint": "sha256:644a92bafadcb95a2401c466ac734486a43e082211278d2dfeef7d89fec23c94"}
RECALIBRATED = {**OLD, "metadata_version": 2, "model_type": "recalibrated-reference", "reference": SOURCE,
                "recalibration": {"intercept": 0.25, "source_reference": SOURCE}}


def test_a_recalibrated_references_source_reads_as_its_lineage_and_writes_back_unchanged():
    from pipelines.models.handle import source_fingerprint

    record = as_metadata(copy.deepcopy(RECALIBRATED), "calibrated/metadata.json")
    source = record.recalibrated_from
    assert (source.name, source.date, source.fingerprint) == ("reference", dt.date(2026, 9, 1), SOURCE["fingerprint"])
    assert source.partition_fingerprint == SOURCE["partition_fingerprint"]
    assert source_fingerprint(record) == SOURCE["fingerprint"]
    assert dumped(encode(record)) == dumped(RECALIBRATED)
    for other in (OLD, {**OLD, "recalibration": {"intercept": 0.25}}):  # not recalibrated; a record without a source
        assert as_metadata(copy.deepcopy(other)).recalibrated_from is None
        assert source_fingerprint(as_metadata(copy.deepcopy(other))) is None


METADATA_BEFORE = json.loads((Path(__file__).parent / "fixtures" / "metadata_before.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(METADATA_BEFORE["written"]))
def test_model_metadata_writes_what_its_hand_written_to_dict_wrote(name):
    """tests/pipelines/models/fixtures/metadata_before.json: stored metadata shapes and what
    ``ModelMetadata.to_dict`` wrote for them before the codec (keys absent stay absent, nulls stay null, an int
    stays an int, epsilon "inf")."""
    from pipelines.models.metadata import as_metadata

    record = as_metadata(json.loads(json.dumps(METADATA_BEFORE["inputs"][name])), name)
    assert json.dumps(encode(record), indent=1) == json.dumps(METADATA_BEFORE["written"][name], indent=1)
    assert as_metadata(encode(record), name) == record


def test_metadata_of_an_onnx_model_registered_before_the_mapping_reads_as_its_upgrade():
    from pipelines.models.metadata import METADATA_VERSION, as_metadata

    old = {"metadata_version": 1, "model_name": "team-ctr", "date": "2025-03-02", "source": "registered",
           "format": "onnx", "model_file": "model.onnx", "mechanism": {"name": "external", "epsilon": 1, "delta": 0.0},
           "seed": None, "partition_fingerprint": None, "catboost_params": None, "test_metrics": None,
           "feature_schema": [{"name": "f1", "kind": "numeric"}, {"name": "f2", "kind": "numeric"}],
           "code_version": {"package": "labeldp-audit"}, "created_at": "2025-03-02T00:00:00+00:00", "classes": 2,
           "onnx": {"input": "features", "output": "probability_tensor", "zipmap_output": "probabilities"}}
    record = as_metadata(copy.deepcopy(old), "old/metadata.json")
    assert METADATA_VERSION == 2 and record.metadata_version == 2
    assert [encode(item) for item in record.onnx.inputs] == [
        {"name": "features", "columns": ["f1", "f2"], "type": "float", "rank": 2}]
    assert record.onnx.output == "probability_tensor" and not record.onnx.probe
    written = encode(record)
    assert as_metadata(written) == record
    assert written["onnx"] == {"inputs": [{"name": "features", "columns": ["f1", "f2"], "type": "float", "rank": 2}],
                               "output": "probability_tensor", "zipmap_output": "probabilities"}
    with pytest.raises(LabelDPInputError, match=r"old/metadata\.json: metadata_version 3 is not one this "
                                                r"labeldp-audit reads \(1\.\.2\)"):
        as_metadata({**old, "metadata_version": 3}, "old/metadata.json")
    with pytest.raises(LabelDPInputError, match=r"ONNX input 'x': rank must be 1 \(one column\) or 2; got 1"):
        as_metadata({**written, "onnx": {**written["onnx"], "inputs": [
            {"name": "x", "columns": ["f1", "f2"], "type": "float", "rank": 1}]}}, "new/metadata.json")
