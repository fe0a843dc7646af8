"""The warehouse, the same tests on both backends: DuckDB (a file per test) and PostgreSQL (the real server on
127.0.0.1:5432, a schema of its own per test session, dropped afterwards).

Set LABELDP_TEST_POSTGRES_URL to test another server. When no PostgreSQL answers, the postgres cases are
skipped with a loud reason (they are never silently passed).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig, split_settings
from auditing.game.config import GameConfig
from auditing.result import AuditResult
from auditing.sinks.warehouse import (
    SPOOLED,
    AuditKey,
    audit_record,
    destination,
    drain_spool,
    open_warehouse,
    spool_path,
    write_or_spool,
)
from auditing.sinks.warehouse.migrations import MIGRATIONS, ddl_text
from auditing.sinks.warehouse.rows import inputs_fingerprint, normalize_row
from auditing.sinks.warehouse.schema import CURVE_NAMES, KEY_COLUMNS, RESULT_NAMES, RUN_NAMES, SLICE_NAMES
from auditing.verdict.judge import judge
from auditing.verdict.reference_check import ReferenceCheck
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from labeldp.codec import decode, encode
from labeldp.errors import LabelDPInputError
from tests.support.pg_schema import own_schema, postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)
from tests.support.warehouse_rows import DAY, FINGERPRINT, make_row
from tests.support.warehouse_targets import only

REPO = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(params=["duckdb", "postgres"])
def isolated_target(request, tmp_path):
    """A warehouse target whose tables a test may alter: a DuckDB file, or a PostgreSQL schema of its own."""
    if request.param == "duckdb":
        yield str(tmp_path / "wh" / "warehouse.duckdb")
        return
    request.getfixturevalue("postgres_url")  # skips when no server answers
    with own_schema("labeldp_mig") as url:
        yield url


# --------------------------------------------------------------------------------------------- schema
def test_infra_ddl_files_match_the_code():
    for dialect in ("duckdb", "postgres"):
        path = REPO / "infra" / "warehouse" / f"{dialect}.sql"
        assert path.read_text() == ddl_text(dialect), f"{path} is stale: python -m auditing.sinks.warehouse {dialect}"


def test_tables_have_the_designed_columns(target):
    with open_warehouse(target) as wh:
        found = wh._query(wh._TABLE_COLUMNS_SQL, [])
    by_table: dict[str, list[str]] = {}
    for table, column in found:
        by_table.setdefault(table, []).append(column)
    assert by_table == {"audit_results": list(RESULT_NAMES), "audit_curves": list(CURVE_NAMES)}
    slices = wh_columns(target, "audit_slices")
    assert slices == list(SLICE_NAMES) and slices[:9] == [*KEY_COLUMNS, "slicing", "slice_name"]
    assert wh_columns(target, "audit_runs") == list(RUN_NAMES) and RUN_NAMES[:8] == ("run_id", *KEY_COLUMNS)
    for name in ("claimed_epsilon", "gamma", "epsilon_lower_bound", "epsilon_mean", "status",
                 "max_certifiable_epsilon", "model_uri", "flow_run_id", "durations", "result_json", "kappa",
                 "breaking_kappa", "reference_calibration", "label_blind_bound", "reference_misfit_kappa",
                 "reference_checked", "reference_check_note", "fdp_curve", "gdp_mu_lower_bound"):
        assert name in RESULT_NAMES
    assert "tau" not in RESULT_NAMES and "breaking_tau" not in RESULT_NAMES  # retired (schema version 3)


def wh_columns(target: str, table: str) -> list[str]:
    """The columns of ``table`` in the warehouse at ``target``, in order."""
    with open_warehouse(target) as wh:
        return [c for (c,) in wh._query("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                        "current_schema() AND table_catalog = current_database() AND table_name = "
                                        f"'{table}' ORDER BY ordinal_position", [])]


def test_kappa_era_columns_are_nullable_and_the_legacy_columns_say_so():
    """Everything added for kappa is nullable (an existing warehouse gains it in place); tau and breaking_tau
    are retired by a migration that knows them as old tables have them (tau NOT NULL), described as legacy TV
    figures."""
    from auditing.records.game import REFERENCE_CALIBRATIONS
    from auditing.sinks.warehouse.migrations import MIGRATIONS
    from auditing.sinks.warehouse.schema import REFERENCE_CALIBRATIONS as STORED
    from auditing.sinks.warehouse.schema import RESULT_COLUMNS

    columns = {c.name: c for c in RESULT_COLUMNS}
    added = RESULT_NAMES[RESULT_NAMES.index("kappa"):RESULT_NAMES.index("trust")]
    assert len(added) == 17 and all(columns[name].nullable for name in added)
    # schema version 5: trust per verdict, row groups
    trust_era = RESULT_NAMES[RESULT_NAMES.index("trust"):RESULT_NAMES.index("attack_tpr_at_fpr_0_001")]
    assert len(trust_era) == 14 and all(columns[name].nullable for name in trust_era)
    # schema version 6: the attack curve
    attack_era = RESULT_NAMES[RESULT_NAMES.index("attack_tpr_at_fpr_0_001"):RESULT_NAMES.index("family_e_value")]
    assert len(attack_era) == 9 and all(columns[name].nullable for name in attack_era)
    family_era = RESULT_NAMES[RESULT_NAMES.index("family_e_value"):RESULT_NAMES.index("decision")]  # version 7
    assert len(family_era) == 3 and all(columns[name].nullable for name in family_era)
    decision_era = RESULT_NAMES[RESULT_NAMES.index("decision"):]  # version 10: decisions, the stratified check
    assert len(decision_era) == 14 and all(columns[name].nullable for name in decision_era)
    retired = {c.name: c for m in MIGRATIONS for c in m.retires}
    assert retired.keys() == {"tau", "breaking_tau"} and not retired.keys() & columns.keys()
    assert not retired["tau"].nullable and retired["breaking_tau"].nullable
    for name in ("tau", "breaking_tau"):
        assert retired[name].comment.startswith("legacy: ") and "before kappa" in retired[name].comment
    assert STORED == REFERENCE_CALIBRATIONS


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


def test_migration_sql_adds_only_nullable_columns():
    from auditing.sinks.warehouse.schema import migration_statements

    found = {"audit_results": [n for n in RESULT_NAMES if n not in ("flow_run_id", "m")],
             "audit_curves": list(CURVE_NAMES)}
    statements = migration_statements("postgres", found)
    assert statements[0] == "ALTER TABLE audit_results ADD COLUMN IF NOT EXISTS flow_run_id TEXT"
    assert not any(" m " in s for s in statements) and len(statements) == 2


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


def _reference_check(flagged: bool = False) -> dict:
    return {"calibration": "boost", "checked": True, "note": None,
            "calibration_figures": {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40,
                                    "logloss_before": 0.47, "logloss_after": 0.452, "ece_before": 0.031,
                                    "ece_after": 0.006},
            "label_blind": {"epsilon_lower_bound": 0.21 if flagged else 0.0, "misfit_kappa": 0.35 if flagged else 0.0,
                            "flagged": flagged}}


def _fdp_result(config_hash_seed: int = 5, **config):
    rng = np.random.default_rng(config_hash_seed)
    n = 3000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    game, bound = split_settings({"repetitions": 2, "method": "fdp", "reference_calibration": "none", **config})
    return run_audit(p_target, np.full(n, 0.5), labels, game=game, bound=bound)


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


def test_kappa_and_reference_figures_are_validated_naming_the_field(tmp_path):
    """normalize_row and the codec's reading of a ReferenceCheck refuse bad kappa-era figures before any write, with an
    error that names the field."""
    from auditing.sinks.warehouse.rows import normalize_row

    new = dict(make_row(model_id="new")[0], kappa=0.0, reference_calibration="boost")
    normalize_row(new)
    for change, message in (
        ({"kappa": -0.1}, "kappa must be a finite number >= 0"),
        ({"kappa": math.inf}, "kappa must be a finite number"),
        ({"kappa": "0.1"}, "kappa must be a number"),
        ({"breaking_kappa": math.nan}, "breaking_kappa must be a finite number"),
        ({"tau": 0.1}, r"retired column\(s\) \{'tau': 0.1\}"),
        ({"breaking_tau": 0.1}, r"retired column\(s\) \{'breaking_tau': 0.1\}"),
        ({"kappa": None, "breaking_kappa": 0.2}, r"breaking_kappa need\(s\) kappa"),
        ({"method": "fdp"}, "fdp_curve must be set on an fdp row with kappa"),
        ({"fdp_curve": "gaussian"}, "fdp_curve must be one of"),
        ({"gdp_mu_lower_bound": 0.3}, r"trade-off-curve method \(\['fdp'\]\) only"),
        ({"reference_calibration": "isotonic"}, "reference_calibration must be one of"),
        ({"reference_checked": 1, "calibration_rows_fit": 10}, "calibration figures: set all of"),
        ({"reference_checked": 2}, "reference_checked must be 0, 1"),
        ({"reference_checked": 0}, "reference_check_note is required"),
        ({"reference_check_note": "why"}, "reference_check_note needs reference_checked"),
        ({"reference_checked": 1, "calibration_ece_after": 1.5, "calibration_ece_before": 0.1,
          "calibration_rows_fit": 1, "calibration_rows_validation": 1, "calibration_rounds": 1,
          "calibration_log_loss_before": 0.5, "calibration_log_loss_after": 0.4}, "calibration_ece_after must be"),
        ({"reference_checked": 1, "label_blind_bound": 0.0, "reference_misfit_kappa": 0.1, "label_blind_flagged": 1},
         "label_blind_flagged = 1 needs label_blind_bound > 0"),
        ({"reference_checked": 1, "label_blind_bound": 0.2, "reference_misfit_kappa": 0.3, "label_blind_flagged": 1,
          "untrusted_reason": None}, "label_blind_flagged = 1 needs untrusted_reason"),
        ({"trust": "maybe"}, "trust must be one of"),
        ({"detectability": "unknown"}, "detectability must be one of"),
        ({"accepted_unchecked": 2}, "accepted_unchecked must be 0, 1"),
        ({"group_label_agreement": 1.5}, "group_label_agreement must be a finite number in"),
        ({"check_rows": -1}, "check_rows must be a whole number"),
        ({"reference_misfit_kappa": -1.0}, "reference_misfit_kappa must be"),
    ):
        with pytest.raises(LabelDPInputError, match=message):
            normalize_row({**new, **change})

    good = _reference_check()
    for change, message in (
        ({"calibration": None}, r"reference_check\.calibration: expected a string; got None"),
        ({"calibration": "none"}, "calibration_figures are for calibration 'boost'"),
        ({"checked": "yes"}, "reference_check.checked: expected true or false"),
        ({"checked": False}, "checked is False but"),
        ({"checked": False, "calibration_figures": None, "label_blind": None}, "reference_check.note is required"),
        ({"label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": -0.5, "flagged": False}},
         "reference_check.label_blind.misfit_kappa must be"),
        ({"label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.5, "flagged": True}},
         "flagged needs epsilon_lower_bound > 0"),
        ({"label_blind": {"epsilon_lower_bound": 0.0, "misfit_kappa": 0.5}}, r"label_blind: missing field\(s\) \['flagged'\]"),
        ({"calibration_figures": {**good["calibration_figures"], "ece_after": 2.0}},
         "reference_check.calibration_figures.ece_after must be"),
        ({"calibration_figures": {**good["calibration_figures"], "rows_fit": -3}},
         "reference_check.calibration_figures.rows_fit must be a whole number"),
        ({"verdict": "ok"}, r"reference_check: unknown field\(s\) \['verdict'\]"),
    ):
        with pytest.raises(LabelDPInputError, match=message):
            decode(ReferenceCheck, {**good, **change}, "reference_check")
    skipped = {"calibration": "boost", "checked": False, "note": "no held-out rows for 2024-01-02"}
    assert decode(ReferenceCheck, skipped, "reference_check").label_blind is None
    crashed = {**good, "label_blind": None}  # the label-blind control could not run (untrusted by the controls)
    assert encode(decode(ReferenceCheck, crashed, "reference_check"))["calibration_figures"] == good["calibration_figures"]

    result = _fdp_result()  # raw reference: reference_calibration "none"
    with pytest.raises(LabelDPInputError, match="differs from the result's reference_calibration 'none'"):
        audit_record(judge(result, 0.5, reference_check=decode(ReferenceCheck, good, "reference_check")), run_kind="nightly",
                     model_id="x", partition_date=DAY)
    flagged = decode(ReferenceCheck, {**_reference_check(flagged=True), "calibration": "none",
                                        "calibration_figures": None, "note": "raw reference"}, "reference_check")
    # A result without check rows is "reference unchecked": its verdict carries that reason.
    row, _ = audit_record(judge(result, 0.5, reference_check=flagged), run_kind="nightly", model_id="x",
                          partition_date=DAY)
    assert row.trust == "reference unchecked" and row.untrusted_reason == row.trust_reason
    assert (row.label_blind_flagged, row.label_blind_bound, row.reference_misfit_kappa) == (1, 0.21, 0.35)
    assert row.calibration_rows_fit is None and row.reference_check_note == "raw reference"
    legacy = {k: v for k, v in encode(result).items() if k not in ("kappa", "reference_calibration")}
    with pytest.raises(LabelDPInputError, match="written before kappa"):
        audit_record(judge(decode(AuditResult, {**legacy, "tau": 0.0}), 0.5), run_kind="nightly", model_id="x",
                     partition_date=DAY)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        assert wh.fetch_results() == []


# --------------------------------------------------------------------------------------------- round trip
def test_write_then_fetch_round_trips_every_value(target):
    row, curve = make_row(claimed_epsilon=math.inf, status="INCONCLUSIVE",
                          model_uri="file:///models/m-1/date=2024-01-02/model.cbm",
                          code_version="0.1.0+g1234", reference_model="m-1@2024-01-01")
    with open_warehouse(target) as wh:
        key, new = wh.write_audit(row, curve)
        inputs = inputs_fingerprint(row)
        assert new and key == AuditKey("m-1", FINGERPRINT, DAY, "nightly", math.inf, "abc123", inputs)
        assert inputs == normalize_row(row)["inputs_fingerprint"] and inputs.startswith("sha256:")
        got = only(wh.fetch_results())
        points = wh.fetch_curve(key)
    assert got.partition_date == DAY and isinstance(got.partition_date, dt.date)
    assert got.claimed_epsilon == math.inf
    assert got.gamma == pytest.approx(0.05)
    assert got.started_at == row["started_at"] and got.started_at.utcoffset() == dt.timedelta(0)
    assert json.loads(got.durations) == {"score": 12.5, "audit": 0.25}
    assert json.loads(got.result_json) == {"marker": 0.5}
    for name in ("epsilon_lower_bound", "selected_guesses", "selected_correct", "m", "status", "strategy",
                 "method", "max_certifiable_epsilon", "model_uri", "code_version", "reference_model", "seed"):
        assert getattr(got, name) == row[name], name
    assert [p["point_index"] for p in points] == [0, 1, 2]
    assert [(p["guesses"], p["correct"]) for p in points] == [(10, 5), (20, 10), (30, 15)]
    assert all(p["point_confidence"] == 0.999 and p["model_id"] == "m-1" for p in points)
    assert all(p["run_kind"] == "nightly" and p["claimed_epsilon"] == math.inf for p in points)


def test_a_rerun_on_identical_inputs_records_its_run_and_changes_nothing(target):
    """A row is written once: a later run on the same inputs (even one that computed something else) is recorded in
    audit_runs with what it computed, and the row, its curve and its slices stay the first run's."""
    with open_warehouse(target) as wh:
        assert wh.write_audit(*make_row(marker=0.5, points=5)).new
        first = only(wh.fetch_results())
        assert not wh.write_audit(*make_row(marker=0.7, points=2, status="VIOLATION")).new
        assert not wh.write_audit(*make_row(marker=0.7, points=2, status="VIOLATION")).new  # the same run: once
        assert wh.write_audit(*make_row(config_hash="other", marker=0.9, points=1)).new
        rows = wh.fetch_results(model_id="m-1")
        assert [(r.audit_config_hash, r.epsilon_lower_bound, r.status, r.run_id) for r in rows] == [
            ("abc123", 0.5, "PASS", "run-0.5"), ("other", 0.9, "PASS", "run-0.9")]
        assert rows[0] == first
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(first)] == [0.5] * 5
        assert [(r["run_id"], r["status"], r["epsilon_lower_bound"]) for r in wh.fetch_runs(first)] == [
            ("run-0.5", "PASS", 0.5), ("run-0.7", "VIOLATION", 0.7)]
        assert [r.audit_config_hash for r in wh.fetch_verdicts(run_id="run-0.7")] == ["abc123"]
        assert len(wh.fetch_curve(rows[1])) == 1


