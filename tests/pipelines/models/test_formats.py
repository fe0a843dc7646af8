"""The ONNX and logged-predictions model formats inside a real Beam pipeline (RunInference on the FnApiRunner),
with real parts: a CatBoost classifier trained here on a numeric-only dataset, saved as .cbm and exported to ONNX
by CatBoost itself, registered. The ONNX model must give the CatBoost model's probabilities and the logged table
its own; a row without a logged prediction gets NaN, never a number.

The world: tests/support/numeric_registry.py (`numeric_formats`); each format in process: formats/test_onnx.py and
formats/test_predictions.py.
"""

from __future__ import annotations

import numpy as np

from tests.support.numeric_clicks import DAY, ROWS
from tests.support.numeric_registry import predict as _predict

FNAPI = "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"


def test_onnx_and_logged_predictions_in_a_beam_pipeline(numeric_formats):
    import apache_beam as beam
    from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
    from apache_beam.ml.inference.onnx_inference import OnnxModelHandlerNumpy
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.util import assert_that

    from pipelines.models.handle import resolve_model

    spec, root, batch = numeric_formats["spec"], numeric_formats["root"], numeric_formats["batch"]
    onnx_model, logged_model = resolve_model(root, "ctr-onnx", DAY), resolve_model(root, "ctr-logged", DAY)
    onnx, logged = onnx_model.format, logged_model.format
    onnx_handler = onnx_model.format.handler(onnx_model, spec, thread_count=1)
    assert isinstance(onnx_handler, OnnxModelHandlerNumpy)
    assert onnx_handler.model_file == str(numeric_formats["root"] / "models" / "ctr-onnx" / f"date={DAY}" / "model.onnx")
    logged_handler = logged_model.format.handler(logged_model, spec)
    slices = [(i, batch.slice(start, 1000)) for i, start in enumerate(range(0, ROWS, 1000))]
    expected_onnx = {i: _predict(numeric_formats, "catboost", "ctr-cbm", part) for i, part in slices}
    expected_logged = {i: numeric_formats["probabilities"][1000 * i:1000 * (i + 1)] for i, _part in slices}
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
            [nan_row, numeric_formats["probabilities"][0], nan_row])}, 0.0), label="logged equals the table")
