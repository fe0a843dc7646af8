"""`labeldp-audit results`: verdicts read back from a real warehouse, on a DuckDB file and on PostgreSQL.

The rows are written through the real sinks (run_audit -> judge -> audit_record -> write_or_spool /
upsert_audit): model alpha claims eps 0.5 and is a VIOLATION on its second night, model beta claims inf (no
claim: INCONCLUSIVE) on three nights, and alpha's third night has a second audit config that finished later.
The command is called through `flows.cli.main`; the warehouse must come out of every read unchanged.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import math
import os
import urllib.parse
import uuid
from pathlib import Path

import numpy as np
import pytest
from test_warehouse import PG_URL, postgres_url  # noqa: F401  (fixture: skips loudly when no server answers)

from auditing.audit import AuditConfig, run_audit
from auditing.judging import judge
from auditing.report import run_report_path
from auditing.warehouse import WRITTEN, audit_record, open_warehouse, write_or_spool
from auditing.warehouse.migrations import LATEST
from auditing.warehouse.schema import RESULT_NAMES, VERSION_TABLE
from flows.cli import main
from flows.commands.results import CSV_COLUMNS, NO_MATCH

D1, D2, D3 = dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)


def _result(leak: float, repetitions: int = 2):
    rng = np.random.default_rng(11)
    n = 2000
    labels = rng.integers(0, 2, n)
    p_target = np.clip(0.5 + leak * (2 * labels - 1) + rng.normal(0, 0.05, n), 0.01, 0.99)
    return run_audit(p_target, np.full(n, 0.5), labels, config=AuditConfig(repetitions=repetitions))


@pytest.fixture(scope="module")
def audits():
    """(row, curve, the verdict's weak_pass) of every audit, through judge and audit_record; the last one is
    alpha's second config."""
    clean, leaky = _result(0.0), _result(0.45)
    plan = [("alpha", D1, clean, 0.5), ("alpha", D2, leaky, 0.5), ("alpha", D3, clean, 0.5),
            ("beta", D1, clean, math.inf), ("beta", D2, clean, math.inf), ("beta", D3, clean, math.inf),
            ("alpha", D3, _result(0.0, repetitions=3), 0.5)]
    out = []
    for index, (model, day, result, claimed) in enumerate(plan):
        finished = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(1, index), tzinfo=dt.UTC)
        verdict = judge(result, claimed)
        out.append((*audit_record(verdict, run_kind="nightly", model_id=model, partition_date=day,
                                  lineage={"flow_run_id": f"run-{index}", "finished_at": finished}),
                    verdict.robustness.weak_pass))
    # alpha's clean nights pass on weak evidence (2000 rows): their own status
    assert [r["status"] for r, _, _ in out] == ["WEAK_PASS", "VIOLATION", "WEAK_PASS", *["INCONCLUSIVE"] * 3,
                                                "WEAK_PASS"]
    assert all((row["status"] == "WEAK_PASS") == weak for row, _, weak in out)
    assert out[2][0]["audit_config_hash"] != out[6][0]["audit_config_hash"]
    return out


@pytest.fixture(scope="module")
def records(audits):
    return [(row, curve) for row, curve, _ in audits]


def _with_search_path(url: str, schema_name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = [*urllib.parse.parse_qsl(parts.query), ("options", f"-csearch_path={schema_name}")]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


@pytest.fixture(params=["duckdb", "postgres"])
def empty_target(request, tmp_path):
    """A warehouse target with nothing in it yet: a DuckDB path, or a PostgreSQL schema of this test."""
    if request.param == "duckdb":
        yield str(tmp_path / "wh" / "warehouse.duckdb")
        return
    request.getfixturevalue("postgres_url")
    import psycopg
    from psycopg import sql

    schema_name = f"labeldp_results_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True, connect_timeout=3) as admin:
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema_name)))
        try:
            yield _with_search_path(PG_URL, schema_name)
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema_name)))