@pytest.mark.parametrize("change", [
    {"run_kind": "guardrail"}, {"claimed_epsilon": math.inf}, {"model_fingerprint": "sha256:" + "cd" * 32},
    {"config_hash": "other"}, {"date": dt.date(2024, 1, 3)}, {"partition_fingerprint": "sha256:" + "3f" * 32},
    {"training_rows_fingerprint": "sha256:" + "4a" * 32}, {"reference_fingerprint": "sha256:" + "5b" * 32},
    {"correction_fingerprint": "sha256:" + "6c" * 32}, {"scoring_key": "0123456789abcdef"},
    {"night_fingerprint": "sha256:" + "7d" * 32},
])
def test_a_run_of_another_key_adds_its_own_row_and_never_touches_the_first(target, change):
    """The nightly's VIOLATION stays as it was, with its curve, when a run of another kind, claim, model file,
    configuration, day or inputs (partition, training rows, reference, its correction, stored game) writes its
    verdict of the same model."""
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(marker=0.7, points=4, status="VIOLATION"))
        first = only(wh.fetch_results())
        wh.write_audit(*make_row(marker=0.2, points=1, status="INCONCLUSIVE", **change))
        rows = wh.fetch_results()
        assert len(rows) == 2 and first in rows
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(first)] == [0.7] * 4
        second = next(r for r in rows if r != first)
        assert (second.status, len(wh.fetch_curve(second))) == ("INCONCLUSIVE", 1)
        assert [r.status for r in wh.fetch_verdicts(status="VIOLATION")] == ["VIOLATION"]
        # the same key again: no row added, both rows as they were
        assert not wh.write_audit(*make_row(marker=0.3, points=2, status="INCONCLUSIVE", **change)).new
        assert sorted(map(str, wh.fetch_results())) == sorted(map(str, rows))


