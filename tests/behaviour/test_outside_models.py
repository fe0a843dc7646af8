"""Auditing what another team trained, on its own click log, end to end with real parts: a dataset spec of
other names and types, a CSV log ingested with `data ingest`, plain CatBoost classifiers trained outside the
registry, registered with `models register`, and the nightly flow (real Prefect test harness, the Beam job on
FnApiRunner, DuckDB) on a plan of registered targets; then the release guardrail straight from a model file.

And the three model formats through the same Beam job: one numeric CatBoost model as ``.cbm``, exported to
ONNX, and as a table of its logged predictions gives the same counts. And the team's models on its categorical
columns as other stacks export them to ONNX (skl2onnx, onnxmltools' LightGBM, an int64 embedding graph), each
audited nightly and by the guardrail with the counts and bound of its own logged predictions.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from labeldp.codec import encode

# onnxmltools and skl2onnx 1.x still pass booleans as int attributes (their warning, not ours)
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Field onnx.AttributeProto.ints:DeprecationWarning")]

ROWS = 12_000
D0, D1 = dt.date(2026, 10, 1), dt.date(2026, 10, 2)
COUNTRIES = np.array(["fr", "de", "us", "jp", "br", "in"])
CAMPAIGNS = np.array(["spring", "summer", "autumn", "winter"])
SPEC = {
    "name": "team_clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
    "numeric": ["f1", "f2", "f3", "f4", "f5"], "categorical": ["country", "device", "slot", "campaign"],
    "carry": ["note"], "numeric_type": "float64", "categorical_format": "any",
}


def _log(day: dt.date, rows: int = ROWS) -> pa.Table:
    """A click log with a learnable signal: numeric features, words and integers as categoricals."""
    rng = np.random.default_rng(day.toordinal())
    f = rng.normal(size=(rows, 5))
    f[rng.random((rows, 5)) < 0.05] = np.nan
    country = rng.integers(0, COUNTRIES.size, rows)
    device = rng.integers(1, 5, rows)
    slot = rng.integers(100, 110, rows)
    campaign = rng.integers(0, CAMPAIGNS.size, rows)
    logit = -2.0 + 0.9 * np.nan_to_num(f[:, 0]) - 0.6 * np.nan_to_num(f[:, 1]) + 0.4 * (country == 2) + 0.3 * (device == 3)
    clicked = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    ids = day.toordinal() * 1_000_000 + np.arange(rows, dtype=np.int64)
    columns = {"impression_id": ids, "clicked": clicked}
    columns.update({f"f{i + 1}": f[:, i] for i in range(5)})
    columns.update({"country": COUNTRIES[country], "device": device, "slot": slot, "campaign": CAMPAIGNS[campaign],
                    "note": np.array(["x"] * rows)})
    return pa.table(columns)


def _frame(table: pa.Table):
    frame = table.select(SPEC["numeric"] + SPEC["categorical"]).to_pandas()
    for name in SPEC["categorical"]:
        frame[name] = frame[name].astype(str)
    return frame


def _fit(table: pa.Table, iterations: int, depth: int = 6):
    from catboost import CatBoostClassifier

    model = CatBoostClassifier(iterations=iterations, depth=depth, random_seed=0, verbose=False, thread_count=2,
                               cat_features=SPEC["categorical"])
    model.fit(_frame(table), table.column("clicked").to_numpy())
    return model


def _cli(*argv) -> int:
    from flows.cli import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module")
def prefect_api():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """A data root with two ingested days and the team's models registered; the files it started from."""
    base = tmp_path_factory.mktemp("team")
    root, files = base / "data", base / "files"
    files.mkdir()
    spec_path = files / "team_clicks.json"
    spec_path.write_text(json.dumps(SPEC))
    logs = {}
    for day in (D0, D1):
        logs[day] = _log(day)
        csv = files / f"clicks-{day.isoformat()}.csv"
        pacsv.write_csv(logs[day], csv)
        assert _cli("data", "ingest", csv, "--dataset", spec_path, "--date", day.isoformat(),
                    "--data-root", root) == 0
    # The reference: the team's D-1 model. The target: a non-private model trained on 80% of day D's rows
    # (the rest are held out, so the night can recalibrate the reference and run the label-blind control).
    reference = _fit(logs[D0], 150)
    reference.save_model(str(files / "reference.cbm"))
    day = logs[D1]
    train = np.random.default_rng(7).random(day.num_rows) < 0.8
    target = _fit(day.filter(pa.array(train)), 400, depth=8)
    target.save_model(str(files / "target.cbm"))
    keys = files / "training_rows.parquet"
    pq.write_table(pa.table({"impression_id": day.column("impression_id").filter(pa.array(train))}), keys)
    common = ("--dataset", spec_path, "--data-root", root)
    assert _cli("models", "register", "--name", "team-reference", "--date", D0.isoformat(), "--file",
                files / "reference.cbm", "--claimed-epsilon", "inf", *common) == 0
    assert _cli("models", "register", "--name", "team-ctr", "--date", D1.isoformat(), "--file",
                files / "target.cbm", "--claimed-epsilon", 0.5, "--training-rows", keys, *common) == 0
    # A copy of the reference registered as a day-D model: it never saw day D's labels, so its bound is 0.
    assert _cli("models", "register", "--name", "reference-copy", "--date", D1.isoformat(), "--file",
                files / "reference.cbm", "--claimed-epsilon", 0.5, "--training-rows", keys, *common) == 0
    plan = files / "plan.json"
    plan.write_text(json.dumps({
        "dataset": "team_clicks.json",
        "targets": [{"name": "team-ctr", "source": "registered", "claimed_epsilon": 0.5},
                    {"name": "reference-copy", "source": "registered"}],
        "reference_name": "team-reference", "on_missing_reference": "fail", "on_missing_target": "fail",
        "catboost_iterations": 40,
        "audit": {"repetitions": 3, "grid_points": 30},
    }))
    return {"root": root, "files": files, "spec": spec_path, "plan": plan}


