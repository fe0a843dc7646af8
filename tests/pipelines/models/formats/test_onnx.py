"""The ONNX model format (pipelines/models/formats/onnx.py), with real parts: a CatBoost classifier trained here
on a numeric-only dataset, exported to ONNX by CatBoost itself and registered. The ONNX model predicts what the
CatBoost model predicts, with its ZipMap or without; inspecting refuses a model that does not fit the dataset and a
file that is not ONNX. The world: tests/support/numeric_registry.py (`numeric_formats`); the formats in a Beam pipeline:
tests/pipelines/models/test_formats.py.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from tests.support.numeric_clicks import DAY, ROWS, SPEC
from tests.support.numeric_registry import predict as _predict


def test_onnx_predicts_what_the_catboost_model_predicts(numeric_formats):
    from pipelines.models.registry import read_metadata

    cbm = _predict(numeric_formats, "catboost", "ctr-cbm")
    onnx = _predict(numeric_formats, "onnx", "ctr-onnx")
    assert onnx.shape == (ROWS, 2) and onnx.dtype == np.float64
    assert np.isnan(numeric_formats["batch"].column("f1").to_numpy(zero_copy_only=False)).sum() > 50  # missing values fed
    np.testing.assert_allclose(onnx, cbm, rtol=0, atol=1e-5)
    assert np.abs(cbm - 0.5).max() > 0.2  # the model learnt something: equality is not between constants
    # CatBoost's export always ends in a ZipMap; the registration found the matrix behind it
    record = encode(read_metadata(numeric_formats["root"], "ctr-onnx", DAY))["onnx"]
    assert record == {"inputs": [{"name": "features", "columns": SPEC["numeric"], "type": "float", "rank": 2}],
                      "output": "probability_tensor", "zipmap_output": "probabilities",
                      "probe": {"rows": 1000, "outside_vocabulary": []}}  # a keyed sample of the day's rows


def test_an_onnx_model_whose_probabilities_are_an_output(numeric_formats, tmp_path):
    """The export without its ZipMap (onnx's own extractor on CatBoost's file): the float matrix output is
    picked directly."""
    import onnx

    from pipelines.models.registration import register_model

    direct = tmp_path / "direct.onnx"
    onnx.utils.extract_model(str(numeric_formats["onnx"]), str(direct), ["features"], ["label", "probability_tensor"])
    record = encode(register_model(numeric_formats["root"], "ctr-direct", DAY, direct, fmt="onnx", claimed_epsilon=2.0,
                            dataset=numeric_formats["spec"]).metadata)
    assert record["onnx"]["inputs"] == [{"name": "features", "columns": SPEC["numeric"], "type": "float", "rank": 2}]
    assert (record["onnx"]["output"], record["onnx"]["zipmap_output"]) == ("probability_tensor", None)
    np.testing.assert_allclose(_predict(numeric_formats, "onnx", "ctr-direct"), _predict(numeric_formats, "catboost", "ctr-cbm"),
                               rtol=0, atol=1e-5)


def _spec(**changes):
    from pipelines.data.dataset_spec import spec_from_dict

    return spec_from_dict({**SPEC, **changes}, "other.json")


@pytest.mark.parametrize("spec, message", [
    (dict(numeric=["f1", "f2", "f3", "f4", "f5"]), r"reads 4 features but dataset 'num_clicks' \(other.json\) has 5 "
                                                   r"numeric features"),
    (dict(classes=3), r"has 2 class column\(s\) but dataset 'num_clicks' \(other.json\) has 3 classes"),
    (dict(numeric=[], categorical=["c1"]), r"graph input 'features' \(float, \[None, 4\]\) is fed by no column: no "
                                           r"dataset column has its name; dataset 'num_clicks' \(other.json\) offers "
                                           r"the numeric columns \[\] and the categorical columns \['c1'\]"),
])
def test_onnx_inspect_refuses_a_model_that_does_not_fit_the_dataset(numeric_formats, spec, message):
    from pipelines.models.formats.registry import model_format

    with pytest.raises(LabelDPInputError, match=message):
        model_format("onnx").inspect(numeric_formats["onnx"], _spec(**spec))


@pytest.mark.parametrize("content", [b"", b"definitely not a protobuf \xff\xfe", "parquet"])
def test_onnx_inspect_refuses_a_file_that_is_not_onnx(numeric_formats, tmp_path, content):
    from pipelines.models.formats.registry import model_format

    path = tmp_path / "model.onnx"
    if content == "parquet":
        pq.write_table(pa.table({"a": [1, 2]}), path)
    else:
        path.write_bytes(content)
    with pytest.raises(LabelDPInputError, match=rf"^{path}: not (an|a valid) ONNX model"):
        model_format("onnx").inspect(path, numeric_formats["spec"])