def test_latest_per_model_and_run_kind_is_a_query(target):
    with open_warehouse(target) as wh:
        for day, run_kind, claim, status in ((1, "nightly", 1.0, "PASS"), (2, "nightly", 1.0, "VIOLATION"),
                                             (2, "guardrail", math.inf, "INCONCLUSIVE"), (1, "backfill", 1.0, "PASS")):
            wh.write_audit(*make_row(date=dt.date(2024, 1, day), run_kind=run_kind, claimed_epsilon=claim,
                                      status=status, finished_at=dt.datetime(2024, 1, day + 1, tzinfo=dt.UTC)))
        latest = wh.fetch_verdicts(latest=True)
        assert sorted((r.run_kind, r.partition_date.day, r.status) for r in latest) == [
            ("backfill", 1, "PASS"), ("guardrail", 2, "INCONCLUSIVE"), ("nightly", 2, "VIOLATION")]
        assert [r.status for r in wh.fetch_verdicts(run_kind="nightly")] == ["VIOLATION", "PASS"]
        assert [r.run_kind for r in wh.fetch_verdicts(status="VIOLATION", latest=True)] == ["nightly"]
        with pytest.raises(LabelDPInputError, match="run_kind must be one of"):
            wh.fetch_verdicts(run_kind="hourly")
        assert len(wh.fetch_results()) == 4


def test_failure_inside_the_transaction_leaves_the_previous_state(target, monkeypatch):
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(marker=0.5, points=4))

        def half_then_fail(self, cursor, points):
            type(self).__mro__[1]._insert_curve(self, cursor, points[:1])
            raise RuntimeError("simulated crash after the first curve point")

        monkeypatch.setattr(type(wh), "_insert_curve", half_then_fail)
        with pytest.raises(RuntimeError, match="simulated crash"):
            wh.write_audit(*make_row(marker=0.8, points=3, partition_fingerprint="sha256:" + "3f" * 32))
        monkeypatch.undo()
        got = only(wh.fetch_results())
        assert got.epsilon_lower_bound == 0.5
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(got)] == [0.5] * 4
        assert [r["run_id"] for r in wh.fetch_runs(got)] == ["run-0.5"]
        assert wh._query("SELECT COUNT(*) FROM audit_runs", []) == [(1,)]


