"""Versioned warehouse migrations: the ordered steps that take a warehouse written by an older version of this
code to the tables of ``auditing.sinks.warehouse.schema`` (the latest version), run when a warehouse is opened.

A warehouse records its version in ``audit_schema_version``: one row per step applied, with the time; the
highest is its version. ``upgrade`` (called by both backends when they open a warehouse):

1. creates a new warehouse at the latest version (``creation_statements``, also ``infra/warehouse/*.sql``);
2. makes a warehouse from before versioning (audit tables present, no version table) version 1: the tables
   as that code left them, after adding the nullable columns an even older table lacks (as that code did);
3. refuses a version newer than ``LATEST``: this code would misread its tables;
4. runs each pending ``Migration`` in its own transaction, which also records it;
5. then, at every open: adds the nullable columns of the latest schema that a table lacks (a table edited by
   hand), and widens the CHECK constraints on ``status`` / ``method`` when a registry lists a name they do
   not allow yet (``sync_choice_checks``: on DuckDB, which cannot ALTER a CHECK, by rebuilding the table).

Adding a column or changing a constraint is one new ``Migration`` at the end of ``MIGRATIONS``
(docs/warehouse.md). Every step runs in one transaction (on PostgreSQL under an advisory lock, so concurrent
openers apply it once); DuckDB's file lock already admits one process at a time.

No migration tool is used: alembic keeps only the current revision (not one row per step with its time) and
reaches DuckDB only through the duckdb_engine SQLAlchemy dialect, which the pinned environment lacks and whose
last release predates DuckDB 2.0, while yoyo-migrations has no DuckDB backend at all. The runner below is
small and works on the backends' own connections, locks and transactions.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auditing.sinks.warehouse import schema
from auditing.sinks.warehouse.schema import Column
from labeldp.errors import LabelDPInputError, mention

log = logging.getLogger("labeldp.warehouse")

RESULTS = "audit_results"
CURVES = "audit_curves"
SLICES = "audit_slices"
_REBUILD_SUFFIX = "__rebuild"
# The key of audit_results and audit_curves up to version 3 (what the migrations before version 4 work with).
V3_KEY = ("model_id", "partition_date", "audit_config_hash")
# The key of every audit table from version 4 to 8 (version 9 adds inputs_fingerprint).
V8_KEY = ("model_id", "model_fingerprint", "partition_date", "run_kind", "claimed_epsilon", "audit_config_hash")
_V8_PRIMARY_KEYS = {"audit_results": V8_KEY, "audit_curves": (*V8_KEY, "point_index"),
                    "audit_slices": (*V8_KEY, "slicing", "slice_name")}


# ------------------------------------------------------------------------------------------------ sessions
@dataclass(frozen=True)
class SchemaSession:
    """How ``upgrade`` reaches one warehouse: the backend's connection, transactions and names for messages.

    read(fn): ``fn(cursor)`` outside an explicit transaction, its result returned. transaction(fn): ``fn(cursor)``
    inside ONE transaction (on PostgreSQL holding the schema advisory lock). where: the target for messages
    (no password); location: appended to "the audit tables do not exist" (e.g. " in schema public").
    """

    dialect: str
    placeholder: str
    where: str
    read: Callable[[Callable[[Any], Any]], Any]
    transaction: Callable[[Callable[[Any], Any]], Any]
    location: str = ""


@dataclass(frozen=True)
class Context:
    """What a migration's ``apply`` works with: a cursor inside the migration's transaction."""

    cursor: Any
    dialect: str
    placeholder: str
    where: str

    def execute(self, sql: str, params: Sequence | None = None) -> None:
        # psycopg reads % in SQL as a placeholder only when parameters are passed (comments hold "95%").
        if params is None:
            self.cursor.execute(sql)
        else:
            self.cursor.execute(sql, list(params))

    def fetch(self, sql: str, params: Sequence | None = None) -> list[tuple]:
        self.execute(sql, params)
        return self.cursor.fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence]) -> None:
        if rows:
            self.cursor.executemany(sql, [list(r) for r in rows])

    def marks(self, count: int) -> str:
        return ", ".join(schema.placeholders(self.placeholder, count))


# ------------------------------------------------------------------------------------------------ catalog
_COLUMNS_SQL = (
    "SELECT table_name, column_name, is_nullable FROM information_schema.columns "
    "WHERE table_schema = current_schema() AND table_catalog = current_database() "
    f"AND table_name IN ({', '.join(map(schema.sql_literal, (*schema.TABLES, schema.VERSION_TABLE)))}) "
    "ORDER BY table_name, ordinal_position"
)
# (name, definition) of a table's constraints of one type: CHECK ('c') or PRIMARY KEY ('p'); the table name and
# the type are bound parameters.
_CONSTRAINTS_SQL = {
    "duckdb": ("SELECT constraint_name, expression FROM duckdb_constraints() WHERE database_name = current_database() "
               "AND schema_name = current_schema() AND table_name = ? AND constraint_type = ?"),
    "postgres": ("SELECT con.conname, pg_get_constraintdef(con.oid) FROM pg_constraint con "
                 "JOIN pg_class rel ON rel.oid = con.conrelid JOIN pg_namespace nsp ON nsp.oid = rel.relnamespace "
                 "WHERE nsp.nspname = current_schema() AND rel.relname = %s AND con.contype = %s"),
}
_CONSTRAINT_TYPES = {"duckdb": {"check": "CHECK", "primary": "PRIMARY KEY"}, "postgres": {"check": "c", "primary": "p"}}


def constraints(ctx: Context, table: str, kind: str) -> list[tuple[str, str | None]]:
    """(name, definition) of ``table``'s constraints of ``kind`` ("check" or "primary")."""
    return [tuple(r) for r in ctx.fetch(_CONSTRAINTS_SQL[ctx.dialect], [table, _CONSTRAINT_TYPES[ctx.dialect][kind]])]


