"""A stored figure is declared once, on its record's field (`labeldp.stored`): the warehouse's table, the row's values
and the row's checks are read from there (docs/warehouse.md: adding a stored figure).

Kept honest here: every column of the blocks read from records (`schema.STORED_BLOCKS`: the columns migrations 5, 6,
7 and 10 added, and the result's own figures and settings, the reference check's, risk, robustness, shift, exposure,
breaking_kappa and control columns of version 1) is declared on exactly one record field (a record stored under prefixes, once per prefix); a field
declared on any record of auditing/ is a column of audit_results, in one of those blocks, and added by exactly one
migration (none for a column of version 1). A column the schema lists but no field declares, or a field declaring a
column the schema lacks, fails.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest

import auditing
from auditing.bounds.methods import method_names
from auditing.sinks.warehouse import migrations, schema
from auditing.sinks.warehouse.rows import normalize_row
from auditing.verdict.types import STATUSES
from labeldp.errors import LabelDPInputError
from labeldp.stored import (
    FLAG,
    TEXT,
    Part,
    stored,
    stored_fields,
)
from tests.support.warehouse_rows import make_row

# The migrations whose columns are declared on records' fields, and the baseline's (version 1) that are.
CONVERTED_VERSIONS = (5, 6, 7, 10)
# The audit's own figures and settings (`AuditResult`, `BoundConfig`, `GameConfig`, `Verdict.status`), version 1's;
# the NOT NULL ones declared required.
RESULT_FIGURES = ("delta", "confidence", "m", "selected_guesses", "selected_correct", "epsilon_lower_bound",
                  "epsilon_mean", "epsilon_std", "epsilon_median", "strategy", "method", "status",
                  "max_certifiable_epsilon", "repetitions", "seed", "kappa", "reference_calibration",
                  "gdp_mu_lower_bound")
REQUIRED_FIGURES = ("delta", "confidence", "m", "selected_guesses", "selected_correct", "epsilon_lower_bound",
                    "strategy", "method", "status", "max_certifiable_epsilon", "repetitions", "seed")
RISK_FIGURES = ("posterior_ceiling_median", "posterior_ceiling_p90", "high_prior_ceiling", "column_tail_bound",
                "column_expected", "mia_advantage_bound", "aia_advantage_bound", "reconstruction_bound")
CONVERTED_BASELINE = (*RESULT_FIGURES, "calibration_rows_fit", "calibration_rows_validation", "calibration_rounds",
                      "calibration_log_loss_before", "calibration_log_loss_after", "calibration_ece_before",
                      "calibration_ece_after", "label_blind_bound", "reference_misfit_kappa", "label_blind_flagged",
                      "reference_checked", "reference_check_note",
                      *(prefix + name for prefix in ("risk_", "risk_lb_") for name in RISK_FIGURES), "risk_headline",
                      "audit_rows", "detection_floor_rows", "reference_log_loss_shift", "feature_shift_max_psi",
                      "exposed_rows_floor", "breaking_kappa", "kind", "control_passed", "control_floor",
                      "untrusted_reason")


def _records_with_stored_fields() -> list[type]:
    """Every dataclass defined in a module of auditing/ with at least one stored field."""
    found = []
    for info in pkgutil.walk_packages(auditing.__path__, "auditing."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__
                    and stored_fields(value)):
                found.append(value)
    return found


def declared_columns(records: Sequence[type], blocks: Mapping[str, Sequence[Part]]) -> dict[str, list[str]]:
    """column -> the fields of ``records`` declaring it; a record the blocks store under prefixes
    (`labeldp.stored.Prefix`) declares its columns under each of them."""
    prefixes = defaultdict(set)  # record -> the prefixes the blocks store it under
    for parts in blocks.values():
        for part in parts:
            prefixes[part.record].add(part.prefix)
    declared = defaultdict(list)
    for record in records:
        for prefix in sorted(prefixes.get(record) or {None}, key=lambda p: "" if p is None else p.column):
            for name, column, _ in stored_fields(record, prefix=prefix):
                declared[column].append(f"{record.__name__}.{name}" + ("" if prefix is None else f"@{prefix.column}"))
    return declared


def stored_column_problems(expected: Sequence[str], table: Sequence[str], records: Sequence[type],
                           blocks: Mapping[str, Sequence[Part]],
                           migration_adds: Mapping[int, Sequence[str]], baseline: Sequence[str]) -> list[str]:
    """What breaks "one column, one declaration": ``expected`` the columns the blocks must hold, ``table`` the
    table's columns, ``records`` every record with stored fields, ``blocks`` `schema.STORED_BLOCKS`,
    ``migration_adds`` version -> the columns it adds, ``baseline`` the columns of version 1."""
    declared = declared_columns(records, blocks)
    in_blocks = defaultdict(list)
    for block, parts in blocks.items():
        for part in parts:
            for _, column, _ in part.fields():
                in_blocks[column].append(block)
    problems = [f"{column}: listed in the schema's stored blocks but declared on no record field"
                for column in expected if column not in declared]
    for column, fields in declared.items():
        if len(fields) != 1:
            problems.append(f"{column}: declared on {len(fields)} fields {fields}; one figure, one field")
        if column not in table:
            problems.append(f"{column}: declared on {fields} but not a column of audit_results")
        if len(in_blocks[column]) != 1:
            problems.append(f"{column}: declared on {fields} but in {len(in_blocks[column])} stored blocks "
                            f"{in_blocks[column]} (schema.STORED_BLOCKS)")
        adding = [version for version, adds in migration_adds.items() if column in adds]
        if len(adding) != (0 if column in baseline else 1):
            problems.append(f"{column}: declared on {fields} but added by {len(adding)} migrations {adding}"
                            + (" (a column of version 1)" if column in baseline else ""))
    return problems


def _real() -> dict:
    return {"expected": [*CONVERTED_BASELINE, *(c for v in CONVERTED_VERSIONS for c in migrations.MIGRATIONS[v - 1].adds)],
            "table": schema.RESULT_NAMES, "records": _records_with_stored_fields(), "blocks": schema.STORED_BLOCKS,
            "migration_adds": {m.version: m.adds for m in migrations.MIGRATIONS},
            "baseline": tuple(c.name for c in migrations.expected_tables(1)["audit_results"])}


def test_every_stored_column_is_declared_on_exactly_one_record_field():
    real = _real()
    assert all(migrations.MIGRATIONS[v - 1].version == v for v in CONVERTED_VERSIONS)
    assert stored_column_problems(**real) == []
    assert sorted(declared_columns(real["records"], real["blocks"])) == sorted(real["expected"])


def test_the_blocks_keep_the_table_order_and_each_declaration_is_the_column():
    """A block's columns stand together in audit_results, in its records' field order, each with the kind and the
    comment its field declares."""
    by_name = {c.name: c for c in schema.RESULT_COLUMNS}
    names = list(schema.RESULT_NAMES)
    for block in schema.STORED_BLOCKS:
        columns = schema.stored_block(block)
        start = names.index(columns[0].name)
        assert tuple(names[start:start + len(columns)]) == tuple(c.name for c in columns), block
        for column in columns:
            declaration = schema.stored_declarations()[column.name]
            assert by_name[column.name] == column
            assert (column.kind, column.comment, column.nullable) == (declaration.kind.column, declaration.comment,
                                                                       not declaration.required)


# Toy records for the check's own test: a column the schema lacks, a column declared twice, a column not declared.
@dataclass(frozen=True)
class _Owner:
    owner: str | None = stored(TEXT, "the team that owns the model", default=None)


@dataclass(frozen=True)
class _Twice:
    trust: str | None = stored(TEXT, "trust again", default=None)
    trusted: str | None = stored(TEXT, "trust a third time", column="trust", default=None)


def test_the_check_fails_a_column_declared_but_not_in_the_schema():
    real = _real()
    problems = stored_column_problems(**{**real, "records": [*real["records"], _Owner]})
    assert problems == ["owner: declared on ['_Owner.owner'] but not a column of audit_results",
                        "owner: declared on ['_Owner.owner'] but in 0 stored blocks [] (schema.STORED_BLOCKS)",
                        "owner: declared on ['_Owner.owner'] but added by 0 migrations []"]


def test_the_check_fails_a_column_listed_in_the_schema_but_not_declared():
    real = _real()
    records = [r for r in real["records"] if r.__name__ != "NightEvidence"]
    problems = stored_column_problems(**{**real, "records": records})
    assert [p.split(":")[0] for p in problems] == [*migrations.V7_FAMILY, "family_check_evidence",
                                                   "family_confirmed"]
    assert all("declared on no record field" in p for p in problems)


def test_the_check_fails_a_column_declared_twice():
    real = _real()
    problems = stored_column_problems(**{**real, "records": [*real["records"], _Twice]})
    assert problems[0].startswith("trust: declared on 3 fields ['TrustFigures.trust', '_Twice.trust', "
                                  "'_Twice.trusted']")


# ---------------------------------------------------------------------------------------------- filled and checked
@pytest.mark.parametrize(("column", "value", "message"), [
    ("check_rule", "sideways", r"check_rule must be one of \['stratified', 'pooled'\] or None"),
    ("split_rule", "by hand", r"split_rule must be one of \['keyed random draw', 'tested'\] or None"),
    ("decision_reason", 3, "decision_reason must be text or None"),
    ("check_strata", -1, "check_strata must be a whole number >= 0"),
    ("family_confirmed", 2, "family_confirmed must be 0, 1"),
    ("split_refused", 1.0, "split_refused must be 0, 1"),
    ("group_label_agreement", 1.5, r"group_label_agreement must be a finite number in \[0, 1\]"),
    ("attack_auroc_upper", -0.1, r"attack_auroc_upper must be a finite number in \[0, 1\]"),
    ("check_e_value", -1.0, "check_e_value must be a finite number >= 0"),
    ("reference_check_note", "  ", "reference_check_note must be non-empty text or None"),
    ("calibration_rounds", 1.5, "calibration_rounds must be a whole number >= 0"),
])
def test_a_stored_column_is_checked_by_its_declared_kind(column, value, message):
    with pytest.raises(LabelDPInputError, match=message):
        normalize_row({**make_row()[0], column: value})


def test_misfit_kappa_upper_may_be_negative_as_declared():
    assert normalize_row({**make_row()[0], "misfit_kappa_upper": -0.5})["misfit_kappa_upper"] == -0.5


# ------------------------------------------------------------------------------------------------- under a prefix
def test_the_risk_blocks_are_one_record_stored_under_risk_and_risk_lb():
    """Each risk figure is one field of RiskBlock, a column under each prefix; a risk figure the table lists that
    RiskBlock does not declare fails."""
    from auditing.risk.records import RiskBlock

    columns = [c.name for c in schema.RISK]
    assert columns == [*(prefix + name for prefix in ("risk_", "risk_lb_") for name in RISK_FIGURES), "risk_headline"]
    assert schema.stored_declarations()["risk_lb_column_expected"].comment.startswith("at the valid eps_lb: ")
    real = _real()
    problems = stored_column_problems(**{**real, "records": [r for r in real["records"] if r is not RiskBlock]})
    assert sorted(p.split(":")[0] for p in problems) == sorted(
        prefix + name for prefix in ("risk_", "risk_lb_") for name in RISK_FIGURES)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("risk_posterior_ceiling_p90", 1.5, r"risk_posterior_ceiling_p90 must be a finite number in \[0, 1\]"),
    ("risk_lb_column_expected", -1.0, "risk_lb_column_expected must be a finite number >= 0"),
    ("risk_lb_mia_advantage_bound", float("nan"), "risk_lb_mia_advantage_bound must be a finite number"),
    ("risk_headline", 3, "risk_headline must be text or None"),
])
def test_a_risk_column_is_checked_by_its_declared_kind(column, value, message):
    with pytest.raises(LabelDPInputError, match=message):
        normalize_row({**make_row()[0], column: value})


def test_a_count_of_rows_above_one_is_a_valid_expected_column():
    assert normalize_row({**make_row()[0], "risk_column_expected": 12.5})["risk_column_expected"] == 12.5


# ------------------------------------------------------------------------------------ one record in four places
def test_the_robustness_figures_are_trust_figures_fields_each_group_in_its_place():
    """audit_rows .. breaking_kappa are TrustFigures fields; each group (`group=`) is its own block, in the table
    where version 1 put it."""
    names = list(schema.RESULT_NAMES)
    blocks = {block: [c.name for c in schema.stored_block(block)]
              for block in ("robustness", "shift", "exposure", "breaking")}
    assert blocks == {"robustness": ["audit_rows", "detection_floor_rows"],
                      "shift": ["reference_log_loss_shift", "feature_shift_max_psi"],
                      "exposure": ["exposed_rows_floor"], "breaking": ["breaking_kappa"]}
    assert names.index("shift_diagnostic") == names.index("detection_floor_rows") + 1
    assert names.index("kappa") == names.index("breaking_kappa") - 1


@pytest.mark.parametrize(("column", "value", "message"), [
    ("audit_rows", "test", r"audit_rows must be one of \['training', 'all'\] or None"),
    ("detection_floor_rows", -2, "detection_floor_rows must be a whole number >= 0"),
    ("exposed_rows_floor", 1.5, "exposed_rows_floor must be a whole number >= 0"),
    ("feature_shift_max_psi", -0.1, "feature_shift_max_psi must be a finite number >= 0"),
    ("reference_log_loss_shift", float("inf"), "reference_log_loss_shift must be a finite number"),
    ("breaking_kappa", -1.0, "breaking_kappa must be a finite number >= 0"),
])
def test_a_robustness_column_is_checked_by_its_declared_kind(column, value, message):
    with pytest.raises(LabelDPInputError, match=message):
        normalize_row({**make_row()[0], column: value})


def test_a_log_loss_shift_may_be_negative_as_declared():
    assert normalize_row({**make_row()[0], "reference_log_loss_shift": -0.25})["reference_log_loss_shift"] == -0.25


# ------------------------------------------------------------------------------------------------ control group
def test_the_control_columns_are_the_verdicts_kind_its_controls_outcome_and_its_untrusted_reason():
    assert [c.name for c in schema.CONTROL] == ["kind", "control_passed", "control_floor", "untrusted_reason"]
    assert schema.stored_declarations()["control_passed"].kind is FLAG


@pytest.mark.parametrize(("update", "message"), [
    ({"kind": "canary"}, r"kind must be one of \['target', 'control'\] or None"),
    ({"kind": "control", "control_passed": 1.0}, "control_passed must be 0, 1"),
    ({"kind": "control", "control_floor": -0.5}, "control_floor must be a finite number >= 0"),
    ({"control_passed": 1}, "kind 'control' rows only"),
    ({"untrusted_reason": ""}, "untrusted_reason must be non-empty text or None"),
])
def test_a_control_column_is_checked_by_its_declared_kind(update, message):
    with pytest.raises(LabelDPInputError, match=message):
        normalize_row({**make_row()[0], **update})


# ------------------------------------------------------------------------------- the audit's own figures
def test_the_results_figures_are_declared_where_their_values_live_and_not_null_where_required():
    """The audit's figures are fields of `AuditResult`, its settings of `BoundConfig` / `GameConfig`, the status of
    `Verdict`; NOT NULL exactly where declared required. What is left hand-written as NOT NULL is the key, gamma (1 -
    confidence, derived), run_id and result_json."""
    from auditing.config import BoundConfig
    from auditing.game.config import GameConfig
    from auditing.result import AuditResult
    from auditing.verdict.types import Verdict

    owners = {column: record.__name__ for record in (AuditResult, BoundConfig, GameConfig, Verdict)
              for _, column, _ in stored_fields(record) if column in RESULT_FIGURES}
    assert owners == {**dict.fromkeys(("m", "selected_guesses", "selected_correct", "epsilon_lower_bound",
                                       "epsilon_mean", "epsilon_std", "epsilon_median", "max_certifiable_epsilon",
                                       "gdp_mu_lower_bound"), "AuditResult"),
                      **dict.fromkeys(("delta", "confidence", "strategy", "method", "kappa"), "BoundConfig"),
                      **dict.fromkeys(("repetitions", "seed", "reference_calibration"), "GameConfig"),
                      "status": "Verdict"}
    declared = schema.stored_declarations()
    assert sorted(c for c in RESULT_FIGURES if declared[c].required) == sorted(REQUIRED_FIGURES)
    not_null = [c.name for c in schema.RESULT_COLUMNS if not c.nullable]
    assert sorted(c for c in not_null if c not in declared) == sorted(
        (*schema.KEY_COLUMNS, "gamma", "run_id", "result_json"))
    assert sorted(c for c in not_null if c in declared) == sorted(REQUIRED_FIGURES)
    assert declared["method"].choices() == method_names() and declared["status"].choices() == STATUSES


def test_the_check_fails_a_result_figure_listed_in_the_schema_but_not_declared():
    from auditing.config import BoundConfig

    real = _real()
    problems = stored_column_problems(**{**real, "records": [r for r in real["records"] if r is not BoundConfig]})
    assert [p.split(":")[0] for p in problems] == ["delta", "confidence", "strategy", "method", "kappa"]
    assert all("declared on no record field" in p for p in problems)


@pytest.mark.parametrize(("update", "message"), [
    ({"delta": 1.0}, r"delta must be a finite number in \[0, 1\); got 1.0"),
    ({"delta": -0.1}, r"delta must be a finite number in \[0, 1\); got -0.1"),
    ({"confidence": 0.0}, r"confidence must be a finite number in \(0, 1\); got 0.0"),
    ({"confidence": 1.0}, r"confidence must be a finite number in \(0, 1\); got 1.0"),
    ({"confidence": True}, "confidence must be a number"),
    ({"m": -1}, "m must be a whole number >= 0"),
    ({"selected_guesses": 10.5}, "selected_guesses must be a whole number >= 0"),
    ({"selected_correct": 101}, "selected_correct <= selected_guesses <= m must hold"),
    ({"repetitions": 0}, "repetitions must be a whole number >= 1; got 0"),
    ({"seed": -7}, "seed must be a whole number >= 0"),
    ({"epsilon_lower_bound": -0.1}, "epsilon_lower_bound must be a finite number >= 0; got -0.1"),
    ({"epsilon_lower_bound": float("nan")}, "epsilon_lower_bound must be a finite number"),
    ({"max_certifiable_epsilon": float("inf")}, "max_certifiable_epsilon must be a finite number"),
    ({"epsilon_mean": float("nan")}, "epsilon_mean must be a finite number"),
    ({"epsilon_median": "1.0"}, "epsilon_median must be a number"),
    ({"strategy": ""}, "strategy must be non-empty text; got ''"),
    ({"strategy": 3}, "strategy must be non-empty text; got 3"),
    ({"method": "magic"}, r"method must be one of \['binomial', .*\]; got 'magic'"),
    ({"status": "OK"}, r"status must be one of \['PASS', 'WEAK_PASS', 'VIOLATION', 'INCONCLUSIVE'\]; got 'OK'"),
    ({"kappa": -0.1}, "kappa must be a finite number >= 0 or None; got -0.1"),
    ({"gdp_mu_lower_bound": -1.0}, "gdp_mu_lower_bound must be a finite number >= 0 or None"),
    ({"reference_calibration": "isotonic"}, r"reference_calibration must be one of \['boost', 'none'\] or None"),
    ({"seed": None}, r"missing required column\(s\) \['seed'\]"),
    ({"status": None}, r"missing required column\(s\) \['status'\]"),
])
def test_a_result_figure_is_checked_by_its_declaration_naming_the_column(update, message):
    with pytest.raises(LabelDPInputError, match=message):
        normalize_row({**make_row()[0], **update})


def test_a_result_figure_within_its_declaration_is_kept():
    row = normalize_row({**make_row()[0], "epsilon_mean": -0.5, "delta": 0.0, "confidence": 0.999, "repetitions": 1,
                         "strategy": "split", "kappa": 0.25, "reference_calibration": "none"})
    assert (row["epsilon_mean"], row["delta"], row["confidence"], row["repetitions"], row["strategy"], row["kappa"],
            row["reference_calibration"]) == (-0.5, 0.0, 0.999, 1, "split", 0.25, "none")
    assert row["gamma"] == pytest.approx(0.001)