_CRASH_SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {repo!r})
    from auditing.sinks.warehouse import open_warehouse
    from auditing.sinks.warehouse.base import Warehouse
    from tests.support.warehouse_rows import make_row
    wh = open_warehouse({target!r})
    def half_then_die(self, cursor, points):
        Warehouse._insert_curve(self, cursor, points[:2])
        os._exit(17)  # the process dies mid-transaction: no commit, no rollback, no cleanup
    type(wh)._insert_curve = half_then_die
    wh.write_audit(*make_row(marker=0.9, points=6, partition_fingerprint="sha256:" + "3f" * 32))
""")


def test_process_killed_mid_transaction_then_rerun_gives_one_row(target):
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(marker=0.5, points=4))
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT.format(repo=str(REPO), target=target)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 17, proc.stderr
    with open_warehouse(target) as wh:
        got = only(wh.fetch_results())
        assert got.epsilon_lower_bound == 0.5
        assert [p["epsilon_lower_bound"] for p in wh.fetch_curve(got)] == [0.5] * 4
        assert wh._query("SELECT COUNT(*) FROM audit_runs", []) == [(1,)]
        wh.write_audit(*make_row(marker=0.9, points=6, partition_fingerprint="sha256:" + "3f" * 32))  # the re-run
        rows = wh.fetch_results()
        assert [(r.epsilon_lower_bound, len(wh.fetch_curve(r))) for r in rows] == [(0.5, 4), (0.9, 6)] or \
            [(r.epsilon_lower_bound, len(wh.fetch_curve(r))) for r in rows] == [(0.9, 6), (0.5, 4)]


# --------------------------------------------------------------------------------------------- reads
def test_fetch_filters_by_model_and_dates(target):
    with open_warehouse(target) as wh:
        for model in ("a", "b"):
            for day in (1, 2, 3):
                wh.write_audit(*make_row(model_id=model, date=dt.date(2024, 1, day)))
        assert len(wh.fetch_results()) == 6
        assert [r.partition_date.day for r in wh.fetch_results(model_id="a")] == [1, 2, 3]
        assert [r.partition_date.day for r in wh.fetch_results(model_id="b", since="2024-01-02")] == [2, 3]
        assert [r.partition_date.day for r in wh.fetch_results(until=dt.date(2024, 1, 1))] == [1, 1]
        assert [r.model_id for r in wh.fetch_results(since="2024-01-02", until="2024-01-02")] == ["a", "b"]
        assert wh.fetch_results(model_id="c") == []
        assert wh.fetch_curve(("c", FINGERPRINT, DAY, "nightly", 1.0, "abc123", "sha256:" + "0" * 64)) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"model_id": "../etc"}, "model_id"),
    ({"model_id": "x'; DROP TABLE audit_results; --"}, "model_id"),
    ({"since": "2024-13-01"}, "since"),
    ({"until": "yesterday"}, "until"),
    ({"since": "2024-01-05", "until": "2024-01-01"}, "must not be after"),
])
def test_fetch_rejects_bad_filters(target, kwargs, message):
    with open_warehouse(target) as wh, pytest.raises(LabelDPInputError, match=message):
        wh.fetch_results(**kwargs)


def test_values_are_bound_never_spliced_into_sql(target):
    hostile = "x'); DROP TABLE audit_results; --"
    with open_warehouse(target) as wh:
        wh.write_audit(*make_row(model_uri=hostile, code_version="'; DELETE FROM audit_curves; --"))
        got = only(wh.fetch_results())
        assert got.model_uri == hostile
        assert len(wh.fetch_curve(got)) == 3


# --------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("overrides, message", [
    ({"status": "OK"}, "status must be one of"),
    ({"selected_correct": 101}, "selected_correct <= selected_guesses"),
    ({"confidence": 1.0}, r"confidence must be a finite number in \(0, 1\)"),
    ({"gamma": 0.2}, "gamma must equal 1 - confidence"),
    ({"epsilon_lower_bound": float("nan")}, "epsilon_lower_bound must be a finite number"),
    ({"model_id": "a/b"}, "model_id"),
    ({"partition_date": "2024-02-30"}, "partition_date"),
    ({"audit_config_hash": "x y"}, "audit_config_hash"),
    ({"color": "red"}, r"unknown column\(s\) \['color'\]"),
    ({"m": None}, r"missing required column\(s\) \['m'\]"),
    ({"durations": {"score": -1}}, "durations"),
    ({"result_json": "[1, 2]"}, "result_json must be a JSON object"),
    ({"started_at": "noon"}, "started_at"),
])
def test_bad_rows_are_refused_before_sql(tmp_path, overrides, message):
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(LabelDPInputError, match=message):
            wh.write_audit(*make_row(**overrides))
        assert wh.fetch_results() == []


def test_bad_curves_and_targets_are_refused(tmp_path):
    row, curve = make_row()
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(LabelDPInputError, match=r"curve\[1\]"):
            wh.write_audit(row, [curve[0], {**curve[1], "correct": 999}])
        with pytest.raises(LabelDPInputError, match=r"curve\[0\]: missing"):
            wh.write_audit(row, [{"guesses": 1}])
    with pytest.raises(LabelDPInputError, match="postgresql:// URL"):
        open_warehouse("mysql://host/db")
    with pytest.raises(LabelDPInputError, match="not found"):
        open_warehouse(tmp_path / "missing.duckdb", create=False)
    with pytest.raises(LabelDPInputError, match="is a directory"):
        open_warehouse(tmp_path)


def test_default_target_is_the_data_root_file(tmp_path):
    with open_warehouse(None, data_root=tmp_path) as wh:
        wh.write_audit(*make_row())
    assert (tmp_path / "warehouse.duckdb").is_file()


def test_audit_record_from_a_real_audit(target):
    rng = np.random.default_rng(3)
    n = 4000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.45 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    result = run_audit(p_target, np.full(n, 0.5), labels, game=GameConfig(repetitions=4))
    row, curve = audit_record(judge(result, 0.5), run_kind="nightly", model_id="rr-eps8", partition_date="2024-01-02",
                              lineage={"flow_run_id": "f-1", "durations": {"audit": 0.1}})
    assert row.status == "VIOLATION" and row.epsilon_lower_bound > 0.5
    assert row.gamma == pytest.approx(1 - result.bound.confidence)
    assert len(curve) == result.grid_size or len(curve) == len(result.curve)
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
        got = only(wh.fetch_results(model_id="rr-eps8"))
        assert json.loads(got.result_json) == json.loads(json.dumps(encode(result)))
        stored = wh.fetch_curve(got)
    assert [(p["guesses"], p["correct"]) for p in stored] == [(p.guesses, p.correct) for p in result.curve]
    assert all(p["point_confidence"] == result.point_confidence for p in stored)
    with pytest.raises(LabelDPInputError, match="optimistic"):
        audit_record(judge(dataclasses.replace(result, optimistic=True), 1), run_kind="nightly", model_id="x",
                     partition_date=DAY)
    with pytest.raises(LabelDPInputError, match="lineage: unknown"):
        audit_record(judge(result, 1), run_kind="nightly", model_id="x", partition_date=DAY, lineage={"owner": "me"})


# --------------------------------------------------------------------------------------------- concurrency
def _writer_marker(writer: int, round_: int) -> float:
    return writer + round_ / 100


def _check_after_concurrent_writes(target, writers: int, rounds: int) -> None:
    with open_warehouse(target) as wh:
        rows = wh.fetch_results()
        keys = sorted(r.model_id for r in rows)
        assert keys == sorted(["shared", *[f"own-{w}" for w in range(writers)]]), keys  # one row per key
        for r in rows:
            curve = wh.fetch_curve(r)
            writer = int(r.epsilon_lower_bound)
            # The row and its whole curve come from the same write: same marker, that writer's length.
            assert {p["epsilon_lower_bound"] for p in curve} == {r.epsilon_lower_bound}
            assert len(curve) == 2 + writer
            # every write recorded as a run of the row, the row the first one's
            assert len(wh.fetch_runs(r)) == (writers * rounds if r.model_id == "shared" else rounds)
        for w in range(writers):
            own = only([r for r in rows if r.model_id == f"own-{w}"])
            assert own.epsilon_lower_bound == _writer_marker(w, 0)  # the first write of own key


def _write_rounds(target: str, writer: int, rounds: int, go_file: str | None = None) -> None:
    with open_warehouse(target) as wh:
        if go_file:  # start together, so that the writes really overlap
            print("ready", flush=True)
            while not os.path.exists(go_file):
                time.sleep(0.005)
        for r in range(rounds):
            for model in ("shared", f"own-{writer}"):
                wh.write_audit(*make_row(model_id=model, marker=_writer_marker(writer, r), points=2 + writer))


def test_concurrent_threads_same_and_different_keys(target):
    writers, rounds = 6, 4
    errors: list[BaseException] = []

    def work(w):
        try:
            _write_rounds(target, w, rounds)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    _check_after_concurrent_writes(target, writers, rounds)


def test_concurrent_processes_same_and_different_keys(target, tmp_path):
    writers, rounds = 3, 3
    go = tmp_path / "go"
    code = ("import sys; sys.path.insert(0, {repo!r}); from tests.auditing.sinks.test_warehouse import _write_rounds; "
            "_write_rounds({target!r}, {w}, {rounds}, {go!r})")
    procs = [subprocess.Popen([sys.executable, "-c", code.format(repo=str(REPO), target=target, w=w, rounds=rounds,
                                                                 go=str(go))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(writers)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    _check_after_concurrent_writes(target, writers, rounds)


def test_auditing_core_does_not_import_the_sinks():
    code = ("import sys; import auditing.audit, auditing.verdict.guardrail, auditing.bounds.lower_bound; "
            "bad = [m for m in ('duckdb', 'psycopg', 'prefect', 'auditing.sinks.warehouse', 'auditing.sinks.report', "
            "'auditing.sinks.alerts') if m in sys.modules]; print(bad)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------------- risk
def test_risk_columns_round_trip_on_both_backends(target):
    """The risk scalars for the claim (risk_*) and the valid bound (risk_lb_*) and the headline are computed by
    audit_record from the result's prior histogram and stored as nullable columns."""
    from auditing.risk.figures import RISK_SCALARS, risk_assessment

    rng = np.random.default_rng(11)
    n = 3000
    p_ref = np.clip(rng.beta(1, 20, n), 1e-4, 0.99)
    labels = (rng.random(n) < p_ref).astype(int)
    p_target = np.clip(np.where(labels == 1, 0.9, 0.05) + rng.normal(0, 0.02, n), 0.01, 0.99)
    result = run_audit(p_target, p_ref, labels, game=GameConfig(repetitions=2))
    verdict = judge(result, 0.5)
    row, curve = audit_record(verdict, run_kind="nightly", model_id="risk-m", partition_date=DAY)
    expected = risk_assessment(result, 0.5)
    names = [f"{prefix}{name}" for prefix in ("risk_", "risk_lb_") for name in RISK_SCALARS]
    # the stored sentence is the verdict's: the assessment's, made conditional when the leak is unconfirmed
    assert all(name in row.to_dict() for name in names) and row.risk_headline == verdict.risk_headline
    claim_part = expected.headline.split("; ")[0]
    assert verdict.risk_headline.startswith(claim_part)
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
        got = only(wh.fetch_results(model_id="risk-m"))
    for name in names:
        block = expected.claimed if name.startswith("risk_") and not name.startswith("risk_lb_") else \
            expected.demonstrated
        assert getattr(got, name) == pytest.approx(getattr(block, name.removeprefix("risk_lb_").removeprefix("risk_"))), name
    assert got.risk_headline == verdict.risk_headline
    # Nullable: a row without them (an old result) stores NULLs; bad values are refused before SQL.
    bare, bare_curve = make_row(model_id="risk-old")
    with open_warehouse(target) as wh:
        wh.write_audit(bare, bare_curve)
        old = only(wh.fetch_results(model_id="risk-old"))
    assert all(getattr(old, name) is None for name in [*names, "risk_headline"])
    from auditing.sinks.warehouse.rows import normalize_row

    with pytest.raises(LabelDPInputError, match="risk_mia_advantage_bound must be a finite number in"):
        normalize_row({**bare, "risk_mia_advantage_bound": 1.5})