def test_registered_targets_on_a_team_log_nightly(prefect_api, team, capsys):
    from auditing.sinks.listing import ListedVerdict, SkippedTarget
    from auditing.sinks.warehouse import open_warehouse
    from flows.nightly import nightly_audit
    from pipelines.data.dataset_spec import dataset_of

    root = team["root"]
    assert dataset_of(root, D1).name == "team_clicks"
    assert _cli("models", "list", "--data-root", root, "--json") == 0
    listed = {(m["name"], m["date"]) for m in json.loads(capsys.readouterr().out)}
    assert {("team-ctr", D1.isoformat()), ("team-reference", D0.isoformat())} <= listed

    rows = nightly_audit(date=D1.isoformat(), data_root=str(root), plan_file=str(team["plan"]))
    by_model = {r.row.model_id: r for r in rows}
    # the non-private model claimed at 0.5 is caught; the D-1 model re-registered for day D is not (the night's
    # reference is that model recalibrated on the held-out rows, so the two differ a little)
    assert by_model["team-ctr"].row.status == "VIOLATION"
    assert by_model["team-ctr"].row.epsilon_lower_bound > 0.5
    copy = by_model["reference-copy"]
    assert copy.row.status == ("WEAK_PASS" if copy.verdict.robustness.weak_pass else "PASS")
    assert by_model["reference-copy"].row.epsilon_lower_bound < 0.05
    # the controls ran on the team's dataset, and the held-out rows checked the reference
    controls = [r for r in rows if r.row.kind == "control"]
    assert controls and all(r.row.control_passed for r in controls)
    assert by_model["team-ctr"].reference_check.checked is True
    # the team's keys file is a random split: tested against the check rows, it passes, so it may vouch
    assert by_model["team-ctr"].row.split_rule == "tested" and by_model["team-ctr"].row.split_refused == 0
    assert by_model["team-ctr"].row.decision in ("act", "unconfirmed")
    # the audit played on the training rows the registration named
    record = json.loads(next((root / "sweeps" / "team-ctr").rglob("result.json")).read_text())
    assert record["diagnostics"]["audited_rows"]["training_rows"] == int(
        pq.read_table(team["files"] / "training_rows.parquet").num_rows)
    assert record["lineage"]["model"]["format"] == "catboost"
    assert record["lineage"]["partition"]["dataset"] == "team_clicks"
    with open_warehouse(None, data_root=root) as store:
        stored = {r.model_id: r for r in store.fetch_results()}
    assert stored["team-ctr"].status == "VIOLATION"

    # Against the raw D-1 reference (no recalibration), an exact copy of it shows no leakage at all: bound 0.
    raw = json.loads(team["plan"].read_text())
    raw.update(targets=[{"name": "reference-copy", "source": "registered"}], controls={"enabled": False})
    raw["audit"]["reference_calibration"] = "none"
    raw_plan = team["files"] / "plan-raw.json"
    raw_plan.write_text(json.dumps(raw))
    [copy] = nightly_audit(date=D1.isoformat(), data_root=str(root), plan_file=str(raw_plan))
    assert copy.row.epsilon_lower_bound == 0.0
    assert copy.row.status == ("WEAK_PASS" if copy.verdict.robustness.weak_pass else "PASS")

    # A registered target that is not there is skipped when the plan says so: the reason is in the result.
    raw.update(targets=[{"name": "reference-copy", "source": "registered"}, {"name": "ghost", "source": "registered"}],
               on_missing_target="skip")
    raw_plan.write_text(json.dumps(raw))
    rows = nightly_audit(date=D1.isoformat(), data_root=str(root), plan_file=str(raw_plan))
    [skipped] = [r for r in rows if isinstance(r, SkippedTarget)]
    assert skipped.model_id == "ghost" and "has no model for 2026-10-02" in skipped.reason
    assert encode(skipped)["kind"] == "skipped" and encode(skipped)["status"] == "SKIPPED"
    assert [r.row.model_id for r in rows if isinstance(r, ListedVerdict) and r.row.kind == "target"] == [
        "reference-copy"]