def found_columns(ctx: Context) -> dict[str, dict[str, bool]]:
    """table -> {column: nullable} for the audit tables and the version table that exist."""
    found: dict[str, dict[str, bool]] = {}
    for table, column, is_nullable in ctx.fetch(_COLUMNS_SQL):
        found.setdefault(table, {})[column] = str(is_nullable).upper() == "YES"
    return found


def recorded_version(ctx: Context, found: Mapping[str, Any]) -> int | None:
    """The warehouse's version (the highest recorded), None when it records none."""
    if schema.VERSION_TABLE not in found:
        return None
    (version,), = ctx.fetch(f"SELECT MAX(version) FROM {schema.VERSION_TABLE}")
    return None if version is None else int(version)


def _record(ctx: Context, version: int, description: str) -> None:
    ctx.execute(f"INSERT INTO {schema.VERSION_TABLE} (version, description, applied_at) VALUES ({ctx.marks(3)})",
                [version, description, dt.datetime.now(dt.UTC)])


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


# ------------------------------------------------------------------------------------------------ shapes
def check_shape(found: Mapping[str, Mapping[str, bool]], expected: Mapping[str, tuple[Column, ...]],
                where: str) -> str:
    """'ok' when the audit tables have the expected columns, 'missing' when none exists, 'migrate' when they
    exist and lack only nullable columns (``schema.migration_statements`` adds them).

    ``found``: table -> {column: nullable}. Extra NULLABLE columns are accepted (added by hand, say for an
    analysis): every statement here names its columns, so they read NULL in rows this version writes.
    Anything else (one table, an extra NOT NULL column, a missing required column) raises: writing into a
    table of another shape would silently drop or misplace data.

    Raises:
        LabelDPInputError: the tables have another shape, naming the table and the columns expected.
    """
    if not any(table in found for table in schema.TABLES):
        return "missing"
    state = "ok"
    for table, columns in expected.items():
        names = {c.name for c in columns}
        present = found.get(table) or {}
        newer = {name for name, nullable in present.items() if name not in names and nullable}
        have = set(present) - newer
        addable = {c.name for c in schema.addable_columns(table, have, dict(expected))}
        if have == names:
            continue
        if have and have < names and names - have == addable:
            state = "migrate"
            continue
        raise LabelDPInputError(
            f"warehouse {where}: table {table} has columns {list(present)}; expected {[c.name for c in columns]} "
            f"(only nullable columns are added automatically; migrate by hand or point {mention('warehouse')} "
            "elsewhere)", field="warehouse"
        )
    return state


def add_missing_columns(ctx: Context, expected: dict[str, tuple[Column, ...]]) -> None:
    """ADD COLUMN (+ comment) for each nullable column of ``expected`` (e.g. ``expected_tables(v)``) a table
    lacks; raises like ``check_shape`` when the tables have another shape."""
    found = found_columns(ctx)
    if check_shape(found, expected, ctx.where) == "migrate":
        for statement in schema.migration_statements(ctx.dialect, found, expected):
            ctx.execute(statement)


# ------------------------------------------------------------------------------------------------ CHECKs
def _literals(definition: str) -> list[str]:
    return [text.replace("''", "'") for text in re.findall(r"'((?:[^']|'')*)'", definition)]


def _mentions(definition: str, column: str) -> bool:
    return re.search(rf"\b{re.escape(column)}\b", definition) is not None


def _choice_columns_present(ctx: Context) -> dict[str, tuple[str, ...]]:
    """`schema.choice_columns` for the columns audit_results has (an older version lacks some)."""
    present = found_columns(ctx).get(RESULTS, {})
    return {column: names for column, names in schema.choice_columns().items() if column in present}