def test_trust_columns_round_trip_on_both_backends(target):
    """audit_rows, breaking_kappa, detection_floor_rows (claim-dependent, computed by audit_record) and
    the shift diagnostic (JSON + two scalars) are stored, without the retired tau / breaking_tau; an old row
    stores NULLs; bad values are refused."""
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.verdict.robustness import breaking_kappa, detection_floor_rows

    rng = np.random.default_rng(5)
    n = 3000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    result = run_audit(p_target, np.full(n, 0.5), labels,
                       game=GameConfig(repetitions=2, reference_calibration="none"))
    diagnostic = {"label": "a diagnostic", "reference": "ref@2024-01-01",
                  "days": {"previous": "2024-01-01", "current": "2024-01-02"},
                  "reference_fit": {"previous": {"log_loss": 0.3, "ece": 0.01, "rows": 10, "click_rate": 0.1,
                                                 "rows_rule": "test split"},
                                    "current": {"log_loss": 0.31, "ece": 0.02, "rows": 12, "click_rate": 0.2}},
                  "reference_log_loss_shift": 0.01, "reference_ece_shift": 0.01,
                  "feature_shift": {"statistic": "PSI", "bins": "deciles", "max_psi": 0.2, "median_psi": 0.1,
                                    "mean_psi": 0.1, "top": [], "per_feature": {}},
                  "feature_shift_max_psi": 0.2}
    row, curve = audit_record(judge(result, 0.5, shift_diagnostic=decode(ShiftDiagnostic, diagnostic, "shift_diagnostic")), run_kind="nightly", model_id="trust-m",
                              partition_date=DAY)
    assert row.status == "VIOLATION" and row.audit_rows == "training"
    assert row.breaking_kappa == breaking_kappa(result, 0.5) > 0
    assert row.kappa == 0.0 and not {"tau", "breaking_tau"} & row.to_dict().keys()
    assert not hasattr(row, "tau") and not hasattr(row, "breaking_tau")
    assert row.reference_calibration == "none" and row.fdp_curve is None and row.reference_checked is None
    assert row.detection_floor_rows == detection_floor_rows(result, 0.5)
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
        got = only(wh.fetch_results(model_id="trust-m"))
    assert got.audit_rows == "training" and got.breaking_kappa == pytest.approx(row.breaking_kappa)
    assert got.kappa == 0.0 and "breaking_tau" not in got.to_dict() and not hasattr(got, "breaking_tau")
    assert got.detection_floor_rows == row.detection_floor_rows
    assert json.loads(got.shift_diagnostic) == diagnostic
    assert got.reference_log_loss_shift == pytest.approx(0.01) and got.feature_shift_max_psi == pytest.approx(0.2)
    bare, bare_curve = make_row(model_id="trust-old")
    with open_warehouse(target) as wh:
        wh.write_audit(bare, bare_curve)
        old = only(wh.fetch_results(model_id="trust-old"))
    assert all(getattr(old, name) is None for name in ("audit_rows", "breaking_kappa", "kappa",
                                              "detection_floor_rows", "shift_diagnostic", "reference_log_loss_shift"))
    assert "breaking_tau" not in old.to_dict() and not hasattr(old, "breaking_tau")
    for change, message in (({"breaking_tau": 1.0}, r"retired column\(s\) \{'breaking_tau': 1.0\}"),  # a TV figure
                            ({"audit_rows": "test"}, "audit_rows must be"),
                            ({"detection_floor_rows": -3}, "detection_floor_rows must be")):
        with pytest.raises(LabelDPInputError, match=message):
            normalize_row({**bare, **change})


