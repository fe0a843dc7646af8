"""The warehouse tables, written once and rendered for DuckDB and PostgreSQL (docs/warehouse.md).

Both backends get the same column names, the same logical types and the same keys; only the spelling of a
type differs (``DOUBLE`` vs ``DOUBLE PRECISION``). Every SQL statement the warehouse runs is built here from
these constant tables and a placeholder style; values are always bound parameters, never pasted into SQL.
The CHECK constraints on ``status`` and ``method`` list the names of ``auditing.verdict.types.STATUSES`` and of
the bound-method registry (``auditing.bounds.lower_bound.METHODS``), read when the DDL is built: a new method needs no
SQL edit here, and ``auditing.sinks.warehouse.migrations`` brings an existing warehouse's constraints in line.

This module describes the LATEST schema version; how an older warehouse gets there (and the table recording
the versions applied) is ``auditing.sinks.warehouse.migrations``, which also renders the DDL of a new warehouse
(``python -m auditing.sinks.warehouse duckdb|postgres``, the text of ``infra/warehouse/*.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass

from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from auditing.records.game import REFERENCE_CALIBRATIONS as GAME_REFERENCE_CALIBRATIONS
from auditing.records.game import AttackCurve
from auditing.result import AuditResult, CapacityCheck
from auditing.risk.records import CLAIMED, DEMONSTRATED, NO_PRIOR, RiskAssessment, RiskBlock
from auditing.verdict.control_check import ControlCheck
from auditing.verdict.family_evidence import NightEvidence
from auditing.verdict.reference_check import CalibrationFigures, LabelBlindFigures, ReferenceCheck
from auditing.verdict.run_kinds import RUN_KINDS
from auditing.verdict.split_test import SplitTest
from auditing.verdict.types import (
    DECISIONS,
    INCONCLUSIVE,
    PASS,
    STATUSES,
    TRUST_STATES,
    VIOLATION,
    Decision,
    TrustFigures,
    Verdict,
)
from labeldp.stored import Part, Stored

# Which f-DP curve an `fdp` row's Algorithm 3 ran on: the (eps, delta) trade-off curve itself (valid for every
# mechanism). NULL on an fdp row means a row written before kappa: the Gaussian family and its conversion to
# eps, a Gaussian reading that is not a valid eps bound for non-Gaussian mechanisms.
FDP_CURVES = ("eps-delta",)
# The corrections reference_calibration may name: the game's own list (`GameConfig.reference_calibration` declares
# the column and its choices).
REFERENCE_CALIBRATIONS = GAME_REFERENCE_CALIBRATIONS
# What a key column holds on a row written before the key had it (schema version 4): its run kind and, when
# its writer recorded none, its model fingerprint.
UNRECORDED = "unrecorded"
STORED_RUN_KINDS = (*RUN_KINDS, UNRECORDED)


def methods() -> tuple[str, ...]:
    """The bound methods a row may name: the registry's list ``auditing.bounds.lower_bound.METHODS``, read at each call (a
    method registered after import, or a test's toy method, counts)."""
    from auditing.bounds import lower_bound as bounds

    return tuple(bounds.METHODS)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # logical type: text | date | double | bigint | integer | timestamptz
    nullable: bool
    comment: str


_TYPES = {
    "duckdb": {"text": "TEXT", "date": "DATE", "double": "DOUBLE", "bigint": "BIGINT", "integer": "INTEGER",
               "timestamptz": "TIMESTAMPTZ"},
    "postgres": {"text": "TEXT", "date": "DATE", "double": "DOUBLE PRECISION", "bigint": "BIGINT",
                 "integer": "INTEGER", "timestamptz": "TIMESTAMPTZ"},
}
DIALECTS = tuple(_TYPES)

# A verdict's key: every verdict computed is its own row, keyed by what it judged. A run on inputs that differ in
# any fingerprint (inputs_fingerprint: partition, model file, training rows, reference and its correction, the
# stored game's key, the configuration) adds a row beside the others; a run on identical inputs records itself in
# audit_runs and changes nothing (auditing.sinks.warehouse.records.AuditKey).
KEY_COLUMNS = ("model_id", "model_fingerprint", "partition_date", "run_kind", "claimed_epsilon",
               "audit_config_hash", "inputs_fingerprint")