def test_guardrail_on_a_model_file(prefect_api, team, capsys):
    files, root = team["files"], team["root"]
    code = _cli("guardrail", "--model-file", files / "target.cbm", "--format", "catboost", "--claimed-epsilon", 0.5,
                "--date", D1.isoformat(), "--training-rows", files / "training_rows.parquet",
                "--plan", team["plan"], "--data-root", root, "--json")
    out = capsys.readouterr()
    assert code == 1, out.err
    rows = json.loads(out.out)  # the night's label-blind control, then the candidate
    [row] = [r for r in rows if r["model_id"].startswith("candidate-")]
    assert row["status"] == "VIOLATION" and row["kind"] == "target"
    first = row["model_id"]
    assert re.fullmatch(r"candidate-[0-9a-f]{12}-rows-[0-9a-f]{8}", first)
    registered = (root / "models" / first / f"date={D1.isoformat()}" / "metadata.json").read_bytes()

    # The same file with other training rows (half of them) is another candidate, registered beside the first,
    # which stays exactly as it was; the first's verdict keeps its row.
    half = files / "training_rows_half.parquet"
    keys = pq.read_table(files / "training_rows.parquet")
    pq.write_table(keys.slice(0, keys.num_rows // 2), half)
    _cli("guardrail", "--model-file", files / "target.cbm", "--format", "catboost", "--claimed-epsilon", 0.5,
         "--date", D1.isoformat(), "--training-rows", half, "--plan", team["plan"], "--data-root", root, "--json")
    out = capsys.readouterr()
    [second] = [r["model_id"] for r in json.loads(out.out) if r["model_id"].startswith("candidate-")]
    assert second != first and second.split("-rows-")[0] == first.split("-rows-")[0], (first, second)
    assert (root / "models" / first / f"date={D1.isoformat()}" / "metadata.json").read_bytes() == registered
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as store:
        guarded = {r.model_id for r in store.fetch_verdicts(run_kind="guardrail")}
    assert {first, second} <= guarded


def test_bad_plan_dataset_is_refused(team, tmp_path):
    from flows.plan import load_plan

    other = tmp_path / "plan.json"
    other.write_text(json.dumps({"dataset": "missing.json", "targets": [{"name": "x", "source": "registered"}]}))
    from labeldp.errors import LabelDPInputError

    with pytest.raises(LabelDPInputError, match=r"missing\.json: no such dataset spec file"):
        load_plan(other)
    plan = load_plan(team["plan"])
    assert plan.dataset.name == "team_clicks" and plan.targets[0].claimed_epsilon == 0.5


# ---------------------------------------------------------------------------------------------- three formats

NUMERIC = {"name": "numeric_clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
           "numeric": ["f1", "f2", "f3", "f4", "f5"], "categorical": [], "numeric_type": "float64"}


def test_cbm_onnx_and_logged_predictions_give_the_same_counts(tmp_path):
    from catboost import CatBoostClassifier

    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.schema import write_partition
    from pipelines.models.formats.registry import model_format
    from pipelines.models.registration import register_model
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    spec = spec_from_dict(NUMERIC, "numeric_clicks.json")
    root = tmp_path / "data"
    tables = {}
    for day in (D0, D1):
        full = _log(day, 6000)
        tables[day] = full.select(["impression_id", "clicked", *NUMERIC["numeric"]])
        write_partition(root, day, tables[day], dataset=spec)

    def fit(table, iterations):
        model = CatBoostClassifier(iterations=iterations, depth=6, random_seed=0, verbose=False, thread_count=2)
        model.fit(table.select(NUMERIC["numeric"]).to_pandas(), table.column("clicked").to_numpy())
        return model

    reference, target = fit(tables[D0], 100), fit(tables[D1], 300)
    reference.save_model(str(tmp_path / "reference.cbm"))
    target.save_model(str(tmp_path / "target.cbm"))
    target.save_model(str(tmp_path / "target.onnx"), format="onnx")
    probabilities = target.predict_proba(tables[D1].select(NUMERIC["numeric"]).to_pandas())
    pq.write_table(pa.table({"impression_id": tables[D1].column("impression_id"),
                             "prob_0": probabilities[:, 0], "prob_1": probabilities[:, 1]}),
                   tmp_path / "predictions.parquet")
    inf = float("inf")
    register_model(root, "reference", D0, tmp_path / "reference.cbm", fmt=model_format("catboost"),
                   claimed_epsilon=inf, dataset=spec)
    for name, path, fmt in (("as-cbm", "target.cbm", "catboost"), ("as-onnx", "target.onnx", "onnx"),
                            ("as-predictions", "predictions.parquet", "predictions")):
        register_model(root, name, D1, tmp_path / path, fmt=model_format(fmt), claimed_epsilon=1.0, dataset=spec)

    game, bound = GameConfig(repetitions=3, grid_points=30, audit_rows="all", reference_calibration="none"), BoundConfig()
    outcomes = {name: score_day(ScoringRequest(str(root), D1, name, game, bound, reference="reference",
                                               reference_date=D0, batch_size=2048))
                for name in ("as-cbm", "as-onnx", "as-predictions")}
    base = outcomes["as-cbm"].counts
    for name in ("as-onnx", "as-predictions"):
        counts = outcomes[name].counts
        assert counts.m == base.m == 6000
        np.testing.assert_array_equal(counts.guesses, base.guesses, err_msg=name)
        np.testing.assert_array_equal(counts.correct, base.correct, err_msg=name)
    formats = {name: outcome.record["lineage"]["model"]["format"] for name, outcome in outcomes.items()}
    assert formats == {"as-cbm": "catboost", "as-onnx": "onnx", "as-predictions": "predictions"}


def test_rows_without_a_logged_prediction_are_counted(tmp_path):
    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.schema import write_partition
    from pipelines.models.formats.registry import model_format
    from pipelines.models.registration import register_model
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    spec = spec_from_dict(NUMERIC, "numeric_clicks.json")
    root = tmp_path / "data"
    table = _log(D1, 3000).select(["impression_id", "clicked", *NUMERIC["numeric"]])
    write_partition(root, D1, table, dataset=spec)
    rng = np.random.default_rng(3)
    ids = table.column("impression_id").to_numpy()
    p = rng.uniform(0.05, 0.95, size=ids.size)
    reference = tmp_path / "reference.parquet"
    pq.write_table(pa.table({"impression_id": ids, "prob_1": np.clip(p + rng.normal(0, 0.02, ids.size), 0.01, 0.99)}),
                   reference)
    partial = tmp_path / "target.parquet"
    keep = np.arange(ids.size) % 10 != 0  # 300 rows without a prediction
    pq.write_table(pa.table({"impression_id": ids[keep], "prob_1": p[keep]}), partial)
    register_model(root, "reference", D0, reference, fmt=model_format("predictions"), claimed_epsilon=float("inf"),
                   dataset=spec, predictions_for=D1)
    register_model(root, "partial", D1, partial, fmt=model_format("predictions"), claimed_epsilon=1.0,
                   dataset=spec)
    outcome = score_day(ScoringRequest(str(root), D1, "partial", GameConfig(repetitions=2, grid_points=20, audit_rows="all", reference_calibration="none"), BoundConfig(),
                                       reference="reference", reference_date=D0))
    rows = outcome.record["diagnostics"]["rows"]
    assert rows["rows_without_target_prediction"] == 300
    assert rows["rows_scored"] == 2700 and outcome.counts.m == 2700

    # As the reference, a table must answer every row of the day: one that lacks rows is refused up front.
    from labeldp.errors import LabelDPInputError

    register_model(root, "partial-reference", D0, partial, fmt=model_format("predictions"),
                   claimed_epsilon=float("inf"), dataset=spec, predictions_for=D1)
    with pytest.raises(LabelDPInputError, match="without predictions for 300 of the 3000 rows"):
        score_day(ScoringRequest(str(root), D1, "partial", GameConfig(repetitions=2, grid_points=20, audit_rows="all", reference_calibration="none", seed=1), BoundConfig(),
                                 reference="partial-reference", reference_date=D0))
    assert len(list((root / "sweeps" / "partial").rglob("result.json"))) == 1  # only the first audit's


def test_a_model_file_changed_after_registration_is_refused(tmp_path):
    """The verdict is stored under the registered model's name, claim and fingerprint: a file whose bytes changed
    since (replaced or corrupted) is refused before scoring, naming the file, both fingerprints and the fix; the
    same registration with its file intact scores."""
    from labeldp.errors import LabelDPInputError
    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.layout import model_dir
    from pipelines.data.schema import write_partition
    from pipelines.models.formats.registry import model_format
    from pipelines.models.registration import register_model
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    spec = spec_from_dict(NUMERIC, "numeric_clicks.json")
    root = tmp_path / "data"
    table = _log(D1, 2000).select(["impression_id", "clicked", *NUMERIC["numeric"]])
    write_partition(root, D1, table, dataset=spec)
    ids = table.column("impression_id").to_numpy()
    p = np.random.default_rng(4).uniform(0.05, 0.95, size=ids.size)
    for name, day, probabilities in (("reference", D0, p), ("target", D1, np.clip(p + 0.01, 0, 1))):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"impression_id": ids, "prob_1": probabilities}), path)
        register_model(root, name, day, path, fmt=model_format("predictions"), dataset=spec,
                       claimed_epsilon=float("inf") if name == "reference" else 1.0,
                       predictions_for=D1 if name == "reference" else None)
    game, bound = GameConfig(repetitions=2, grid_points=20, audit_rows="all", reference_calibration="none"), BoundConfig()

    def score(seed: int):
        return score_day(ScoringRequest(str(root), D1, "target", dataclasses.replace(game, seed=seed), bound,
                                        reference="reference", reference_date=D0))

    assert score(0).counts.m == 2000
    registered = model_dir(root, "target", D1) / "predictions.parquet"
    pq.write_table(pa.table({"impression_id": ids, "prob_1": p}), registered)  # other bytes, same name
    with pytest.raises(LabelDPInputError, match="not the file registered") as refused:
        score(1)
    message = str(refused.value)
    assert str(registered) in message and "--replace" in message and message.count("sha256:") == 2