def choice_checks(ctx: Context) -> dict[str, list[tuple[str, list[str]]]]:
    """column -> [(constraint name, the names it allows)] for the CHECKs of audit_results on each choice column
    the table has."""
    found = constraints(ctx, RESULTS, "check")
    return {column: [(name, _literals(definition)) for name, definition in found if _mentions(definition, column)]
            for column in _choice_columns_present(ctx)}


def choice_checks_in_line(ctx: Context) -> bool:
    """True when each choice column has one CHECK and it allows every name its registry lists."""
    registry = schema.choice_columns()
    for column, checks in choice_checks(ctx).items():
        if len(checks) != 1 or not set(registry[column]) <= set(checks[0][1]):
            return False
    return True


def sync_choice_checks(ctx: Context, *, narrow: bool = False, columns: Sequence[str] | None = None) -> None:
    """Replaces the CHECKs on the choice columns (status, method, run_kind) by ones generated from the
    registries' lists.

    By default a name the old CHECK allowed and the registry no longer lists stays allowed (after the
    registry's names): rows written with it stay valid, and a process that lacks an optional method does not
    undo another's. narrow=True allows exactly the registry's names (a migration that retires a name).
    columns: only these choice columns (a migration written before a later one existed names its own); the
    other CHECKs stay as they are. PostgreSQL drops and adds the constraints; DuckDB cannot ALTER a CHECK, so
    the table is rebuilt.

    Raises:
        LabelDPInputError: narrow=True and rows hold a name the registry no longer lists (naming them).
    """
    old = choice_checks(ctx)
    registry = {column: names for column, names in _choice_columns_present(ctx).items()
                if columns is None or column in columns}
    allowed = {}
    for column, names in registry.items():
        kept = [] if narrow else [n for _, values in old[column] for n in values if n not in names]
        allowed[column] = (*names, *dict.fromkeys(kept))
        marks = ctx.marks(len(allowed[column]))
        rows = ctx.fetch(f"SELECT DISTINCT {column} FROM {RESULTS} WHERE {column} NOT IN ({marks})",
                         list(allowed[column]))
        if rows:
            raise LabelDPInputError(
                f"warehouse {ctx.where}: {RESULTS} has rows with {column} {sorted(r[0] for r in rows)}, which the "
                f"registry no longer lists ({list(allowed[column])}); the CHECK on {column} cannot be narrowed")
    checks = [schema.choice_check(column, names) for column, names in allowed.items()]
    replaced = {name for column in allowed for name, _ in old[column]}
    if ctx.dialect == "postgres":
        for name in sorted(replaced):
            ctx.execute(f"ALTER TABLE {RESULTS} DROP CONSTRAINT {_quote(name)}")
        for name, expression in checks:
            ctx.execute(f"ALTER TABLE {RESULTS} ADD CONSTRAINT {name} CHECK ({expression})")
        return
    others = [(name, expression) for name, expression in constraints(ctx, RESULTS, "check") if name not in replaced]
    rebuild_duckdb_table(ctx, RESULTS, checks=[*checks, *others])


def rebuild_duckdb_table(ctx: Context, table: str, *, checks: Sequence[tuple[str, str]],
                         primary_key: Sequence[str] | None = None, not_null: Sequence[str] = ()) -> None:
    """Recreates ``table`` with the same columns (types, NOT NULL, defaults, comments), its primary key and
    ``checks``, and copies every row: create new, copy, drop old, rename (inside the caller's transaction).

    primary_key: the new table's primary key (default: the one it has); not_null: columns that become NOT NULL
    (their rows must hold values). DuckDB cannot add or drop a CHECK or a primary key with ALTER TABLE. The
    audit tables have no foreign keys and no indexes besides their primary keys, which the new table declares
    again.
    """
    filters = "database_name = current_database() AND schema_name = current_schema() AND table_name = ?"
    columns = ctx.fetch("SELECT column_name, data_type, is_nullable, column_default, comment FROM duckdb_columns() "
                        f"WHERE {filters} ORDER BY column_index", [table])
    (table_comment,), = ctx.fetch(f"SELECT comment FROM duckdb_tables() WHERE {filters}", [table])
    if primary_key is None:
        (primary_key,), = ctx.fetch("SELECT constraint_column_names FROM duckdb_constraints() WHERE "
                                    f"{filters} AND constraint_type = 'PRIMARY KEY'", [table])
    new = table + _REBUILD_SUFFIX
    lines = [f"    {_quote(name)} {data_type}{'' if nullable and name not in not_null else ' NOT NULL'}"
             f"{'' if default is None else f' DEFAULT {default}'}"
             for name, data_type, nullable, default, _ in columns]
    lines.append(f"    PRIMARY KEY ({', '.join(primary_key)})")
    lines += [f"    CONSTRAINT {name} CHECK ({expression})" for name, expression in checks]
    names = ", ".join(_quote(c[0]) for c in columns)
    ctx.execute(f"CREATE TABLE {new} (\n" + ",\n".join(lines) + "\n)")
    ctx.execute(f"INSERT INTO {new} ({names}) SELECT {names} FROM {table}")
    ctx.execute(f"DROP TABLE {table}")
    ctx.execute(f"ALTER TABLE {new} RENAME TO {table}")
    if table_comment:
        ctx.execute(f"COMMENT ON TABLE {table} IS {schema.sql_literal(table_comment)}")
    for name, *_, comment in columns:
        if comment:
            ctx.execute(f"COMMENT ON COLUMN {table}.{_quote(name)} IS {schema.sql_literal(comment)}")


