"""ONNX graphs with categorical inputs (`pipelines.models.formats.onnx_inputs`, `onnx_elements`, `onnx_feeds`,
`onnx_vocabulary`), with real parts: graphs built with onnx's own helper (tests/support/graph_builder.py), a real
partition of a click log with words and integers as categoricals, `models register` on the command line, and
the Beam scoring job on FnApiRunner.

An input per column, a matrix of mapped columns, a mapping file; the values as the partition stores them (text,
or integer codes where the input asks for numbers); every refusal one line with exit 2 and nothing registered;
the probe's share of values outside a declared vocabulary; a graph that fails on a value stops the job naming
the column and the value. Metadata written before the mapping reads as its upgrade:
tests/pipelines/models/test_metadata.py.
"""

from __future__ import annotations

import datetime as dt
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from tests.support.graph_builder import Input, build, save

DAY = dt.date(2025, 6, 2)
ROWS = 3000
COUNTRIES = ["fr", "de", "us", "jp"]
SPEC = {"name": "ads", "label": "clicked", "classes": 2, "row_key": "impression_id", "numeric": ["f1", "f2"],
        "categorical": ["country", "device", "slot"], "numeric_type": "float64"}


def ads_log(rows: int = ROWS, seed: int = 11) -> pa.Table:
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(rows, 2))
    f[rng.random(f.shape) < 0.05] = np.nan
    country = rng.integers(0, len(COUNTRIES), rows)
    device = rng.integers(0, 4, rows)
    slot = rng.integers(0, 20, rows)
    logit = -1 + np.nan_to_num(f[:, 0]) + 0.5 * (country == 2) + 0.3 * (device == 1)
    return pa.table({"impression_id": 500 + 7 * np.arange(rows, dtype=np.int64),
                     "clicked": (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64),
                     "f1": f[:, 0], "f2": f[:, 1], "country": np.array(COUNTRIES)[country],
                     "device": device.astype(np.int64), "slot": slot.astype(np.int64)})


def _cli(*argv) -> int:
    from flows.cli import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from pipelines.data.dataset_spec import load_spec
    from pipelines.data.schema import write_partition

    base = tmp_path_factory.mktemp("onnx_inputs")
    spec_path = base / "ads.json"
    spec_path.write_text(json.dumps(SPEC))
    spec = load_spec(spec_path)
    log = ads_log()
    root = base / "data"
    write_partition(root, DAY, log, dataset=spec)
    return {"base": base, "root": root, "spec": spec, "spec_path": spec_path, "log": log}


def per_column_graph(**changes) -> list[Input]:
    """One input per column, as skl2onnx and PyTorch export them: words as strings, ids as int64, numerics."""
    inputs = {"f1": Input("f1", "float", [None, 1], weight=0.8), "f2": Input("f2", "double", [None], weight=-0.2),
              "country": Input("country", "string", [None, 1], vocabulary=COUNTRIES),
              "device": Input("device", "int64", [None], embedding=4),
              "slot": Input("slot", "int64", [None, 1], embedding=20)}
    inputs.update(changes)
    return [item for item in inputs.values() if item is not None]


def _register(world, graph, name: str, *extra) -> tuple[int, str]:
    import contextlib
    import io

    path = save(build(graph), world["base"] / f"{name}.onnx")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = _cli("models", "register", "--name", name, "--date", DAY, "--file", path, "--claimed-epsilon", 1,
                    "--dataset", world["spec_path"], "--data-root", world["root"], *extra)
    return code, err.getvalue()


def _refused(world, graph, name: str, pattern: str, *extra) -> str:
    code, err = _register(world, graph, name, *extra)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert re.search(pattern, lines[0]), lines[0]
    assert not (world["root"] / "models" / name).exists()  # nothing registered
    return lines[0]


# ---------------------------------------------------------------------------------------------- the mapping