# What inputs_fingerprint hashes (auditing.sinks.warehouse.rows.inputs_fingerprint): each a column of audit_results.
INPUT_FINGERPRINTS = ("partition_fingerprint", "model_fingerprint", "training_rows_fingerprint",
                      "reference_fingerprint", "correction_fingerprint", "scoring_key", "audit_config_hash",
                      "night_fingerprint")

_KEY = (
    Column("model_id", "text", False, "model name (a safe single path component)"),
    Column("model_fingerprint", "text", False,
           "content hash of the audited model; 'unrecorded' when its writer recorded none"),
    Column("partition_date", "date", False, "the daily partition the model was trained on"),
    Column("run_kind", "text", False,
           "the kind of run that wrote the row: nightly | guardrail | backfill; 'unrecorded' on rows written "
           "before schema version 4"),
    Column("claimed_epsilon", "double", False,
           "epsilon the model claims (Infinity for non-private): the claim judged; another claim is another row"),
    Column("audit_config_hash", "text", False, "config_hash(game, bound): the audit's settings"),
    Column("inputs_fingerprint", "text", False,
           "sha256 over the fingerprints of every input the verdict judged (partition_fingerprint, "
           "model_fingerprint, training_rows_fingerprint, reference_fingerprint, correction_fingerprint, "
           "scoring_key, audit_config_hash, night_fingerprint): other inputs, another row; 'unrecorded' on rows "
           "written before schema version 9"),
)

# The blocks of audit_results whose columns are declared on a record's fields (`labeldp.stored`; docs/warehouse.md:
# adding a stored figure): block -> the parts (`labeldp.stored.Part`: a record, a group of its fields, a column
# prefix) whose stored fields fill it, in table order. Each
# column is filled from its record (`auditing.sinks.warehouse.rows.stored_values`; NULL when the row has no such
# record) and checked by its declared kind (`auditing.sinks.warehouse.rows.normalize_stored`).
STORED_BLOCKS: dict[str, tuple[Part, ...]] = {
    # the audit's own figures (`AuditResult`), the settings they were computed under (`BoundConfig`, `GameConfig`)
    # and the verdict's status, NOT NULL where version 1 made them so (`Stored.required`); gamma between the first
    # two blocks is 1 - confidence, derived and not a field, so it stays a hand-written column
    "settings": (Part(BoundConfig, "delta"), Part(BoundConfig, "confidence")),
    "result": (Part(AuditResult, "counts"), Part(AuditResult, "bound"), Part(AuditResult, "paper"),
               Part(BoundConfig, "strategy"), Part(BoundConfig, "method"), Part(Verdict, "status"),
               Part(AuditResult, "certifiable"), Part(GameConfig)),
    "kappa": (Part(BoundConfig, "kappa"),),
    "calibration": (Part(GameConfig, "calibration"),),
    # the Gaussian reading of the fdp method; fdp_curve before it is the method's curve (its registry entry), not a
    # field, and stays a hand-written column
    "gdp": (Part(AuditResult, "gdp"),),
    # trust per verdict (auditing.verdict.trust), the capacity check (auditing.verdict.capacity_check) and the row
    # groups (auditing.game.row_groups): `Verdict.trust_figures`
    "trust": (Part(TrustFigures),),
    # repetition 0's attack read as a classifier of the coin (auditing.game.attack_curve, docs/attack-curve.md)
    "attack": (Part(AttackCurve),),
    # the model family's evidence across nights (auditing.verdict.family_evidence)
    "family": (Part(NightEvidence),),
    # the night's reference check: the correction's figures, the retired label-blind control's, whether it ran
    "reference": (Part(CalibrationFigures), Part(LabelBlindFigures), Part(ReferenceCheck)),
    # a verdict's kind, its control's outcome (auditing.verdict.control_check; NULL for a target) and why it is not
    # trusted (NULL when it is)
    "control": (Part(Verdict), Part(ControlCheck), Part(Verdict, "untrusted")),
    # which rows were audited and the fewest exposed labels the audit could flag (auditing.verdict.robustness), the
    # shift diagnostic's scalars (auditing.verdict.shift_diagnostic), the game-aware detection floor
    # (auditing.verdict.exposure_floor) and the kappa that breaks a VIOLATION: `Verdict.trust_figures`, each group in
    # its own place of the table
    "robustness": (Part(TrustFigures, "robustness"),),
    "shift": (Part(TrustFigures, "shift"),),
    "exposure": (Part(TrustFigures, "exposure"),),
    "breaking": (Part(TrustFigures, "breaking"),),
    # the decision, the stratified check's figures, the split test and the check's family evidence
    "decision": (Part(Decision), Part(CapacityCheck), Part(SplitTest), Part(NightEvidence, "decision")),
    # what the claimed eps allows and the valid eps_lb demonstrates: a risk block under each prefix (the figures
    # needing the day's priors, then those that do not), then the headline (auditing.risk.records)
    "risk": (Part(RiskBlock, "", CLAIMED), Part(RiskBlock, NO_PRIOR, CLAIMED), Part(RiskBlock, "", DEMONSTRATED),
             Part(RiskBlock, NO_PRIOR, DEMONSTRATED), Part(RiskAssessment)),
}


