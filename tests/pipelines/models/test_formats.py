"""The ONNX and logged-predictions model formats, with real parts: a CatBoost classifier trained here on a
numeric-only dataset, saved as .cbm and exported to ONNX by CatBoost itself, registered, and run in process and
inside a real Beam pipeline (RunInference on the FnApiRunner). The three formats must give the same
probabilities; a row without a logged prediction gets NaN, never a number.

The dataset, the day and the model files: tests/support/numeric_clicks.py (`make_world`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from tests.support.numeric_clicks import DAY, ROWS, SPEC, make_world, write_day

FNAPI = "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from pipelines.data.schema import read_partition
    from pipelines.models.registration import register_model

    w = make_world(tmp_path_factory.mktemp("formats"))
    root = w["base"] / "data"
    write_day(root, w)
    spec = w["spec"]
    register_model(root, "ctr-cbm", DAY, w["cbm"], fmt="catboost", claimed_epsilon=1.0, dataset=spec)
    register_model(root, "ctr-onnx", DAY, w["onnx"], fmt="onnx", claimed_epsilon=1.0, dataset=spec)
    batch = spec.to_internal(read_partition(root, DAY))
    probabilities = w["model"].predict_proba(w["log"].select(SPEC["numeric"]).to_pandas())
    logged = w["base"] / "logged.parquet"
    pq.write_table(pa.table({"impression_id": w["log"].column("impression_id"), "prob_0": probabilities[:, 0],
                             "prob_1": probabilities[:, 1]}), logged)
    register_model(root, "ctr-logged", DAY, logged, fmt="predictions", claimed_epsilon=1.0, dataset=spec)
    return {**w, "root": root, "batch": batch, "probabilities": probabilities}


def _predict(world, fmt: str, name: str, table: pa.Table | None = None) -> np.ndarray:
    from pipelines.models.handle import resolve_model

    model = resolve_model(world["root"], name, DAY)
    assert model.format.name == fmt
    return model.format.predict(model, world["batch"] if table is None else table, world["spec"])


def test_onnx_predicts_what_the_catboost_model_predicts(world):
    from pipelines.models.registry import read_metadata

    cbm = _predict(world, "catboost", "ctr-cbm")
    onnx = _predict(world, "onnx", "ctr-onnx")
    assert onnx.shape == (ROWS, 2) and onnx.dtype == np.float64
    assert np.isnan(world["batch"].column("f1").to_numpy(zero_copy_only=False)).sum() > 50  # missing values fed
    np.testing.assert_allclose(onnx, cbm, rtol=0, atol=1e-5)
    assert np.abs(cbm - 0.5).max() > 0.2  # the model learnt something: equality is not between constants
    # CatBoost's export always ends in a ZipMap; the registration found the matrix behind it
    record = encode(read_metadata(world["root"], "ctr-onnx", DAY))["onnx"]
    assert record == {"inputs": [{"name": "features", "columns": SPEC["numeric"], "type": "float", "rank": 2}],
                      "output": "probability_tensor", "zipmap_output": "probabilities",
                      "probe": {"rows": 1000, "outside_vocabulary": []}}  # a keyed sample of the day's rows


def test_onnx_and_logged_predictions_in_a_beam_pipeline(world):
    import apache_beam as beam
    from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
    from apache_beam.ml.inference.onnx_inference import OnnxModelHandlerNumpy
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.util import assert_that

    from pipelines.models.handle import resolve_model

    spec, root, batch = world["spec"], world["root"], world["batch"]
    onnx_model, logged_model = resolve_model(root, "ctr-onnx", DAY), resolve_model(root, "ctr-logged", DAY)
    onnx, logged = onnx_model.format, logged_model.format
    onnx_handler = onnx_model.format.handler(onnx_model, spec, thread_count=1)
    assert isinstance(onnx_handler, OnnxModelHandlerNumpy)
    assert onnx_handler.model_file == str(world["root"] / "models" / "ctr-onnx" / f"date={DAY}" / "model.onnx")
    logged_handler = logged_model.format.handler(logged_model, spec)
    slices = [(i, batch.slice(start, 1000)) for i, start in enumerate(range(0, ROWS, 1000))]
    expected_onnx = {i: _predict(world, "catboost", "ctr-cbm", part) for i, part in slices}
    expected_logged = {i: world["probabilities"][1000 * i:1000 * (i + 1)] for i, _part in slices}
    unknown = np.array([1, 10_000, 5], dtype=np.int64)  # 10_000 is the first key; 1 and 5 are no rows

    def matches(expected, atol):
        def check(pairs):
            found = dict(pairs)
            assert len(pairs) == len(expected) and set(found) == set(expected), [key for key, _ in pairs]
            for key, value in expected.items():
                np.testing.assert_allclose(found[key], value, rtol=0, atol=atol, err_msg=str(key))
        return check

    # with_no_batching: every element is a batch, here a list of one keyed example (as the scoring job sends)
    with beam.Pipeline(options=PipelineOptions([FNAPI])) as pipeline:
        onnx_out = (pipeline | "onnx examples" >> beam.Create([[(i, onnx.prepare(part, spec))] for i, part in slices])
                    | "onnx" >> RunInference(KeyedModelHandler(onnx_handler).with_no_batching())
                    | "onnx p" >> beam.Map(lambda kv: (kv[0], kv[1].inference)))
        examples = [[(i, logged.prepare(part, spec))] for i, part in slices] + [[("unknown", unknown)]]
        logged_out = (pipeline | "logged examples" >> beam.Create(examples)
                      | "logged" >> RunInference(KeyedModelHandler(logged_handler).with_no_batching())
                      | "logged p" >> beam.Map(lambda kv: (kv[0], kv[1].inference)))
        nan_row = np.full(2, np.nan)
        assert_that(onnx_out, matches(expected_onnx, 1e-5), label="onnx equals catboost")
        assert_that(logged_out, matches({**expected_logged, "unknown": np.array(
            [nan_row, world["probabilities"][0], nan_row])}, 0.0), label="logged equals the table")


def test_logged_predictions_come_back_and_unknown_rows_are_nan(world, tmp_path):
    from pipelines.models.registration import register_model

    np.testing.assert_array_equal(_predict(world, "predictions", "ctr-logged"), world["probabilities"])
    # a 2-class table may hold prob_1 alone: [1 - p, p]
    p = world["probabilities"][:, 1]
    single = tmp_path / "single.parquet"
    pq.write_table(pa.table({"row_id": world["log"].column("impression_id")[::-1], "prob_1": p[::-1]}), single)
    register_model(world["root"], "ctr-logged-p1", DAY, single, fmt="predictions", claimed_epsilon=1.0,
                   dataset=world["spec"])
    ids = pa.table({"row_id": pa.array([10_003, 7, 10_000], pa.int64())})
    got = _predict(world, "predictions", "ctr-logged-p1", ids)
    np.testing.assert_array_equal(got[0], [1 - p[1], p[1]])
    assert np.isnan(got[1]).all()
    np.testing.assert_array_equal(got[2], [1 - p[0], p[0]])


def test_an_onnx_model_whose_probabilities_are_an_output(world, tmp_path):
    """The export without its ZipMap (onnx's own extractor on CatBoost's file): the float matrix output is
    picked directly."""
    import onnx

    from pipelines.models.registration import register_model

    direct = tmp_path / "direct.onnx"
    onnx.utils.extract_model(str(world["onnx"]), str(direct), ["features"], ["label", "probability_tensor"])
    record = encode(register_model(world["root"], "ctr-direct", DAY, direct, fmt="onnx", claimed_epsilon=2.0,
                            dataset=world["spec"]).metadata)
    assert record["onnx"]["inputs"] == [{"name": "features", "columns": SPEC["numeric"], "type": "float", "rank": 2}]
    assert (record["onnx"]["output"], record["onnx"]["zipmap_output"]) == ("probability_tensor", None)
    np.testing.assert_allclose(_predict(world, "onnx", "ctr-direct"), _predict(world, "catboost", "ctr-cbm"),
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
def test_onnx_inspect_refuses_a_model_that_does_not_fit_the_dataset(world, spec, message):
    from pipelines.models.formats.registry import model_format

    with pytest.raises(LabelDPInputError, match=message):
        model_format("onnx").inspect(world["onnx"], _spec(**spec))


@pytest.mark.parametrize("content", [b"", b"definitely not a protobuf \xff\xfe", "parquet"])
def test_onnx_inspect_refuses_a_file_that_is_not_onnx(world, tmp_path, content):
    from pipelines.models.formats.registry import model_format

    path = tmp_path / "model.onnx"
    if content == "parquet":
        pq.write_table(pa.table({"a": [1, 2]}), path)
    else:
        path.write_bytes(content)
    with pytest.raises(LabelDPInputError, match=rf"^{path}: not (an|a valid) ONNX model"):
        model_format("onnx").inspect(path, world["spec"])


@pytest.mark.parametrize("columns, message", [
    ({"impression_id": [1, 2], "prob_0": [0.5, 0.5]}, r"missing probability column\(s\) \['prob_1'\]"),
    ({"impression_id": [1, 2], "prob_1": [0.5, 0.5], "prob_2": [0.0, 0.0]}, r"column\(s\) \['prob_2'\] but dataset"),
    ({"key": [1, 2], "prob_1": [0.5, 0.5]}, r"no row-key column impression_id \(or row_id\)"),
    ({"impression_id": [1.0, 2.0], "prob_1": [0.5, 0.5]}, "column 'impression_id' has type double"),
    ({"impression_id": [1, None, 3], "prob_1": [0.5, 0.5, 0.5]}, r"1 row\(s\) are null"),
    ({"impression_id": [1, 2, 3], "prob_0": [0.5, 0.2, 0.1], "prob_1": [0.5, 0.7, 0.9]},
     r"1 row\(s\) have probabilities that do not sum to 1 \(within 1e-06\) \(e.g. row key 2"),
    ({"impression_id": [1, 2, 3], "prob_1": [0.5, float("nan"), None]}, r"2 row\(s\) have a probability that is "
                                                                       r"missing, not finite or outside \[0, 1\]"),
    ({"impression_id": pa.array([], pa.int64()), "prob_1": pa.array([], pa.float64())}, "holds no rows"),
])
def test_predictions_inspect_names_what_is_wrong(world, tmp_path, columns, message):
    from pipelines.models.formats.registry import model_format

    path = tmp_path / "predictions.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(LabelDPInputError, match=message):
        model_format("predictions").inspect(path, world["spec"])
