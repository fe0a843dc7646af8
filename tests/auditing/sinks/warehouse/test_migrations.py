"""Warehouse schema versions and migrations (auditing.sinks.warehouse.migrations), on DuckDB (a file per test) and
PostgreSQL (127.0.0.1:5432, a schema of its own per test, dropped afterwards).

Every migration test starts from a warehouse WRITTEN BY THE VERSION BEFORE VERSIONING, with rows in it: its
tables are created with that code's DDL (``_V1_RESULTS`` / ``_V1_CURVES`` below, the CREATE TABLE text it
generated; ``test_the_v1_fixture_is_what_the_code_before_versioning_created`` compares them with that code when
git has it) and rows are inserted with the database driver, never through the new code.

The tests at the end start otherwise: from tables a test alters in place (``isolated_target``: a DuckDB file or a
PostgreSQL schema of its own), or from the tables and rows of the code before kappa (``_PRE_KAPPA_DDL``); and the
DDL of a new warehouse (``ddl_text``) is checked against infra/warehouse/*.sql.

Set LABELDP_TEST_POSTGRES_URL to test another server. When no PostgreSQL answers, the postgres cases are
skipped with a loud reason (they are never silently passed).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import runpy
import subprocess
import threading
from pathlib import Path

import pytest

from auditing.bounds import lower_bound as bounds
from auditing.sinks.warehouse import audit_record, drain_spool, migrations, open_warehouse
from auditing.sinks.warehouse.base import open_read_only
from auditing.sinks.warehouse.migrations import (
    LATEST,
    MIGRATIONS,
    V3_KEY,
    Context,
    choice_checks,
    ddl_text,
    legacy_note,
)
from auditing.sinks.warehouse.records import DERIVED_DECISION, stored_decision
from auditing.sinks.warehouse.rows import normalize_row
from auditing.sinks.warehouse.schema import (
    ATTACK_COLUMNS,
    DECISION_COLUMNS,
    FAMILY_COLUMNS,
    KEY_COLUMNS,
    RESULT_COLUMNS,
    RESULT_NAMES,
    SLICE_COLUMNS,
    SLICE_NAMES,
    STORED_RUN_KINDS,
    TABLE_COMMENTS,
    TRUST_COLUMNS,
    UNRECORDED,
    VERSION_TABLE,
    create_table_sql,
    ddl_statements,
    version_table_statements,
)
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.types import DECISIONS, STATUSES, TRUST_STATES
from labeldp.codec import decode
from labeldp.errors import LabelDPInputError
from tests.support.pg_schema import own_schema
from tests.support.warehouse_audits import fdp_result as _fdp_result
from tests.support.warehouse_audits import reference_check_record as _reference_check
from tests.support.warehouse_rows import make_row
from tests.support.warehouse_targets import only

REPO = Path(__file__).resolve().parents[4]
DAY = dt.date(2024, 1, 2)
# The last commit whose code created unversioned warehouses (for the fixture check only).
PRE_VERSIONING_COMMIT = "79b1dcc"

# --------------------------------------------------------------------------------------------- version 1
# The tables as the code before versioning created them (its `python -m auditing.sinks.warehouse duckdb`, CREATE
# TABLE part; PostgreSQL spells DOUBLE as DOUBLE PRECISION), one column per comma-separated item.
_V1_RESULTS = """
    model_id TEXT NOT NULL, partition_date DATE NOT NULL, audit_config_hash TEXT NOT NULL,
    claimed_epsilon DOUBLE NOT NULL, delta DOUBLE NOT NULL, confidence DOUBLE NOT NULL,
    gamma DOUBLE NOT NULL, tau DOUBLE NOT NULL, m BIGINT NOT NULL, selected_guesses BIGINT NOT NULL,
    selected_correct BIGINT NOT NULL, epsilon_lower_bound DOUBLE NOT NULL, epsilon_mean DOUBLE,
    epsilon_std DOUBLE, epsilon_median DOUBLE, strategy TEXT NOT NULL, method TEXT NOT NULL,
    status TEXT NOT NULL, max_certifiable_epsilon DOUBLE NOT NULL, repetitions INTEGER NOT NULL,
    seed BIGINT NOT NULL, model_uri TEXT, model_fingerprint TEXT, reference_model TEXT,
    partition_fingerprint TEXT, code_version TEXT, flow_run_id TEXT, started_at TIMESTAMPTZ,
    finished_at TIMESTAMPTZ, durations TEXT, result_json TEXT NOT NULL, audit_rows TEXT,
    breaking_tau DOUBLE, detection_floor_rows BIGINT, shift_diagnostic TEXT,
    reference_log_loss_shift DOUBLE, feature_shift_max_psi DOUBLE, kind TEXT, control_passed INTEGER,
    control_floor DOUBLE, untrusted_reason TEXT, risk_posterior_ceiling_median DOUBLE,
    risk_posterior_ceiling_p90 DOUBLE, risk_high_prior_ceiling DOUBLE, risk_column_tail_bound DOUBLE,
    risk_column_expected DOUBLE, risk_mia_advantage_bound DOUBLE, risk_aia_advantage_bound DOUBLE,
    risk_reconstruction_bound DOUBLE, risk_lb_posterior_ceiling_median DOUBLE,
    risk_lb_posterior_ceiling_p90 DOUBLE, risk_lb_high_prior_ceiling DOUBLE,
    risk_lb_column_tail_bound DOUBLE, risk_lb_column_expected DOUBLE, risk_lb_mia_advantage_bound DOUBLE,
    risk_lb_aia_advantage_bound DOUBLE, risk_lb_reconstruction_bound DOUBLE, risk_headline TEXT,
    exposed_rows_floor BIGINT, kappa DOUBLE, breaking_kappa DOUBLE, reference_calibration TEXT,
    calibration_rows_fit BIGINT, calibration_rows_validation BIGINT, calibration_rounds INTEGER,
    calibration_log_loss_before DOUBLE, calibration_log_loss_after DOUBLE, calibration_ece_before DOUBLE,
    calibration_ece_after DOUBLE, label_blind_bound DOUBLE, reference_misfit_kappa DOUBLE,
    label_blind_flagged INTEGER, reference_checked INTEGER, reference_check_note TEXT, fdp_curve TEXT,
    gdp_mu_lower_bound DOUBLE
"""
_V1_RESULTS_TAIL = (
    "PRIMARY KEY (model_id, partition_date, audit_config_hash)",
    "CHECK (status IN ('PASS', 'VIOLATION', 'INCONCLUSIVE'))",
    "CHECK (method IN ('binomial', 'fdp'))",
    "CHECK (selected_correct <= selected_guesses)",
)
_V1_CURVES = """
    model_id TEXT NOT NULL, partition_date DATE NOT NULL, audit_config_hash TEXT NOT NULL,
    point_index INTEGER NOT NULL, guesses BIGINT NOT NULL, correct BIGINT NOT NULL,
    epsilon_lower_bound DOUBLE NOT NULL, point_confidence DOUBLE NOT NULL