@pytest.fixture
def target(empty_target, records, tmp_path):
    """The warehouse with every record: the first through write_or_spool, the rest through upsert_audit."""
    assert write_or_spool(empty_target, *records[0], tmp_path / "spool") == WRITTEN
    with open_warehouse(empty_target) as wh:
        for row, curve in records[1:]:
            wh.upsert_audit(row, curve)
    return empty_target


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["results", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _table_rows(out: str) -> list[tuple[str, str, str]]:
    """(model, date, status) of each table line."""
    lines = out.splitlines()
    assert lines[0].startswith("model ") and set(lines[1]) == {"-"}
    rows = []
    for line in lines[2:]:
        parts = line.split()
        if len(parts) > 3 and parts[0] in ("alpha", "beta") and parts[1][:4] == "2024":
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def _fingerprint(target: str) -> str | None:
    return hashlib.sha256(Path(target).read_bytes()).hexdigest() if not target.startswith("postgresql") else None


# ------------------------------------------------------------------------------------------------ listing
def test_default_is_the_latest_verdict_per_model_newest_first(target, capsys, audits):
    before = _fingerprint(target)
    code, out, err = _run(capsys, "--warehouse", target)
    assert code == 0 and err == ""
    assert _table_rows(out) == [("alpha", "2024-01-03", "WEAK_PASS"), ("beta", "2024-01-03", "INCONCLUSIVE")]
    beta = next(line for line in out.splitlines() if line.startswith("beta "))
    assert beta.split()[3:5] == ["nightly", "inf"]  # the run and claimed columns
    alpha = next(line for line in out.splitlines() if line.startswith("alpha "))
    assert not alpha.split()[10].endswith("w")  # the status says it: no mark
    assert "eps_lb: valid lower bound at 95% confidence" in out  # format_rows' legend
    assert "WEAK_PASS: a PASS on weak evidence: this audit would have flagged the claim only if more than 1%" in out
    assert _fingerprint(target) == before  # read-only: the file is byte for byte the same


def test_model_history_is_every_row_newest_first(target, capsys, records):
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha")
    assert code == 0
    assert _table_rows(out) == [("alpha", "2024-01-03", "WEAK_PASS"), ("alpha", "2024-01-03", "WEAK_PASS"),
                                ("alpha", "2024-01-02", "VIOLATION"), ("alpha", "2024-01-01", "WEAK_PASS")]
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha", "--json")
    hashes = [r["audit_config_hash"] for r in json.loads(out)]
    assert hashes[:2] == [records[6][0]["audit_config_hash"], records[2][0]["audit_config_hash"]]  # finished last first


def test_filters_combine(target, capsys):
    code, out, _ = _run(capsys, "--warehouse", target, "--since", "2024-01-02", "--all")
    assert code == 0 and len(_table_rows(out)) == 5
    code, out, _ = _run(capsys, "--warehouse", target, "--status", "VIOLATION")
    assert _table_rows(out) == [("alpha", "2024-01-02", "VIOLATION")]  # alpha's most recent VIOLATION
    code, out, _ = _run(capsys, "--warehouse", target, "--until", "2024-01-01")
    assert _table_rows(out) == [("alpha", "2024-01-01", "WEAK_PASS"), ("beta", "2024-01-01", "INCONCLUSIVE")]
    code, out, _ = _run(capsys, "--warehouse", target, "--status", "WEAK_PASS", "--all")
    assert [row[2] for row in _table_rows(out)] == ["WEAK_PASS"] * 3
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "beta", "--since", "2024-01-02",
                        "--until", "2024-01-02")
    assert _table_rows(out) == [("beta", "2024-01-02", "INCONCLUSIVE")]
    code, out, err = _run(capsys, "--warehouse", target, "--status", "VIOLATION", "--since", "2024-01-03")
    assert (code, out.strip(), err) == (0, NO_MATCH, "")


def test_json_is_strict_and_round_trips_inf(target, capsys):
    code, out, _ = _run(capsys, "--warehouse", target, "--all", "--json")
    assert code == 0

    def refuse(token):
        raise AssertionError(f"not strict JSON: {token}")

    rows = json.loads(out, parse_constant=refuse)
    assert len(rows) == 7 and all(list(r) == list(RESULT_NAMES) for r in rows)
    beta = [r for r in rows if r["model_id"] == "beta"]
    assert {r["claimed_epsilon"] for r in beta} == {"inf"} and float(beta[0]["claimed_epsilon"]) == math.inf
    assert [r["partition_date"] for r in rows][:3] == ["2024-01-03"] * 3
    assert json.loads(rows[0]["result_json"])["m"] == rows[0]["m"]  # JSON-text columns stay text
    code, out, err = _run(capsys, "--warehouse", target, "--since", "2030-01-01", "--json")
    assert (code, json.loads(out), err.strip()) == (0, [], NO_MATCH)