def test_exposed_rows_floor_round_trip_on_both_backends(target):
    """the game-aware floor exposed_rows_floor (auditing.verdict.exposure_floor, claim-dependent,
    computed by audit_record) is stored on both backends: a number for a bonferroni PASS, NULL where it is
    not computable (INCONCLUSIVE, split) or for an old row; a negative or fractional value is refused."""
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.verdict.exposure_floor import exposed_floor_note, game_detection_floor

    rng = np.random.default_rng(11)
    n = 6000
    p_ref = rng.beta(1.0, 3.0, n)
    labels = (rng.random(n) < p_ref).astype(np.int64)
    rows = {}
    for name, strategy, claimed in (("exp-pass", "bonferroni", 0.3), ("exp-inconclusive", "bonferroni", 50.0),
                                    ("exp-split", "split", 0.3)):
        result = run_audit(p_ref, p_ref, labels, game=GameConfig(repetitions=1), bound=BoundConfig(strategy=strategy))
        row, curve = audit_record(judge(result, claimed), run_kind="nightly", model_id=name, partition_date=DAY)
        rows[name] = (row, result, claimed)
        with open_warehouse(target) as wh:
            wh.write_audit(row, curve)
    pass_row, pass_result, _ = rows["exp-pass"]
    # a PASS, weak when the floor exceeds 1% of the audited rows
    assert pass_row.status == ("WEAK_PASS" if pass_row.exposed_rows_floor > 0.01 * pass_row.m else "PASS")
    assert pass_row.exposed_rows_floor == game_detection_floor(pass_result, 0.3)
    assert pass_row.exposed_rows_floor > pass_row.detection_floor_rows > 0  # the game needs more
    assert rows["exp-inconclusive"][0].status == "INCONCLUSIVE"
    for name, reason in (("exp-inconclusive", "INCONCLUSIVE"), ("exp-split", "split strategy")):
        row, result, claimed = rows[name]
        assert row.exposed_rows_floor is None
        assert reason in exposed_floor_note(result, claimed, None)
    with open_warehouse(target) as wh:
        got = {r.model_id: r for r in wh.fetch_results()}
        bare, bare_curve = make_row(model_id="exp-old")
        wh.write_audit(bare, bare_curve)
        old = only(wh.fetch_results(model_id="exp-old"))
    assert got["exp-pass"].exposed_rows_floor == pass_row.exposed_rows_floor
    assert got["exp-inconclusive"].exposed_rows_floor is None and got["exp-split"].exposed_rows_floor is None
    assert old.exposed_rows_floor is None
    for bad in (-1, 2.5):
        with pytest.raises(LabelDPInputError, match="exposed_rows_floor"):
            normalize_row({**bare, "exposed_rows_floor": bad})


def test_control_and_trust_columns_round_trip(target):
    """kind, control_passed, control_floor and untrusted_reason on both backends; a bad
    value is refused before any write."""
    reason = "control failed on 2024-01-02 (the audit itself is broken): control-negative: eps_lb 0.3 > 0"
    control, control_curve = make_row(model_id="control-positive", kind="control", control_passed=0,
                                      control_floor=1.25, untrusted_reason=reason)
    plain, plain_curve = make_row(model_id="m-1", kind="target", untrusted_reason=reason)
    with open_warehouse(target) as wh:
        wh.write_audit(control, control_curve)
        wh.write_audit(plain, plain_curve)
        got = {r.model_id: r for r in wh.fetch_results()}
        for bad, message in (({"kind": "canary"}, "kind must be"), ({"kind": "control", "control_passed": 2},
                             "control_passed must be"), ({"control_floor": 1.0}, "kind 'control' rows only"),
                             ({"untrusted_reason": "  "}, "untrusted_reason must be")):
            with pytest.raises(LabelDPInputError, match=message):
                wh.write_audit(*make_row(model_id="bad", **bad))
        assert "bad" not in {r.model_id for r in wh.fetch_results()}
    assert (got["control-positive"].kind, got["control-positive"].control_passed) == ("control", 0)
    assert got["control-positive"].control_floor == 1.25 and got["control-positive"].untrusted_reason == reason
    assert got["m-1"].kind == "target" and got["m-1"].control_passed is None
    assert got["m-1"].untrusted_reason == reason


