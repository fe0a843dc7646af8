"""The preflight of nightly / guardrail / backfill (flows/preflight.py): bad input ends with exit 2, ONE line naming
the file or field, before Prefect, Beam or CatBoost are imported, and nothing is written.

Real parts: synthetic partitions on disk, real DuckDB files, the real PostgreSQL (fixture `postgres_url`), the
command line's `main`. Every case compares the data root before and after the command. The preflight also warns
when no night of the plan's rows can confirm a violation of its claims (the power planner's holdout warning)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flows.cli import main
from tests.support.pg_schema import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)

REPO = Path(__file__).resolve().parents[2]
D0, D1 = dt.date(2026, 10, 1), dt.date(2026, 10, 2)
ROWS = 2_000  # the preflight reads footers, keys and labels only: size does not matter here


@pytest.fixture(scope="module")
def clean_root(tmp_path_factory):
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("clean")
    for day in (D0, D1):
        write_synthetic_day(root, day, rows=ROWS)
    return root


@pytest.fixture
def root(clean_root, tmp_path):
    """A private copy of two synthetic days (tests change it)."""
    import shutil

    copy = tmp_path / "root"
    shutil.copytree(clean_root, copy)
    return copy


@pytest.fixture
def plan(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
                                "catboost_iterations": 40, "audit": {"repetitions": 3, "grid_points": 30},
                                "controls": {"enabled": False}}))
    return str(path)


def snapshot(*roots: Path) -> dict:
    """Every file and directory under ``roots`` with its content hash: the same before and after means nothing
    was written, created or touched."""
    seen = {}
    for top in roots:
        if not top.exists():
            continue
        for path in sorted(top.rglob("*")):
            seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return seen


def run_cli(capsys, *argv) -> tuple[int, list[str], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, err.strip().splitlines(), out


def refused(capsys, roots, *argv, expect: str) -> None:
    """The command exits 2 with one stderr line containing ``expect`` and leaves ``roots`` as they were."""
    before = snapshot(*roots)
    code, err, _ = run_cli(capsys, *argv)
    assert code == 2, err
    assert len(err) == 1 and expect in err[0], err
    assert snapshot(*roots) == before


def nightly(root, plan, *extra) -> list[str]:
    return ["nightly", "--date", D1.isoformat(), "--data-root", str(root), "--plan", plan, *extra]


# ------------------------------------------------------------------------------------------ the warehouse


def test_a_garbage_warehouse_file_is_refused_and_left_untouched(capsys, root, plan, tmp_path):
    garbage = tmp_path / "wh" / "warehouse.duckdb"
    garbage.parent.mkdir()
    garbage.write_bytes(b"this is not a database\n" * 100)
    refused(capsys, [root, garbage.parent], *nightly(root, plan, "--warehouse", str(garbage)),
            expect=f"--warehouse {garbage}: not a DuckDB database")
    refused(capsys, [root, garbage.parent], *nightly(root, plan, "--warehouse", str(garbage.parent)),
            expect="is a directory")


def test_a_warehouse_under_a_missing_directory_is_refused_unless_asked_to_create_it(capsys, root, plan, tmp_path):
    from flows.preflight import check_warehouse

    target = tmp_path / "no" / "such" / "dir" / "warehouse.duckdb"
    refused(capsys, [root, tmp_path], *nightly(root, plan, "--warehouse", str(target)),
            expect="does not exist; create it, fix the path or pass --create-warehouse")
    assert not (tmp_path / "no").exists()
    assert check_warehouse(root, str(target), create=True) == [] and not (tmp_path / "no").exists()


def _warehouse_at_version(open_target, version: int) -> None:
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.schema import VERSION_TABLE

    with open_warehouse(open_target) as store:
        mark = "?" if store.dialect == "duckdb" else "%s"
        store._transaction(lambda cur: cur.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES ({mark}, 'from the future', "
            "CURRENT_TIMESTAMP)", [version]))


def test_a_warehouse_from_newer_code_is_refused(capsys, root, plan, tmp_path):
    from auditing.sinks.warehouse.migrations import LATEST

    target = tmp_path / "future.duckdb"
    _warehouse_at_version(str(target), LATEST + 1)
    refused(capsys, [root, tmp_path], *nightly(root, plan, "--warehouse", str(target)),
            expect=f"its schema version {LATEST + 1} is newer than this code knows")


def test_postgres_targets(capsys, root, plan, postgres_url):  # noqa: F811
    from auditing.sinks.warehouse.migrations import LATEST
    from flows.preflight import check_warehouse
    from labeldp.errors import LabelDPInputError

    refused(capsys, [root], *nightly(root, plan, "--warehouse", "postgresql://user@127.0.0.1:notaport/db"),
            expect="not a valid PostgreSQL URL")
    # an outage is not bad input: a warning, and the run goes on (its rows are spooled: exit 3,
    # tests/flows/test_exit_codes)
    warnings = check_warehouse(root, "postgresql://nobody@127.0.0.1:1/none")
    assert len(warnings) == 1 and "does not answer within 2 s" in warnings[0] and "exit 3" in warnings[0]
    assert check_warehouse(root, postgres_url) == []
    # a login the server refuses is bad input, before any work: exit 2, one line naming what was refused
    parts = urllib.parse.urlsplit(postgres_url)
    for netloc, path, expect in ((f"labeldp_no_such_role:pw@{parts.netloc}", parts.path,
                                  'role "labeldp_no_such_role" does not exist'),
                                 (parts.netloc, "/labeldp_no_such_database",
                                  'database "labeldp_no_such_database" does not exist')):
        url = urllib.parse.urlunsplit(parts._replace(netloc=netloc, path=path))
        refused(capsys, [root], *nightly(root, plan, "--warehouse", url), expect=f"the server refused the login ({expect})")
        refused(capsys, [root], "nightly", "--drain-only", "--data-root", str(root), "--warehouse", url,
                expect="the server refused the login")
        with pytest.raises(LabelDPInputError, match="refused the login") as info:
            check_warehouse(root, url)
        assert ":pw@" not in str(info.value)
    _warehouse_at_version(postgres_url, LATEST + 1)
    with pytest.raises(LabelDPInputError, match=f"schema version {LATEST + 1} is newer"):
        check_warehouse(root, postgres_url)


# ------------------------------------------------------------------------------------------ the partition


def _rewrite(root: Path, day: dt.date, change) -> None:
    path = root / "partitions" / f"date={day.isoformat()}" / "part-00000.parquet"
    table = pq.read_table(path)
    pq.write_table(change(table), path)


def test_a_partition_with_a_missing_column_is_refused_before_any_training(capsys, root, plan):
    _rewrite(root, D1, lambda t: t.drop(["I5"]))
    refused(capsys, [root], *nightly(root, plan), expect="missing column(s) ['I5']")
    assert not (root / "models").exists() and not (root / "logs").exists()


def test_a_column_of_the_wrong_type_is_named_from_the_footer(capsys, root, plan):
    def floats(table):
        index = table.schema.get_field_index("I1")
        return table.set_column(index, "I1", table.column("I1").cast(pa.float64()))

    _rewrite(root, D1, floats)
    refused(capsys, [root], *nightly(root, plan), expect="column 'I1' has type double, expected an integer type")


def test_repeated_row_keys_are_refused(capsys, root, plan):
    def repeat(table):
        keys = table.column("row_id").to_numpy().copy()
        keys[1] = keys[0]
        return table.set_column(0, "row_id", pa.array(keys))

    _rewrite(root, D1, repeat)
    refused(capsys, [root], *nightly(root, plan), expect="repeat an earlier row_id")


def test_a_day_whose_labels_are_all_zero_has_nothing_to_audit(capsys, root, plan):
    def zeros(table):
        index = table.schema.get_field_index("label")
        return table.set_column(index, "label", pa.array([0] * table.num_rows, pa.int8()))

    _rewrite(root, D1, zeros)
    expect = f"column 'label': all {ROWS} row(s) have the label 0; nothing to audit"
    refused(capsys, [root], *nightly(root, plan), expect=expect)
    refused(capsys, [root], "data", "validate", "--date", D1.isoformat(), "--data-root", str(root), expect=expect)
    refused(capsys, [root], "guardrail", "--model", "x", "--date", D1.isoformat(), "--claimed-epsilon", "1",
            "--data-root", str(root), "--plan", plan, expect=expect)


def test_a_missing_day_in_a_backfill_is_refused_before_the_first_day(capsys, root, plan):
    refused(capsys, [root], "backfill", "--start", D1.isoformat(), "--end", "2026-10-03", "--data-root", str(root),
            "--plan", plan, expect="partition for 2026-10-03 is missing")


# ------------------------------------------------------------------------------------------ plan and models


def test_bad_plans_and_arguments(capsys, root, plan, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"targets": [{"name": "a", "mechanism": "magic", "epsilon": 1}]}))
    refused(capsys, [root], *nightly(root, str(bad)), expect="bad.json: targets[0].mechanism must be one of")
    refused(capsys, [root], *nightly(root, plan, "--models", "nope"), expect="plan: no target named 'nope'")
    refused(capsys, [root], "guardrail", "--model", "../etc", "--date", D1.isoformat(), "--claimed-epsilon", "1",
            "--data-root", str(root), expect="--model")
    refused(capsys, [root], "guardrail", "--model", "ghost", "--date", D1.isoformat(), "--claimed-epsilon", "1",
            "--data-root", str(root), "--plan", plan, expect="no model 'ghost' for 2026-10-02")
    # a candidate file must say which rows trained it: the flag is named, nothing is registered
    candidate = tmp_path / "candidate.cbm"
    candidate.write_bytes(b"not read")
    refused(capsys, [root], "guardrail", "--model-file", str(candidate), "--date", D1.isoformat(),
            "--claimed-epsilon", "1", "--data-root", str(root), "--plan", plan,
            expect="--training-rows: a candidate file needs its training rows")


def test_models_the_plan_loads_without_training_must_be_there(capsys, root, tmp_path):
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
                                  "on_missing_reference": "fail", "controls": {"enabled": False}}))
    refused(capsys, [root], *nightly(root, str(strict)), expect="no reference model at")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"targets": [{"name": "outside", "source": "registered"}],
                                   "on_missing_target": "fail", "controls": {"enabled": False}}))
    refused(capsys, [root], *nightly(root, str(outside)), expect="registered target outside has no model")
    trained = tmp_path / "trained.json"
    trained.write_text(json.dumps({"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
                                   "on_missing_target": "fail", "controls": {"enabled": False}}))
    refused(capsys, [root], *nightly(root, str(trained)), expect="target model rr-eps1 for 2026-10-02 is missing")


def test_the_reference_day_must_be_there_when_the_reference_is_trained(capsys, root, plan):
    import shutil

    shutil.rmtree(root / "partitions" / f"date={D0.isoformat()}")
    refused(capsys, [root], *nightly(root, plan),
            expect="the reference reference@2026-10-01 is missing and would be trained on that day's partition")


def test_the_preflight_imports_neither_prefect_nor_beam_nor_catboost(root, plan):
    """A run refused by the preflight never loads the heavy libraries (that is why it takes about a second)."""
    (root / "partitions" / f"date={D1.isoformat()}" / "part-00000.parquet").write_bytes(b"garbage")
    code = ("import sys\nfrom flows.cli import main\n"
            f"code = main({nightly(root, plan)!r})\n"
            "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'apache_beam', 'catboost'}))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/numba")})
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr
    assert "not a readable Parquet file" in done.stderr and len(done.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------ what to do


def _team_plan(tmp_path, own_dataset: bool = True, **changes) -> str:
    """A plan for another team's models: registered targets, on its own log (a dataset spec of its own) or on
    Criteo days."""
    spec = tmp_path / "team_clicks.json"
    spec.write_text(json.dumps({"name": "team_clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
                                "numeric": ["f1", "f2"], "categorical": ["country"]}))
    path = tmp_path / "team-plan.json"
    path.write_text(json.dumps({**({"dataset": str(spec)} if own_dataset else {}), "reference_name": "team-reference",
                                "targets": [{"name": "team-ctr", "source": "registered", "claimed_epsilon": 1}],
                                "controls": {"enabled": False}, **changes}))
    return str(path)


def test_the_advice_fits_a_plan_of_another_teams_log_and_models(capsys, root, tmp_path):
    """The fixes the nightly suggests are the ones that apply to it: a missing day of an outside log is ingested
    with its spec (not synthesized), a partition of another dataset is fixed in the plan (the nightly has no
    --dataset), a missing reference of registered models is registered (not trained)."""
    plan = _team_plan(tmp_path)
    code, err, _ = run_cli(capsys, "nightly", "--date", "2026-10-05", "--data-root", str(root), "--plan", plan)
    assert code == 2 and len(err) == 1, err
    assert "`labeldp-audit data ingest FILE... --dataset SPEC --date 2026-10-05`" in err[0], err
    assert "synth" not in err[0] and "ingest-criteo" not in err[0]

    code, err, _ = run_cli(capsys, *nightly(root, plan))
    assert code == 2 and len(err) == 1, err
    assert "was written for dataset 'criteo'" in err[0] and "not for 'team_clicks'" in err[0]
    assert "name its spec file in the plan's \"dataset\" (`labeldp-audit plan check PLAN`" in err[0], err
    assert "with --dataset" not in err[0]

    criteo = _team_plan(tmp_path, own_dataset=False, on_missing_reference="fail", on_missing_target="skip")
    code, err, _ = run_cli(capsys, *nightly(root, criteo))
    assert code == 2 and len(err) == 1, err
    assert ("register the D-1 checkpoint with `labeldp-audit models register --name team-reference --date "
            "2026-10-01 --file FILE --claimed-epsilon inf`") in err[0], err
    assert "labeldp-audit train" not in err[0]

    trained = tmp_path / "strict.json"
    trained.write_text(json.dumps({"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
                                   "on_missing_reference": "fail", "controls": {"enabled": False}}))
    code, err, _ = run_cli(capsys, *nightly(root, str(trained)))
    assert code == 2 and ("`labeldp-audit train --date 2026-10-01 --mechanism none --epsilon inf --model-name "
                          "reference`") in err[0], err


def test_a_missing_criteo_day_is_ingested_from_its_tsv_or_synthesized(capsys, root, plan):
    code, err, _ = run_cli(capsys, "nightly", "--date", "2026-10-05", "--data-root", str(root), "--plan", plan)
    assert code == 2 and "`labeldp-audit data ingest-criteo FILE --date 2026-10-05`" in err[0], err
    assert "`labeldp-audit data synth --start 2026-10-05 --end 2026-10-05`" in err[0]


# ------------------------------------------------------------------------------------------ --check-only


def _checked(capsys, roots, *argv) -> str:
    """The command exits 0 with one stderr line saying every input passed, and leaves ``roots`` as they were."""
    before = snapshot(*roots)
    code, err, out = run_cli(capsys, *argv, "--check-only")
    assert code == 0, err
    assert len(err) == 1 and "--check-only: every input of" in err[0] and "nothing was trained" in err[0], err
    assert out == "" and snapshot(*roots) == before
    return err[0]


def test_check_only_runs_the_preflight_and_writes_nothing(capsys, root, plan, tmp_path):
    """nightly, backfill and guardrail --check-only: 0 when every input passes (no model trained, no log, no
    warehouse, no Prefect), 2 with the preflight's one line when one does not, and nothing written either way."""
    warehouse = tmp_path / "wh" / "warehouse.duckdb"
    assert "of 2026-10-02 passed" in _checked(capsys, [root], *nightly(root, plan))
    _checked(capsys, [root, tmp_path / "wh"], *nightly(root, plan, "--warehouse", str(warehouse),
                                                         "--create-warehouse"))
    assert not (root / "logs").exists() and not (root / "models").exists() and not (tmp_path / "wh").exists()
    assert "of 2026-10-02..2026-10-02 passed" in _checked(
        capsys, [root], "backfill", "--start", D1.isoformat(), "--end", D1.isoformat(), "--data-root", str(root),
        "--plan", plan)
    _checked(capsys, [root], *nightly(root, plan, "--drain-only"))

    # Bad input: exit 2, one line, nothing written; a missing day sends no DATA_MISSING alert either (the run
    # without --check-only records one in the alerts ledger).
    from tests.support.webhook_receiver import WebhookReceiver

    hook = WebhookReceiver()
    missing_day = ["nightly", "--date", "2026-10-05", "--data-root", str(root), "--plan", plan, "--webhook-url",
                   hook.start()]
    try:
        refused(capsys, [root], *missing_day, "--check-only", expect="2026-10-05")
        assert hook.received == []
        run_cli(capsys, *missing_day)
        assert [alert["kind"] for alert in hook.received] == ["DATA_MISSING"]  # what --check-only held back
    finally:
        hook.stop()
    refused(capsys, [root], "backfill", "--start", D1.isoformat(), "--end", "2026-10-03", "--data-root", str(root),
            "--plan", plan, "--check-only", expect="2026-10-03")
    refused(capsys, [root], *nightly(root, plan, "--warehouse", str(warehouse), "--check-only"),
            expect="does not exist; create it, fix the path or pass --create-warehouse")
    refused(capsys, [root], "guardrail", "--model", "ghost", "--date", D1.isoformat(), "--claimed-epsilon", "1",
            "--data-root", str(root), "--plan", plan, "--check-only", expect="no model 'ghost' for 2026-10-02")