# ---------------------------------------------------------------------------------------------- ONNX exporters
# The team's model on its categorical columns, exported to ONNX by the exporter of its own stack: scikit-learn
# (skl2onnx, one input per column), LightGBM with native categorical splits (onnxmltools, one float matrix with
# integer-coded categoricals, mapped by a file) and an embedding model with int64 id inputs as PyTorch exports it
# (built with onnx's helper: PyTorch's wheel is not a test dependency, tests/support/graph_builder.py). Each
# is registered,
# audited by the nightly flow and gated by the guardrail as ONNX, and compared with its own logged predictions:
# the probabilities the team's onnxruntime gives on the log's own columns.

NUMERICS, WORDS, IDS = SPEC["numeric"], ["country", "campaign"], ["device", "slot"]


def _skl_pipeline(train: pa.Table):
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = train.select(NUMERICS + WORDS + IDS).to_pandas()
    columns = ColumnTransformer([("words", OneHotEncoder(handle_unknown="ignore"), WORDS),
                                 ("ids", OneHotEncoder(handle_unknown="ignore"), IDS),
                                 ("numbers", "passthrough", NUMERICS)])
    model = Pipeline([("columns", columns), ("trees", HistGradientBoostingClassifier(max_iter=60, random_state=0))])
    model.fit(frame, train.column("clicked").to_numpy())
    types = ([(name, FloatTensorType([None, 1])) for name in NUMERICS] + [(name, StringTensorType([None, 1]))
             for name in WORDS] + [(name, Int64TensorType([None, 1])) for name in IDS])
    exported = convert_sklearn(model, initial_types=types, options={id(model): {"zipmap": False}}, target_opset=17)
    return model, frame, exported


