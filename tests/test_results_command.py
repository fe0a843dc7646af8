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
        out.append((*audit_record(verdict, model_id=model, partition_date=day,
                                  lineage={"flow_run_id": f"run-{index}", "finished_at": finished}),
                    verdict.robustness.weak_pass))
    assert [r["status"] for r, _, _ in out] == ["PASS", "VIOLATION", "PASS", *["INCONCLUSIVE"] * 3, "PASS"]
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
    assert _table_rows(out) == [("alpha", "2024-01-03", "PASS"), ("beta", "2024-01-03", "INCONCLUSIVE")]
    beta = next(line for line in out.splitlines() if line.startswith("beta "))
    assert beta.split()[3] == "inf"  # the claimed column
    # the weak-PASS mark is derived for the table as the nightly's verdict had it
    alpha = next(line for line in out.splitlines() if line.startswith("alpha "))
    assert alpha.split()[9].endswith("w") == audits[6][2] and audits[6][2] is True
    assert "eps_lb: valid lower bound at 95% confidence" in out  # format_rows' legend
    assert _fingerprint(target) == before  # read-only: the file is byte for byte the same


def test_model_history_is_every_row_newest_first(target, capsys, records):
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha")
    assert code == 0
    assert _table_rows(out) == [("alpha", "2024-01-03", "PASS"), ("alpha", "2024-01-03", "PASS"),
                                ("alpha", "2024-01-02", "VIOLATION"), ("alpha", "2024-01-01", "PASS")]
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha", "--json")
    hashes = [r["audit_config_hash"] for r in json.loads(out)]
    assert hashes[:2] == [records[6][0]["audit_config_hash"], records[2][0]["audit_config_hash"]]  # finished last first


def test_filters_combine(target, capsys):
    code, out, _ = _run(capsys, "--warehouse", target, "--since", "2024-01-02", "--all")
    assert code == 0 and len(_table_rows(out)) == 5
    code, out, _ = _run(capsys, "--warehouse", target, "--status", "VIOLATION")
    assert _table_rows(out) == [("alpha", "2024-01-02", "VIOLATION")]  # alpha's most recent VIOLATION
    code, out, _ = _run(capsys, "--warehouse", target, "--until", "2024-01-01")
    assert _table_rows(out) == [("alpha", "2024-01-01", "PASS"), ("beta", "2024-01-01", "INCONCLUSIVE")]
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
    page = run_report_path(tmp_path, row["model_id"], row["partition_date"], row["audit_config_hash"])
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
    lines = out.splitlines()
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
    assert f"other_audit_configs_that_date: {records[2][0]['audit_config_hash']}" in out
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--config", records[2][0]["audit_config_hash"])
    assert f"flow_run_id: {records[2][0]['flow_run_id']}" in out


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
    assert [(day.isoformat(), status) for day, status, *_ in namespace["history"]][-2:] == [
        ("2024-01-02", "VIOLATION"), ("2024-01-01", "PASS")]
    assert sorted((m, day.isoformat()) for m, day, *_ in namespace["latest"]) == [("alpha", "2024-01-03"),
                                                                                  ("beta", "2024-01-03")]