def stored_block(block: str) -> tuple[Column, ...]:
    """The columns of ``block`` (`STORED_BLOCKS`), each as its record's field declares it: nullable unless
    declared ``required``."""
    return tuple(Column(column, declaration.kind.column, not declaration.required, declaration.comment)
                 for part in STORED_BLOCKS[block] for _, column, declaration in part.fields())


def stored_declarations() -> dict[str, Stored]:
    """column -> its declaration (`labeldp.stored.Stored`), for every column of `STORED_BLOCKS`, in table order."""
    return {column: declaration for parts in STORED_BLOCKS.values() for part in parts
            for _, column, declaration in part.fields()}


TRUST, ATTACK, FAMILY, REFERENCE, DECISION, RISK, ROBUSTNESS, SHIFT, EXPOSURE, BREAKING, CONTROL = (
    stored_block(block) for block in ("trust", "attack", "family", "reference", "decision", "risk", "robustness",
                                      "shift", "exposure", "breaking", "control"))
SETTINGS, RESULT, KAPPA, CALIBRATION, GDP = (
    stored_block(block) for block in ("settings", "result", "kappa", "calibration", "gdp"))
TRUST_COLUMNS = tuple(c.name for c in TRUST)
# The attack curve's figures as columns (schema version 6): attack_<figure>, attack_<figure>_lower / _upper.
ATTACK_FIGURES = AttackCurve.FIGURES
ATTACK_COLUMNS = tuple(c.name for c in ATTACK)
# The family's evidence across nights (schema version 7).
FAMILY_COLUMNS = tuple(c.name for c in FAMILY)
# The decision, the stratified check's figures, the split test and the check's family evidence (schema version 10).
DECISION_COLUMNS = tuple(c.name for c in DECISION)