def test_one_input_per_column_is_fed_the_stored_values(world):
    from pipelines.models.formats.onnx_feeds import input_feeds
    from pipelines.models.handle import resolve_model
    from pipelines.models.registry import read_metadata

    code, err = _register(world, per_column_graph(), "per-column")
    assert code == 0, err
    meta = read_metadata(world["root"], "per-column", DAY)
    assert meta.metadata_version == 2
    assert [encode(item) for item in meta.onnx.inputs] == [
        {"name": "f1", "columns": ["f1"], "type": "float", "rank": 2},
        {"name": "f2", "columns": ["f2"], "type": "double", "rank": 1},
        {"name": "country", "columns": ["country"], "type": "string", "rank": 2},
        {"name": "device", "columns": ["device"], "type": "int64", "rank": 1},
        {"name": "slot", "columns": ["slot"], "type": "int64", "rank": 2}]
    assert meta.feature_names == ["f1", "f2", "country", "device", "slot"]
    assert [item.kind for item in meta.feature_schema] == ["numeric", "numeric", "categorical", "categorical",
                                                          "categorical"]

    # what the graph gets: the stored text, and the integers the text spells
    spec = world["spec"]
    table = spec.to_internal(pq.read_table(next((world["root"] / "partitions").rglob("*.parquet"))))
    assert pa.types.is_dictionary(table.column("device").type)  # stored as text
    feeds = input_feeds(meta.onnx.inputs, table, "test")
    log = world["log"]
    np.testing.assert_array_equal(feeds["country"].reshape(-1), log.column("country").to_numpy(zero_copy_only=False))
    assert feeds["country"].shape == (ROWS, 1) and feeds["country"].dtype == object
    np.testing.assert_array_equal(feeds["device"], log.column("device").to_numpy())
    assert feeds["device"].dtype == np.int64 and feeds["slot"].shape == (ROWS, 1)
    assert feeds["f1"].dtype == np.float32 and feeds["f2"].dtype == np.float64 and feeds["f2"].shape == (ROWS,)
    np.testing.assert_array_equal(np.isnan(feeds["f2"]), np.isnan(log.column("f2").to_numpy(zero_copy_only=False)))

    # in process, the same probabilities as onnxruntime on the log's own columns
    import onnxruntime as ort

    model = resolve_model(world["root"], "per-column", DAY)
    got = model.format.predict(model, table, spec)
    session = ort.InferenceSession(str(model.artifact))
    own = session.run(["probabilities"], {
        "f1": log.column("f1").to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, 1),
        "f2": log.column("f2").to_numpy(zero_copy_only=False),
        "country": log.column("country").to_numpy(zero_copy_only=False).astype(object).reshape(-1, 1),
        "device": log.column("device").to_numpy(), "slot": log.column("slot").to_numpy().reshape(-1, 1)})[0]
    np.testing.assert_array_equal(got, own.astype(np.float64))
    assert got.std() > 0.05


def test_a_mapping_file_feeds_a_matrix_of_numerics_and_integer_codes(world, tmp_path):
    from pipelines.models.handle import resolve_model
    from pipelines.models.registry import read_metadata

    graph = [Input("input", "float", [None, 4], weight=0.5)]
    mapping = tmp_path / "inputs.json"
    mapping.write_text(json.dumps({"input": ["f1", "f2", "device", "slot"]}))
    code, err = _register(world, graph, "matrix", "--onnx-inputs", mapping)
    assert code == 0, err
    meta = read_metadata(world["root"], "matrix", DAY)
    assert encode(meta.onnx.inputs[0]) == {"name": "input", "columns": ["f1", "f2", "device", "slot"],
                                             "type": "float", "rank": 2}
    model = resolve_model(world["root"], "matrix", DAY)
    log = world["log"]
    table = world["spec"].to_internal(pq.read_table(next((world["root"] / "partitions").rglob("*.parquet"))))
    got = model.format.predict(model, table, world["spec"])
    x = np.column_stack([np.nan_to_num(log.column(c).to_numpy(zero_copy_only=False).astype(np.float32))
                         for c in ("f1", "f2", "device", "slot")])
    expected = 1 / (1 + np.exp(-(x * np.float32(0.5)).sum(axis=1)))
    np.testing.assert_allclose(got[:, 1], expected, rtol=1e-5)

    # the same graph without the file: a single float input of 4 columns is not the 2 numeric features
    _refused(world, graph, "matrix-unmapped", r"graph input 'input' \(float, \[None, 4\]\) reads 4 features but "
                                              r"dataset 'ads' \(.*ads.json\) has 2 numeric features \['f1', 'f2'\]; "
                                              r"name the columns that feed it in a mapping file \(--onnx-inputs\)")
    # a renamed input: the file names its column
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps({"ctry": "country"}))
    code, err = _register(world, per_column_graph(country=Input("ctry", "string", [None, 1], vocabulary=COUNTRIES)),
                          "renamed", "--onnx-inputs", renamed)
    assert code == 0, err
    assert read_metadata(world["root"], "renamed", DAY).onnx.inputs[2].columns == ("country",)