# ------------------------------------------------------------------------------------------------ the steps
@dataclass(frozen=True)
class Migration:
    """One step: ``apply(ctx)`` takes a warehouse from ``version - 1`` to ``version`` inside one transaction.

    adds: names of the audit_results columns it adds (defined in ``schema``); retires: the audit_results
    columns it drops, as they were defined; reshapes: the audit_results columns whose definition it changes,
    as they were defined before; curve_adds / slice_adds: names of the audit_curves / audit_slices columns it
    adds; creates: the tables it creates (as ``schema.TABLES`` defines them). They let ``expected_tables`` tell the
    tables of any version.
    """

    version: int
    description: str
    apply: Callable[[Context], None]
    adds: tuple[str, ...] = ()
    retires: tuple[Column, ...] = ()
    reshapes: tuple[Column, ...] = ()
    curve_adds: tuple[str, ...] = ()
    creates: tuple[str, ...] = ()
    slice_adds: tuple[str, ...] = ()


def _baseline(ctx: Context) -> None:
    # Only for a warehouse from before versioning: what that code did on open (add the nullable columns an
    # older table lacks); the version table itself is created by the runner.
    add_missing_columns(ctx, expected_tables(1))


def _generated_choice_checks(ctx: Context) -> None:
    sync_choice_checks(ctx, columns=("status", "method"))


LEGACY_NOTE_PREFIX = "legacy "


def legacy_note(tau: float | None, breaking_tau: float | None) -> str | None:
    """'legacy tau=0.05, breaking_tau=0.02' for the non-null non-zero figures (exact float text), else None."""
    parts = [f"{name}={float(value)!r}" for name, value in (("tau", tau), ("breaking_tau", breaking_tau))
             if value is not None and float(value) != 0.0]
    return LEGACY_NOTE_PREFIX + ", ".join(parts) if parts else None


def _retire_tau(ctx: Context) -> None:
    present = found_columns(ctx).get(RESULTS, {})
    legacy = [name for name in ("tau", "breaking_tau") if name in present]
    if not legacy:
        return
    keys = ", ".join(V3_KEY)
    figures = ", ".join(name if name in legacy else "NULL" for name in ("tau", "breaking_tau"))
    nonzero = " OR ".join(f"({name} IS NOT NULL AND {name} <> 0)" for name in legacy)
    rows = ctx.fetch(f"SELECT {keys}, {figures}, reference_check_note FROM {RESULTS} WHERE {nonzero}")
    marks = schema.placeholders(ctx.placeholder, len(V3_KEY))
    where_key = " AND ".join(f"{k} = {m}" for k, m in zip(V3_KEY, marks, strict=True))
    updates = []
    for *key, tau, breaking_tau, note in rows:
        text = legacy_note(tau, breaking_tau)
        updates.append([text if not note else f"{note}; {text}", *key])
    ctx.executemany(f"UPDATE {RESULTS} SET reference_check_note = {ctx.marks(1)} WHERE {where_key}", updates)
    for name in legacy:
        ctx.execute(f"ALTER TABLE {RESULTS} DROP COLUMN {name}")


RETIRED_TAU = (
    Column("tau", "double", False,
           "legacy: the total-variation tau of rows written before kappa (a TV bound, not the likelihood-ratio bound "
           "the binomial bound needs on rare labels); rows written since store 0 and state kappa instead"),
    Column("breaking_tau", "double", True,
           "legacy: the breaking total-variation tau of rows written before kappa; NULL on rows written since "
           "(see breaking_kappa)"),
)

def _column(table: str, name: str) -> Column:
    return next(c for c in schema.TABLES[table] if c.name == name)


# The key columns version 4 adds to audit_curves, filled from the audit's result row.
_CURVE_KEY_ADDS = ("model_fingerprint", "run_kind", "claimed_epsilon")
MODEL_FINGERPRINT_V3 = Column("model_fingerprint", "text", True, "content hash of the audited model")


def _rekey(ctx: Context, table: str, key: Sequence[str], not_null: Sequence[str]) -> None:
    """Makes ``not_null`` columns NOT NULL (their rows hold values) and ``key`` the primary key of ``table``:
    PostgreSQL alters the table, DuckDB (which cannot) rebuilds it keeping its CHECKs."""
    if ctx.dialect == "postgres":
        for name in not_null:
            ctx.execute(f"ALTER TABLE {table} ALTER COLUMN {name} SET NOT NULL")
        for name, _ in constraints(ctx, table, "primary"):
            ctx.execute(f"ALTER TABLE {table} DROP CONSTRAINT {_quote(name)}")
        ctx.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({', '.join(key)})")
    else:
        rebuild_duckdb_table(ctx, table, checks=constraints(ctx, table, "check"), primary_key=key, not_null=not_null)