RESULT_COLUMNS: tuple[Column, ...] = (
    *_KEY,
    *SETTINGS,  # delta, confidence
    Column("gamma", "double", False, "1 - confidence: the chance the valid bound is wrong"),
    # m .. epsilon_median, strategy, method, status, max_certifiable_epsilon, repetitions, seed
    *RESULT,
    Column("model_uri", "text", True, "where the audited model lives"),
    Column("reference_model", "text", True, "the reference model M' (checkpoint of the previous day)"),
    Column("partition_fingerprint", "text", True, "content hash of the partition the verdict judged"),
    Column("code_version", "text", True, "version of labeldp-audit that produced the row"),
    Column("flow_run_id", "text", True, "the run that wrote the row: its Prefect flow run id"),
    Column("run_id", "text", False,
           "the run that wrote the row (audit_runs lists every run of it); on rows written before schema version 9 "
           "their flow_run_id, else 'unrecorded'"),
    Column("training_rows_fingerprint", "text", True,
           "hash of the audited model's training-rows record and the partition it was made on; NULL: not recorded"),
    Column("reference_fingerprint", "text", True, "content hash of the reference M' (the D-1 checkpoint, before "
           "its correction); NULL: not recorded"),
    Column("correction_fingerprint", "text", True,
           "content hash of the corrected reference the game used (the D-1 checkpoint recalibrated on day D); "
           "NULL: no correction, or not recorded"),
    Column("scoring_key", "text", True,
           "key of the stored game the verdict was judged from (sweeps/<model>/date=D/<scoring_key>/); NULL: not "
           "recorded"),
    Column("night_fingerprint", "text", True,
           "hash of what the night's trust is judged from beyond the verdict's own game: each control (name, kind, "
           "claim, its model's fingerprint or why it could not run) and whether an unchecked reference was "
           "accepted; NULL: not recorded"),
    Column("started_at", "timestamptz", True, "when the audit run started (UTC)"),
    Column("finished_at", "timestamptz", True, "when the audit run finished (UTC)"),
    Column("durations", "text", True, "JSON object: seconds per stage"),
    Column("result_json", "text", False, "JSON: the full AuditResult.to_dict()"),
    # which rows were audited, and how far to trust the verdict
    *ROBUSTNESS,
    Column("shift_diagnostic", "text", True,
           "JSON, a diagnostic and not a proof: the reference's fit on day D vs D-1 and the features' "
           "day-over-day shift"),
    *SHIFT,
    # nightly controls and whether the night's verdicts can be trusted
    *CONTROL,
    # risk: what the claimed eps allows (risk_*) and the valid eps_lb demonstrates (risk_lb_*), with
    # the day's reference probabilities as the attacker's priors (auditing.risk.figures; NULL where not computed)
    *RISK,
    # the game-aware detection floor (auditing.verdict.exposure_floor)
    *EXPOSURE,
    # kappa replaces tau (docs/soundness.md: section 1, hypothesis H, defines kappa; section 5 says why tau did not
    # protect): NULL in every column below on rows written before it. A legacy row's TV figures tau / breaking_tau
    # are never copied into them (the migration that retired those columns kept non-zero values in
    # reference_check_note, auditing.sinks.warehouse.migrations).
    *KAPPA,
    *BREAKING,
    *CALIBRATION,  # reference_calibration
    *REFERENCE,  # the night's reference check (auditing.verdict.reference_check), declared on its records
    Column("fdp_curve", "text", True,
           "method fdp: the f-DP curve Algorithm 3 ran on: eps-delta (the (eps, delta) trade-off curve itself, "
           "valid for every mechanism); NULL for binomial, and on fdp rows written before kappa, which used the "
           "Gaussian family and its conversion to eps (a Gaussian reading: not a valid eps bound for non-Gaussian "
           "mechanisms)"),
    *GDP,  # gdp_mu_lower_bound
    # trust per verdict (auditing.verdict.trust) and the capacity check (auditing.verdict.capacity_check); NULL on rows written
    # before them. This block and the three below are declared on their records' fields (STORED_BLOCKS).
    *TRUST,
    # repetition 0's attack read as a classifier of the coin (auditing.game.attack_curve, docs/attack-curve.md):
    # descriptive, never a bound on epsilon; NULL on rows written before it and where it has no positive or negative
    *ATTACK,
    # the model family's evidence across nights (auditing.verdict.family_evidence, docs/soundness.md section 10):
    # NULL for controls, other run kinds, rows written before it and a night whose warehouse could not be read
    *FAMILY,
    # one decision per target (auditing.verdict.decision, docs/decisions.md), the stratified capacity check's
    # matched comparison, the split test, the check's evidence across nights (schema version 10); NULL on controls
    # and on rows written before them (the reader derives a stored row's decision from its status and trust)
    *DECISION,
)

CURVE_COLUMNS: tuple[Column, ...] = (
    *_KEY,
    Column("point_index", "integer", False, "position of the point in the sweep (0-based)"),
    Column("guesses", "bigint", False, "c': guesses at this point"),
    Column("correct", "bigint", False, "c: correct guesses at this point"),
    Column("epsilon_lower_bound", "double", False, "bound at this point, at point_confidence"),
    Column("point_confidence", "double", False, "confidence of this point's bound (Bonferroni-adjusted)"),
)

