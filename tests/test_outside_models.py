"""Auditing what another team trained, on its own click log, end to end with real parts: a dataset spec of
other names and types, a CSV log ingested with `data ingest`, plain CatBoost classifiers trained outside the
registry, registered with `models register`, and the nightly flow (real Prefect test harness, the Beam job on
FnApiRunner, DuckDB) on a plan of registered targets; then the release guardrail straight from a model file.

And the three model formats through the same Beam job: one numeric CatBoost model as ``.cbm``, exported to
ONNX, and as a table of its logged predictions gives the same counts.
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

pytestmark = pytest.mark.slow

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
    assert skipped.to_dict()["kind"] == "skipped" and skipped.to_dict()["status"] == "SKIPPED"
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

    from auditing.config import AuditConfig
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

    config = AuditConfig(repetitions=3, grid_points=30, audit_rows="all", reference_calibration="none")
    outcomes = {name: score_day(ScoringRequest(str(root), D1, name, config, reference="reference",
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
    from auditing.config import AuditConfig
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
    outcome = score_day(ScoringRequest(str(root), D1, "partial", AuditConfig(repetitions=2, grid_points=20,
                                                                             audit_rows="all", reference_calibration="none"),
                                       reference="reference", reference_date=D0))
    rows = outcome.record["diagnostics"]["rows"]
    assert rows["rows_without_target_prediction"] == 300
    assert rows["rows_scored"] == 2700 and outcome.counts.m == 2700

    # As the reference, a table must answer every row of the day: one that lacks rows is refused up front.
    from labeldp.errors import LabelDPInputError

    register_model(root, "partial-reference", D0, partial, fmt=model_format("predictions"),
                   claimed_epsilon=float("inf"), dataset=spec, predictions_for=D1)
    with pytest.raises(LabelDPInputError, match="without predictions for 300 of the 3000 rows"):
        score_day(ScoringRequest(str(root), D1, "partial", AuditConfig(repetitions=2, grid_points=20, audit_rows="all", reference_calibration="none",
                                                                      seed=1),
                                 reference="partial-reference", reference_date=D0))
    assert len(list((root / "sweeps" / "partial").rglob("result.json"))) == 1  # only the first audit's


def test_a_model_file_changed_after_registration_is_refused(tmp_path):
    """The verdict is stored under the registered model's name, claim and fingerprint: a file whose bytes changed
    since (replaced or corrupted) is refused before scoring, naming the file, both fingerprints and the fix; the
    same registration with its file intact scores."""
    from auditing.config import AuditConfig
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
    config = AuditConfig(repetitions=2, grid_points=20, audit_rows="all", reference_calibration="none")

    def score(seed: int):
        return score_day(ScoringRequest(str(root), D1, "target", dataclasses.replace(config, seed=seed),
                                        reference="reference", reference_date=D0))

    assert score(0).counts.m == 2000
    registered = model_dir(root, "target", D1) / "predictions.parquet"
    pq.write_table(pa.table({"impression_id": ids, "prob_1": p}), registered)  # other bytes, same name
    with pytest.raises(LabelDPInputError, match="not the file registered") as refused:
        score(1)
    message = str(refused.value)
    assert str(registered) in message and "--replace" in message and message.count("sha256:") == 2
