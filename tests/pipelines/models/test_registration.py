"""Registering models trained elsewhere (`pipelines.models.registration`), with real parts: a CatBoost model
trained here and its ONNX export, real Parquet partitions and key files.

The metadata follows the contract other modules read (docs/model_registry.md); registering again is a no-op or
a refusal. The ``models`` command (register, list, show, and its bad inputs): tests/flows/commands/test_models.py.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from pipelines.models.metadata import ABSENT, as_metadata
from tests.support.numeric_clicks import DAY, ROWS, SPEC, TRAIN_ROWS
from tests.support.numeric_registry import row_keys as _ids
from tests.support.numeric_registry import sha256_fingerprint as _sha256


def test_an_onnx_registration_writes_the_metadata_contract(numeric_root, numeric_files):
    from pipelines.data.schema import partition_fingerprint
    from pipelines.models.registration import register_model
    from pipelines.models.registry import read_metadata

    returned = register_model(numeric_root, "team-ctr", DAY, numeric_files["onnx"], fmt="onnx", claimed_epsilon=float("inf"),
                              delta=1e-6, dataset=numeric_files["spec"], training_rows=numeric_files["keys"])
    directory = numeric_root / "models" / "team-ctr" / f"date={DAY}"
    assert sorted(p.name for p in directory.iterdir()) == ["metadata.json", "model.onnx", "training_rows.parquet"]
    metadata = encode(read_metadata(numeric_root, "team-ctr", DAY))
    assert returned.already_registered is False and encode(returned.metadata) == metadata
    spec = numeric_files["spec"]
    expected = {
        "metadata_version": 2, "model_name": "team-ctr", "date": DAY.isoformat(), "source": "registered",
        "format": "onnx", "model_file": "model.onnx", "fingerprint": _sha256(numeric_files["onnx"]),
        "registered_from": "ctr.onnx", "mechanism": {"name": "external", "epsilon": "inf", "delta": 1e-6},
        "dataset": {"name": "num_clicks", "fingerprint": spec.fingerprint(), "spec": encode(spec)},
        "feature_schema": [{"name": name, "kind": "numeric"} for name in SPEC["numeric"]], "classes": 2,
        "training_rows": {"kind": "keys", "file": "training_rows.parquet", "rows": TRAIN_ROWS,
                          "fingerprint": _sha256(directory / "training_rows.parquet")},
        "seed": None, "partition_fingerprint": partition_fingerprint(numeric_root, DAY), "catboost_params": None,
        "test_metrics": None,
    }
    assert {key: metadata[key] for key in expected} == expected
    assert "predictions_for" not in metadata
    assert metadata["code_version"]["package"] == "labeldp-audit" and metadata["created_at"].endswith("+00:00")
    assert (directory / "model.onnx").read_bytes() == numeric_files["onnx"].read_bytes()
    keys = pq.read_table(directory / "training_rows.parquet")
    assert keys.schema.names == ["row_id"] and keys.schema.field(0).type == pa.int64()
    shuffled = pq.read_table(numeric_files["keys"]).column(0).to_numpy()
    np.testing.assert_array_equal(keys.column(0).to_numpy(), np.sort(shuffled))


def test_a_catboost_registration_on_all_rows_and_a_predictions_table(numeric_root, numeric_files, tmp_path):
    from pipelines.models.registration import register_model

    cbm = encode(register_model(numeric_root, "team-cbm", DAY, numeric_files["cbm"], fmt="catboost", claimed_epsilon=0.0,
                         dataset=None).metadata)  # None: the spec day D's partition was written with
    assert cbm["training_rows"] == {"kind": "all", "rows": ROWS}
    assert cbm["dataset"]["name"] == "num_clicks" and cbm["catboost_params"]["depth"] == 4
    assert cbm["mechanism"] == {"name": "external", "epsilon": 0.0, "delta": 0.0}
    table = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"impression_id": numeric_files["log"].column("impression_id"),
                             "prob_1": np.full(ROWS, 0.25)}), table)
    later = DAY + dt.timedelta(days=1)
    logged = encode(register_model(numeric_root, "reference", DAY - dt.timedelta(days=1), table, fmt="predictions",
                            claimed_epsilon=float("inf"), dataset=numeric_files["spec"], predictions_for=DAY).metadata)
    # no partition for the model's own day: no row count, no fingerprint; the table answers for DAY
    assert logged["training_rows"] == {"kind": "all", "rows": None} and logged["partition_fingerprint"] is None
    assert logged["predictions_for"] == DAY.isoformat() and logged["feature_schema"] == []
    assert logged["rows"] == ROWS
    assert logged["predictions"] == {"key_column": "impression_id", "probability_columns": ["prob_1"]}
    default = encode(register_model(numeric_root, "scores", later, table, fmt="predictions", claimed_epsilon=1.0,
                             dataset=numeric_files["spec"]).metadata)
    assert default["predictions_for"] == later.isoformat()
    with pytest.raises(LabelDPInputError, match=r"^predictions_for applies to a table of logged predictions"):
        register_model(numeric_root, "x", DAY, numeric_files["cbm"], fmt="catboost", claimed_epsilon=1.0, dataset=None,
                       predictions_for=DAY)
    assert not (numeric_root / "models" / "x").exists()


def test_the_metadata_of_every_format_round_trips_byte_for_byte(numeric_root, numeric_files, tmp_path):
    from pipelines.models.registration import register_model

    table = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"impression_id": numeric_files["log"].column("impression_id"),
                             "prob_1": np.full(ROWS, 0.25)}), table)
    register_model(numeric_root, "m-onnx", DAY, numeric_files["onnx"], fmt="onnx", claimed_epsilon=float("inf"), delta=1e-6,
                   dataset=numeric_files["spec"], training_rows=numeric_files["keys"])
    register_model(numeric_root, "m-cbm", DAY, numeric_files["cbm"], fmt="catboost", claimed_epsilon=0.5, dataset=None)
    register_model(numeric_root, "m-log", DAY - dt.timedelta(days=1), table, fmt="predictions", claimed_epsilon=1.0,
                   dataset=numeric_files["spec"], predictions_for=DAY)
    read = {}
    for name, day in (("m-onnx", DAY), ("m-cbm", DAY), ("m-log", DAY - dt.timedelta(days=1))):
        text = (numeric_root / "models" / name / f"date={day}" / "metadata.json").read_text()
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


def test_registering_again_is_a_no_op_or_a_refusal(numeric_root, numeric_files):
    from pipelines.models.registration import find_registered, register_model

    def register(**changes):
        arguments = dict(fmt="catboost", claimed_epsilon=1.0, dataset=numeric_files["spec"], training_rows=numeric_files["keys"])
        return register_model(numeric_root, "team-ctr", DAY, changes.pop("file", numeric_files["cbm"]), **{**arguments, **changes})

    assert find_registered(numeric_root, "team-ctr", DAY) is None
    first = register()
    again = register()
    assert again.already_registered is True and again.metadata.created_at == first.metadata.created_at
    for changes, what in ((dict(claimed_epsilon=2.0), "claimed epsilon"), (dict(training_rows="all"), "training rows"),
                          (dict(file=numeric_files["onnx"], fmt="onnx"), "format, file")):
        with pytest.raises(LabelDPInputError, match=f"already registered at .* with a different {what}.*pass replace"):
            register(**changes)
    assert encode(find_registered(numeric_root, "team-ctr", DAY))["mechanism"]["epsilon"] == 1.0
    replaced = register(claimed_epsilon=2.0, training_rows="all", replace=True)
    assert replaced.already_registered is False
    stored = encode(find_registered(numeric_root, "team-ctr", DAY))
    assert stored["mechanism"]["epsilon"] == 2.0 and stored["training_rows"]["kind"] == "all"
    assert not (numeric_root / "models" / "team-ctr" / f"date={DAY}" / "training_rows.parquet").exists()


def test_a_training_rows_file_written_by_pandas_from_a_filtered_frame_is_read(numeric_root, numeric_files):
    """pandas keeps a filtered frame's row numbers as its index and to_parquet stores them as __index_level_0__,
    named in the file's pandas metadata: the index is not a second column of keys."""
    import pandas as pd

    from pipelines.models.registration import register_model
    from pipelines.models.registry import read_metadata

    keys = pq.read_table(numeric_files["keys"]).column(0).to_numpy()
    frame = pd.DataFrame({"impression_id": _ids(numeric_files)}).sample(frac=1.0, random_state=0)  # the day, shuffled
    trained = frame[frame["impression_id"].isin(keys)]
    path = numeric_files["base"] / "pandas_keys.parquet"
    trained.to_parquet(path)
    assert pq.read_schema(path).names == ["impression_id", "__index_level_0__"]
    register_model(numeric_root, "team-pandas", DAY, numeric_files["cbm"], fmt="catboost", claimed_epsilon=1.0,
                   dataset=numeric_files["spec"], training_rows=path)
    assert encode(read_metadata(numeric_root, "team-pandas", DAY))["training_rows"]["rows"] == keys.size
    stored = pq.read_table(numeric_root / "models" / "team-pandas" / f"date={DAY}" / "training_rows.parquet")
    np.testing.assert_array_equal(stored.column("row_id").to_numpy(), np.sort(keys))
    # A column beside the keys that pandas did not write as its index is still refused.
    pq.write_table(pa.table({"impression_id": keys, "other": keys}), numeric_files["base"] / "two_columns.parquet")
    with pytest.raises(LabelDPInputError, match=r"one integer column named impression_id or row_id; it has the "
                                                r"columns \['impression_id', 'other'\]"):
        register_model(numeric_root, "team-two", DAY, numeric_files["cbm"], fmt="catboost", claimed_epsilon=1.0,
                       dataset=numeric_files["spec"], training_rows=numeric_files["base"] / "two_columns.parquet")