def _verdict_key(ctx: Context) -> None:
    """Version 4: every verdict its own row. The key becomes (model_id, model_fingerprint, partition_date,
    run_kind, claimed_epsilon, audit_config_hash) on both tables; a row from before records no run kind and may
    lack a fingerprint: both read UNRECORDED. The status CHECK admits WEAK_PASS, run_kind gets its CHECK."""
    orphans = ctx.fetch(f"SELECT DISTINCT c.model_id, c.partition_date, c.audit_config_hash FROM {CURVES} c "
                        f"WHERE NOT EXISTS (SELECT 1 FROM {RESULTS} r WHERE "
                        + " AND ".join(f"r.{k} = c.{k}" for k in V3_KEY) + ")")
    if orphans:
        raise LabelDPInputError(
            f"warehouse {ctx.where}: {CURVES} holds points of {len(orphans)} audit(s) without a row in {RESULTS} "
            f"(e.g. {tuple(str(v) for v in orphans[0])}); their key cannot be completed: delete those points or "
            "restore their rows, then open the warehouse again")
    run_kind = _column(RESULTS, "run_kind")
    ctx.execute(f"ALTER TABLE {RESULTS} ADD COLUMN run_kind {schema.column_type(ctx.dialect, run_kind.kind)}")
    ctx.execute(f"UPDATE {RESULTS} SET run_kind = {ctx.marks(1)}", [schema.UNRECORDED])
    ctx.execute(f"UPDATE {RESULTS} SET model_fingerprint = {ctx.marks(1)} WHERE model_fingerprint IS NULL",
                [schema.UNRECORDED])
    for name in _CURVE_KEY_ADDS:
        ctx.execute(f"ALTER TABLE {CURVES} ADD COLUMN {name} "
                    f"{schema.column_type(ctx.dialect, _column(CURVES, name).kind)}")
    matches = " AND ".join(f"{CURVES}.{k} = r.{k}" for k in V3_KEY)
    ctx.execute(f"UPDATE {CURVES} SET " + ", ".join(f"{name} = r.{name}" for name in _CURVE_KEY_ADDS)
                + f" FROM {RESULTS} AS r WHERE {matches}")
    for table in (RESULTS, CURVES):
        added = ("run_kind",) if table == RESULTS else _CURVE_KEY_ADDS
        _rekey(ctx, table, _V8_PRIMARY_KEYS[table], ("model_fingerprint", "run_kind", "claimed_epsilon"))
        for name in added:
            ctx.execute(f"COMMENT ON COLUMN {table}.{name} IS {schema.sql_literal(_column(table, name).comment)}")
        ctx.execute(f"COMMENT ON TABLE {table} IS {schema.sql_literal(schema.TABLE_COMMENTS[table])}")
    for name in ("model_fingerprint", "claimed_epsilon", "status"):
        ctx.execute(f"COMMENT ON COLUMN {RESULTS}.{name} IS {schema.sql_literal(_column(RESULTS, name).comment)}")
    sync_choice_checks(ctx, columns=("status", "run_kind"))


# The audit_results columns versions 5, 6, 7 and 10 added, as they added them: a migration's columns are its own,
# never the latest schema's blocks (a figure declared later on the same record is the next migration's).
V5_TRUST = ("trust", "trust_reason", "detectability", "epsilon_check", "misfit_kappa_upper", "check_misfit_kappa",
            "check_rows", "accepted_unchecked", "group_rule", "rows_excluded_groups", "group_pairs",
            "group_label_agreement", "group_label_agreement_expected", "inconclusive_reason")
V6_ATTACK = tuple(f"attack_{name}{suffix}" for name in ("tpr_at_fpr_0_001", "tpr_at_fpr_0_01", "auroc")
                  for suffix in ("", "_lower", "_upper"))
V7_FAMILY = ("family_e_value", "family_evidence", "family_flagged")
V10_DECISIONS = ("decision", "decision_reason", "decision_next_step", "confirm_check_rows", "confirm_nights",
                 "check_e_value", "check_rule", "check_strata", "check_matched_guesses", "check_unmatched_audited",
                 "split_rule", "split_refused", "family_check_evidence", "family_confirmed")