"""
_V1_CURVES_TAIL = ("PRIMARY KEY (model_id, partition_date, audit_config_hash, point_index)",
                   "CHECK (correct <= guesses)")
V1_NAMES = tuple(item.split()[0] for item in _V1_RESULTS.split(",") if item.strip())


def _v1_create(table: str, columns: str, tail: tuple[str, ...], dialect: str) -> str:
    lines = [f"    {item.strip()}" for item in columns.split(",") if item.strip()] + [f"    {t}" for t in tail]
    sql = f"CREATE TABLE IF NOT EXISTS {table} (\n" + ",\n".join(lines) + "\n)"
    return sql if dialect == "duckdb" else re.sub(r"\bDOUBLE\b", "DOUBLE PRECISION", sql)


def _v1_statements(dialect: str) -> list[str]:
    """The version-1 DDL: the two tables, then comments on them and on a few columns (as that code did)."""
    return [
        _v1_create("audit_results", _V1_RESULTS, _V1_RESULTS_TAIL, dialect),
        _v1_create("audit_curves", _V1_CURVES, _V1_CURVES_TAIL, dialect),
        *(f"COMMENT ON TABLE {table} IS '{text.replace(chr(39), chr(39) * 2)}'"
          for table, text in TABLE_COMMENTS.items() if table in ("audit_results", "audit_curves")),
        "COMMENT ON COLUMN audit_results.method IS 'bound method: binomial | fdp'",
        "COMMENT ON COLUMN audit_results.tau IS 'legacy: the total-variation tau of rows written before kappa'",
        "COMMENT ON COLUMN audit_results.epsilon_lower_bound IS 'THE statistically valid epsilon lower bound'",
    ]


def _v1_row(config: str, **values) -> dict:
    """A row over the version-1 columns, as that code wrote it (NULL where not given)."""
    row = dict.fromkeys(V1_NAMES)
    row.update(
        model_id="mig-m", partition_date=DAY, audit_config_hash=config, claimed_epsilon=1.0, delta=0.0,
        confidence=0.95, gamma=1 - 0.95, tau=0.0, m=1000, selected_guesses=100, selected_correct=80,
        epsilon_lower_bound=0.5, epsilon_mean=0.61, epsilon_std=0.01, epsilon_median=0.6, strategy="bonferroni",
        method="binomial", status="PASS", max_certifiable_epsilon=5.0, repetitions=10, seed=7,
        model_uri=f"file:///models/{config}.cbm", flow_run_id=f"run-{config}",
        started_at=dt.datetime(2024, 1, 3, 1, 0, tzinfo=dt.UTC),
        finished_at=dt.datetime(2024, 1, 3, 1, 5, 30, 250000, tzinfo=dt.UTC),
        durations='{"audit": 0.25, "score": 12.5}', result_json=json.dumps({"config": config}),
    )
    row.update(values)
    return row


# A night of rows as the version-1 code left them: two written since kappa (tau 0, breaking_tau NULL) and
# three written before it, whose TV figures the retirement of tau must keep.
V1_ROWS = (
    _v1_row("now-bin", status="VIOLATION", claimed_epsilon=0.3, epsilon_lower_bound=0.9, kappa=0.0,
            breaking_kappa=0.4, detection_floor_rows=12, exposed_rows_floor=40, audit_rows="training",
            reference_calibration="boost", reference_checked=1, calibration_rows_fit=6000,
            calibration_rows_validation=2000, calibration_rounds=40, calibration_log_loss_before=0.47,
            calibration_log_loss_after=0.452, calibration_ece_before=0.031, calibration_ece_after=0.006,
            label_blind_bound=0.0, reference_misfit_kappa=0.0, label_blind_flagged=0,
            risk_mia_advantage_bound=0.17, risk_headline="the claim allows little"),
    _v1_row("now-fdp", method="fdp", delta=1e-5, kappa=0.1, breaking_kappa=0.0, fdp_curve="eps-delta",
            gdp_mu_lower_bound=0.42, reference_calibration="none", reference_checked=0,
            reference_check_note="no held-out rows for 2024-01-02", kind="control", control_passed=1,
            control_floor=0.3, shift_diagnostic='{"feature_shift_max_psi": 0.2}', feature_shift_max_psi=0.2),
    _v1_row("old-fdp", method="fdp", delta=1e-5, tau=0.05, breaking_tau=0.02, status="VIOLATION",
            epsilon_lower_bound=1.4, result_json='{"method": "fdp", "tau": 0.05}'),
    _v1_row("old-bin", tau=0.0, breaking_tau=0.3, epsilon_lower_bound=0.2),
    _v1_row("old-noted", tau=1e-05, reference_check_note="noted by hand", status="INCONCLUSIVE"),
)
# Where each row's legacy figures end up (None: the row had none to keep).
EXPECTED_NOTES = {"now-bin": None, "now-fdp": "no held-out rows for 2024-01-02",
                  "old-fdp": "legacy tau=0.05, breaking_tau=0.02", "old-bin": "legacy breaking_tau=0.3",
                  "old-noted": "noted by hand; legacy tau=1e-05"}
V1_CURVES = {config: [(i, 10 * (i + 1), 5 * (i + 1), 0.1 * i, 0.999) for i in range(points)]
             for config, points in (("now-bin", 3), ("old-fdp", 2))}
V1_CURVE_NAMES = (*V3_KEY, "point_index", "guesses", "correct", "epsilon_lower_bound", "point_confidence")
# The columns version 9 adds to audit_results, and what it stores in the two that are not NULL on an existing row.
V9_COLUMNS = ("inputs_fingerprint", "run_id", "training_rows_fingerprint", "reference_fingerprint",
              "correction_fingerprint", "scoring_key", "night_fingerprint")


def v9_fills(old: dict) -> dict:
    """What a row written before version 9 reads as: its key's inputs and run id as migration 9 stores them, and
    (version 10) the decision the reader derives from its stored status and trust."""
    fills = {"inputs_fingerprint": UNRECORDED, "run_id": old.get("flow_run_id") or UNRECORDED}
    if old.get("decision") is None and old.get("kind", "target") != "control" and old.get("status"):
        fills.update(decision=stored_decision(old["status"], old.get("trust"), old.get("detectability"),
                                              old.get("untrusted_reason")), decision_reason=DERIVED_DECISION)
    return fills


def _connect_raw(target: str):
    """A plain driver connection (autocommit) and its placeholder: the code under test is not involved."""
    if target.startswith("postgresql://"):
        import psycopg

        return psycopg.connect(target, autocommit=True), "%s"
    import duckdb

    Path(target).parent.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(target), "?"


def _write_v1_warehouse(target: str) -> None:
    """A warehouse as the code before versioning created and filled it."""
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    conn, mark = _connect_raw(target)
    try:
        for statement in _v1_statements(dialect):
            conn.execute(statement)
        cursor = conn.cursor()
        cursor.executemany(f"INSERT INTO audit_results ({', '.join(V1_NAMES)}) "
                           f"VALUES ({', '.join([mark] * len(V1_NAMES))})",
                           [[row[name] for name in V1_NAMES] for row in V1_ROWS])
        cursor.executemany(f"INSERT INTO audit_curves ({', '.join(V1_CURVE_NAMES)}) "
                           f"VALUES ({', '.join([mark] * len(V1_CURVE_NAMES))})",
                           [["mig-m", DAY, config, *point] for config, points in V1_CURVES.items()
                            for point in points])
    finally:
        conn.close()


def _execute_raw(target: str, sql: str, params=()) -> list[tuple]:
    conn, mark = _connect_raw(target)
    try:
        cursor = conn.cursor()
        cursor.execute(sql.replace("?", mark), list(params))
        return cursor.fetchall() if cursor.description else []
    finally:
        conn.close()


@pytest.fixture(params=["duckdb", "postgres"])
def target(request, tmp_path):
    """An empty warehouse target of the backend under test: a DuckDB file, or a PostgreSQL schema of its own."""
    if request.param == "duckdb":
        yield str(tmp_path / "wh" / "warehouse.duckdb")
        return
    with own_schema("labeldp_ver") as url:
        yield url


@pytest.fixture
def v1_target(target):
    _write_v1_warehouse(target)
    return target


@pytest.fixture
def toy_method(monkeypatch):
    """The methods registry's list with a toy method added (auditing.bounds.lower_bound.METHODS)."""
    monkeypatch.setitem(vars(bounds), "METHODS", (*bounds.METHODS, "toy"))
    return "toy"


def _valid_row(config: str, **changes) -> dict:
    """A validated row of the latest schema (written below through the real write path, past validation)."""
    row = normalize_row({
        "model_id": "raw-m", "partition_date": DAY, "audit_config_hash": config, "claimed_epsilon": 1.0,
        "run_kind": "nightly", "delta": 0.0, "confidence": 0.95, "m": 1000, "selected_guesses": 10, "selected_correct": 5,
        "epsilon_lower_bound": 0.1, "strategy": "bonferroni", "method": "binomial", "status": "PASS",
        "max_certifiable_epsilon": 5.0, "repetitions": 1, "seed": 1, "result_json": {"config": config},
    })
    return {**row, **changes}


def _write_bypassing_validation(wh, row: dict) -> None:
    """The warehouse's own upsert statements for ``row``, without normalize_row: what the table accepts."""
    wh._transaction(lambda cursor: wh._write(cursor, row, tuple(row[k] for k in KEY_COLUMNS), []))


def _refused_by_the_table(wh, row: dict) -> bool:
    try:
        _write_bypassing_validation(wh, row)
    except Exception as exc:  # the driver's constraint error: duckdb.ConstraintException, psycopg CheckViolation
        if "constraint" in f"{type(exc).__name__} {exc}".lower():
            return True
        raise
    return False


def _choice_checks(wh) -> dict:
    out = {}
    wh._transaction(lambda cursor: out.update(choice_checks(Context(cursor, wh.dialect, wh.placeholder, "t"))))
    return out


# --------------------------------------------------------------------------------------------- the fixture
def test_the_v1_fixture_is_what_the_code_before_versioning_created(tmp_path):
    """The CREATE TABLE text above is what that code generated (checked against its source when git has it)."""
    try:
        source = subprocess.run(["git", "show", f"{PRE_VERSIONING_COMMIT}:auditing/warehouse/schema.py"],
                                cwd=REPO, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"the code before versioning is not in this checkout's git history ({exc})")
    path = tmp_path / "schema_before_versioning.py"
    path.write_text(source)
    old = runpy.run_path(str(path))  # that module alone: it imports only the standard library
    for dialect in ("duckdb", "postgres"):
        assert _v1_statements(dialect)[:2] == old["ddl_statements"](dialect)[:2]
    assert V1_NAMES == tuple(c.name for c in old["RESULT_COLUMNS"])
    assert {c.name: (c.kind, c.nullable) for c in migrations.RETIRED_TAU} == \
        {c.name: (c.kind, c.nullable) for c in old["RESULT_COLUMNS"] if c.name in ("tau", "breaking_tau")}