# Valid bounds per declared slice (auditing.slices, schema version 8): one row per slice of a verdict, keyed as its
# audit_results row plus the slice. The slices have their own budget; the verdict's status is judged separately.
SLICE_STATUSES = (PASS, VIOLATION, INCONCLUSIVE)  # a slice's status (auditing.verdict.guardrail; never WEAK_PASS)
SLICE_COLUMNS: tuple[Column, ...] = (
    *_KEY,
    Column("slicing", "text", False,
           "the slicing the slice belongs to, as declared: column:NAME:top=K, column:NAME=A,B, group:NAME, "
           "prior-deciles or shown-label (auditing.slices)"),
    Column("slice_name", "text", False, "the slice within its slicing, e.g. C9=a3f1, prior (0.1, 0.2], shown label 1"),
    Column("budget", "double", False,
           "the slices' own false-alarm budget, split over the declared slices (Bonferroni); the verdict's "
           "1 - confidence is spent separately"),
    Column("declared", "integer", False,
           "S: the slices declared for this verdict (fixed from the features and the reference before any guess)"),
    Column("confidence", "double", False, "confidence of this slice's bound: 1 - budget / declared"),
    Column("rows", "bigint", False, "audited rows in the slice"),
    Column("check_rows", "bigint", False,
           "check rows in the slice (rows of the day the model never saw; 0: nothing checked the reference here)"),
    Column("epsilon_lower_bound", "double", False,
           "the slice's valid epsilon lower bound at confidence: its rows played alone (repetition 0, the same "
           "keyed coins as the verdict's game)"),
    Column("max_certifiable_epsilon", "double", False,
           "largest bound a perfect attacker could have produced on this slice at its confidence"),
    Column("status", "text", False,
           "the slice against the claim: PASS | VIOLATION (its valid bound exceeds the claim at the slices' "
           "confidence; the verdict's status is judged separately) | INCONCLUSIVE"),
    Column("trust", "text", False,
           "the slice's trust, by the verdict's rules on the slice's own capacity check: trusted | untrusted | "
           "reference unchecked | reference unchecked, accepted"),
    Column("trust_reason", "text", True, "why the slice's status is (not) trusted; NULL: no reason recorded"),
    Column("note", "text", True,
           "why the slice could not show a violation of the claim (too small, no audited row, a keyed half left "
           "empty); NULL otherwise"),
)

# Every run of a verdict (schema version 9): the run that wrote its row, and each later run on identical inputs,
# which records itself here and changes nothing else. Keyed by the run and the row's key.
RUN_COLUMNS: tuple[Column, ...] = (
    Column("run_id", "text", False, "the run: one id per nightly, guardrail, backfill or rejudge command"),
    *_KEY,
    Column("flow_run_id", "text", True, "the run's Prefect flow run id"),
    Column("started_at", "timestamptz", True, "when this run's audit of the row started (UTC)"),
    Column("finished_at", "timestamptz", True, "when this run's audit of the row finished (UTC)"),
    Column("code_version", "text", True, "version of labeldp-audit that ran"),
    Column("status", "text", False,
           "the status this run computed (the row keeps the first run's; a difference is shown by results)"),
    Column("epsilon_lower_bound", "double", False, "the valid bound this run computed"),
)

TABLES = {"audit_results": RESULT_COLUMNS, "audit_curves": CURVE_COLUMNS, "audit_slices": SLICE_COLUMNS,
          "audit_runs": RUN_COLUMNS}
TABLE_COMMENTS = {
    "audit_results": "one row per verdict (model_id, model_fingerprint, partition_date, run_kind, claimed_epsilon, "
                     "audit_config_hash, inputs_fingerprint): an audit's outcome and lineage, written once",
    "audit_curves": "one row per sweep point of an audit (epsilon lower bound vs guesses), for plots",
    "audit_slices": "one row per declared slice of a verdict (its audit_results key, slicing, slice_name): the "
                    "slice's valid epsilon lower bound at the slices' own confidence, its status against the claim "
                    "and its trust",
    "audit_runs": "one row per run of a verdict (run_id and the verdict's key): the run that wrote it and every later "
                  "run on identical inputs, with what each computed",
}
# The table recording the schema versions applied (auditing.sinks.warehouse.migrations), one row per version.
VERSION_TABLE = "audit_schema_version"
VERSION_COLUMNS: tuple[Column, ...] = (
    Column("version", "integer", False, "schema version reached by this step (auditing.sinks.warehouse.migrations)"),
    Column("description", "text", False, "what the step did"),
    Column("applied_at", "timestamptz", False, "when it was applied (UTC)"),
)
VERSION_TABLE_COMMENT = "one row per schema version applied to this warehouse; the highest is its version"