def _trust_per_verdict(ctx: Context) -> None:
    """Version 5: the verdict's trust, the capacity check's figures and the row groups, as nullable columns
    (NULL on every row written before them), and a CHECK on trust's values."""
    present = found_columns(ctx).get(RESULTS, {})
    for name in V5_TRUST:
        if name in present:
            continue
        column = _column(RESULTS, name)
        ctx.execute(f"ALTER TABLE {RESULTS} ADD COLUMN {name} {schema.column_type(ctx.dialect, column.kind)}")
        ctx.execute(f"COMMENT ON COLUMN {RESULTS}.{name} IS {schema.sql_literal(column.comment)}")
    ctx.execute(f"COMMENT ON COLUMN {RESULTS}.untrusted_reason IS "
                f"{schema.sql_literal(_column(RESULTS, 'untrusted_reason').comment)}")
    sync_choice_checks(ctx, columns=("trust",))


def _add_nullable_results_columns(ctx: Context, names: tuple[str, ...]) -> None:
    """Adds the audit_results columns ``names`` that the table lacks, with their comments (NULL on every row
    written before them)."""
    present = found_columns(ctx).get(RESULTS, {})
    for name in names:
        if name in present:
            continue
        column = _column(RESULTS, name)
        ctx.execute(f"ALTER TABLE {RESULTS} ADD COLUMN {name} {schema.column_type(ctx.dialect, column.kind)}")
        ctx.execute(f"COMMENT ON COLUMN {RESULTS}.{name} IS {schema.sql_literal(column.comment)}")


def _attack_curve(ctx: Context) -> None:
    """Version 6: the attack curve's figures (TPR at FPR <= 0.1% and 1%, AUROC, each with its bootstrap interval)."""
    _add_nullable_results_columns(ctx, V6_ATTACK)


def _family_evidence(ctx: Context) -> None:
    """Version 7: the model family's evidence across nights (this night's e-value, the running evidence, the flag)."""
    _add_nullable_results_columns(ctx, V7_FAMILY)


def _slices_table(ctx: Context) -> None:
    """Version 8: the table of valid bounds per declared slice (empty; the other tables are not touched), as
    version 8 defined it (keyed as audit_results then: `V8_KEY`)."""
    columns = expected_tables(8)[SLICES]
    ctx.execute(schema.create_table_sql(ctx.dialect, SLICES, columns))
    ctx.execute(f"COMMENT ON TABLE {SLICES} IS {schema.sql_literal(schema.TABLE_COMMENTS[SLICES])}")
    for column in columns:
        ctx.execute(f"COMMENT ON COLUMN {SLICES}.{column.name} IS {schema.sql_literal(column.comment)}")


RUNS = "audit_runs"
# The columns version 9 adds to audit_results besides the key's inputs_fingerprint (run_id is NOT NULL, filled in).
_V9_LINEAGE = ("training_rows_fingerprint", "reference_fingerprint", "correction_fingerprint", "scoring_key",
               "night_fingerprint")


def _inputs_key(ctx: Context) -> None:
    """Version 9: every run its id, every verdict keyed by its inputs. Adds inputs_fingerprint to the key of the
    three audit tables ('unrecorded' on existing rows), run_id to audit_results (the row's flow_run_id, else
    'unrecorded'), the nullable input fingerprints (training rows, reference, correction, stored game's key, the
    night's controls and acceptance), and
    creates audit_runs with one run per existing row. No row changes its values (DuckDB rebuilds the tables to
    change their primary keys)."""
    _add_nullable_results_columns(ctx, _V9_LINEAGE)
    text = schema.column_type(ctx.dialect, "text")
    ctx.execute(f"ALTER TABLE {RESULTS} ADD COLUMN run_id {text}")
    ctx.execute(f"UPDATE {RESULTS} SET run_id = COALESCE(flow_run_id, {ctx.marks(1)})", [schema.UNRECORDED])
    for table in (RESULTS, CURVES, SLICES):
        ctx.execute(f"ALTER TABLE {table} ADD COLUMN inputs_fingerprint {text}")
        ctx.execute(f"UPDATE {table} SET inputs_fingerprint = {ctx.marks(1)}", [schema.UNRECORDED])
        not_null = ("inputs_fingerprint", "run_id") if table == RESULTS else ("inputs_fingerprint",)
        _rekey(ctx, table, schema.PRIMARY_KEYS[table], not_null)
        for name in not_null:
            ctx.execute(f"COMMENT ON COLUMN {table}.{name} IS {schema.sql_literal(_column(table, name).comment)}")
        ctx.execute(f"COMMENT ON TABLE {table} IS {schema.sql_literal(schema.TABLE_COMMENTS[table])}")
    ctx.execute(f"COMMENT ON COLUMN {RESULTS}.partition_fingerprint IS "
                f"{schema.sql_literal(_column(RESULTS, 'partition_fingerprint').comment)}")
    for statement in schema.table_statements(ctx.dialect, RUNS):
        ctx.execute(statement)
    names = ", ".join(schema.RUN_NAMES)
    ctx.execute(f"INSERT INTO {RUNS} ({names}) SELECT {names} FROM {RESULTS}")