def test_guardrail_check_only_checks_a_model_file_without_registering_it(capsys, root, plan, tmp_path):
    from pipelines.data.day import listed_day
    from pipelines.training.fitting import CatBoostSettings, fit_catboost
    from pipelines.training.train import load_day

    day = load_day(listed_day(root, D1))
    model, _ = fit_catboost(day.features, day.labels, CatBoostSettings(iterations=3), 0)
    candidate = tmp_path / "release.cbm"
    model.save_model(str(candidate))
    argv = ["guardrail", "--model-file", str(candidate), "--format", "catboost", "--claimed-epsilon", "1",
            "--date", D1.isoformat(), "--data-root", str(root), "--plan", plan]
    assert "of candidate-" in _checked(capsys, [root], *argv, "--training-rows", "all")
    assert not (root / "models").exists()
    keys = tmp_path / "keys.parquet"
    pq.write_table(pa.table({"row_id": pa.array([*day.row_ids[:2], 10**12], pa.int64())}), keys)
    refused(capsys, [root], *argv, "--training-rows", str(keys), "--check-only",
            expect="1 of 3 key(s) are not rows of day 2026-10-02")
    other = tmp_path / "other.cbm"
    fit_catboost(day.features[["I1", "I2"]].rename(columns={"I1": "x1", "I2": "x2"}), day.labels,
                 CatBoostSettings(iterations=3), 0)[0].save_model(str(other))
    refused(capsys, [root], *[str(other) if a == str(candidate) else a for a in argv], "--training-rows", "all", "--check-only",
            expect="['x1', 'x2']")


def test_the_preflight_warns_when_no_night_can_confirm_the_claim():
    from flows.plan import load_plan
    from flows.preflight import holdout_warnings

    plan = load_plan(None)
    assert holdout_warnings(plan, 1_000_000) == []
    warnings = holdout_warnings(plan, 300)
    assert warnings and all("no night of 300 rows can confirm a violation of claimed eps" in w for w in warnings)
    assert all("labeldp-audit plan power --rows 300" in w for w in warnings)