def test_trust_per_verdict_round_trips_on_both_backends(target):
    """A VIOLATION the capacity check vouches for and one it does not, with the row groups, written and read back:
    trust, its reason, epsilon_check, the misfit figures, check rows and the grouping (migration 5's columns)."""
    from auditing.audit import run_audit
    from auditing.game.row_groups import RowGroups
    from tests.support.segment_worlds import night

    groups = RowGroups(rule="rows with the same feature vector form a group", columns=(), rows_excluded=12,
                       excluded_with_day=10, excluded_with_inputs=2, agreement_pairs=40, agreement_observed=0.9,
                       agreement_expected=0.85)
    rows = {}
    for name, world in (("leak", dict(private=False, memorize=0.3, rows=40_000)),
                        ("misfit", dict(drift=2.5, drifted_share=0.3))):
        w = night(0, **world)
        result = run_audit(*w.audited, game=GameConfig(repetitions=1, seed=1), check=w.check, row_groups=groups)
        verdict = judge(result, 0.3)
        assert verdict.status == "VIOLATION"
        rows[name] = audit_record(verdict, run_kind="nightly", model_id=name, partition_date=DAY)
    with open_warehouse(target) as wh:
        for row, curve in rows.values():
            wh.write_audit(row, curve)
        got = {r.model_id: r for r in wh.fetch_results()}
    leak, misfit = got["leak"], got["misfit"]
    assert leak.trust == "trusted" and leak.untrusted_reason is None and "vouches" in leak.trust_reason
    assert leak.epsilon_check > 0.3 and leak.check_rows > 1000 and leak.accepted_unchecked == 0
    assert misfit.trust == "untrusted" and misfit.untrusted_reason == misfit.trust_reason
    assert misfit.epsilon_check <= 0.3 and misfit.misfit_kappa_upper is not None
    for row in (leak, misfit):
        assert (row.rows_excluded_groups, row.group_pairs) == (12, 40)
        assert row.group_label_agreement == 0.9 and row.group_label_agreement_expected == 0.85
        assert row.detectability in ("measured", "measured under a reference that misfits")


def test_attack_curve_columns_round_trip_on_both_backends(target):
    """The attack curve's figures (descriptive, not a bound: docs/attack-curve.md) are stored from the verdict's
    result and read back on both backends; a row without them reads NULL; a bad value is refused, named."""
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.sinks.warehouse.schema import ATTACK_COLUMNS

    rng = np.random.default_rng(8)
    n = 4000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + 0.3 * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    result = run_audit(p_target, np.full(n, 0.5), labels,
                       game=GameConfig(repetitions=1, reference_calibration="none"))
    curve = result.attack_curve
    row, points = audit_record(judge(result, 0.5), run_kind="nightly", model_id="attack-m", partition_date=DAY)
    expected = {f"attack_{name}{part}": getattr(curve, f"{name}{part}") for name in curve.FIGURES
                for part in ("", "_lower", "_upper")}
    assert set(expected) == set(ATTACK_COLUMNS) and {name: getattr(row, name) for name in ATTACK_COLUMNS} == expected
    assert curve.auroc > 0.6
    bare, bare_curve = make_row(model_id="attack-old")
    with open_warehouse(target) as wh:
        wh.write_audit(row, points)
        wh.write_audit(bare, bare_curve)
        got = {r.model_id: r for r in wh.fetch_results()}
    assert {name: getattr(got["attack-m"], name) for name in ATTACK_COLUMNS} == expected
    assert json.loads(got["attack-m"].result_json)["attack_curve"] == json.loads(json.dumps(encode(curve)))
    assert all(getattr(got["attack-old"], name) is None for name in ATTACK_COLUMNS)
    for change, message in (({"attack_auroc": 1.5}, r"attack_auroc must be a finite number in \[0, 1\]"),
                            ({"attack_auroc": 0.7, "attack_auroc_lower": 0.8, "attack_auroc_upper": 0.6},
                             "attack_auroc_lower must be <= attack_auroc_upper"),
                            ({"attack_tpr_at_fpr_0_01_lower": 0.1}, "need attack_tpr_at_fpr_0_01")):
        with pytest.raises(LabelDPInputError, match=message):
            normalize_row({**bare, **change})