@pytest.mark.parametrize("case, graph, mapping, pattern", [
    ("no column", per_column_graph(user_id=Input("user_id", "int64", [None])), None,
     r"models/|\.onnx: graph input 'user_id' \(int64, \[None\]\) is fed by no column: no dataset column has its "
     r"name; dataset 'ads' \(.*\) offers the numeric columns \['f1', 'f2'\] and the categorical columns "
     r"\['country', 'device', 'slot'\]; name the columns that feed it in a mapping file \(--onnx-inputs\)$"),
    ("numeric into string", per_column_graph(f1=Input("f1", "string", [None, 1], vocabulary=["1"])), None,
     r"graph input 'f1' \(string, \[None, 1\]\) is fed by column\(s\) \['f1 \(numeric\)'\]; a string input reads "
     r"categorical columns only"),
    ("unsupported type", per_column_graph(device=Input("device", "int32", [None])), None,
     r"graph input 'device' \(int32, \[None\]\) has a type no column can feed; a graph input is a "
     r"tensor of \['string', 'float', 'double', 'int64'\]$"),
    ("wrong shape", per_column_graph(country=Input("country", "string", [None, 3], vocabulary=COUNTRIES)), None,
     r"graph input 'country' \(string, \[None, 3\]\) has the wrong shape for the 1 column\(s\) \['country'\] "
     r"that feed it: expected \[rows\] or \[rows, 1\]$"),
    ("fixed rows", per_column_graph(slot=Input("slot", "int64", [1, 1], embedding=20)), None,
     r"graph input 'slot' \(int64, \[1, 1\]\) has a fixed number of rows \(1\)"),
    ("missing column", [Input("input", "float", [None, 2])], {"input": ["f1", "f9"]},
     r"inputs\.json: graph input 'input' is fed by column\(s\) \['f9'\], which are not features of the dataset; "
     r"dataset 'ads' .* offers the numeric columns"),
    ("unknown input", [Input("input", "float", [None, 2])], {"inputs": ["f1", "f2"]},
     r"inputs\.json: names graph input 'inputs', which .*\.onnx does not have \(its inputs: \['input'\]\)$"),
    ("matrix width", [Input("input", "float", [None, 3])], {"input": ["f1", "f2"]},
     r"graph input 'input' \(float, \[None, 3\]\) has the wrong shape for the 2 column\(s\) \['f1', 'f2'\] that "
     r"feed it: expected \[rows, 2\]$"),
])
def test_a_graph_the_columns_cannot_feed_is_refused(world, tmp_path, case, graph, mapping, pattern):
    extra = ()
    if mapping is not None:
        path = tmp_path / "inputs.json"
        path.write_text(json.dumps(mapping))
        extra = ("--onnx-inputs", path)
    line = _refused(world, graph, f"refused-{case.replace(' ', '-')}", pattern, *extra)
    assert line.startswith("labeldp-audit models register: error: ")