def test_csv_has_the_header_and_one_line_per_row(target, capsys, tmp_path, records):
    row = records[1][0]  # alpha's VIOLATION: its run report exists under the data root
    page = run_report_path(tmp_path, row)
    page.parent.mkdir(parents=True)
    page.write_text("<html></html>")
    code, out, _ = _run(capsys, "--warehouse", target, "--data-root", str(tmp_path), "--all", "--csv")
    assert code == 0
    table = list(csv.reader(io.StringIO(out)))
    assert tuple(table[0]) == CSV_COLUMNS and len(table) == 1 + 7
    cells = [dict(zip(CSV_COLUMNS, line, strict=True)) for line in table[1:]]
    violation = next(c for c in cells if c["status"] == "VIOLATION")
    assert violation["report"] == str(page) and float(violation["epsilon_lower_bound"]) > 0.5
    assert {c["claimed_epsilon"] for c in cells if c["model_id"] == "beta"} == {"inf"}
    assert all(c["report"] == "" for c in cells if c is not violation)
    code, out, _ = _run(capsys, "--warehouse", target, "--data-root", str(tmp_path), "--status", "VIOLATION")
    assert str(page) in out  # the table's report column too


# ------------------------------------------------------------------------------------------------ show
def test_show_prints_the_full_record(target, capsys, records):
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02")
    assert code == 0
    lines = [line for line in out.splitlines() if not line.startswith(" ")]  # the columns; outlines indented
    fields = dict(line.split(": ", 1) for line in lines)
    row, curve = records[1]
    assert [line.split(": ", 1)[0] for line in lines[:len(RESULT_NAMES)]] == list(RESULT_NAMES)
    assert fields["status"] == "VIOLATION" and fields["partition_date"] == "2024-01-02"
    assert float(fields["epsilon_lower_bound"]) == row["epsilon_lower_bound"]
    assert fields["curve_points"] == str(len(curve)) and len(curve) > 0
    assert fields["model_uri"] == "NULL"

    # latest date by default (the audit that finished last), the other config named; options after show too
    code, out, _ = _run(capsys, "show", "beta", "--warehouse", target, "--json")
    record = json.loads(out)
    assert record["partition_date"] == "2024-01-03" and record["claimed_epsilon"] == "inf"
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha")
    assert f"audit_config_hash: {records[6][0]['audit_config_hash']}" in out
    assert f"other_verdicts_that_date: nightly, claim 0.5, config {records[2][0]['audit_config_hash']}" in out
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--config", records[2][0]["audit_config_hash"])
    assert f"flow_run_id: {records[2][0]['flow_run_id']}" in out


def test_show_summarises_curves_and_histograms_and_json_keeps_them_whole(target, capsys, records):
    """The stored result holds the curve and two histograms (thousands of characters on one line): show prints
    one short line for each, --json the stored text as it is."""
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02")
    assert code == 0 and max(len(line) for line in out.splitlines()) < 400
    stored = json.loads(records[1][0]["result_json"])
    outline = {line.strip().split(": ", 1)[0]: line.strip().split(": ", 1)[-1] for line in out.splitlines()
               if line.startswith("  ")}
    assert outline["curve"].startswith(f"{len(stored['curve'])} points (correct, epsilon_lower_bound, guesses): first ")
    assert outline["edges"].startswith(f"{len(stored['score_histogram']['edges'])} values, from ")
    assert "    edges: " in out  # nested under score_histogram
    assert outline["epsilon_lower_bound"] == json.dumps(stored["epsilon_lower_bound"])
    assert "result_json: (JSON; --json prints it whole)" in out
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02", "--json")
    assert json.loads(json.loads(out)["result_json"]) == stored