PRIMARY_KEYS = {"audit_results": KEY_COLUMNS, "audit_curves": (*KEY_COLUMNS, "point_index"),
                "audit_slices": (*KEY_COLUMNS, "slicing", "slice_name"), "audit_runs": ("run_id", *KEY_COLUMNS),
                VERSION_TABLE: ("version",)}
# Named CHECK constraints whose expression never changes; the ones listing a registry's names are built by
# check_constraints() from choice_columns().
_FIXED_CHECKS = {
    "audit_results": (("audit_results_counts_check", "selected_correct <= selected_guesses"),),
    "audit_curves": (("audit_curves_counts_check", "correct <= guesses"),),
    "audit_slices": (("audit_slices_status_check", f"status IN ({', '.join(map(repr, SLICE_STATUSES))})"),),
}
CHOICE_TABLE = "audit_results"

RESULT_NAMES = tuple(c.name for c in RESULT_COLUMNS)
CURVE_NAMES = tuple(c.name for c in CURVE_COLUMNS)
SLICE_NAMES = tuple(c.name for c in SLICE_COLUMNS)
RUN_NAMES = tuple(c.name for c in RUN_COLUMNS)


def _check_dialect(dialect: str) -> str:
    if dialect not in _TYPES:
        raise ValueError(f"dialect must be one of {list(_TYPES)}; got {dialect!r}")
    return dialect


def sql_literal(text: str) -> str:
    """``text`` as a quoted SQL string literal.

    Only for the constant texts of this package (comments, registry names): values are always bound.
    """
    return "'" + text.replace("'", "''") + "'"


def column_type(dialect: str, kind: str) -> str:
    """The SQL spelling of a logical type (``Column.kind``) in ``dialect``."""
    return _TYPES[_check_dialect(dialect)][kind]


def choice_columns() -> dict[str, tuple[str, ...]]:
    """The audit_results columns whose CHECK lists a registry's names, and those names (read now)."""
    return {"status": STATUSES, "method": methods(), "run_kind": STORED_RUN_KINDS, "trust": TRUST_STATES,
            "decision": DECISIONS}


def choice_check(column: str, values: tuple[str, ...]) -> tuple[str, str]:
    """(constraint name, expression) of the CHECK that ``column`` is one of ``values``."""
    return f"{CHOICE_TABLE}_{column}_check", f"{column} IN ({', '.join(sql_literal(v) for v in values)})"


def check_constraints(table: str) -> list[tuple[str, str]]:
    """(name, expression) of every CHECK of ``table`` in the latest schema, the registry lists read now."""
    choices = [choice_check(c, v) for c, v in choice_columns().items()] if table == CHOICE_TABLE else []
    return [*choices, *_FIXED_CHECKS[table]]


def create_table_sql(dialect: str, table: str, columns: tuple[Column, ...]) -> str:
    """CREATE TABLE IF NOT EXISTS for ``table`` with ``columns``, its primary key (the key columns ``columns`` has:
    an older version's table keys on fewer) and its CHECK constraints."""
    lines = [f"    {c.name} {column_type(dialect, c.kind)}{'' if c.nullable else ' NOT NULL'}" for c in columns]
    names = {c.name for c in columns}
    lines.append(f"    PRIMARY KEY ({', '.join(k for k in PRIMARY_KEYS[table] if k in names)})")
    if table in _FIXED_CHECKS:  # an older version's table has its own choice columns only
        choices = {choice_check(c, ())[0]: c for c in choice_columns()} if table == CHOICE_TABLE else {}
        lines += [f"    CONSTRAINT {name} CHECK ({expression})" for name, expression in check_constraints(table)
                  if choices.get(name, next(iter(names))) in names]
    return f"CREATE TABLE IF NOT EXISTS {table} (\n" + ",\n".join(lines) + "\n)"


