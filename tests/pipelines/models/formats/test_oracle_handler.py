"""The positive control's RR-label oracle as a model (pipelines/models/formats/oracle_handler.py): read from its
``oracle.json``, it answers a (row_id, label) table with the control's RR probabilities, deterministic in the seed
and the row ids; a file that is not an oracle is refused naming it."""

from __future__ import annotations

import datetime as dt
import json
import types

import numpy as np
import pyarrow as pa
import pytest

from auditing.verdict.controls import rr_oracle_probabilities
from labeldp.errors import LabelDPInputError
from pipelines.models.formats.oracle_handler import RROracle, RROracleModelHandler, load_oracle


def _model(path):
    return types.SimpleNamespace(artifact=path, name="control", date=dt.date(2024, 5, 2))


def _table():
    return pa.table({"row_id": pa.array([5, 9, 12, 40], pa.int64()), "label": pa.array([1, 0, 0, 1], pa.int8())})


def test_the_oracle_is_read_from_its_file_and_answers_with_the_controls_probabilities(tmp_path):
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps({"epsilon": 1.5, "seed": 11, "num_classes": 2}))
    oracle = load_oracle(_model(path))
    assert oracle == RROracle(1.5, 11, 2)
    expected = rr_oracle_probabilities(np.array([5, 9, 12, 40]), np.array([1, 0, 0, 1]), 1.5, 11, 2)
    np.testing.assert_array_equal(oracle.predict_proba(_table()), expected)
    (result,) = RROracleModelHandler(_model(path)).run_inference([_table()], oracle)
    assert result.model_id == "control@2024-05-02" and result.example.equals(_table())
    np.testing.assert_array_equal(result.inference, expected)


@pytest.mark.parametrize("content", ["not json", '{"epsilon": 1.0, "seed": 3}', '{"epsilon": "x", "seed": 3, '
                                                                               '"num_classes": 2}'])
def test_a_file_that_is_not_an_oracle_is_refused_naming_it(tmp_path, content):
    path = tmp_path / "oracle.json"
    path.write_text(content)
    with pytest.raises(LabelDPInputError, match=rf"^{path}"):
        load_oracle(_model(path))