def _skl_feeds(table: pa.Table) -> dict:
    feeds = {name: table.column(name).to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, 1)
             for name in NUMERICS}
    feeds.update({name: table.column(name).to_numpy(zero_copy_only=False).astype(object).reshape(-1, 1)
                  for name in WORDS})
    feeds.update({name: table.column(name).to_numpy().astype(np.int64).reshape(-1, 1) for name in IDS})
    return feeds


def _lgbm(train: pa.Table):
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType

    frame = train.select(NUMERICS + IDS).to_pandas()
    model = lightgbm.LGBMClassifier(n_estimators=80, num_leaves=31, min_child_samples=5, random_state=0, verbose=-1)
    model.fit(frame, train.column("clicked").to_numpy(), categorical_feature=IDS)
    exported = convert_lightgbm(model, initial_types=[("input", FloatTensorType([None, len(NUMERICS + IDS)]))],
                                zipmap=False, target_opset=15)
    return model, frame, exported


def _lgbm_feeds(table: pa.Table) -> dict:
    return {"input": np.column_stack([table.column(name).to_numpy(zero_copy_only=False).astype(np.float32)
                                      for name in NUMERICS + IDS])}


def _embedding(train: pa.Table):
    """Per-id log-odds as embedding tables (device ids 0..4, slot ids 0..109), plus f1: the graph an
    ``nn.Embedding`` model exports with int64 inputs and a dynamic batch axis."""
    from tests.support.graph_builder import Input, build

    clicked = train.column("clicked").to_numpy()
    base = np.log(clicked.mean() / (1 - clicked.mean()))

    def table(name: str, size: int) -> np.ndarray:
        ids = train.column(name).to_numpy()
        hits, seen = np.bincount(ids, clicked, size), np.bincount(ids, minlength=size)
        rate = (hits + clicked.mean() * 5) / (seen + 5)
        return np.log(rate / (1 - rate)) - base / 2

    return build([Input("device", "int64", [None], embedding=5, weights=table("device", 5)),
                  Input("slot", "int64", [None], embedding=110, weights=table("slot", 110)),
                  Input("f1", "float", [None, 1], weight=0.9)])