def _comment_statements(table: str, comment: str, columns: tuple[Column, ...]) -> list[str]:
    return [f"COMMENT ON TABLE {table} IS {sql_literal(comment)}",
            *(f"COMMENT ON COLUMN {table}.{c.name} IS {sql_literal(c.comment)}" for c in columns)]


def version_table_statements(dialect: str) -> list[str]:
    """CREATE TABLE IF NOT EXISTS + COMMENT statements for the version table (``VERSION_TABLE``)."""
    return [create_table_sql(dialect, VERSION_TABLE, VERSION_COLUMNS),
            *_comment_statements(VERSION_TABLE, VERSION_TABLE_COMMENT, VERSION_COLUMNS)]


def table_statements(dialect: str, table: str) -> list[str]:
    """CREATE TABLE IF NOT EXISTS + COMMENT statements for one audit table (a migration that creates it)."""
    return [create_table_sql(dialect, table, TABLES[table]),
            *_comment_statements(table, TABLE_COMMENTS[table], TABLES[table])]


def ddl_statements(dialect: str) -> list[str]:
    """CREATE TABLE IF NOT EXISTS + COMMENT statements for the audit tables, then for the version table."""
    out = [create_table_sql(dialect, table, columns) for table, columns in TABLES.items()]
    for table, columns in TABLES.items():
        out += _comment_statements(table, TABLE_COMMENTS[table], columns)
    return out + version_table_statements(dialect)


def addable_columns(table: str, existing: set[str] | frozenset[str],
                    tables: dict[str, tuple[Column, ...]] | None = None) -> list[Column]:
    """The nullable columns of ``table`` that an existing table lacks: what may be added in place.

    tables: the expected tables (default: the latest schema, ``TABLES``).
    """
    return [c for c in (tables or TABLES)[table] if c.name not in existing and c.nullable]


