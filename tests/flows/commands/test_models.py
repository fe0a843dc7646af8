"""The ``models`` command (flows/commands/models.py) on models trained elsewhere, with real parts: a CatBoost model
trained here and its ONNX export, real Parquet partitions and key files, the CLI's main. ``models register`` prints
one line, ``list`` and ``show`` read the registry back; every bad input exits 2 with one line and leaves nothing in
the registry. The registration itself: tests/pipelines/models/test_registration.py.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.numeric_clicks import DAY, ROWS, SPEC, TRAIN_ROWS, fit
from tests.support.numeric_registry import row_keys as _ids
from tests.support.numeric_registry import sha256_fingerprint as _sha256


def _cli(*argv) -> int:
    from flows.cli import main

    return main([str(a) for a in argv])


def test_models_register_list_and_show_on_the_command_line(numeric_root, numeric_files, capsys):
    assert _cli("models", "register", "--name", "team-ctr", "--date", DAY, "--file", numeric_files["onnx"],
                "--claimed-epsilon", "0.5", "--dataset", numeric_files["spec_path"], "--training-rows", numeric_files["keys"],
                "--data-root", numeric_root) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("registered onnx model team-ctr@2025-03-02 claiming eps 0.5")
    assert f"trained on {TRAIN_ROWS} listed rows" in out[0]
    assert _cli("models", "register", "--name", "team-ctr", "--date", DAY, "--file", numeric_files["onnx"],
                "--claimed-epsilon", "0.5", "--training-rows", numeric_files["keys"], "--data-root", numeric_root) == 0
    assert capsys.readouterr().out.startswith("already registered (unchanged) onnx model team-ctr@")
    assert _cli("models", "register", "--name", "team-cbm", "--date", DAY + dt.timedelta(days=3), "--file",
                numeric_files["cbm"], "--claimed-epsilon", "inf", "--dataset", numeric_files["spec_path"], "--data-root", numeric_root) == 0
    capsys.readouterr()

    assert _cli("models", "list", "--json", "--data-root", numeric_root) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(m["name"], m["date"], m["format"], m["claimed_epsilon"], m["training_rows"]) for m in listed] == [
        ("team-cbm", "2025-03-05", "catboost", "inf", "all"), ("team-ctr", "2025-03-02", "onnx", 0.5, "keys")]
    assert _cli("models", "list", "--data-root", numeric_root) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:4] == ["NAME", "DATE", "SOURCE", "FORMAT"] and len(table) == 3
    assert _cli("models", "show", "team-ctr", "--json", "--data-root", numeric_root) == 0
    assert json.loads(capsys.readouterr().out)["fingerprint"] == _sha256(numeric_files["onnx"])
    assert _cli("models", "show", "team-cbm", "--data-root", numeric_root) == 0
    assert "2025-03-05" in capsys.readouterr().out  # the latest (only) date
    assert _cli("models", "show", "nobody", "--data-root", numeric_root) == 2
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
def test_bad_input_exits_2_with_one_line_and_registers_nothing(numeric_root, numeric_files, capsys, case):
    make, message = BAD_INPUTS[case]
    extra = make(numeric_files)
    argv = ["models", "register", "--name", "bad", "--date", DAY, "--claimed-epsilon", "1", "--data-root", numeric_root]
    for flag, value in zip(extra[::2], extra[1::2], strict=True):  # the case's flags win
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    assert _cli(*argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("labeldp-audit models register: error: ") and err.count("\n") == 1, err
    assert re.search(message, err), err
    models = numeric_root / "models"
    assert not models.exists() or not any(models.iterdir()), list(models.rglob("*"))
    assert not (numeric_root.parent / "escape").exists()


@pytest.mark.parametrize("model", ["cbm", "onnx"])
def test_a_model_of_another_dataset_without_a_partition_is_told_to_pass_its_spec(numeric_root, numeric_files, capsys, model):
    """No partition of the day says which dataset the model reads, so the built-in Criteo spec is the default and
    the team's model does not fit it: the refusal says so and gives the command with --dataset, which then
    registers it."""
    day = DAY - dt.timedelta(days=1)  # the D-1 reference, registered before its day was ingested
    argv = ["models", "register", "--name", "team-reference", "--date", day, "--file", numeric_files[model],
            "--claimed-epsilon", "inf", "--data-root", numeric_root]
    assert _cli(*argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'criteo' is the default dataset" in err, err
    assert (f"`labeldp-audit models register --name team-reference --date {day} --file {numeric_files[model]} "
            f"--claimed-epsilon inf --dataset SPEC`") in err, err
    assert not (numeric_root / "models").exists()
    assert _cli(*argv, "--dataset", numeric_files["spec_path"]) == 0
    # With the day's partition there, its spec is the default and a mismatch is the model's, not a missing flag.
    assert _cli("models", "register", "--name", "other", "--date", DAY, "--file", _bad_cbm(numeric_files),
                "--claimed-epsilon", "1", "--data-root", numeric_root) == 2
    assert "--dataset" not in capsys.readouterr().err