def _decisions(ctx: Context) -> None:
    """Version 10: one decision per target, the stratified capacity check's matched comparison, the split test and
    the family's kappa-free evidence, as nullable columns (NULL on every row written before them; the reader
    derives such a row's decision from its status and trust), and a CHECK on decision's values."""
    _add_nullable_results_columns(ctx, V10_DECISIONS)
    sync_choice_checks(ctx, columns=("decision",))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "baseline: the tables as created before versioning (nullable columns an older table lacked "
                 "added)", _baseline),
    Migration(2, "CHECK constraints on status and method generated from the registries (auditing.verdict.types."
                 "STATUSES, auditing.bounds.lower_bound.METHODS), not typed literals; DuckDB rebuilds audit_results",
              _generated_choice_checks),
    Migration(3, "retire the legacy columns tau and breaking_tau of audit_results (superseded by kappa / "
                 "breaking_kappa); a non-zero value is appended to the row's reference_check_note as "
                 "'legacy tau=..., breaking_tau=...'", _retire_tau, retires=RETIRED_TAU),
    Migration(4, "every verdict its own row: the key of audit_results and audit_curves becomes (model_id, "
                 "model_fingerprint, partition_date, run_kind, claimed_epsilon, audit_config_hash); run_kind "
                 "(nightly | guardrail | backfill) added, 'unrecorded' on existing rows, as is a missing "
                 "model_fingerprint; the status CHECK admits WEAK_PASS; DuckDB rebuilds both tables",
              _verdict_key, adds=("run_kind",), reshapes=(MODEL_FINGERPRINT_V3,), curve_adds=_CURVE_KEY_ADDS),
    Migration(5, "trust per verdict: trust (CHECK), trust_reason, detectability, the capacity check's "
                 "epsilon_check, misfit_kappa_upper, check_misfit_kappa and check_rows, accepted_unchecked, the row "
                 "groups (group_rule, rows_excluded_groups, group_pairs, group_label_agreement[_expected]) and "
                 "inconclusive_reason; NULL on existing rows", _trust_per_verdict, adds=V5_TRUST),
    Migration(6, "the attack curve (descriptive, not a bound on epsilon): attack_tpr_at_fpr_0_001, "
                 "attack_tpr_at_fpr_0_01 and attack_auroc, each with its bootstrap interval (_lower, _upper); NULL "
                 "on existing rows", _attack_curve, adds=V6_ATTACK),
    Migration(7, "the model family's evidence across nights (anytime-valid): family_e_value, family_evidence and "
                 "family_flagged; NULL on existing rows", _family_evidence, adds=V7_FAMILY),
    Migration(8, "valid bounds per declared slice: the table audit_slices, one row per slice of a verdict (its "
                 "audit_results key, slicing, slice_name; the slices' budget and declared count, the slice's "
                 "confidence, rows, check_rows, epsilon_lower_bound, max_certifiable_epsilon, status, trust, "
                 "trust_reason, note); existing rows unchanged", _slices_table, creates=(SLICES,)),
    Migration(9, "every run its id, every verdict keyed by its inputs: inputs_fingerprint joins the key of "
                 "audit_results, audit_curves and audit_slices ('unrecorded' on existing rows); audit_results gets "
                 "run_id (the row's flow_run_id, else 'unrecorded'), training_rows_fingerprint, "
                 "reference_fingerprint, correction_fingerprint, scoring_key and night_fingerprint (NULL on existing "
                 "rows); the table "
                 "audit_runs, one row per run of a verdict, starts with each existing row's run; a row is written "
                 "once from here on; DuckDB rebuilds the three tables",
              _inputs_key, adds=("inputs_fingerprint", "run_id", *_V9_LINEAGE), curve_adds=("inputs_fingerprint",),
              slice_adds=("inputs_fingerprint",), creates=(RUNS,)),
    Migration(10, "one decision per target (decision, its reason and next step, what would confirm an unconfirmed "
                  "leak), the stratified capacity check's matched comparison (check_rule, check_strata, "
                  "check_matched_guesses, check_unmatched_audited, check_e_value), the split test (split_rule, "
                  "split_refused) and the family's kappa-free evidence (family_check_evidence, family_confirmed); "
                  "NULL on existing rows, whose decision the reader derives from their status and trust",
              _decisions, adds=V10_DECISIONS),
)
LATEST = MIGRATIONS[-1].version


def expected_tables(version: int) -> dict[str, tuple[Column, ...]]:
    """The audit tables' columns at ``version`` (1..LATEST): the latest schema with later steps undone (a table a
    later step creates is absent)."""
    tables = {table: list(columns) for table, columns in schema.TABLES.items()}
    for migration in reversed(MIGRATIONS):
        if migration.version <= version:
            break
        for table in migration.creates:
            tables.pop(table, None)
        before = {c.name: c for c in migration.reshapes}
        tables[RESULTS] = ([before.get(c.name, c) for c in tables[RESULTS] if c.name not in migration.adds]
                           + list(migration.retires))
        tables[CURVES] = [c for c in tables[CURVES] if c.name not in migration.curve_adds]
        if SLICES in tables:
            tables[SLICES] = [c for c in tables[SLICES] if c.name not in migration.slice_adds]
    return {table: tuple(columns) for table, columns in tables.items()}