def migration_statements(dialect: str, found: dict[str, list[str]],
                         tables: dict[str, tuple[Column, ...]] | None = None) -> list[str]:
    """ALTER TABLE ... ADD COLUMN IF NOT EXISTS (+ its COMMENT) for every nullable column a table lacks.

    Adding a nullable column keeps every existing row (the new column reads NULL there); the warehouse runs
    these in one transaction when it opens a table that lacks some (auditing.sinks.warehouse.migrations).
    tables: the expected tables (default: the latest schema, ``TABLES``); a table ``found`` lacks is skipped (no
    column is added to a table that does not exist).
    """
    out = []
    for table in tables or TABLES:
        if table not in found:
            continue
        for c in addable_columns(table, set(found.get(table) or ()), tables):
            out.append(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {c.name} {column_type(dialect, c.kind)}")
            out.append(f"COMMENT ON COLUMN {table}.{c.name} IS {sql_literal(c.comment)}")
    return out


def placeholders(style: str, count: int) -> list[str]:
    """``count`` bound-parameter marks: ``?`` (style "qmark", DuckDB) or ``%s`` (style "format", psycopg)."""
    if style == "qmark":
        return ["?"] * count
    if style == "format":
        return ["%s"] * count
    raise ValueError(f"placeholder style must be qmark or format; got {style!r}")


def insert_result_sql(style: str) -> str:
    """INSERT ... ON CONFLICT (key) DO NOTHING RETURNING model_id: a row is written once; the statement returns a
    row only when this one was written (on PostgreSQL a concurrent writer of the key waits for the first's commit
    and then writes nothing)."""
    cols = ", ".join(RESULT_NAMES)
    values = ", ".join(placeholders(style, len(RESULT_NAMES)))
    return (f"INSERT INTO audit_results ({cols}) VALUES ({values}) "
            f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO NOTHING RETURNING model_id")


def insert_run_sql(style: str) -> str:
    """INSERT of one run of a verdict; the same run recorded again (a retry, a spool drained twice) writes nothing."""
    values = ", ".join(placeholders(style, len(RUN_NAMES)))
    return (f"INSERT INTO audit_runs ({', '.join(RUN_NAMES)}) VALUES ({values}) "
            f"ON CONFLICT ({', '.join(PRIMARY_KEYS['audit_runs'])}) DO NOTHING")


def select_runs_sql(style: str) -> str:
    """The runs of one verdict, the first started first."""
    return (f"SELECT {', '.join(RUN_NAMES)} FROM audit_runs WHERE {_key_condition(style)} "
            "ORDER BY started_at NULLS LAST, finished_at NULLS LAST, run_id")


def _key_condition(style: str) -> str:
    p = placeholders(style, len(KEY_COLUMNS))
    return " AND ".join(f"{name} = {mark}" for name, mark in zip(KEY_COLUMNS, p, strict=True))


def delete_curve_sql(style: str) -> str:
    return f"DELETE FROM audit_curves WHERE {_key_condition(style)}"


def insert_curve_sql(style: str) -> str:
    values = ", ".join(placeholders(style, len(CURVE_NAMES)))
    return f"INSERT INTO audit_curves ({', '.join(CURVE_NAMES)}) VALUES ({values})"


def insert_curve_unnest_sql_duckdb() -> str:
    """One INSERT for a whole curve: the key as scalars, each other column as one bound list, zipped by
    ``unnest`` (DuckDB's executemany costs a few ms per row; this costs about the same for 1000 points)."""
    per_point = [c for c in CURVE_COLUMNS if c.name not in KEY_COLUMNS]
    lists = ", ".join(f"unnest(?::{column_type('duckdb', c.kind)}[])" for c in per_point)
    return f"INSERT INTO audit_curves ({', '.join(CURVE_NAMES)}) SELECT {', '.join('?' * len(KEY_COLUMNS))}, {lists}"


def select_curve_sql(style: str) -> str:
    return f"SELECT {', '.join(CURVE_NAMES)} FROM audit_curves WHERE {_key_condition(style)} ORDER BY point_index"


def delete_slices_sql(style: str) -> str:
    return f"DELETE FROM audit_slices WHERE {_key_condition(style)}"


def insert_slices_sql(style: str) -> str:
    values = ", ".join(placeholders(style, len(SLICE_NAMES)))
    return f"INSERT INTO audit_slices ({', '.join(SLICE_NAMES)}) VALUES ({values})"


def insert_slices_unnest_sql_duckdb() -> str:
    """One INSERT for a verdict's slices, as ``insert_curve_unnest_sql_duckdb`` does for a curve."""
    per_slice = [c for c in SLICE_COLUMNS if c.name not in KEY_COLUMNS]
    lists = ", ".join(f"unnest(?::{column_type('duckdb', c.kind)}[])" for c in per_slice)
    return f"INSERT INTO audit_slices ({', '.join(SLICE_NAMES)}) SELECT {', '.join('?' * len(KEY_COLUMNS))}, {lists}"


def select_slices_sql(style: str, keys: int) -> str:
    """The slices of ``keys`` verdicts (each key's columns bound in ``KEY_COLUMNS`` order), the largest bound
    first."""
    where = " OR ".join(f"({_key_condition(style)})" for _ in range(keys))
    return (f"SELECT {', '.join(SLICE_NAMES)} FROM audit_slices WHERE {where} "
            "ORDER BY epsilon_lower_bound DESC, slicing, slice_name")


def select_results_sql(style: str, *, by_model: bool, since: bool, until: bool) -> str:
    """SELECT of audit_results with optional filters; only constant fragments are joined here."""
    mark = placeholders(style, 1)[0]
    conditions = []
    if by_model:
        conditions.append(f"model_id = {mark}")
    if since:
        conditions.append(f"partition_date >= {mark}")
    if until:
        conditions.append(f"partition_date <= {mark}")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return (f"SELECT {', '.join(RESULT_NAMES)} FROM audit_results{where} "
            "ORDER BY partition_date, model_id, run_kind, claimed_epsilon, audit_config_hash, model_fingerprint, "
            "inputs_fingerprint")