def test_run_kinds_keep_their_own_verdicts_and_filter(target, capsys, records):
    """A guardrail of alpha on its VIOLATION night, with another claim: its own row; the nightly's VIOLATION is
    still listed, and --run-kind picks each."""
    guardrail = _result(0.45)
    row, curve = audit_record(judge(guardrail, math.inf), run_kind="guardrail", model_id="alpha", partition_date=D2,
                              lineage={"flow_run_id": "run-g", "finished_at": dt.datetime(2024, 2, 1, tzinfo=dt.UTC)})
    with open_warehouse(target) as wh:
        wh.upsert_audit(row, curve)
    code, out, _ = _run(capsys, "--warehouse", target, "--status", "VIOLATION")
    assert _table_rows(out) == [("alpha", "2024-01-02", "VIOLATION")]
    code, out, _ = _run(capsys, "--warehouse", target)
    assert _table_rows(out) == [("alpha", "2024-01-03", "WEAK_PASS"), ("beta", "2024-01-03", "INCONCLUSIVE"),
                                ("alpha", "2024-01-02", "INCONCLUSIVE")]  # the latest per model and run kind
    code, out, _ = _run(capsys, "--warehouse", target, "--run-kind", "guardrail", "--json")
    assert [(r["model_id"], r["run_kind"], r["claimed_epsilon"], r["flow_run_id"]) for r in json.loads(out)] == [
        ("alpha", "guardrail", "inf", "run-g")]
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02", "--run-kind",
                        "nightly")
    assert code == 0 and "status: VIOLATION" in out and "run_kind: nightly" in out
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02")
    assert code == 0 and "status: INCONCLUSIVE" in out and "other_verdicts_that_date: nightly, claim 0.5" in out
    with pytest.raises(SystemExit) as info:  # argparse's choices: the registry's kinds
        main(["results", "--warehouse", target, "--run-kind", "hourly"])
    assert info.value.code == 2 and "guardrail" in capsys.readouterr().err


def test_a_pass_stored_before_weak_pass_was_a_status_is_marked_from_its_floors(target, capsys, records):
    row, curve = records[0]
    with open_warehouse(target) as wh:
        wh.upsert_audit({**row, "status": "PASS", "partition_date": dt.date(2023, 12, 31)}, curve)
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha", "--until", "2023-12-31")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("alpha "))
    assert line.split()[2] == "PASS" and line.split()[10].endswith("w")
    assert "w (exp.fl): a PASS stored before WEAK_PASS was a status whose floors make it one." in out


def test_table_columns_fit_their_longest_value(target, capsys, records):
    long_name = "team-nonprivate-click-model-v2"  # 30 characters
    row, curve = records[1]
    with open_warehouse(target) as wh:
        wh.upsert_audit({**row, "model_id": long_name}, curve)
    code, out, _ = _run(capsys, "--warehouse", target, "--all")
    assert code == 0
    lines = out.splitlines()
    header, table = lines[0], [line for line in lines[2:] if line.startswith(("alpha ", "beta ", long_name))]
    assert len(table) == 8 and header.startswith("model" + " " * (len(long_name) - 4) + "date ")
    for column in ("date", "status", "run", "rows"):  # left-aligned: every value starts under its header
        start = header.index(f" {column} ") + 1
        assert all(line[start - 1] == " " and line[start] != " " for line in table), column
    for column in ("claimed", "eps_lb", "m"):  # right-aligned: every value ends under its header
        end = header.index(f" {column} ") + len(column)
        assert all(line[end] != " " and line[end + 1] == " " for line in table), column


def test_show_not_found_names_model_and_date(target, capsys):
    code, out, err = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-02-01")
    assert (code, out) == (2, "") and "alpha" in err and "2024-02-01" in err and len(err.splitlines()) == 1
    code, _, err = _run(capsys, "--warehouse", target, "show", "gamma")
    assert code == 2 and "gamma" in err


def test_list_options_are_refused_with_show(target, capsys):
    code, _, err = _run(capsys, "--warehouse", target, "--status", "PASS", "show", "alpha")
    assert code == 2 and "--status" in err


