"""Registering models trained elsewhere (`pipelines.models.registration`, ``labeldp-audit models``), with real
parts: a CatBoost model trained here and its ONNX export, real Parquet partitions and key files, the CLI's main.

The metadata follows the contract other modules read (docs/model_registry.md); registering again is a no-op or
a refusal; every bad input exits 2 with one line and leaves nothing in the registry.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.models.metadata import ABSENT, as_metadata
from tests.support.numeric_clicks import DAY, ROWS, SPEC, TRAIN_ROWS, fit, make_world, write_day


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("registration"))


@pytest.fixture
def root(tmp_path, files):
    """A fresh data root holding day DAY of the numeric dataset."""
    root = tmp_path / "data"
    write_day(root, files)
    return root


def _cli(*argv) -> int:
    from flows.cli import main

    return main([str(a) for a in argv])


def _sha256(path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_onnx_registration_writes_the_metadata_contract(root, files):
    from pipelines.data.schema import partition_fingerprint
    from pipelines.models.registration import register_model
    from pipelines.models.registry import read_metadata

    returned = register_model(root, "team-ctr", DAY, files["onnx"], fmt="onnx", claimed_epsilon=float("inf"),
                              delta=1e-6, dataset=files["spec"], training_rows=files["keys"])
    directory = root / "models" / "team-ctr" / f"date={DAY}"
    assert sorted(p.name for p in directory.iterdir()) == ["metadata.json", "model.onnx", "training_rows.parquet"]
    metadata = encode(read_metadata(root, "team-ctr", DAY))
    assert returned.already_registered is False and encode(returned.metadata) == metadata
    spec = files["spec"]
    expected = {
        "metadata_version": 2, "model_name": "team-ctr", "date": DAY.isoformat(), "source": "registered",
        "format": "onnx", "model_file": "model.onnx", "fingerprint": _sha256(files["onnx"]),
        "registered_from": "ctr.onnx", "mechanism": {"name": "external", "epsilon": "inf", "delta": 1e-6},
        "dataset": {"name": "num_clicks", "fingerprint": spec.fingerprint(), "spec": encode(spec)},
        "feature_schema": [{"name": name, "kind": "numeric"} for name in SPEC["numeric"]], "classes": 2,
        "training_rows": {"kind": "keys", "file": "training_rows.parquet", "rows": TRAIN_ROWS,
                          "fingerprint": _sha256(directory / "training_rows.parquet")},
        "seed": None, "partition_fingerprint": partition_fingerprint(root, DAY), "catboost_params": None,
        "test_metrics": None,
    }
    assert {key: metadata[key] for key in expected} == expected
    assert "predictions_for" not in metadata
    assert metadata["code_version"]["package"] == "labeldp-audit" and metadata["created_at"].endswith("+00:00")
    assert (directory / "model.onnx").read_bytes() == files["onnx"].read_bytes()
    keys = pq.read_table(directory / "training_rows.parquet")
    assert keys.schema.names == ["row_id"] and keys.schema.field(0).type == pa.int64()
    shuffled = pq.read_table(files["keys"]).column(0).to_numpy()
    np.testing.assert_array_equal(keys.column(0).to_numpy(), np.sort(shuffled))


def test_a_catboost_registration_on_all_rows_and_a_predictions_table(root, files, tmp_path):
    from pipelines.models.registration import register_model

    cbm = encode(register_model(root, "team-cbm", DAY, files["cbm"], fmt="catboost", claimed_epsilon=0.0,
                         dataset=None).metadata)  # None: the spec day D's partition was written with
    assert cbm["training_rows"] == {"kind": "all", "rows": ROWS}
    assert cbm["dataset"]["name"] == "num_clicks" and cbm["catboost_params"]["depth"] == 4
    assert cbm["mechanism"] == {"name": "external", "epsilon": 0.0, "delta": 0.0}
    table = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"impression_id": files["log"].column("impression_id"),
                             "prob_1": np.full(ROWS, 0.25)}), table)
    later = DAY + dt.timedelta(days=1)
    logged = encode(register_model(root, "reference", DAY - dt.timedelta(days=1), table, fmt="predictions",
                            claimed_epsilon=float("inf"), dataset=files["spec"], predictions_for=DAY).metadata)
    # no partition for the model's own day: no row count, no fingerprint; the table answers for DAY
    assert logged["training_rows"] == {"kind": "all", "rows": None} and logged["partition_fingerprint"] is None
    assert logged["predictions_for"] == DAY.isoformat() and logged["feature_schema"] == []
    assert logged["rows"] == ROWS
    assert logged["predictions"] == {"key_column": "impression_id", "probability_columns": ["prob_1"]}
    default = encode(register_model(root, "scores", later, table, fmt="predictions", claimed_epsilon=1.0,
                             dataset=files["spec"]).metadata)
    assert default["predictions_for"] == later.isoformat()
    with pytest.raises(LabelDPInputError, match=r"^predictions_for applies to a table of logged predictions"):
        register_model(root, "x", DAY, files["cbm"], fmt="catboost", claimed_epsilon=1.0, dataset=None,
                       predictions_for=DAY)
    assert not (root / "models" / "x").exists()


def test_the_metadata_of_every_format_round_trips_byte_for_byte(root, files, tmp_path):
    from pipelines.models.registration import register_model

    table = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"impression_id": files["log"].column("impression_id"),
                             "prob_1": np.full(ROWS, 0.25)}), table)
    register_model(root, "m-onnx", DAY, files["onnx"], fmt="onnx", claimed_epsilon=float("inf"), delta=1e-6,
                   dataset=files["spec"], training_rows=files["keys"])
    register_model(root, "m-cbm", DAY, files["cbm"], fmt="catboost", claimed_epsilon=0.5, dataset=None)
    register_model(root, "m-log", DAY - dt.timedelta(days=1), table, fmt="predictions", claimed_epsilon=1.0,
                   dataset=files["spec"], predictions_for=DAY)
    read = {}
    for name, day in (("m-onnx", DAY), ("m-cbm", DAY), ("m-log", DAY - dt.timedelta(days=1))):
        text = (root / "models" / name / f"date={day}" / "metadata.json").read_text()
        read[name] = as_metadata(json.loads(text), name)
        assert json.dumps(encode(read[name]), indent=2, sort_keys=True, allow_nan=False) + "\n" == text
        assert read[name].origin == "registered" and read[name].seed is None and read[name].test_metrics is None
    onnx, cbm, logged = read["m-onnx"], read["m-cbm"], read["m-log"]
    assert onnx.format_name == "onnx" and onnx.onnx.output and onnx.training_rows.kind == "keys"
    assert onnx.training_rows.fingerprint.startswith("sha256:") and onnx.claimed_epsilon == float("inf")
    assert onnx.predictions_for is ABSENT and onnx.catboost_params is None
    assert cbm.catboost_params["depth"] == 4 and cbm.training_rows.kind_name == "all" and cbm.onnx is ABSENT
    assert logged.predictions_for == DAY and logged.predictions.probability_columns == ("prob_1",)
    assert logged.training_rows.rows is None and logged.rows == ROWS


def test_registering_again_is_a_no_op_or_a_refusal(root, files):
    from pipelines.models.registration import find_registered, register_model

    def register(**changes):
        arguments = dict(fmt="catboost", claimed_epsilon=1.0, dataset=files["spec"], training_rows=files["keys"])
        return register_model(root, "team-ctr", DAY, changes.pop("file", files["cbm"]), **{**arguments, **changes})

    assert find_registered(root, "team-ctr", DAY) is None
    first = register()
    again = register()
    assert again.already_registered is True and again.metadata.created_at == first.metadata.created_at
    for changes, what in ((dict(claimed_epsilon=2.0), "claimed epsilon"), (dict(training_rows="all"), "training rows"),
                          (dict(file=files["onnx"], fmt="onnx"), "format, file")):
        with pytest.raises(LabelDPInputError, match=f"already registered at .* with a different {what}.*pass replace"):
            register(**changes)
    assert encode(find_registered(root, "team-ctr", DAY))["mechanism"]["epsilon"] == 1.0
    replaced = register(claimed_epsilon=2.0, training_rows="all", replace=True)
    assert replaced.already_registered is False
    stored = encode(find_registered(root, "team-ctr", DAY))
    assert stored["mechanism"]["epsilon"] == 2.0 and stored["training_rows"]["kind"] == "all"
    assert not (root / "models" / "team-ctr" / f"date={DAY}" / "training_rows.parquet").exists()


def test_models_register_list_and_show_on_the_command_line(root, files, capsys):
    assert _cli("models", "register", "--name", "team-ctr", "--date", DAY, "--file", files["onnx"],
                "--claimed-epsilon", "0.5", "--dataset", files["spec_path"], "--training-rows", files["keys"],
                "--data-root", root) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("registered onnx model team-ctr@2025-03-02 claiming eps 0.5")
    assert f"trained on {TRAIN_ROWS} listed rows" in out[0]
    assert _cli("models", "register", "--name", "team-ctr", "--date", DAY, "--file", files["onnx"],
                "--claimed-epsilon", "0.5", "--training-rows", files["keys"], "--data-root", root) == 0
    assert capsys.readouterr().out.startswith("already registered (unchanged) onnx model team-ctr@")
    assert _cli("models", "register", "--name", "team-cbm", "--date", DAY + dt.timedelta(days=3), "--file",
                files["cbm"], "--claimed-epsilon", "inf", "--dataset", files["spec_path"], "--data-root", root) == 0
    capsys.readouterr()

    assert _cli("models", "list", "--json", "--data-root", root) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(m["name"], m["date"], m["format"], m["claimed_epsilon"], m["training_rows"]) for m in listed] == [
        ("team-cbm", "2025-03-05", "catboost", "inf", "all"), ("team-ctr", "2025-03-02", "onnx", 0.5, "keys")]
    assert _cli("models", "list", "--data-root", root) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["NAME", "DATE", "SOURCE", "FORMAT"] and len(table) == 3
    assert _cli("models", "show", "team-ctr", "--json", "--data-root", root) == 0
    assert json.loads(capsys.readouterr().out)["fingerprint"] == _sha256(files["onnx"])
    assert _cli("models", "show", "team-cbm", "--data-root", root) == 0
    assert "2025-03-05" in capsys.readouterr().out  # the latest (only) date
    assert _cli("models", "show", "nobody", "--data-root", root) == 2
    assert "no model 'nobody'" in capsys.readouterr().err


def _bad_cbm(files):
    path = files["base"] / "other_features.cbm"
    if not path.exists():
        fit(files["log"].slice(0, 1000), ["f1", "f2", "g7", "g8"], iterations=5).save_model(str(path))
    return path


def _write(files, name, columns):
    path = files["base"] / name
    pq.write_table(pa.table(columns), path)
    return path


def _ids(files):
    return files["log"].column("impression_id").to_numpy()


BAD_INPUTS = {
    "catboost features": (lambda f: ["--file", _bad_cbm(f)], r"reads column\(s\) \['g7', 'g8'\] that dataset "
                                                             r"'num_clicks'"),
    "not onnx": (lambda f: ["--file", _write_text(f, "junk.onnx", "<html>not a model</html>")],
                 r"junk.onnx: not (an|a valid) ONNX model"),
    "duplicate keys": (lambda f: ["--file", _write(f, "dup.parquet", {"impression_id": np.r_[_ids(f), _ids(f)[:7]],
                                                                     "prob_1": np.full(ROWS + 7, 0.5)})],
                       r"dup.parquet: column 'impression_id': 7 row\(s\) repeat an earlier impression_id \(7 distinct "
                       r"duplicated value\(s\), e.g. 10000\)"),
    "probabilities outside [0, 1]": (
        lambda f: ["--file", _write(f, "range.parquet", {"impression_id": _ids(f),
                                                         "prob_1": np.r_[np.full(ROWS - 3, 0.5), [1.5, -0.1, 2.0]]})],
        r"range.parquet: 3 row\(s\) have a probability that is missing, not finite or outside \[0, 1\]"),
    "unknown training keys": (
        lambda f: ["--file", f["cbm"], "--training-rows", _write(f, "keys_bad.parquet",
                                                                 {"impression_id": np.r_[_ids(f)[:100], [1, 2]]})],
        r"keys_bad.parquet: 2 of 102 key\(s\) are not rows of day 2025-03-02 \(e.g. 1\)"),
    "training keys without a partition": (
        lambda f: ["--file", f["cbm"], "--date", "2025-03-09", "--training-rows", f["keys"], "--dataset",
                   f["spec_path"]],
        r"needs day 2025-03-09's partition"),
    "another dataset": (lambda f: ["--file", f["cbm"], "--dataset", _write_text(f, "other.json", json.dumps(
        {**SPEC, "name": "other_clicks"}))], "was written for dataset 'num_clicks'"),
    "negative epsilon": (lambda f: ["--file", f["cbm"], "--claimed-epsilon", "-1"], "--claimed-epsilon must be >= 0"),
    "delta 1": (lambda f: ["--file", f["cbm"], "--delta", "1"], r"--delta must be in \[0, 1\)"),
    "name with ../": (lambda f: ["--file", f["cbm"], "--name", "../escape"], "--name"),
    "name with <script>": (lambda f: ["--file", f["cbm"], "--name", "<script>alert(1)</script>"], "--name"),
    "unknown suffix": (lambda f: ["--file", f["spec_path"]], "cannot tell the model format from the suffix '.json'"),
    "empty onnx file": (lambda f: ["--file", _write_text(f, "empty.onnx", "")], r"empty.onnx: the file is empty "
                                                                                  r"\(0 bytes\)$"),
    "empty catboost file": (lambda f: ["--file", _write_text(f, "empty.cbm", "")], r"empty.cbm: the file is empty"),
    "empty predictions table": (lambda f: ["--file", _write_text(f, "empty.parquet", ""), "--format", "predictions"],
                                r"empty.parquet: the file is empty"),
    "empty training-rows file": (lambda f: ["--file", f["cbm"], "--training-rows", _write_text(f, "empty_keys.parquet",
                                                                                              "")],
                                 r"empty_keys.parquet: the file is empty"),
}


def _write_text(files, name, text):
    path = files["base"] / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_and_registers_nothing(root, files, capsys, case):
    make, message = BAD_INPUTS[case]
    extra = make(files)
    argv = ["models", "register", "--name", "bad", "--date", DAY, "--claimed-epsilon", "1", "--data-root", root]
    for flag, value in zip(extra[::2], extra[1::2], strict=True):  # the case's flags win
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    assert _cli(*argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("labeldp-audit models register: error: ") and err.count("\n") == 1, err
    assert re.search(message, err), err
    models = root / "models"
    assert not models.exists() or not any(models.iterdir()), list(models.rglob("*"))
    assert not (root.parent / "escape").exists()


def test_a_training_rows_file_written_by_pandas_from_a_filtered_frame_is_read(root, files):
    """pandas keeps a filtered frame's row numbers as its index and to_parquet stores them as __index_level_0__,
    named in the file's pandas metadata: the index is not a second column of keys."""
    import pandas as pd

    from pipelines.models.registration import register_model
    from pipelines.models.registry import read_metadata

    keys = pq.read_table(files["keys"]).column(0).to_numpy()
    frame = pd.DataFrame({"impression_id": _ids(files)}).sample(frac=1.0, random_state=0)  # the day, shuffled
    trained = frame[frame["impression_id"].isin(keys)]
    path = files["base"] / "pandas_keys.parquet"
    trained.to_parquet(path)
    assert pq.read_schema(path).names == ["impression_id", "__index_level_0__"]
    register_model(root, "team-pandas", DAY, files["cbm"], fmt="catboost", claimed_epsilon=1.0,
                   dataset=files["spec"], training_rows=path)
    assert encode(read_metadata(root, "team-pandas", DAY))["training_rows"]["rows"] == keys.size
    stored = pq.read_table(root / "models" / "team-pandas" / f"date={DAY}" / "training_rows.parquet")
    np.testing.assert_array_equal(stored.column("row_id").to_numpy(), np.sort(keys))
    # A column beside the keys that pandas did not write as its index is still refused.
    pq.write_table(pa.table({"impression_id": keys, "other": keys}), files["base"] / "two_columns.parquet")
    with pytest.raises(LabelDPInputError, match=r"one integer column named impression_id or row_id; it has the "
                                                r"columns \['impression_id', 'other'\]"):
        register_model(root, "team-two", DAY, files["cbm"], fmt="catboost", claimed_epsilon=1.0,
                       dataset=files["spec"], training_rows=files["base"] / "two_columns.parquet")


@pytest.mark.parametrize("model", ["cbm", "onnx"])
def test_a_model_of_another_dataset_without_a_partition_is_told_to_pass_its_spec(root, files, capsys, model):
    """No partition of the day says which dataset the model reads, so the built-in Criteo spec is the default and
    the team's model does not fit it: the refusal says so and gives the command with --dataset, which then
    registers it."""
    day = DAY - dt.timedelta(days=1)  # the D-1 reference, registered before its day was ingested
    argv = ["models", "register", "--name", "team-reference", "--date", day, "--file", files[model],
            "--claimed-epsilon", "inf", "--data-root", root]
    assert _cli(*argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'criteo' is the default dataset" in err, err
    assert (f"`labeldp-audit models register --name team-reference --date {day} --file {files[model]} "
            f"--claimed-epsilon inf --dataset SPEC`") in err, err
    assert not (root / "models").exists()
    assert _cli(*argv, "--dataset", files["spec_path"]) == 0
    # With the day's partition there, its spec is the default and a mismatch is the model's, not a missing flag.
    assert _cli("models", "register", "--name", "other", "--date", DAY, "--file", _bad_cbm(files),
                "--claimed-epsilon", "1", "--data-root", root) == 2
    assert "--dataset" not in capsys.readouterr().err