def creation_statements(dialect: str) -> list[str]:
    """The statements that create a new warehouse: the latest tables and the row recording their version."""
    created = f"created at schema version {LATEST}"
    return [*schema.ddl_statements(dialect),
            f"INSERT INTO {schema.VERSION_TABLE} (version, description, applied_at) "
            f"VALUES ({LATEST}, {schema.sql_literal(created)}, CURRENT_TIMESTAMP)"]


def ddl_text(dialect: str) -> str:
    """The DDL of a new warehouse as one script (the content of infra/warehouse/<dialect>.sql): the tables,
    their comments and the row recording the schema version they are."""
    header = (
        f"-- labeldp-audit warehouse tables ({dialect}). Generated by "
        f"`python -m auditing.sinks.warehouse {dialect}`;\n"
        "-- the warehouse code applies the same statements when it creates a warehouse.\n\n"
    )
    return header + ";\n\n".join(creation_statements(dialect)) + ";\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m auditing.sinks.warehouse duckdb|postgres``: prints ``ddl_text``; 2 on a bad argument."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in schema.DIALECTS:
        print(f"usage: python -m auditing.sinks.warehouse {{{'|'.join(schema.DIALECTS)}}}", file=sys.stderr)
        return 2
    sys.stdout.write(ddl_text(argv[0]))
    return 0


# ------------------------------------------------------------------------------------------------ the runner
def _state(ctx: Context) -> tuple[dict[str, dict[str, bool]], int | None]:
    found = found_columns(ctx)
    return found, recorded_version(ctx, found)


def upgrade(session: SchemaSession, *, create: bool) -> int:
    """Brings the warehouse behind ``session`` to ``LATEST`` (see the module docstring); returns LATEST.

    Raises:
        LabelDPInputError: the audit tables are missing and create is False; the recorded version is newer
            than this code knows; the tables have a shape no migration accounts for.
    """
    def context(cursor) -> Context:
        return Context(cursor, session.dialect, session.placeholder, session.where)

    def read(fn):
        return session.read(lambda cursor: fn(context(cursor)))

    def step(fn) -> None:
        session.transaction(lambda cursor: fn(context(cursor)))

    found, version = read(_state)
    if version is None and not any(table in found for table in schema.TABLES):
        if not create:
            raise LabelDPInputError(f"warehouse {session.where}: the audit tables do not exist{session.location}")
        step(_create)
        found, version = read(_state)
    if version is None:  # tables written before versioning (also: created meanwhile by such code)
        step(_adopt)
        found, version = read(_state)
    if version > LATEST:
        raise LabelDPInputError(
            f"warehouse {session.where}: its schema version {version} is newer than this code knows (it migrates "
            f"up to version {LATEST}); open it with a newer labeldp-audit")
    if check_shape(found, expected_tables(version), session.where) == "missing":
        raise LabelDPInputError(f"warehouse {session.where}: schema version {version} is recorded but the audit "
                                f"tables do not exist{session.location}")
    for migration in MIGRATIONS:
        if migration.version > version:
            step(lambda ctx, m=migration: _apply(ctx, m))
    if check_shape(read(found_columns), schema.TABLES, session.where) == "migrate":
        step(lambda ctx: add_missing_columns(ctx, schema.TABLES))
    if not read(choice_checks_in_line):
        step(lambda ctx: None if choice_checks_in_line(ctx) else sync_choice_checks(ctx))
    return LATEST


def _create(ctx: Context) -> None:
    found, version = _state(ctx)
    if version is not None or any(table in found for table in schema.TABLES):
        return  # created meanwhile by another process
    for statement in creation_statements(ctx.dialect):
        ctx.execute(statement)


def _adopt(ctx: Context) -> None:
    found, version = _state(ctx)
    if version is not None:
        return  # adopted meanwhile by another process
    check_shape(found, expected_tables(1), ctx.where)
    for statement in schema.version_table_statements(ctx.dialect):
        ctx.execute(statement)
    MIGRATIONS[0].apply(ctx)
    _record(ctx, 1, MIGRATIONS[0].description)


def _apply(ctx: Context, migration: Migration) -> None:
    _, version = _state(ctx)
    if version is not None and version >= migration.version:
        return  # applied meanwhile by another process
    if version != migration.version - 1:
        raise RuntimeError(f"migration {migration.version} needs version {migration.version - 1}; found {version}")
    migration.apply(ctx)
    _record(ctx, migration.version, migration.description)
    log.info("warehouse %s: migrated to schema version %d (%s)", ctx.where, migration.version,
             migration.description)