def test_models_show_lists_the_inputs_and_the_guardrail_takes_a_mapping_with_a_file_only(world, tmp_path, capsys):
    code, err = _register(world, per_column_graph(), "shown")
    assert code == 0, err
    capsys.readouterr()
    assert _cli("models", "show", "shown", "--data-root", world["root"]) == 0
    [line] = [text for text in capsys.readouterr().out.splitlines() if text.startswith("inputs")]
    assert line.split(None, 1)[1] == ("f1 (float) <- f1; f2 (double) <- f2; country (string) <- country; "
                                      "device (int64) <- device; slot (int64) <- slot")
    assert _cli("guardrail", "--model", "shown", "--onnx-inputs", tmp_path / "m.json", "--date", DAY,
                "--claimed-epsilon", 1, "--data-root", world["root"]) == 2
    assert capsys.readouterr().err.strip().endswith("--onnx-inputs maps the inputs of a --model-file; a registered "
                                                    "--model keeps the mapping it was registered with")


def test_the_mapping_file_is_for_onnx_and_must_exist(world, tmp_path):
    from pipelines.models.registration import register_model

    with pytest.raises(LabelDPInputError, match=r"onnx_inputs: .*nope\.json is not a file"):
        register_model(world["root"], "x", DAY, save(build(per_column_graph()), tmp_path / "m.onnx"), fmt="onnx",
                       claimed_epsilon=1.0, dataset=world["spec"], onnx_inputs=tmp_path / "nope.json")
    logged = tmp_path / "logged.parquet"
    pq.write_table(pa.table({"impression_id": world["log"].column("impression_id"),
                             "prob_1": np.full(ROWS, 0.5)}), logged)
    (tmp_path / "map.json").write_text("{}")
    with pytest.raises(LabelDPInputError, match="onnx_inputs maps the inputs of an ONNX graph, not of a predictions"):
        register_model(world["root"], "x", DAY, logged, fmt="predictions", claimed_epsilon=1.0,
                       dataset=world["spec"], onnx_inputs=tmp_path / "map.json")
    assert not (world["root"] / "models" / "x").exists()


def test_hashed_ids_fed_as_float_codes_are_refused_at_registration(world, tmp_path):
    """An AdKDD'21-style hashed id (far beyond 2^24) cannot be a float32 category: one line, nothing registered."""
    from pipelines.data.dataset_spec import load_spec
    from pipelines.data.schema import write_partition

    root = tmp_path / "data"
    log = world["log"].set_column(6, "slot", pa.array(
        (np.arange(ROWS, dtype=np.int64) * 2654435761) % (1 << 40)))
    spec = load_spec(world["spec_path"])
    write_partition(root, DAY, log, dataset=spec)
    mapping = tmp_path / "inputs.json"
    mapping.write_text(json.dumps({"input": ["f1", "slot"]}))
    path = save(build([Input("input", "float", [None, 2])]), tmp_path / "lgbm.onnx")
    code = _cli("models", "register", "--name", "hashed", "--date", DAY, "--file", path, "--claimed-epsilon", 1,
                "--onnx-inputs", mapping, "--data-root", root)
    assert code == 2 and not (root / "models" / "hashed").exists()


# ---------------------------------------------------------------------------------------------- vocabularies