def test_migrations_are_ordered_and_describe_version_1_as_the_unversioned_tables():
    assert [m.version for m in MIGRATIONS] == list(range(1, LATEST + 1)) and LATEST >= 8
    # version 8 creates the slices' table; every version before it has the two audit tables only
    assert list(migrations.expected_tables(7)) == ["audit_results", "audit_curves"]
    v8_slices = tuple(c for c in SLICE_COLUMNS if c.name != "inputs_fingerprint")
    assert migrations.expected_tables(8)["audit_slices"] == v8_slices and MIGRATIONS[7].creates == ("audit_slices",)
    # version 9 keys every table by its inputs too and creates the runs' table
    assert list(migrations.expected_tables(8)) == ["audit_results", "audit_curves", "audit_slices"]
    assert migrations.expected_tables(9)["audit_slices"] == SLICE_COLUMNS and "audit_runs" in MIGRATIONS[8].creates
    assert all(m.description.strip() for m in MIGRATIONS)
    v1 = migrations.expected_tables(1)
    assert sorted(c.name for c in v1["audit_results"]) == sorted(V1_NAMES)
    assert migrations.expected_tables(LATEST)["audit_results"] == RESULT_COLUMNS
    assert "reference_check_note" in MIGRATIONS[2].description and "tau" not in RESULT_NAMES
    assert (legacy_note(0.05, 0.02), legacy_note(0.0, 0.3), legacy_note(0.0, None)) == \
        ("legacy tau=0.05, breaking_tau=0.02", "legacy breaking_tau=0.3", None)


def test_the_ddl_lists_the_registries_names_never_a_typed_literal(toy_method):
    ddl = "\n".join(ddl_statements("duckdb"))
    listed = ", ".join(f"'{name}'" for name in bounds.METHODS)
    assert "'toy'" in listed and "'binomial', 'fdp'" in listed
    assert f"CONSTRAINT audit_results_method_check CHECK (method IN ({listed}))" in ddl
    assert ("CONSTRAINT audit_results_status_check CHECK (status IN ('PASS', 'WEAK_PASS', 'VIOLATION', "
            "'INCONCLUSIVE'))") in ddl
    assert ("CONSTRAINT audit_results_run_kind_check CHECK (run_kind IN ('nightly', 'guardrail', 'backfill', 'rejudge', "
            "'unrecorded'))") in ddl


# --------------------------------------------------------------------------------------------- migrating
def test_a_warehouse_from_before_versioning_is_migrated_keeping_every_row(v1_target):
    before = dt.datetime.now(dt.UTC)
    with open_warehouse(v1_target, create=False) as wh:
        versions = wh.schema_versions()
        rows = {r.audit_config_hash: r for r in wh.fetch_results()}
        curves = {config: wh.fetch_curve(("mig-m", UNRECORDED, DAY, UNRECORDED, rows[config].claimed_epsilon,
                                          config, UNRECORDED)) for config in rows}
        columns = [c for table, c in wh._query(wh._TABLE_COLUMNS_SQL, []) if table == "audit_results"]
        slices = wh._query("SELECT * FROM audit_slices", [])
        checks = _choice_checks(wh)
        assert _refused_by_the_table(wh, _valid_row("unknown-method", method="nope"))
        assert _refused_by_the_table(wh, _valid_row("unknown-status", status="MAYBE"))
        assert not _refused_by_the_table(wh, _valid_row("binomial-ok"))

    # The version is recorded: one row per migration, with its description and the time it ran.
    assert [(v["version"], v["description"]) for v in versions] == [(m.version, m.description) for m in MIGRATIONS]
    assert slices == [] and sorted(_table_columns(v1_target, "audit_slices")) == sorted(SLICE_NAMES)  # created, empty
    assert all(before - dt.timedelta(seconds=5) <= v["applied_at"] <= dt.datetime.now(dt.UTC) for v in versions)
    # Every row is still there with the same values; tau and breaking_tau are gone, their figures kept.
    assert sorted(columns) == sorted(RESULT_NAMES) and "tau" not in columns and "breaking_tau" not in columns
    assert rows.keys() == {row["audit_config_hash"] for row in V1_ROWS}
    for old in V1_ROWS:
        config = old["audit_config_hash"]
        expected = {name: old.get(name) for name in RESULT_NAMES} | {
            "reference_check_note": EXPECTED_NOTES[config], "run_kind": UNRECORDED, "model_fingerprint": UNRECORDED,
            **v9_fills(old)}
        assert rows[config].to_dict() == expected, config
        assert [(p["point_index"], p["guesses"], p["correct"], p["epsilon_lower_bound"], p["point_confidence"])
                for p in curves[config]] == V1_CURVES.get(config, [])
    # The CHECKs are the generated ones, one per choice column.
    assert {column: [values for _, values in found] for column, found in checks.items()} == \
        {"status": [list(STATUSES)], "method": [list(bounds.METHODS)], "run_kind": [list(STORED_RUN_KINDS)],
         "trust": [list(TRUST_STATES)], "decision": [list(DECISIONS)]}


def test_reopening_a_migrated_warehouse_changes_nothing(v1_target, monkeypatch):
    with open_warehouse(v1_target) as wh:
        versions, rows = wh.schema_versions(), wh.fetch_results()
    synced = []
    monkeypatch.setattr(migrations, "sync_choice_checks", lambda ctx, **kw: synced.append(ctx))
    for create in (True, False):
        with open_warehouse(v1_target, create=create) as wh:
            assert wh.schema_versions() == versions and wh.fetch_results() == rows
    assert synced == []  # no constraint rebuilt: the CHECKs were found in line


def test_the_duckdb_rebuild_keeps_keys_and_comments(tmp_path):
    target = str(tmp_path / "warehouse.duckdb")
    _write_v1_warehouse(target)
    with open_warehouse(target) as wh:
        wh.write_audit(_valid_row("after"), [])
        with pytest.raises(Exception, match=r"(?i)duplicate key|primary key|unique"):
            wh._transaction(lambda cur: cur.execute(
                "INSERT INTO audit_results SELECT * FROM audit_results WHERE audit_config_hash = 'after'"))
    comments = dict(_execute_raw(target, "SELECT column_name, comment FROM duckdb_columns() "
                                         "WHERE table_name = 'audit_results' AND comment IS NOT NULL"))
    latest = {c.name: c.comment for c in RESULT_COLUMNS}
    assert comments == {"method": "bound method: binomial | fdp",
                        "epsilon_lower_bound": "THE statistically valid epsilon lower bound",
                        **{name: latest[name] for name in ("model_fingerprint", "run_kind", "claimed_epsilon",
                                                           "status", "untrusted_reason", *TRUST_COLUMNS,
                                                           *ATTACK_COLUMNS, *FAMILY_COLUMNS, *V9_COLUMNS, *DECISION_COLUMNS,
                                                           "partition_fingerprint")}}
    assert _execute_raw(target, "SELECT comment FROM duckdb_tables() WHERE table_name = 'audit_results'") == \
        [(TABLE_COMMENTS["audit_results"],)]


def test_a_method_added_to_the_registry_is_accepted_after_opening(v1_target, toy_method):
    """Before versioned migrations the old CHECK (method IN ('binomial', 'fdp')) refused a new method's rows
    in an existing warehouse; now opening it brings the CHECK in line with the registry."""
    with open_warehouse(v1_target) as wh:
        _write_bypassing_validation(wh, _valid_row("toy-row", method=toy_method))
        assert _refused_by_the_table(wh, _valid_row("unknown", method="nope"))
        assert [r.method for r in wh.fetch_results(model_id="raw-m")] == ["toy"]


def test_a_method_registered_later_is_accepted_after_reopening_and_stays_allowed(target, monkeypatch):
    with open_warehouse(target) as wh:
        assert wh.schema_versions()[-1]["description"] == f"created at schema version {LATEST}"
        assert _refused_by_the_table(wh, _valid_row("toy-row", method="toy"))
    monkeypatch.setitem(vars(bounds), "METHODS", (*bounds.METHODS, "toy"))
    with open_warehouse(target) as wh:
        _write_bypassing_validation(wh, _valid_row("toy-row", method="toy"))
    monkeypatch.undo()  # a process without the toy method: the CHECK is not narrowed under the toy row
    with open_warehouse(target) as wh:
        assert [values for _, values in _choice_checks(wh)["method"]] == [[*bounds.METHODS, "toy"]]
        assert [r.method for r in wh.fetch_results()] == ["toy"]
        assert _refused_by_the_table(wh, _valid_row("unknown", method="nope"))
        with pytest.raises(LabelDPInputError, match=r"rows with method \['toy'\].*cannot be narrowed"):
            wh._transaction(lambda cur: migrations.sync_choice_checks(
                Context(cur, wh.dialect, wh.placeholder, "t"), narrow=True))