def _embedding_feeds(table: pa.Table) -> dict:
    return {"device": table.column("device").to_numpy().astype(np.int64),
            "slot": table.column("slot").to_numpy().astype(np.int64),
            "f1": table.column("f1").to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, 1)}


@pytest.fixture(scope="module")
def exported(team):
    """The three exports of models trained on day D's training rows, registered as ONNX targets (the LightGBM one
    with its mapping file), and their logged predictions of every row of day D, registered as tables."""
    import onnx
    import onnxruntime as ort

    files, root = team["files"], team["root"]
    day = _log(D1)
    train = day.filter(pa.array(np.isin(day.column("impression_id").to_numpy(),
                                        pq.read_table(files / "training_rows.parquet").column(0).to_numpy())))
    skl, skl_frame, skl_onnx = _skl_pipeline(train)
    lgbm, lgbm_frame, lgbm_onnx = _lgbm(train)
    models = {"team-skl": (skl_onnx, _skl_feeds, skl.predict_proba(skl_frame), train),
              "team-lgbm": (lgbm_onnx, _lgbm_feeds, lgbm.predict_proba(lgbm_frame), train),
              "team-emb": (_embedding(train), _embedding_feeds, None, None)}
    (files / "lgbm_inputs.json").write_text(json.dumps({"input": NUMERICS + IDS}))
    common = ("--dataset", team["spec"], "--training-rows", files / "training_rows.parquet", "--data-root", root)
    out = {}
    for name, (graph, feeds, original, train_rows) in models.items():
        path = files / f"{name}.onnx"
        onnx.save_model(graph, str(path))
        session = ort.InferenceSession(str(path))
        output = "probabilities"
        if train_rows is not None:  # the export gives the framework's own probabilities
            np.testing.assert_allclose(session.run([output], feeds(train_rows))[0], original, rtol=0, atol=1e-5)
        p = session.run([output], feeds(day))[0].astype(np.float64)
        logged = files / f"{name}-logged.parquet"
        pq.write_table(pa.table({"impression_id": day.column("impression_id"), "prob_0": p[:, 0],
                                 "prob_1": p[:, 1]}), logged)
        mapping = ("--onnx-inputs", files / "lgbm_inputs.json") if name == "team-lgbm" else ()
        assert _cli("models", "register", "--name", name, "--date", D1.isoformat(), "--file", path,
                    "--claimed-epsilon", 0.5, *mapping, *common) == 0
        assert _cli("models", "register", "--name", f"{name}-logged", "--date", D1.isoformat(), "--file", logged,
                    "--claimed-epsilon", 0.5, *common) == 0
        out[name] = {"file": path, "mapping": mapping, "p": p}
    return out