def test_registration_reports_the_share_outside_the_graphs_vocabulary(world, capsys):
    from pipelines.data.day import listed_day
    from pipelines.data.schema import read_keyed_sample
    from pipelines.models.registry import read_metadata

    graph = per_column_graph(country=Input("country", "string", [None, 1], vocabulary=["fr", "de"]))
    code, err = _register(world, graph, "vocabulary")
    out = capsys.readouterr().out
    assert code == 0, err
    probe = read_metadata(world["root"], "vocabulary", DAY).onnx.probe
    sample = read_keyed_sample(listed_day(world["root"], DAY), world["spec"], 1000)[0]
    assert probe.rows == sample.num_rows == 1000
    countries = sample.column("country").to_pylist()
    expected = sum(c not in ("fr", "de") for c in countries) / len(countries)
    shares = {item.column: item for item in probe.outside_vocabulary}
    assert set(shares) == {"country", "device", "slot"}
    assert shares["country"].operator == "LabelEncoder" and shares["country"].vocabulary == 2
    assert shares["country"].outside_share == pytest.approx(expected, abs=1e-6) and 0.3 < expected < 0.7
    assert shares["device"].operator == "Gather" and shares["device"].outside_share == 0.0
    assert f"country {100 * round(expected, 6):.1f}% (of 2 known to its LabelEncoder)" in out


def test_a_value_the_graph_fails_on_is_named_at_registration(world):
    # device takes 0..3; an embedding of 3 rows fails on device 3 (a quarter of the probe)
    line = _refused(world, per_column_graph(device=Input("device", "int64", [None], embedding=3)), "small-table",
                    r"\(probe on 1000 real rows of the day\): the graph fails on column 'device' value '3' \(row key "
                    r"\d+, \d+ row\(s\) of the batch\), which graph input 'device' does not know \(Gather: embedding "
                    r"ids 0..2\)")
    assert "onnxruntime:" in line
    # a OneHotEncoder that fails on an unknown word
    _refused(world, per_column_graph(country=Input("country", "string", [None, 1], vocabulary=["fr", "de", "us"],
                                                   strict=True)), "strict-words",
             r"the graph fails on column 'country' value 'jp' .* \(OneHotEncoder: 3 values\)")


def test_a_value_the_graph_fails_on_stops_the_scoring_job(world, tmp_path):
    """The probe's rows know every slot; a row outside them has slot 25, beyond the embedding: the job stops with
    one line naming the column and the value (the night's exit 2)."""
    from pipelines.data.day import listed_day
    from pipelines.data.schema import read_keyed_sample, write_partition
    from pipelines.models.registration import register_model
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    spec, root = world["spec"], tmp_path / "data"
    write_partition(root, DAY, world["log"], dataset=spec)
    probed = set(read_keyed_sample(listed_day(root, DAY), spec, 1000)[0].column("row_id").to_pylist())
    ids = world["log"].column("impression_id").to_numpy()
    outside = int(next(i for i, key in enumerate(ids) if key not in probed and i > 2000))
    slots = world["log"].column("slot").to_numpy().copy()
    slots[outside] = 25
    write_partition(root, DAY, world["log"].set_column(6, "slot", pa.array(slots)), dataset=spec, replace=True)
    model = save(build(per_column_graph()), tmp_path / "emb.onnx")
    register_model(root, "emb", DAY, model, fmt="onnx", claimed_epsilon=1.0, dataset=spec)
    reference = tmp_path / "reference.parquet"
    pq.write_table(pa.table({"impression_id": ids, "prob_1": np.full(ids.size, 0.3)}), reference)
    register_model(root, "ref", DAY - dt.timedelta(days=1), reference, fmt="predictions", claimed_epsilon=float("inf"),
                   dataset=spec, predictions_for=DAY)
    game, bound = GameConfig(repetitions=2, grid_points=20, audit_rows="all", reference_calibration="none"), BoundConfig()
    with pytest.raises(LabelDPInputError) as refused:
        score_day(ScoringRequest(str(root), DAY, "emb", game, bound, reference="ref", reference_date=DAY - dt.timedelta(1),
                                 batch_size=1024))
    message = str(refused.value)
    assert "\n" not in message
    assert re.search(rf"model emb@{DAY}: the graph fails on column 'slot' value '25' \(row key {ids[outside]}, 1 "
                     rf"row\(s\) of the batch\), which graph input 'slot' does not know \(Gather: embedding ids "
                     rf"0..19\)", message), message
    assert not list((root / "sweeps").rglob("result.json")) if (root / "sweeps").exists() else True