def test_concurrent_openers_apply_each_migration_once(v1_target):
    errors: list[BaseException] = []

    def open_one():
        try:
            with open_warehouse(v1_target) as wh:
                wh.fetch_results()
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    with open_warehouse(v1_target) as wh:
        assert [v["version"] for v in wh.schema_versions()] == list(range(1, LATEST + 1))
        assert len(wh.fetch_results()) == len(V1_ROWS)


def test_a_failing_migration_rolls_back_whole(v1_target, monkeypatch):
    with open_warehouse(v1_target) as wh:
        rows = wh.fetch_results()

    def add_then_fail(ctx):
        ctx.execute("ALTER TABLE audit_results ADD COLUMN doomed TEXT")
        ctx.execute("UPDATE audit_results SET epsilon_lower_bound = 99")
        raise RuntimeError("simulated failure inside migration 4")

    failing = migrations.Migration(LATEST + 1, "fails", add_then_fail)
    monkeypatch.setattr(migrations, "MIGRATIONS", (*MIGRATIONS, failing))
    monkeypatch.setattr(migrations, "LATEST", LATEST + 1)
    with pytest.raises(RuntimeError, match="migration 4"):
        open_warehouse(v1_target)
    monkeypatch.undo()
    with open_warehouse(v1_target) as wh:
        assert wh.schema_versions()[-1]["version"] == LATEST and wh.fetch_results() == rows
        assert "doomed" not in {c for _, c in wh._query(wh._TABLE_COLUMNS_SQL, [])}


def test_a_warehouse_of_a_newer_version_is_refused_naming_both_versions(target):
    with open_warehouse(target):
        pass
    _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                 [LATEST + 1, "from the future", dt.datetime.now(dt.UTC)])
    message = rf"schema version {LATEST + 1} is newer than this code knows \(it migrates up to version {LATEST}\)"
    with pytest.raises(LabelDPInputError, match=message):
        open_warehouse(target)


def test_a_payload_spooled_by_the_previous_version_drains_into_the_migrated_warehouse(v1_target, tmp_path):
    """Rows spooled before tau was retired carry tau = 0 and breaking_tau = None, and the spool's first format
    recorded no destination: such a payload stays until a drain says that this warehouse is its own."""
    spool = tmp_path / "spool"
    spool.mkdir()
    row = {k: v for k, v in _valid_row("spooled").items() if k not in ("run_kind", "model_fingerprint")}
    row = {**row, "tau": 0.0, "breaking_tau": None}
    payload = {"format": 1, "spooled_at": 0.0, "curve": [],
               "row": {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in row.items()}}
    (spool / "raw-m__2024-01-02__spooled.json").write_text(json.dumps(payload))
    assert drain_spool(v1_target, spool).unaddressed == [str(spool / "raw-m__2024-01-02__spooled.json")]
    report = drain_spool(v1_target, spool, include_unaddressed=True)
    assert [k.audit_config_hash for k in report.written] == ["spooled"] and report.rejected == []
    with open_warehouse(v1_target) as wh:
        got = wh.fetch_results(model_id="raw-m")
    assert [r.audit_config_hash for r in got] == ["spooled"] and "tau" not in got[0].to_dict()
    assert not hasattr(got[0], "tau") and not hasattr(got[0], "breaking_tau")
    assert (got[0].run_kind, got[0].model_fingerprint) == (UNRECORDED, UNRECORDED)


# --------------------------------------------------------------------------------------------- version 4
# A warehouse at version 3 as that code left it: the version-1 tables, tau and breaking_tau retired, the versions
# recorded. Its rows are the version-1 rows with their legacy figures dropped, some with a model fingerprint.
V3_FINGERPRINTS = {"now-bin": "sha256:" + "0a" * 32, "old-bin": "sha256:" + "0b" * 32}


def _write_v3_warehouse(target: str) -> None:
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    _write_v1_warehouse(target)
    statements = ["ALTER TABLE audit_results DROP COLUMN tau", "ALTER TABLE audit_results DROP COLUMN breaking_tau",
                  *version_table_statements(dialect)]
    for statement in statements:
        _execute_raw(target, statement)
    for config, fingerprint in V3_FINGERPRINTS.items():
        _execute_raw(target, "UPDATE audit_results SET model_fingerprint = ? WHERE audit_config_hash = ?",
                     [fingerprint, config])
    for migration in MIGRATIONS[:3]:
        _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                     [migration.version, migration.description, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])


@pytest.fixture
def v3_target(target):
    _write_v3_warehouse(target)
    return target


def _v3_expected(old: dict) -> dict:
    config = old["audit_config_hash"]
    return {name: old.get(name) for name in RESULT_NAMES} | {
        "run_kind": UNRECORDED, "model_fingerprint": V3_FINGERPRINTS.get(config, UNRECORDED), **v9_fills(old)}


def test_version_4_keys_every_verdict_keeping_every_row_and_curve(v3_target):
    """The key becomes (model, fingerprint, date, run kind, claim, config): every row and curve point is kept,
    the rows read run kind 'unrecorded' (and so does a missing fingerprint), and a guardrail's verdict of the
    same model, day and config then adds its own row beside them."""
    before = {r[0]: r for r in _execute_raw(v3_target, "SELECT audit_config_hash, epsilon_lower_bound, status "
                                                       "FROM audit_results")}
    with open_warehouse(v3_target) as wh:
        assert [v["version"] for v in wh.schema_versions()] == list(range(1, LATEST + 1))
        rows = {r.audit_config_hash: r for r in wh.fetch_results()}
        assert rows.keys() == before.keys()
        for old in V1_ROWS:
            assert rows[old["audit_config_hash"]].to_dict() == _v3_expected(old) | {
                "reference_check_note": old["reference_check_note"]}, old["audit_config_hash"]
        for config, points in V1_CURVES.items():
            got = wh.fetch_curve(rows[config])
            assert [(p["point_index"], p["guesses"], p["correct"], p["epsilon_lower_bound"], p["point_confidence"])
                    for p in got] == points
            assert {(p["run_kind"], p["model_fingerprint"], p["claimed_epsilon"]) for p in got} == {
                (UNRECORDED, rows[config].model_fingerprint, rows[config].claimed_epsilon)}
        # the new key: another run kind or claim of the same model, day and config is another row
        for change in ({"run_kind": "guardrail"}, {"claimed_epsilon": 0.25}):
            wh.write_audit({**_valid_row("now-bin", model_id="mig-m", model_fingerprint=V3_FINGERPRINTS["now-bin"]),
                             **change}, [])
        assert len(wh.fetch_results()) == len(V1_ROWS) + 2
        assert {r.audit_config_hash: r for r in wh.fetch_results() if r.run_kind == UNRECORDED} == rows
        assert not _refused_by_the_table(wh, _valid_row("weak", status="WEAK_PASS"))
        assert _refused_by_the_table(wh, _valid_row("hourly", run_kind="hourly"))
        with pytest.raises(Exception, match=r"(?i)duplicate key|primary key|unique"):
            wh._transaction(lambda cur: cur.execute(
                "INSERT INTO audit_results SELECT * FROM audit_results WHERE audit_config_hash = 'weak'"))
        checks = _choice_checks(wh)
    assert [values for _, values in checks["run_kind"]] == [list(STORED_RUN_KINDS)]
    assert [values for _, values in checks["status"]] == [list(STATUSES)]
    not_null = _execute_raw(v3_target, "SELECT table_name, column_name, is_nullable FROM information_schema.columns "
                                       "WHERE table_schema = current_schema() AND column_name IN "
                                       "('model_fingerprint', 'run_kind', 'claimed_epsilon')")
    assert sorted(not_null) == sorted((table, column, "NO") for table in ("audit_curves", "audit_results",
                                                                          "audit_slices", "audit_runs")  # 8, 9 too
                                      for column in ("claimed_epsilon", "model_fingerprint", "run_kind"))