def test_onnx_exports_register_with_their_inputs(team, exported):
    from labeldp.codec import encode
    from pipelines.models.registry import read_metadata

    root = team["root"]
    skl = read_metadata(root, "team-skl", D1).onnx
    assert {item.name: (item.columns, item.type, item.rank) for item in skl.inputs} == {
        **{name: ((name,), "float", 2) for name in NUMERICS}, **{name: ((name,), "string", 2) for name in WORDS},
        **{name: ((name,), "int64", 2) for name in IDS}}
    # skl2onnx's OneHotEncoders declare their categories; every probe value is known to them
    shares = {item.column: (item.operator, item.vocabulary, item.outside_share) for item in skl.probe.outside_vocabulary}
    assert shares == {"country": ("OneHotEncoder", 6, 0.0), "campaign": ("OneHotEncoder", 4, 0.0),
                      "device": ("OneHotEncoder", 4, 0.0), "slot": ("OneHotEncoder", 10, 0.0)}
    lgbm = read_metadata(root, "team-lgbm", D1)
    assert encode(lgbm.onnx.inputs) == [
        {"name": "input", "columns": NUMERICS + IDS, "type": "float", "rank": 2}]
    assert lgbm.onnx.probe.rows == 1000 and lgbm.onnx.probe.outside_vocabulary == ()
    assert lgbm.feature_names == NUMERICS + IDS and lgbm.feature_schema[-1].kind == "categorical"
    emb = read_metadata(root, "team-emb", D1).onnx
    assert [(item.name, item.type, item.rank) for item in emb.inputs] == [("device", "int64", 1),
                                                                          ("slot", "int64", 1), ("f1", "float", 2)]
    assert [(item.column, item.operator, item.vocabulary) for item in emb.probe.outside_vocabulary] == [
        ("device", "Gather", 5), ("slot", "Gather", 110)]


def test_onnx_exports_give_the_counts_of_their_logged_predictions(team, exported):
    from pipelines.scoring.beam_request import ScoringRequest
    from pipelines.scoring.beam_scoring import score_day

    game, bound = GameConfig(repetitions=3, grid_points=30, audit_rows="training", reference_calibration="none"), BoundConfig()
    trained = pq.read_table(team["files"] / "training_rows.parquet").num_rows
    for name in exported:
        outcomes = [score_day(ScoringRequest(str(team["root"]), D1, model, game, bound, reference="team-reference",
                                             reference_date=D0, batch_size=4096))
                    for model in (name, f"{name}-logged")]
        onnx_counts, logged_counts = (outcome.counts for outcome in outcomes)
        assert onnx_counts.m == logged_counts.m == trained
        np.testing.assert_array_equal(onnx_counts.guesses, logged_counts.guesses, err_msg=name)
        np.testing.assert_array_equal(onnx_counts.correct, logged_counts.correct, err_msg=name)
        assert outcomes[0].result.epsilon_lower_bound == outcomes[1].result.epsilon_lower_bound
        assert outcomes[0].record["lineage"]["model"]["format"] == "onnx"


