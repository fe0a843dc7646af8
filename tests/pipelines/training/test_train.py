"""End-to-end training of every mechanism on tiny synthetic partitions, the model registry, and the
`labeldp-audit train` command. Few iterations and ~6K rows a day, so the whole file runs in well under a
minute on 2 cores."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil

import numpy as np
import pyarrow as pa
import pytest

from flows.cli import main
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.data import schema, splits
from pipelines.data.day import listed_day
from pipelines.data.layout import model_dir
from pipelines.data.synth import write_synthetic_day
from pipelines.models import registry
from pipelines.models.handle import resolve_model
from pipelines.models.metadata import ABSENT, as_metadata
from pipelines.training import train as training

DAY0, DAY1 = dt.date(2024, 3, 1), dt.date(2024, 3, 2)
ROWS = 6000
FAST = training.CatBoostSettings(iterations=8, learning_rate=0.3, depth=4, thread_count=2)
SMALL_PATE = training.MechanismOptions(pate_teachers=3, pate_queries=300)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("labeldp")
    for date in (DAY0, DAY1):
        write_synthetic_day(root, date, rows=ROWS)
    return root


@pytest.fixture(scope="module")
def day1(data_root):
    return training.load_day(listed_day(data_root, DAY1))


@pytest.fixture(scope="module")
def reference(data_root):
    return training.ensure_reference(listed_day(data_root, DAY1), "reference", "train", seed=0, settings=FAST)


def _strict_json(path):
    def refuse(constant):
        raise AssertionError(f"non-strict JSON constant {constant} in {path}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_feature_frame_types_and_missing_values(day1):
    frame = day1.features
    assert list(frame.columns) == [item["name"] for item in registry.feature_schema()]
    assert all(frame[name].dtype == np.float64 for name in schema.NUMERIC_COLUMNS)
    assert frame[schema.NUMERIC_COLUMNS].isna().any().any()             # missing counts stay NaN
    for name in schema.CATEGORICAL_COLUMNS:
        assert frame[name].dtype == "category" and not frame[name].isna().any()   # missing -> ""
    assert (frame[schema.CATEGORICAL_COLUMNS] == "").any().any()


@pytest.mark.parametrize(("mechanism", "epsilon", "prior"), [
    ("none", math.inf, "uniform"),
    ("rr", 1.0, "uniform"),
    ("lp-1st", 4.0, "reference"),
    ("lp-1st-nc", 1.0, "uniform"),
    ("lp-2st", 2.0, "reference"),
    ("alibi", 2.0, "reference"),
    ("pate", 8.0, "uniform"),
])
def test_every_mechanism_trains_registers_and_loads(data_root, reference, mechanism, epsilon, prior):
    options = training.MechanismOptions(prior=prior, pate_teachers=3, pate_queries=300)
    name = f"t-{mechanism}"
    directory, record = training.train_and_register(listed_day(data_root, DAY1), mechanism, epsilon, model_name=name,
                                                    seed=3, settings=FAST, options=options)
    metadata = encode(record)
    assert directory == model_dir(data_root, name, DAY1)
    stored = _strict_json(directory / registry.METADATA_FILE)
    assert stored == metadata
    # the record writes back the file it was read from, byte for byte (a key left out stays out, a null a null)
    text = (directory / registry.METADATA_FILE).read_text()
    assert json.dumps(encode(as_metadata(json.loads(text))), indent=2, sort_keys=True,
                      allow_nan=False) + "\n" == text
    assert record.mechanism.name == mechanism and record.training_rows.kind_name == "split"
    assert record.reference.model == "reference" and record.format is ABSENT and record.dataset is ABSENT
    for key in registry.REQUIRED_METADATA:
        assert key in metadata
    assert registry.claimed_epsilon(metadata) == epsilon
    assert metadata["mechanism"]["name"] == mechanism and metadata["seed"] == 3
    assert metadata["mechanism"]["delta"] == (1e-5 if mechanism == "pate" else 0.0)
    assert metadata["partition_fingerprint"] == schema.partition_fingerprint(data_root, DAY1)
    assert metadata["reference"]["date"] == DAY0.isoformat() and metadata["reference"]["used_as_prior"] == (prior == "reference")
    assert metadata["catboost_params"]["allow_writing_files"] is False
    assert metadata["code_version"]["package"] == "labeldp-audit"
    metrics = metadata["test_metrics"]
    assert 0.0 < metrics["test_log_loss"] < 1.0 and 0.0 <= metrics["test_accuracy"] <= 1.0
    handle = resolve_model(data_root, name, DAY1)
    model, loaded = registry.load_model(handle), handle.metadata
    assert loaded == metadata
    table = schema.read_partition(data_root, DAY1)
    registry.check_features(loaded, table.schema)
    probabilities = model.predict_proba(training.feature_frame(table))
    assert probabilities.shape == (table.num_rows, 2) and np.allclose(probabilities.sum(axis=1), 1.0)
    assert (metadata["output_correction"] is not None) == (mechanism == "lp-1st-nc")
    # the rows whose labels entered training; PATE's student rows' labels were never read
    rows = metadata["training_rows"]
    assert rows["split"] == splits.scheme() and rows["label_splits"][0] == "train"
    assert ("validation" in rows["label_splits"]) == bool(rows["validation_labels_used_for"])
    if mechanism in ("lp-2st", "pate", "lp-1st-nc"):
        assert "validation" in rows["label_splits"]
    assert len(rows["unread_row_ids"]) == (300 if mechanism == "pate" else 0)
    split = splits.split_of(table.column(schema.ROW_ID).to_numpy())
    used = np.isin(split, [splits.TRAIN] + ([splits.VALIDATION] if "validation" in rows["label_splits"] else []))
    assert rows["rows"] == int(used.sum()) - len(rows["unread_row_ids"])


def test_infinite_epsilon_reproduces_plain_training(day1, reference):
    model_ref, _ = reference
    test = day1.rows(splits.TEST)
    frame = day1.features.iloc[test]
    plain = training.train_model(day1, "none", math.inf, seed=5, settings=FAST)
    expected = plain.model.predict_proba(frame)
    assert np.array_equal(plain.privatized_labels, day1.labels[day1.private_rows])
    for mechanism in ("rr", "lp-1st", "lp-1st-nc", "lp-2st"):
        result = training.train_model(day1, mechanism, math.inf, seed=5, settings=FAST, reference_model=model_ref)
        assert np.array_equal(result.privatized_labels, plain.privatized_labels), mechanism
        assert np.array_equal(result.model.predict_proba(frame), expected), mechanism
        assert result.metrics["test_log_loss"] == plain.metrics["test_log_loss"]
    alibi = training.train_model(day1, "alibi", math.inf, seed=5, settings=FAST, reference_model=model_ref)
    assert abs(alibi.metrics["test_log_loss"] - plain.metrics["test_log_loss"]) < 0.01  # one-hot CrossEntropy


def test_training_is_reproducible_from_the_seed_and_privatizes_train_and_validation_only(day1):
    a = training.train_model(day1, "rr", 1.0, seed=11, settings=FAST)
    b = training.train_model(day1, "rr", 1.0, seed=11, settings=FAST)
    c = training.train_model(day1, "rr", 1.0, seed=12, settings=FAST)
    assert np.array_equal(a.privatized_labels, b.privatized_labels)
    assert not np.array_equal(a.privatized_labels, c.privatized_labels)
    assert a.privatized_labels.size == np.sum(day1.split != splits.TEST)
    flips = np.mean(a.privatized_labels != day1.labels[day1.private_rows])
    assert abs(flips - 1 / (math.e + 1)) < 5 * math.sqrt(0.2 / a.privatized_labels.size)
    assert a.metrics["test_rows"] == np.sum(day1.split == splits.TEST)


def test_noise_correction_is_applied_on_load_and_improves_log_loss(data_root, day1):
    rr = training.train_model(day1, "rr", 1.0, seed=2, settings=FAST)
    nc = training.train_model(day1, "lp-1st-nc", 1.0, seed=2, settings=FAST)
    assert nc.metrics["test_log_loss"] < rr.metrics["test_log_loss"]
    registry.save_model(data_root, "nc-check", DAY1, nc.model, {
        "mechanism": nc.mechanism, "seed": 2, "partition_fingerprint": day1.fingerprint,
        "catboost_params": nc.catboost_params, "test_metrics": nc.metrics, "output_correction": nc.output_correction})
    handle = resolve_model(data_root, "nc-check", DAY1)
    model, metadata = registry.load_model(handle), handle.metadata
    frame = day1.features.iloc[:50]
    assert type(model).__name__ == "NoiseCorrectedClassifier"
    assert np.allclose(model.predict_proba(frame), nc.model.predict_proba(frame))
    assert metadata["output_correction"]["floor"] == nc.output_correction["floor"]
    with pytest.raises(LabelDPInputError, match="would skip the noise correction"):
        model.predict(frame, prediction_type="RawFormulaVal")


def test_degenerate_privatized_labels_give_a_constant_model(day1, reference):
    # LP-1ST with the domain prior at eps = 0.1: every row's optimal set is {no click}.
    result = training.train_model(day1, "lp-1st", 0.1, seed=0, settings=FAST, reference_model=reference[0])
    assert result.metrics["degenerate"] and np.all(result.privatized_labels == 0)
    probabilities = result.model.predict_proba(day1.features.iloc[:100])
    assert np.allclose(probabilities[:, 1], probabilities[0, 1]) and probabilities[0, 1] < 1e-3


def test_registry_write_is_atomic(data_root, day1, monkeypatch):
    result = training.train_model(day1, "none", math.inf, seed=0, settings=FAST)
    metadata = {"mechanism": result.mechanism, "seed": 0, "partition_fingerprint": day1.fingerprint,
                "catboost_params": result.catboost_params, "test_metrics": result.metrics}
    target = model_dir(data_root, "atomic", DAY1)

    def broken_save(path, format="cbm"):
        with open(path, "wb") as handle:
            handle.write(b"half a model")
        raise OSError("disk full")

    monkeypatch.setattr(result.model, "save_model", broken_save)
    with pytest.raises(OSError, match="disk full"):
        registry.save_model(data_root, "atomic", DAY1, result.model, metadata)
    assert not target.exists()
    # No temporary directory left behind (atomic_directory may also remove the empty models/<name>/ parent).
    assert not target.parent.exists() or [p.name for p in target.parent.iterdir()] == []
    monkeypatch.undo()
    registry.save_model(data_root, "atomic", DAY1, result.model, metadata)
    before = (target / registry.METADATA_FILE).read_text()
    monkeypatch.setattr(result.model, "save_model", broken_save)
    with pytest.raises(OSError):
        registry.save_model(data_root, "atomic", DAY1, result.model, {**metadata, "seed": 99})
    assert (target / registry.METADATA_FILE).read_text() == before  # the old model survives a failed rewrite


def test_registry_refuses_pickle_free_violations_and_missing_models(data_root):
    with pytest.raises(LabelDPInputError, match=r"no model 'nope' for 2024-03-02: .*models/nope/date=2024-03-02"):
        resolve_model(data_root, "nope", DAY1)
    broken = model_dir(data_root, "broken", DAY1)
    broken.mkdir(parents=True)
    (broken / registry.METADATA_FILE).write_text("{not json")
    with pytest.raises(LabelDPInputError, match=r"metadata\.json: not readable JSON"):
        resolve_model(data_root, "broken", DAY1)
    shutil.rmtree(broken)
    assert not list(data_root.rglob("*.pkl")) and not list(data_root.rglob("*.pickle"))


def test_check_features_names_missing_and_mismatched_columns(data_root, reference):
    _model, handle = reference
    metadata = handle.metadata
    table = schema.read_partition(data_root, DAY1)
    bad = table.drop_columns(["C3", "I5"]).set_column(
        table.schema.get_field_index("I2"), "I2", pa.array(["x"] * table.num_rows))
    with pytest.raises(LabelDPInputError) as info:
        registry.check_features(metadata, bad.schema)
    message = str(info.value)
    assert "missing column(s) ['I5', 'C3']" in message
    assert "I2 (model: numeric" in message and "table: string" in message
    assert "'reference'" in message


def test_cli_trains_and_reports(data_root, capsys):
    code = main(["train", "--date", DAY1.isoformat(), "--mechanism", "rr", "--epsilon", "2", "--model-name", "cli-rr",
                 "--data-root", str(data_root), "--iterations", "5", "--depth", "4", "--seed", "4"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "test       log-loss" in out.out and "2-label-DP" in out.out
    assert "[train +" in out.err
    assert encode(registry.read_metadata(data_root, "cli-rr", DAY1))["catboost_params"]["iterations"] == 5


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--date", "2024-02-30", "--mechanism", "rr", "--epsilon", "1"], "date is not a valid calendar date"),
    (["--date", "2023-01-01", "--mechanism", "rr", "--epsilon", "1"], "no partition at"),
    (["--date", DAY1.isoformat(), "--mechanism", "none", "--epsilon", "1"], "mechanism 'none' is non-private"),
    (["--date", DAY0.isoformat(), "--mechanism", "lp-1st", "--epsilon", "1", "--on-missing-reference", "fail"],
     "no reference model at"),
    (["--date", DAY1.isoformat(), "--mechanism", "rr", "--epsilon", "1", "--model-name", "../evil"], "--model-name may contain"),
    (["--date", DAY1.isoformat(), "--mechanism", "pate", "--epsilon", "1", "--pate-queries", "0"], "pate_queries must be"),
    (["--date", DAY1.isoformat(), "--mechanism", "rr", "--epsilon", "1", "--depth", "0"], "depth must be"),
])
def test_cli_bad_input_exits_2_with_a_message(data_root, capsys, argv, fragment):
    code = main(["train", *argv, "--data-root", str(data_root), "--iterations", "3"])
    err = capsys.readouterr().err
    assert code == 2
    assert fragment in err, err


def test_cli_rejects_bad_epsilon_as_usage_error(data_root, capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--date", DAY1.isoformat(), "--mechanism", "rr", "--epsilon", "-1", "--data-root", str(data_root)])
    assert info.value.code == 2
    assert "must be > 0 or inf" in capsys.readouterr().err


def test_first_day_trains_without_a_reference_when_told_to_skip(data_root, capsys):
    # DAY0 has no day before it: `skip` goes on for a mechanism that needs no prior ...
    code = main(["train", "--date", DAY0.isoformat(), "--mechanism", "rr", "--epsilon", "4", "--model-name", "first-day",
                 "--on-missing-reference", "skip", "--data-root", str(data_root), "--iterations", "3"])
    assert code == 0, capsys.readouterr().err
    assert registry.read_metadata(data_root, "first-day", DAY0).reference is None
    # ... but not for one that uses the reference as its prior, and never trains day D-1's partition.
    code = main(["train", "--date", DAY0.isoformat(), "--mechanism", "alibi", "--epsilon", "4", "--on-missing-reference",
                 "skip", "--data-root", str(data_root), "--iterations", "3"])
    assert code == 2 and "no reference model at" in capsys.readouterr().err