def test_family_evidence_columns_and_results_family_on_both_backends(target, capsys):
    """Five nights of a leaking target, each written with its place in the family's test (computed from the rows
    already stored, as the nightly's publish step does): the stored e-values and evidence equal the test computed
    directly from the nights' counts; a re-run of a night keeps the first run's place; a guardrail row and a
    control never enter; `results family --json` prints the same test; bad values are refused before SQL."""
    from auditing.bounds.rr_validation import gaussian_mixture, randomized_response, true_posterior
    from auditing.sinks.family import family_of, family_with
    from auditing.sinks.warehouse.rows import normalize_row
    from auditing.verdict.family_evidence import NightCounts, family_evidence
    from flows.cli import main as cli

    rng = np.random.default_rng(12)
    nights, written = [], []
    for t in range(5):
        day = DAY + dt.timedelta(days=t)
        x, y = gaussian_mixture(3000, 2, rng)
        result = run_audit(randomized_response(y, 2, 3.0, rng).astype(float), true_posterior(x, 2)[:, 1], y,
                           game=GameConfig(repetitions=1, seed=t).with_night(day))  # coins keyed by the night
        verdict = judge(result, 0.5)
        night = NightCounts.of_result(day, 0.5, result)
        nights.append(night)
        with open_warehouse(target) as wh:
            _test, entry = family_with(wh.fetch_results(model_id="fam"), "fam", night)
            lineage = {"started_at": dt.datetime(2024, 2, 1, tzinfo=dt.UTC) + dt.timedelta(hours=t)}
            row, curve = audit_record(verdict, model_id="fam", partition_date=day, run_kind="nightly",
                                      lineage=lineage, family=entry)
            wh.write_audit(row, curve)
            written.append(entry)
            if t == 2:  # a guardrail of the same day and a control never enter the family
                other, other_curve = audit_record(verdict, model_id="fam", partition_date=day, run_kind="guardrail")
                wh.write_audit(other, other_curve)
    expected = family_evidence(nights)
    assert [n.evidence for n in written] == pytest.approx([n.evidence for n in expected.nights], rel=1e-12)
    assert expected.flagged  # eps 3 randomized response against a claim of 0.5
    with open_warehouse(target) as wh:
        rows = wh.fetch_results(model_id="fam")
        # a later re-run of night 1 (another config: its own row) does not replace the first run's place
        rerun, rerun_curve = audit_record(judge(run_audit(np.full(10, 0.9), np.full(10, 0.5), np.arange(10) % 2,
                                                          game=GameConfig(repetitions=1)), 0.5),
                                          model_id="fam", partition_date=DAY + dt.timedelta(days=1),
                                          run_kind="nightly",
                                          lineage={"started_at": dt.datetime(2024, 3, 1, tzinfo=dt.UTC)})
        wh.write_audit(rerun, rerun_curve)
        rows_after = wh.fetch_results(model_id="fam")
    stored = sorted((r for r in rows if r.run_kind == "nightly"), key=lambda r: r.partition_date)
    assert [r.family_evidence for r in stored] == pytest.approx([n.evidence for n in expected.nights], rel=1e-12)
    assert [r.family_flagged for r in stored] == [int(n.flagged) for n in expected.nights]
    assert all(r.family_e_value is None for r in rows if r.run_kind == "guardrail")
    assert family_of(rows_after, "fam").evidence == pytest.approx(expected.evidence, rel=1e-12)
    assert cli(["results", "--warehouse", target, "family", "fam", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["flagged"] and printed["flagged_on"] == expected.flagged_on.isoformat()
    assert [n["evidence"] for n in printed["nights"]] == pytest.approx([n.evidence for n in expected.nights])
    assert cli(["results", "--warehouse", target, "family", "fam"]) == 0
    shown = capsys.readouterr().out  # no check rows here: nothing confirms, the kappa-based figure is secondary
    assert "not confirmed" in shown and "kappa-based evidence" in shown and "holds only if kappa" in shown
    bad = {**rows[0].to_dict(), "family_flagged": 2}
    with pytest.raises(LabelDPInputError, match="family_flagged"):
        normalize_row(bad)
    with pytest.raises(LabelDPInputError, match="set all three or none"):
        normalize_row({**rows[0].to_dict(), "family_e_value": None})


# --------------------------------------------------------------------------------------------- slices
@pytest.fixture(scope="module")
def sliced_verdict():
    """A trusted VIOLATION at claimed eps 1 with 12 declared slices: a trusted and an untrusted slice VIOLATION,
    the rest PASS (tests/support/sliced_audits.py)."""
    from tests.support.sliced_audits import sliced

    return judge(sliced(), 1.0)


def _stripped(stored: list[dict]) -> list[dict]:
    from auditing.sinks.warehouse.rows import SLICE_FIELDS

    return [{name: piece[name] for name in SLICE_FIELDS} for piece in stored]


def test_a_verdict_with_slices_writes_and_reads_back_its_slice_rows(target, sliced_verdict):
    """The slices are written with the verdict's row, in its transaction, keyed by its key: every figure read back
    as judged, largest bound first. Another key adds its own; a re-run of the same key changes none of them (not
    even when it declared none): it is recorded as a run of the row; the read-only reader reads them too."""
    from auditing.sinks.warehouse import as_key, slice_record
    from auditing.sinks.warehouse.base import open_read_only

    verdict = sliced_verdict
    lineage = {"model_fingerprint": FINGERPRINT}
    row, curve = audit_record(verdict, model_id="sliced", partition_date=DAY, run_kind="nightly", lineage=lineage)
    slices = slice_record(verdict)
    audit = verdict.result.slices
    assert len(slices) == audit.declared == 12 and {s["budget"] for s in slices} == {audit.budget}
    with open_warehouse(target) as wh:
        assert wh.write_audit(row, curve, slices) == (row.key, True)
        stored = wh.fetch_slices(row.key)
        assert _stripped(stored) == slices and all(as_key(piece) == row.key for piece in stored)
        bounds = [piece["epsilon_lower_bound"] for piece in stored]
        assert bounds == sorted(bounds, reverse=True) and bounds[0] > 1.0
        assert [(p["status"], p["trust"]) for p in stored[:2]] == [("VIOLATION", "trusted"), ("VIOLATION", "untrusted")]
        assert {p["status"] for p in stored[2:]} == {"PASS"}
        assert {(p["declared"], p["confidence"]) for p in stored} == {(12, 1 - audit.budget / 12)}
        # another key (a guardrail's verdict of the same audit) adds its own slices and leaves these alone
        other, other_curve = audit_record(verdict, model_id="sliced", partition_date=DAY, run_kind="guardrail",
                                          lineage=lineage)
        wh.write_audit(other, other_curve, slices[:3])
        found = wh.slices_of([row.key, other.key, row])
        assert _stripped(found[row.key]) == slices and _stripped(found[other.key]) == slices[:3]
        # a re-run of the key changes nothing, not even with no slices
        assert not wh.write_audit(row.replace(run_id="run-2"), curve).new
        assert _stripped(wh.fetch_slices(row.key)) == slices and len(wh.fetch_results()) == 2
        assert sorted(r["run_id"] for r in wh.fetch_runs(row)) == sorted([row.run_id, "run-2"])
    with open_read_only(target) as wh:
        assert _stripped(wh.fetch_slices(row.key)) == slices and len(wh.fetch_slices(other.key)) == 3
        assert wh.fetch_slices(("absent", FINGERPRINT, DAY, "nightly", 1.0, "abc123", row.inputs_fingerprint)) == []


def test_slices_spool_with_their_row_and_drain_without_loss(target, outage, tmp_path, sliced_verdict):
    from auditing.sinks.warehouse import slice_record

    spool = tmp_path / "spool"
    row, curve = audit_record(sliced_verdict, model_id="sliced", partition_date=DAY, run_kind="nightly")
    slices = slice_record(sliced_verdict)
    assert write_or_spool(outage.target, row, curve, spool, attempts=1, timeout=0.5, slices=slices) == SPOOLED
    payload = json.loads(spool_path(spool, row.key, destination(outage.target), row.run_id).read_text())
    assert payload["slices"] == slices and payload["format"] == 3
    outage.end()
    assert [k for k in drain_spool(outage.target, spool).written] == [row.key]
    with open_warehouse(outage.target) as wh:
        assert _stripped(wh.fetch_slices(row.key)) == slices


@pytest.mark.parametrize("change, message", [
    ({"status": "WEAK_PASS"}, r"slices\[0\]: status must be one of \['PASS', 'VIOLATION', 'INCONCLUSIVE'\]"),
    ({"trust": "maybe"}, r"slices\[0\]: trust must be one of"),
    ({"budget": 1.0}, "need budget and confidence in"),
    ({"rows": -1}, r"slices\[0\]: rows must be a whole number"),
    ({"epsilon_lower_bound": float("nan")}, "epsilon_lower_bound must be a finite number"),
    ({"slice_name": ""}, "slice_name must be non-empty text"),
])
def test_bad_slices_are_refused_before_sql(tmp_path, sliced_verdict, change, message):
    from auditing.sinks.warehouse import slice_record

    row, curve = audit_record(sliced_verdict, model_id="sliced", partition_date=DAY, run_kind="nightly")
    slices = slice_record(sliced_verdict)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        with pytest.raises(LabelDPInputError, match=message):
            wh.write_audit(row, curve, [{**slices[0], **change}, *slices[1:]])
        with pytest.raises(LabelDPInputError, match="given twice"):
            wh.write_audit(row, curve, [slices[0], slices[0]])
        with pytest.raises(LabelDPInputError, match="one budget and declared count"):
            wh.write_audit(row, curve, [slices[0], {**slices[1], "declared": 13}])
        with pytest.raises(LabelDPInputError, match="slice rows for 12 declared slices"):
            wh.write_audit(row, curve, [*slices, {**slices[0], "slice_name": "one more"}])
        assert wh.fetch_results() == [] and wh.fetch_slices(row.key) == []