def test_onnx_exports_nightly_and_guardrail(prefect_api, team, exported, capsys):
    from flows.nightly import nightly_audit

    plan = json.loads(team["plan"].read_text())
    plan.update(targets=[{"name": name, "source": "registered"} for model in exported
                         for name in (model, f"{model}-logged")], controls={"enabled": False})
    plan["audit"]["reference_calibration"] = "none"
    plan_path = team["files"] / "plan-onnx.json"
    plan_path.write_text(json.dumps(plan))
    rows = nightly_audit(date=D1.isoformat(), data_root=str(team["root"]), plan_file=str(plan_path))
    bounds = {r.row.model_id: (r.row.epsilon_lower_bound, r.row.status) for r in rows}
    for name, files in exported.items():
        assert bounds[name] == bounds[f"{name}-logged"], name
        code = _cli("guardrail", "--model-file", files["file"], "--format", "onnx", *files["mapping"],
                    "--claimed-epsilon", 0.5, "--date", D1.isoformat(), "--training-rows",
                    team["files"] / "training_rows.parquet", "--plan", plan_path, "--data-root", team["root"],
                    "--accept-unchecked-reference", "--json")
        out = capsys.readouterr()
        [row] = [r for r in json.loads(out.out) if r["model_id"].startswith("candidate-")]
        assert row["epsilon_lower_bound"] == bounds[f"{name}-logged"][0], (name, out.err)
        assert code == (1 if row["status"] == "VIOLATION" else 0), out.err
    assert bounds["team-lgbm"][0] > 0  # a model that leaks: the equal bounds are not zeros


def test_a_night_stops_on_an_id_the_embedding_does_not_know(prefect_api, tmp_path, capsys):
    """The registration's probe knows every slot; one row outside its sample has slot 150, beyond the embedding's
    110 ids: the night exits 2 with one line naming the column and the value, and writes no verdict."""
    from pipelines.data.dataset_spec import spec_from_dict
    from pipelines.data.day import listed_day
    from pipelines.data.schema import read_keyed_sample, write_partition

    spec = spec_from_dict(SPEC, "team_clicks.json")
    spec_path = tmp_path / "team_clicks.json"
    spec_path.write_text(json.dumps(SPEC))
    root, day = tmp_path / "data", _log(D1, 3000)
    write_partition(root, D1, day, dataset=spec)
    probed = set(read_keyed_sample(listed_day(root, D1), spec, 1000)[0].column("row_id").to_pylist())
    ids = day.column("impression_id").to_numpy()
    row = next(i for i in range(ids.size - 1, 0, -1) if int(ids[i]) not in probed)
    slots = day.column("slot").to_numpy().copy()
    slots[row] = 150
    write_partition(root, D1, day.set_column(day.schema.get_field_index("slot"), "slot", pa.array(slots)),
                    dataset=spec, replace=True)
    import onnx

    onnx.save_model(_embedding(day), str(tmp_path / "emb.onnx"))
    reference = tmp_path / "reference.cbm"
    _fit(_log(D0, 3000), 20, depth=4).save_model(str(reference))
    common = ("--dataset", spec_path, "--data-root", root)
    assert _cli("models", "register", "--name", "team-emb", "--date", D1.isoformat(), "--file", tmp_path / "emb.onnx",
                "--claimed-epsilon", 1, *common) == 0
    assert _cli("models", "register", "--name", "ref", "--date", D0.isoformat(), "--file", reference,
                "--claimed-epsilon", "inf", *common) == 0
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"dataset": "team_clicks.json", "targets": [{"name": "team-emb", "source": "registered"}],
                                "reference_name": "ref", "controls": {"enabled": False},
                                "audit": {"repetitions": 2, "grid_points": 20, "audit_rows": "all",
                                          "reference_calibration": "none"}}))
    capsys.readouterr()
    code = _cli("nightly", "--date", D1.isoformat(), "--plan", plan, "--data-root", root)
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = [text for text in err.splitlines() if text.startswith("labeldp-audit nightly: exit 2: bad input")]
    assert f"column 'slot' value '150' (row key {ids[row]}, 1 row(s) of the batch)" in line
    assert "graph input 'slot' does not know (Gather: embedding ids 0..109)" in line
    assert not (root / "sweeps").exists() or not list((root / "sweeps").rglob("result.json"))
