"""The positive control's oracle as a model format (pipelines/models/formats/oracle.py): never registered by a
team, it reads only a row's id and label and predicts as its oracle file says."""

from __future__ import annotations

import json
import types

import numpy as np
import pyarrow as pa
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.models.formats.oracle_handler import RROracle
from pipelines.models.formats.registry import model_format


def test_the_oracle_is_not_registrable_and_reads_only_row_id_and_label(tmp_path):
    oracle = model_format("rr-oracle")
    assert not oracle.registrable
    with pytest.raises(LabelDPInputError, match=r"an RR-label oracle is written by the nightly controls, not registered$"):
        oracle.inspect(tmp_path / "oracle.json", None)
    table = pa.table({"C1": ["0000abcd", None], "label": pa.array([1, 0], pa.int8()),
                      "row_id": pa.array([4, 8], pa.int64())})
    assert oracle.prepare(table, None).column_names == ["row_id", "label"]
    path = tmp_path / "oracle.json"
    path.write_text(json.dumps({"epsilon": 2.0, "seed": 5, "num_classes": 2}))
    np.testing.assert_array_equal(oracle.predict(types.SimpleNamespace(artifact=path), table, None),
                                  RROracle(2.0, 5, 2).predict_proba(table.select(["row_id", "label"])))
