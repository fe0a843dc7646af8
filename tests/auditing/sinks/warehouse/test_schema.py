"""The warehouse tables (auditing/sinks/warehouse/schema.py): their columns on both backends, the kappa era's
nullable columns and the retired legacy ones, and the statements that add a missing nullable column."""

from __future__ import annotations

from auditing.sinks.warehouse import open_warehouse
from auditing.sinks.warehouse.schema import CURVE_NAMES, KEY_COLUMNS, RESULT_NAMES, RUN_NAMES, SLICE_NAMES


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


def test_migration_sql_adds_only_nullable_columns():
    from auditing.sinks.warehouse.schema import migration_statements

    found = {"audit_results": [n for n in RESULT_NAMES if n not in ("flow_run_id", "m")],
             "audit_curves": list(CURVE_NAMES)}
    statements = migration_statements("postgres", found)
    assert statements[0] == "ALTER TABLE audit_results ADD COLUMN IF NOT EXISTS flow_run_id TEXT"
    assert not any(" m " in s for s in statements) and len(statements) == 2