def test_version_4_refuses_curve_points_without_their_row_and_changes_nothing(v3_target):
    _execute_raw(v3_target, f"INSERT INTO audit_curves ({', '.join(V1_CURVE_NAMES)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 ["lost-m", DAY, "lost", 0, 10, 5, 0.1, 0.999])
    with pytest.raises(LabelDPInputError, match=r"audit_curves holds points of 1 audit\(s\) without a row"):
        open_warehouse(v3_target)
    versions = _execute_raw(v3_target, f"SELECT MAX(version) FROM {VERSION_TABLE}")
    columns = _execute_raw(v3_target, "SELECT column_name FROM information_schema.columns WHERE "
                                      "table_schema = current_schema() AND column_name = 'run_kind'")
    assert versions == [(3,)] and columns == []


def test_a_version_3_warehouse_is_read_as_version_4_would_hold_it_without_migrating_it(v3_target):
    with open_read_only(v3_target) as wh:
        rows = {r.audit_config_hash: r for r in wh.fetch_verdicts()}
        curve = wh.fetch_curve(rows["now-bin"])
        unrecorded = wh.fetch_verdicts(run_kind=UNRECORDED)
    for old in V1_ROWS:
        assert rows[old["audit_config_hash"]].to_dict() == _v3_expected(old) | {
            "reference_check_note": old["reference_check_note"]}
    assert len(unrecorded) == len(V1_ROWS)
    assert [(p["guesses"], p["run_kind"], p["claimed_epsilon"]) for p in curve] == [
        (10 * (i + 1), UNRECORDED, rows["now-bin"].claimed_epsilon) for i in range(3)]
    assert _execute_raw(v3_target, f"SELECT MAX(version) FROM {VERSION_TABLE}") == [(3,)]


# --------------------------------------------------------------------------------------------- version 6
def test_version_6_adds_the_attack_curve_columns_keeping_every_row(target):
    """A warehouse at version 5 (the tables that version created, a row written by its code) opens at the latest
    version: the attack curve's nullable columns are added (their comments: the DuckDB rebuild test above), the
    row keeps every value and reads NULL in them, and a new row stores them."""
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    v5 = migrations.expected_tables(5)
    assert not set(ATTACK_COLUMNS) & {c.name for c in v5["audit_results"]}
    statements = [create_table_sql(dialect, table, columns) for table, columns in v5.items()]
    for statement in [*statements, *version_table_statements(dialect)]:
        _execute_raw(target, statement)
    for migration in MIGRATIONS[:5]:
        _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                     [migration.version, migration.description, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])
    old = {k: v for k, v in _valid_row("v5-row", trust="trusted", trust_reason="vouched").items()
           if k not in ATTACK_COLUMNS}
    old = {**old, **v9_fills(old)}  # what version 9 stores in its key and run id (not written by version 5)
    names = [c.name for c in v5["audit_results"]]
    _execute_raw(target, f"INSERT INTO audit_results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                 [old[name] for name in names])
    with open_warehouse(target) as wh:
        assert [v["version"] for v in wh.schema_versions()] == list(range(1, LATEST + 1)) and LATEST >= 6
        assert wh.schema_versions()[5]["description"] == MIGRATIONS[5].description
        (row,) = wh.fetch_results()
        wh.write_audit({**_valid_row("v6-row"), "attack_auroc": 0.75, "attack_auroc_lower": 0.7,
                         "attack_auroc_upper": 0.8}, [])
        new = wh.fetch_results(model_id="raw-m")
    stored = row.to_dict()
    assert {k: stored[k] for k in old if k not in ("started_at", "finished_at")} == \
        {k: v for k, v in old.items() if k not in ("started_at", "finished_at")}
    assert all(stored[name] is None for name in ATTACK_COLUMNS)
    assert [(r.audit_config_hash, r.attack_auroc, r.attack_auroc_lower) for r in new] == [
        ("v5-row", None, None), ("v6-row", 0.75, 0.7)]
    columns = {c for _, c in _execute_raw_columns(target)}
    assert set(ATTACK_COLUMNS) <= columns


# --------------------------------------------------------------------------------------------- version 7
def test_version_7_adds_the_family_columns_keeping_every_row(target):
    """A warehouse at version 6 with a row written by its code opens at the latest version: the family's evidence
    columns are added, the row keeps every value and reads NULL in them, and a new row stores them."""
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    v6 = migrations.expected_tables(6)
    assert not set(FAMILY_COLUMNS) & {c.name for c in v6["audit_results"]}
    for statement in [*(create_table_sql(dialect, table, columns) for table, columns in v6.items()),
                      *version_table_statements(dialect)]:
        _execute_raw(target, statement)
    for migration in MIGRATIONS[:6]:
        _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                     [migration.version, migration.description, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])
    old = {**{k: v for k, v in _valid_row("v6-row").items() if k not in FAMILY_COLUMNS}, "attack_auroc": 0.6}
    old = {**old, **v9_fills(old)}
    names = [c.name for c in v6["audit_results"]]
    _execute_raw(target, f"INSERT INTO audit_results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                 [old.get(name) for name in names])
    with open_warehouse(target) as wh:
        assert [v["version"] for v in wh.schema_versions()] == list(range(1, LATEST + 1)) and LATEST >= 7
        assert wh.schema_versions()[6]["description"] == MIGRATIONS[6].description
        (row,) = wh.fetch_results()
        wh.write_audit({**_valid_row("v7-row"), "family_e_value": 3.5, "family_evidence": 12.0,
                         "family_flagged": 0}, [])
        new = wh.fetch_results(model_id="raw-m")
    stored = row.to_dict()
    assert stored["attack_auroc"] == 0.6 and all(stored[name] is None for name in FAMILY_COLUMNS)
    assert [(r.audit_config_hash, r.family_e_value, r.family_evidence, r.family_flagged) for r in new] == [
        ("v6-row", None, None, None), ("v7-row", 3.5, 12.0, 0)]
    assert set(FAMILY_COLUMNS) <= {c for _, c in _execute_raw_columns(target)}


def _execute_raw_columns(target: str) -> list[tuple]:
    return _execute_raw(target, "SELECT table_name, column_name FROM information_schema.columns WHERE "
                                "table_schema = current_schema() AND table_name = 'audit_results'")


def _table_columns(target: str, table: str) -> list[str]:
    return [c for (c,) in _execute_raw(target, "SELECT column_name FROM information_schema.columns WHERE "
                                               f"table_schema = current_schema() AND table_name = '{table}' "
                                               "ORDER BY ordinal_position")]


# --------------------------------------------------------------------------------------------- version 8
def _write_v7_warehouse(target: str) -> dict:
    """A warehouse at version 7 as that code left it (its tables, a row and a curve written by the driver);
    returns the row."""
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    v7 = migrations.expected_tables(7)
    for statement in [*(create_table_sql(dialect, table, columns) for table, columns in v7.items()),
                      *version_table_statements(dialect)]:
        _execute_raw(target, statement)
    for migration in MIGRATIONS[:7]:
        _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                     [migration.version, migration.description, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])
    old = {**_valid_row("v7-row", trust="trusted"), "family_e_value": 2.0, "family_evidence": 2.0,
           "family_flagged": 0}
    old = {**old, **v9_fills(old)}
    names = [c.name for c in v7["audit_results"]]
    _execute_raw(target, f"INSERT INTO audit_results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                 [old[name] for name in names])
    for index in range(3):
        _execute_raw(target, f"INSERT INTO audit_curves VALUES ({', '.join('?' * 11)})",
                     [*(old[k] for k in migrations.V8_KEY), index, 10 * (index + 1), 5 * (index + 1), 0.1, 0.999])
    return old


def test_version_8_creates_the_slices_table_keeping_every_row(target):
    """A warehouse at version 7 with a row and its curve opens at version 8: the table audit_slices is created
    (empty, its key the row's key plus the slice, its status CHECK), the row and its curve keep every value, and a
    verdict's slices then write and read back beside it."""
    old = _write_v7_warehouse(target)
    assert "audit_slices" not in {t for (t,) in _execute_raw(
        target, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}
    with open_read_only(target) as wh:  # read as it is, not migrated: no slices' table, so no slices
        assert wh.version == 7 and wh.fetch_slices(wh.fetch_verdicts()[0]) == []
    with open_warehouse(target) as wh:
        versions = wh.schema_versions()
        (row,) = wh.fetch_results()
        curve = wh.fetch_curve(row)
        assert wh.fetch_slices(row) == []
        piece = {"slicing": "shown-label", "slice_name": "shown label 1", "budget": 0.05, "declared": 2,
                 "confidence": 0.975, "rows": 500, "check_rows": 0, "epsilon_lower_bound": 0.7,
                 "max_certifiable_epsilon": 4.0, "status": "PASS", "trust": "trusted", "trust_reason": None,
                 "note": None}
        wh.write_audit({**_valid_row("v8-row"), "trust": "trusted"}, [], [piece])
        new = next(r for r in wh.fetch_results() if r.audit_config_hash == "v8-row")
        stored = wh.fetch_slices(new)
        refused = _refused_by_the_table_slices(wh, new, {**piece, "slice_name": "other", "status": "WEAK_PASS"})
    assert [v["version"] for v in versions] == list(range(1, LATEST + 1)) and LATEST >= 8
    assert versions[7]["description"] == MIGRATIONS[7].description and "audit_slices" in MIGRATIONS[7].description
    assert {k: v for k, v in row.to_dict().items() if k not in ("started_at", "finished_at")} == \
        {k: old.get(k) for k in RESULT_NAMES if k not in ("started_at", "finished_at")}
    assert [(p["point_index"], p["guesses"], p["correct"]) for p in curve] == [(0, 10, 5), (1, 20, 10), (2, 30, 15)]
    assert [{k: s[k] for k in piece} for s in stored] == [piece] and refused
    assert sorted(_table_columns(target, "audit_slices")) == sorted(SLICE_NAMES)
    assert _execute_raw(target, "SELECT COUNT(*) FROM audit_slices") == [(1,)]


def _refused_by_the_table_slices(wh, row, piece: dict) -> bool:
    """Whether the table's CHECK refuses ``piece`` written past validation (the warehouse's own insert)."""
    try:
        wh._transaction(lambda cursor: wh._insert_slices(cursor, [{**row.key._asdict(), **piece}]))
    except Exception as exc:  # the driver's constraint error
        if "constraint" in f"{type(exc).__name__} {exc}".lower():
            return True
        raise
    return False


# --------------------------------------------------------------------------------------------- version 9
def _write_v8_warehouse(target: str) -> list[dict]:
    """A warehouse at version 8 as that code left it: its three tables (keyed without the inputs), two rows written
    by the driver (one with a flow run id, one without), a curve and a slice of the first; returns the rows."""
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    v8 = migrations.expected_tables(8)
    for statement in [*(create_table_sql(dialect, table, columns) for table, columns in v8.items()),
                      *version_table_statements(dialect)]:
        _execute_raw(target, statement)
    for migration in MIGRATIONS[:8]:
        _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                     [migration.version, migration.description, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])
    olds = [{**_valid_row("v8-violation", status="VIOLATION", epsilon_lower_bound=1.336, claimed_epsilon=0.5,
                          trust="trusted", partition_fingerprint="sha256:" + "1d" * 32, flow_run_id="prefect-run-1",
                          model_fingerprint="sha256:" + "2e" * 32),
             "started_at": dt.datetime(2024, 1, 3, 1, tzinfo=dt.UTC),
             "finished_at": dt.datetime(2024, 1, 3, 1, 5, tzinfo=dt.UTC)},
            _valid_row("v8-pass", status="PASS")]
    names = [c.name for c in v8["audit_results"]]
    for old in olds:
        _execute_raw(target, f"INSERT INTO audit_results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                     [old[name] for name in names])
    key = [olds[0][k] for k in migrations.V8_KEY]
    for index in range(2):
        _execute_raw(target, f"INSERT INTO audit_curves VALUES ({', '.join('?' * 11)})",
                     [*key, index, 10 * (index + 1), 5 * (index + 1), 0.1, 0.999])
    piece = {"slicing": "shown-label", "slice_name": "shown label 1", "budget": 0.05, "declared": 2,
             "confidence": 0.975, "rows": 500, "check_rows": 0, "epsilon_lower_bound": 0.7,
             "max_certifiable_epsilon": 4.0, "status": "PASS", "trust": "trusted", "trust_reason": None, "note": None}
    slice_names = [c.name for c in v8["audit_slices"]]
    _execute_raw(target, f"INSERT INTO audit_slices ({', '.join(slice_names)}) "
                         f"VALUES ({', '.join('?' * len(slice_names))})",
                 [*key, *(piece[name] for name in slice_names[len(key):])])
    # a version-8 row has no decision: what normalize_row derived for the latest schema is not part of it
    olds = [{k: v for k, v in old.items() if k not in DECISION_COLUMNS} for old in olds]
    return [{**old, **v9_fills(old)} for old in olds]


def test_version_9_keys_every_verdict_by_its_inputs_keeping_every_row(target):
    """A warehouse at version 8 with rows, a curve and a slice opens at version 9: every row keeps every value and
    reads inputs_fingerprint 'unrecorded' and its flow run id as its run id (else 'unrecorded'); its curve and slice
    are kept under the new key; audit_runs holds one run per row. Then a row is written once: the same inputs again
    record a run and change nothing, other inputs of the same model, day, claim and config add a row beside it."""
    olds = _write_v8_warehouse(target)
    with open_read_only(target) as wh:  # read as it is: what the migration will store
        assert wh.version == 8
        read_before = {r.audit_config_hash: r.to_dict() for r in wh.fetch_verdicts()}
        assert wh.fetch_verdicts(run_id="prefect-run-1")[0].audit_config_hash == "v8-violation"
        assert [s["slice_name"] for s in wh.fetch_slices(wh.fetch_verdicts(run_id="prefect-run-1")[0])] == \
            ["shown label 1"]
        assert wh.fetch_runs(wh.fetch_verdicts()[0]) == []
    with open_warehouse(target) as wh:
        versions = wh.schema_versions()
        rows = {r.audit_config_hash: r for r in wh.fetch_results()}
        first = rows["v8-violation"]
        curve, slices, runs = wh.fetch_curve(first), wh.fetch_slices(first), wh.fetch_runs(first)
        assert wh.fetch_runs(rows["v8-pass"])[0]["run_id"] == UNRECORDED
        # the same inputs again (another run): nothing changes but the run recorded
        again = {**first.to_dict(), "run_id": "run-2", "finished_at": dt.datetime(2024, 2, 1, tzinfo=dt.UTC),
                 "epsilon_lower_bound": 1.0, "status": "VIOLATION"}
        written = wh.write_audit(again, [], [])
        assert not written.new and written.key == first.key
        assert wh.write_audit(again, [], []).new is False  # the same run twice: recorded once
        # the day's partition replaced: a run on it is a new row beside the VIOLATION
        replaced = {**first.to_dict(), "run_id": "run-3", "inputs_fingerprint": None, "status": "WEAK_PASS",
                    "partition_fingerprint": "sha256:" + "3f" * 32, "epsilon_lower_bound": 0.1}
        assert wh.write_audit(replaced, [{"guesses": 5, "correct": 3, "epsilon_lower_bound": 0.0,
                                          "point_confidence": 0.99}]).new
        after = wh.fetch_results()
        kept = next(r for r in after if r.key == first.key)
        runs_after = wh.fetch_runs(first)
        by_run = [r.audit_config_hash for r in wh.fetch_verdicts(run_id="run-2")]
    assert [v["version"] for v in versions] == list(range(1, LATEST + 1)) and LATEST >= 9
    assert versions[8]["description"] == MIGRATIONS[8].description
    for old in olds:
        stored = rows[old["audit_config_hash"]].to_dict()
        assert stored == {**{name: old.get(name) for name in RESULT_NAMES}, **v9_fills(old)}, old["audit_config_hash"]
        assert read_before[old["audit_config_hash"]] == stored  # read-only at version 8 reads what 9 stores
    assert first.run_id == "prefect-run-1" and first.inputs_fingerprint == UNRECORDED
    assert [(p["point_index"], p["guesses"], p["inputs_fingerprint"]) for p in curve] == [
        (0, 10, UNRECORDED), (1, 20, UNRECORDED)]
    assert [(s["slice_name"], s["inputs_fingerprint"]) for s in slices] == [("shown label 1", UNRECORDED)]
    assert [(r["run_id"], r["status"], r["epsilon_lower_bound"]) for r in runs] == [
        ("prefect-run-1", "VIOLATION", 1.336)]
    # the VIOLATION stays exactly as it was, with both runs; the replaced day's verdict is its own row
    assert kept == first and len(after) == 3
    assert [(r["run_id"], r["status"], r["epsilon_lower_bound"]) for r in runs_after] == [
        ("prefect-run-1", "VIOLATION", 1.336), ("run-2", "VIOLATION", 1.0)]
    new = next(r for r in after if r.run_id == "run-3")
    assert (new.status, new.inputs_fingerprint.startswith("sha256:")) == ("WEAK_PASS", True)
    assert (new.model_id, new.partition_date, new.audit_config_hash) == (first.model_id, DAY, "v8-violation")
    assert by_run == ["v8-violation"]
    assert _execute_raw(target, "SELECT COUNT(*) FROM audit_curves") == [(3,)]
    with open_warehouse(target) as wh:  # re-opening changes nothing
        assert [v["version"] for v in wh.schema_versions()] == list(range(1, LATEST + 1))
        assert sorted(map(str, wh.fetch_results())) == sorted(map(str, after))


# --------------------------------------------------------------------------------------------- version 10
def test_version_10_adds_the_decision_keeping_every_row_and_derives_old_rows_decisions(target):
    """A warehouse at version 9 with a row of every kind opens at version 10: every value is kept, the decision
    columns are added (NULL as stored), and the reader gives each target row the decision its stored status and
    trust mean (written here by hand, outside the code: trusted VIOLATION -> act, untrusted -> unconfirmed, PASS ->
    no evidence, INCONCLUSIVE, floors voided or a void night -> no power; a control has none). A new row stores its
    decision; the table's CHECK refuses a decision no registry lists."""
    dialect = "postgres" if target.startswith("postgresql://") else "duckdb"
    v9 = migrations.expected_tables(9)
    assert not set(DECISION_COLUMNS) & {c.name for c in v9["audit_results"]}
    for statement in [*(create_table_sql(dialect, table, columns) for table, columns in v9.items()),
                      *version_table_statements(dialect)]:
        _execute_raw(target, statement)
    for migration in MIGRATIONS[:9]:
        _execute_raw(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) VALUES (?, ?, ?)",
                     [migration.version, migration.description, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])
    cases = {  # config: (changes, the decision a reader must give)
        "trusted-violation": (dict(status="VIOLATION", trust="trusted"), "act"),
        "accepted-violation": (dict(status="VIOLATION", trust="reference unchecked, accepted"), "act"),
        "untrusted-violation": (dict(status="VIOLATION", trust="untrusted",
                                     untrusted_reason="the reference's misfit can explain it"), "unconfirmed"),
        "unchecked-violation": (dict(status="VIOLATION", trust="reference unchecked"), "unconfirmed"),
        "pass": (dict(status="PASS", trust="trusted"), "no_evidence"),
        "weak": (dict(status="WEAK_PASS", trust="trusted"), "no_evidence"),
        "inconclusive": (dict(status="INCONCLUSIVE", trust="trusted"), "no_power"),
        "void-floors": (dict(status="PASS", trust="trusted", detectability="void"), "no_power"),
        "void-night": (dict(status="PASS", trust="untrusted", untrusted_reason="the night is void: control failed"),
                       "no_power"),
        "control": (dict(status="PASS", kind="control", trust="trusted"), None),
    }
    names = [c.name for c in v9["audit_results"]]
    olds = {}
    for config, (changes, _) in cases.items():
        old = {**_valid_row(config, **changes), **v9_fills({}), "run_id": "run-9"}
        olds[config] = old
        _execute_raw(target, f"INSERT INTO audit_results ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                     [old.get(name) for name in names])
    with open_warehouse(target) as wh:
        versions = wh.schema_versions()
        rows = {r.audit_config_hash: r for r in wh.fetch_results()}
        wh.write_audit({**_valid_row("v10-row", status="VIOLATION", trust="untrusted"), "decision": "unconfirmed",
                        "decision_reason": "misfit", "confirm_check_rows": 12000, "confirm_nights": 3,
                        "check_e_value": 1.7, "check_rule": "stratified", "check_strata": 4,
                        "check_matched_guesses": 180, "check_unmatched_audited": 12, "split_rule": "tested",
                        "split_refused": 0, "family_check_evidence": 2.5, "family_confirmed": 0}, [])
        new = next(r for r in wh.fetch_results() if r.audit_config_hash == "v10-row")
        refused = _refused_by_the_table(wh, {**_valid_row("bad"), "decision": "maybe"})
    assert [v["version"] for v in versions] == list(range(1, LATEST + 1)) and LATEST >= 10
    assert versions[9]["description"] == MIGRATIONS[9].description
    for config, (_, decision) in cases.items():
        stored = rows[config].to_dict()
        assert stored["decision"] == decision, config
        assert stored["decision_reason"] == (None if decision is None else DERIVED_DECISION), config
        assert {k: v for k, v in stored.items() if k not in ("decision", "decision_reason")} == \
            {k: olds[config].get(k) for k in RESULT_NAMES if k not in ("decision", "decision_reason")}, config
    assert (new.decision, new.confirm_check_rows, new.confirm_nights, new.check_rule, new.split_refused,
            new.family_confirmed) == ("unconfirmed", 12000, 3, "stratified", 0, 0)
    assert refused
    with pytest.raises(LabelDPInputError, match="decision must be one of"):
        normalize_row({**_valid_row("bad"), "decision": "maybe"})
    assert set(DECISION_COLUMNS) <= {c for _, c in _execute_raw_columns(target)}


# ----------------------------------------------------- the kappa era: columns added in place, tau retired
@pytest.fixture(params=["duckdb", "postgres"])
def isolated_target(request, tmp_path):
    """A warehouse target whose tables a test may alter: a DuckDB file, or a PostgreSQL schema of its own."""
    if request.param == "duckdb":
        yield str(tmp_path / "wh" / "warehouse.duckdb")
        return
    request.getfixturevalue("postgres_url")  # skips when no server answers
    with own_schema("labeldp_mig") as url:
        yield url


def test_infra_ddl_files_match_the_code():
    for dialect in ("duckdb", "postgres"):
        path = REPO / "infra" / "warehouse" / f"{dialect}.sql"
        assert path.read_text() == ddl_text(dialect), f"{path} is stale: python -m auditing.sinks.warehouse {dialect}"


def test_an_older_table_gains_new_nullable_columns_and_keeps_its_rows(isolated_target):
    """A table written by an older version (here: without two nullable columns) is migrated in place when
    the warehouse opens it: the columns are added, the existing row survives with NULLs, new rows write."""
    dropped = ("flow_run_id", "durations")
    with open_warehouse(isolated_target) as wh:
        wh.write_audit(*make_row(marker=0.3))
        wh._transaction(lambda cur: [cur.execute(f"ALTER TABLE audit_results DROP COLUMN {c}") for c in dropped])
        columns = {c for _, c in wh._query(wh._TABLE_COLUMNS_SQL, [])}
        assert not columns & set(dropped)
    with open_warehouse(isolated_target) as wh:  # opening migrates
        old = only(wh.fetch_results())
        assert old.epsilon_lower_bound == 0.3 and old.flow_run_id is None and old.durations is None
        wh.write_audit(*make_row(model_id="m-2", marker=0.4))
        new = only(wh.fetch_results(model_id="m-2"))
        assert new.flow_run_id == "run-0.4"
        assert {c for _, c in wh._query(wh._TABLE_COLUMNS_SQL, [])} >= set(RESULT_NAMES)


def test_a_table_missing_a_required_column_is_refused_not_migrated(isolated_target):
    with open_warehouse(isolated_target) as wh:
        wh._transaction(lambda cur: cur.execute("ALTER TABLE audit_results DROP COLUMN result_json"))
    with pytest.raises(LabelDPInputError, match="only nullable columns are added automatically"):
        open_warehouse(isolated_target)


def test_a_newer_versions_nullable_column_is_tolerated_a_required_one_refused(isolated_target):
    """Rolling upgrade: a newer version has added a nullable column; this version keeps writing (the column
    reads NULL in its rows). An unknown NOT NULL column would make this version's inserts fail: refused."""
    with open_warehouse(isolated_target) as wh:
        wh.write_audit(*make_row(marker=0.3))
        wh._transaction(lambda cur: cur.execute("ALTER TABLE audit_results ADD COLUMN from_the_future DOUBLE PRECISION"
                                                if "postgres" in isolated_target else
                                                "ALTER TABLE audit_results ADD COLUMN from_the_future DOUBLE"))
    with open_warehouse(isolated_target) as wh:
        wh.write_audit(*make_row(model_id="m-2", marker=0.4))
        assert [r.model_id for r in wh.fetch_results()] == ["m-1", "m-2"]
        wh._transaction(lambda cur: cur.execute("ALTER TABLE audit_curves ADD COLUMN required_later INTEGER NOT NULL "
                                                "DEFAULT 0"))
    with pytest.raises(LabelDPInputError, match="required_later"):
        open_warehouse(isolated_target)


# The tables as the code before kappa created them (git show e690ef2:infra/warehouse/duckdb.sql, comments
# left out); PostgreSQL spells DOUBLE as DOUBLE PRECISION. A warehouse created by that code must take new rows.
_PRE_KAPPA_DDL = """
CREATE TABLE audit_results (
    model_id TEXT NOT NULL, partition_date DATE NOT NULL, audit_config_hash TEXT NOT NULL,
    claimed_epsilon DOUBLE NOT NULL, delta DOUBLE NOT NULL, confidence DOUBLE NOT NULL, gamma DOUBLE NOT NULL,
    tau DOUBLE NOT NULL, m BIGINT NOT NULL, selected_guesses BIGINT NOT NULL, selected_correct BIGINT NOT NULL,
    epsilon_lower_bound DOUBLE NOT NULL, epsilon_mean DOUBLE, epsilon_std DOUBLE, epsilon_median DOUBLE,
    strategy TEXT NOT NULL, method TEXT NOT NULL, status TEXT NOT NULL, max_certifiable_epsilon DOUBLE NOT NULL,
    repetitions INTEGER NOT NULL, seed BIGINT NOT NULL, model_uri TEXT, model_fingerprint TEXT,
    reference_model TEXT, partition_fingerprint TEXT, code_version TEXT, flow_run_id TEXT,
    started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, durations TEXT, result_json TEXT NOT NULL, audit_rows TEXT,
    breaking_tau DOUBLE, detection_floor_rows BIGINT, shift_diagnostic TEXT, reference_log_loss_shift DOUBLE,
    feature_shift_max_psi DOUBLE, kind TEXT, control_passed INTEGER, control_floor DOUBLE, untrusted_reason TEXT,
    risk_posterior_ceiling_median DOUBLE, risk_posterior_ceiling_p90 DOUBLE, risk_high_prior_ceiling DOUBLE,
    risk_column_tail_bound DOUBLE, risk_column_expected DOUBLE, risk_mia_advantage_bound DOUBLE,
    risk_aia_advantage_bound DOUBLE, risk_reconstruction_bound DOUBLE, risk_lb_posterior_ceiling_median DOUBLE,
    risk_lb_posterior_ceiling_p90 DOUBLE, risk_lb_high_prior_ceiling DOUBLE, risk_lb_column_tail_bound DOUBLE,
    risk_lb_column_expected DOUBLE, risk_lb_mia_advantage_bound DOUBLE, risk_lb_aia_advantage_bound DOUBLE,
    risk_lb_reconstruction_bound DOUBLE, risk_headline TEXT, exposed_rows_floor BIGINT,
    PRIMARY KEY (model_id, partition_date, audit_config_hash),
    CHECK (status IN ('PASS', 'VIOLATION', 'INCONCLUSIVE')),
    CHECK (method IN ('binomial', 'fdp')),
    CHECK (selected_correct <= selected_guesses)
);
CREATE TABLE audit_curves (
    model_id TEXT NOT NULL, partition_date DATE NOT NULL, audit_config_hash TEXT NOT NULL,
    point_index INTEGER NOT NULL, guesses BIGINT NOT NULL, correct BIGINT NOT NULL,
    epsilon_lower_bound DOUBLE NOT NULL, point_confidence DOUBLE NOT NULL,
    PRIMARY KEY (model_id, partition_date, audit_config_hash, point_index),
    CHECK (correct <= guesses)
);
"""
# Two rows as the old code wrote them: an fdp row (Gaussian family, TV tau 0.05, breaking_tau 0.02) and a
# binomial one.
_PRE_KAPPA_ROWS = (
    ("kappa-m", "2024-01-01", "oldfdp", "fdp", 0.05, 0.02, 1.4, "VIOLATION", '{"method": "fdp", "tau": 0.05}'),
    ("kappa-m", "2024-01-01", "oldbin", "binomial", 0.0, 0.3, 0.2, "PASS", '{"method": "binomial", "tau": 0.0}'),
)


def _create_pre_kappa_warehouse(target: str) -> None:
    """The old DDL and two old rows, written with the database driver (the new code never opened it)."""
    insert = ("INSERT INTO audit_results (model_id, partition_date, audit_config_hash, claimed_epsilon, delta, "
              "confidence, gamma, tau, m, selected_guesses, selected_correct, epsilon_lower_bound, strategy, "
              "method, status, max_certifiable_epsilon, repetitions, seed, result_json, breaking_tau) VALUES "
              "({})")
    rows = [(model, day, config, 1.0, 1e-5 if method == "fdp" else 0.0, 0.95, 0.05, tau, 1000, 100, 80, bound,
             "bonferroni", method, status, 5.0, 10, 7, text, breaking)
            for model, day, config, method, tau, breaking, bound, status, text in _PRE_KAPPA_ROWS]
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(re.sub(r"\bDOUBLE\b", "DOUBLE PRECISION", _PRE_KAPPA_DDL))
            with conn.cursor() as cur:
                cur.executemany(insert.format(", ".join(["%s"] * 20)), rows)
        return
    import duckdb

    Path(target).parent.mkdir(parents=True, exist_ok=True)
    conn = duckdb.connect(target)
    try:
        conn.execute(_PRE_KAPPA_DDL)
        conn.executemany(insert.format(", ".join(["?"] * 20)), rows)
    finally:
        conn.close()


def test_a_pre_kappa_warehouse_takes_new_rows_and_reads_old_and_new_back(isolated_target):
    """A warehouse created by the code before kappa (its DDL, its rows) is migrated in place when the new code
    opens it: the old rows keep their TV tau / breaking_tau (in reference_check_note, since the columns were
    retired) and read NULL in every other kappa-era column (never copied over), the new row has no tau and
    its kappa figures; both read back, also after reopening; the trend page labels the old fdp row the legacy
    Gaussian reading."""
    from auditing.sinks.report import render_trend_report
    from auditing.sinks.warehouse.migrations import legacy_note
    from auditing.sinks.warehouse.reference_columns import reference_check_from_row
    from auditing.verdict.robustness import breaking_kappa

    _create_pre_kappa_warehouse(isolated_target)
    result = _fdp_result(reference_calibration="boost")
    check = decode(ReferenceCheck, _reference_check(), "reference_check")
    row, curve = audit_record(judge(result, 0.5, reference_check=check), run_kind="nightly", model_id="kappa-m",
                              partition_date="2024-01-02")
    with open_warehouse(isolated_target) as wh:  # opening migrates: only nullable columns are added
        wh.write_audit(row, curve)
        rows = {r.audit_config_hash: r for r in wh.fetch_results(model_id="kappa-m")}
    with open_warehouse(isolated_target, create=False) as wh:  # a second open finds the migrated tables "ok"
        again = {r.audit_config_hash: r for r in wh.fetch_results()}
        assert [c for _, c in wh._query(wh._TABLE_COLUMNS_SQL, [])
                if c in RESULT_NAMES and c not in ("run_kind", *MIGRATIONS[8].adds)][-17:] == list(RESULT_NAMES[-17:])
    assert again.keys() == rows.keys() == {"oldfdp", "oldbin", result.config_hash}
    kappa_era = RESULT_NAMES[RESULT_NAMES.index("kappa"):]
    for config, (_, _, _, method, tau, breaking, bound, status, _) in zip(("oldfdp", "oldbin"), _PRE_KAPPA_ROWS,
                                                                             strict=True):
        old = again[config]
        assert old.method == method and not {"tau", "breaking_tau"} & old.to_dict().keys()
        assert not hasattr(old, "tau") and not hasattr(old, "breaking_tau")
        assert old.reference_check_note == legacy_note(tau, breaking) == \
            {"oldfdp": "legacy tau=0.05, breaking_tau=0.02", "oldbin": "legacy breaking_tau=0.3"}[config]
        assert (old.epsilon_lower_bound, old.status) == (bound, status)
        derived = ("reference_check_note", "decision", "decision_reason")  # the note, and the decision as read
        assert all(getattr(old, name) is None for name in kappa_era if name not in derived), \
            {n: getattr(old, n) for n in kappa_era if getattr(old, n) is not None}
        assert old.decision == {"VIOLATION": "act", "PASS": "no_evidence"}.get(status, old.decision)
        assert reference_check_from_row(old) is None
    new = again[result.config_hash]
    assert not {"tau", "breaking_tau"} & new.to_dict().keys() and new.kappa == 0.0
    assert not hasattr(new, "tau") and not hasattr(new, "breaking_tau")
    assert new.breaking_kappa == pytest.approx(breaking_kappa(result, 0.5)) and new.breaking_kappa > 0
    assert new.method == "fdp" and new.fdp_curve == "eps-delta"
    assert new.gdp_mu_lower_bound == pytest.approx(result.gdp_mu_lower_bound) and new.gdp_mu_lower_bound > 0
    assert new.reference_calibration == "boost" and new.reference_checked == 1
    assert new.label_blind_bound == 0.0 and new.label_blind_flagged == 0
    assert reference_check_from_row(new) == check
    assert json.loads(new.result_json)["kappa"] == 0.0 and "tau" not in json.loads(new.result_json)

    page = render_trend_report(list(again.values()), "kappa-m")
    lines = {re.search(r"<code>([^<]*)</code>", line).group(1): re.sub(r"<[^>]+>", " ", line)
             for line in page.split('<tr class="night">')[1:]}
    old_line, new_line = lines["oldfdp"], lines[result.config_hash]
    # The rows no longer carry tau (its figures are in reference_check_note): labelled legacy without them.
    assert "binomial legacy (written before κ)" in lines["oldbin"]
    assert "Gaussian reading (legacy; not a valid ε bound for non-Gaussian mechanisms)" in old_line
    assert "legacy (written before κ)" in old_line
    assert "f-DP on the (ε, δ) curve" in new_line and "κ = 0" in new_line and "Gaussian reading (legacy" not in new_line
    assert f"not μ-GDP for μ &lt; {new.gdp_mu_lower_bound:.4g}" in new_line
    assert "calibration boost fits (misfit κ = 0)" in new_line and "not recorded" in old_line