# ------------------------------------------------------------------------------------------------ errors
def test_a_missing_duckdb_file_is_an_error_and_is_not_created(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "warehouse.duckdb"
    code, out, err = _run(capsys, "--warehouse", str(missing))
    assert (code, out) == (2, "") and str(missing) in err and len(err.splitlines()) == 1
    code, _, err = _run(capsys, "--data-root", str(tmp_path))  # the default file of the data root
    assert code == 2 and str(tmp_path / "warehouse.duckdb") in err
    code, _, err = _run(capsys, "--data-root", str(tmp_path), "show", "alpha")
    assert code == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["--since", "2024-13-01"], ["--until", "yesterday"],
                                  ["--since", "2024-01-03", "--until", "2024-01-01"],
                                  ["show", "alpha", "--date", "2024-02-30"], ["--model", "../etc"]])
def test_bad_dates_and_names_exit_2(tmp_path, capsys, argv):
    code, out, err = _run(capsys, "--warehouse", str(tmp_path / "w.duckdb"), *argv)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert not (tmp_path / "w.duckdb").exists()


def test_an_unknown_status_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit) as info:
        main(["results", "--status", "MAYBE"])
    assert info.value.code == 2 and "PASS" in capsys.readouterr().err


def test_an_unreachable_postgres_names_it_without_the_password(capsys):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, err = _run(capsys, "--warehouse", f"postgresql://auditor:s3cret@127.0.0.1:{port}/test")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "s3cret" not in err and f"auditor:***@127.0.0.1:{port}" in err


def _execute(target: str, statement: str) -> None:
    """One statement through the database driver (not the warehouse code)."""
    if target.startswith("postgresql"):
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(statement)
        return
    import duckdb

    conn = duckdb.connect(target)
    try:
        conn.execute(statement)
    finally:
        conn.close()


def test_a_newer_schema_version_is_refused(target, capsys):
    _execute(target, f"INSERT INTO {VERSION_TABLE} (version, description, applied_at) "
                     f"VALUES ({LATEST + 1}, 'from the future', CURRENT_TIMESTAMP)")
    before = _fingerprint(target)
    code, out, err = _run(capsys, "--warehouse", target)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert f"schema version {LATEST + 1} is newer" in err
    assert _fingerprint(target) == before


def test_reading_never_migrates(target, capsys):
    """A warehouse lacking a nullable column (the writers' open would add it back) is read as it is: the
    column reads null and is still missing afterwards."""
    _execute(target, "ALTER TABLE audit_results DROP COLUMN gdp_mu_lower_bound")
    code, out, _ = _run(capsys, "--warehouse", target, "--json")
    assert code == 0 and {r["gdp_mu_lower_bound"] for r in json.loads(out)} == {None}
    from auditing.warehouse.base import open_read_only

    with open_read_only(target) as wh:
        assert "gdp_mu_lower_bound" not in wh.columns and wh.version == LATEST
    with open_warehouse(target) as wh:  # a writer heals it, as before
        assert wh.fetch_results(model_id="beta")[0]["gdp_mu_lower_bound"] is None


def test_the_readme_queries_run(target):
    """README.md "Reading results back": the query block of each backend, run as written on this warehouse."""
    import re

    section = (Path(__file__).resolve().parents[1] / "README.md").read_text().split("### Reading results back")[1]
    blocks = re.findall(r"```python\n(.*?)```", section.split("\n## ")[0], re.S)
    block = next(b for b in blocks if ("import psycopg" in b) == target.startswith("postgresql"))
    code = (block.replace(".labeldp/warehouse.duckdb", target).replace("postgresql://auditor@db:5432/audit", target)
            .replace('"rr-eps1"', '"alpha"'))
    namespace: dict = {}
    exec(code, namespace)
    assert [(day.isoformat(), status, kind) for day, status, kind, *_ in namespace["history"]][-2:] == [
        ("2024-01-02", "VIOLATION", "nightly"), ("2024-01-01", "WEAK_PASS", "nightly")]
    assert sorted((m, kind, day.isoformat()) for m, kind, day, *_ in namespace["latest"]) == [
        ("alpha", "nightly", "2024-01-03"), ("beta", "nightly", "2024-01-03")]
