"""`labeldp-audit results`: verdicts read back from a real warehouse, on a DuckDB file and on PostgreSQL.

The rows are written through the real sinks (run_audit -> judge -> audit_record -> write_or_spool /
write_audit): model alpha claims eps 0.5 and is a VIOLATION on its second night, model beta claims inf (no
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
import re
from pathlib import Path

import numpy as np
import pytest

from auditing.audit import CheckRows, run_audit
from auditing.game.config import GameConfig
from auditing.sinks.report import run_report_path
from auditing.sinks.warehouse import WRITTEN, audit_record, open_warehouse, write_or_spool
from auditing.sinks.warehouse.migrations import LATEST
from auditing.sinks.warehouse.records import ResultRow
from auditing.sinks.warehouse.schema import RESULT_NAMES, VERSION_TABLE
from auditing.verdict.judge import judge
from flows.cli import main
from flows.commands.results import CSV_COLUMNS, NO_MATCH
from labeldp.codec import encode
from tests.support import checked_audits
from tests.support.pg_schema import (
    own_schema,
    postgres_url,  # noqa: F401  (fixture: skips loudly when no server answers)
)

D1, D2, D3 = dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)


def _result(leak: float, repetitions: int = 2, *, misfit: float = 0.0, check: bool = True, row_groups=None):
    """2,000 audited rows and 500 check rows (rows the model never saw); the reference says 0.5 everywhere, the day
    0.5 + ``misfit`` on a fifth of the rows, which the target knows; ``leak`` moves it toward each training
    label. ``check`` False: no check rows (nothing checks the reference)."""
    rng = np.random.default_rng(11)
    n, h = 2000, 500
    truth = 0.5 + misfit * (rng.random(n + h) < 0.2)
    labels = (rng.random(n + h) < truth).astype(np.int64)
    p_target = np.clip(truth + rng.normal(0, 0.2, n + h), 0.01, 0.99)
    p_target[:n] = np.clip(p_target[:n] + leak * (2 * labels[:n] - 1), 0.01, 0.99)
    ids, reference = np.arange(n + h), np.full(n + h, 0.5)
    rows = CheckRows(p_target[n:], reference[n:], labels[n:], ids[n:]) if check else None
    return run_audit(p_target[:n], reference[:n], labels[:n], ids[:n], game=GameConfig(repetitions=repetitions),
                     check=rows, row_groups=row_groups)


@pytest.fixture(scope="module")
def audits():
    """(row, curve, the verdict's weak_pass) of every audit, through judge and audit_record; the last one is
    alpha's second config."""
    clean, leaky = _result(0.0), _result(0.45, row_groups=checked_audits.groups())
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
    # alpha's clean nights pass on weak evidence (2000 rows): their own status; every verdict is trusted (the
    # capacity check vouches for alpha's VIOLATION)
    assert [r.status for r, _, _ in out] == ["WEAK_PASS", "VIOLATION", "WEAK_PASS", *["INCONCLUSIVE"] * 3,
                                                "WEAK_PASS"]
    assert {r.trust for r, _, _ in out} == {"trusted"} and out[1][0].epsilon_check > 0.5
    assert all((row.status == "WEAK_PASS") == weak for row, _, weak in out)
    assert out[2][0].audit_config_hash != out[6][0].audit_config_hash
    return out


@pytest.fixture(scope="module")
def records(audits):
    return [(row, curve) for row, curve, _ in audits]


@pytest.fixture(params=["duckdb", "postgres"])
def empty_target(request, tmp_path):
    """A warehouse target with nothing in it yet: a DuckDB path, or a PostgreSQL schema of this test."""
    if request.param == "duckdb":
        yield str(tmp_path / "wh" / "warehouse.duckdb")
        return
    request.getfixturevalue("postgres_url")
    with own_schema("labeldp_results") as url:
        yield url


@pytest.fixture
def target(empty_target, records, tmp_path):
    """The warehouse with every record: the first through write_or_spool, the rest through write_audit."""
    assert write_or_spool(empty_target, *records[0], tmp_path / "spool") == WRITTEN
    with open_warehouse(empty_target) as wh:
        for row, curve in records[1:]:
            wh.write_audit(row, curve)
    return empty_target


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["results", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _table_rows(out: str) -> list[tuple[str, str, str]]:
    """(model, date, status) of each table line (the decision is the first column)."""
    lines = out.splitlines()
    assert lines[0].startswith("decision ") and set(lines[1]) == {"-"}
    rows = []
    for line in lines[2:]:
        parts = line.split()
        if len(parts) > 4 and parts[1] in ("alpha", "beta") and parts[2][:4] == "2024":
            rows.append((parts[1], parts[2], parts[3]))
    return rows


def _line_of(out: str, model: str) -> str:
    """The table line of ``model`` (its second column)."""
    return next(line for line in out.splitlines() if line.split()[1:2] == [model])


def _table_width(out: str) -> int:
    """The widest line of the table: the header, its rule and the verdicts' lines."""
    lines = out.splitlines()
    rule = len(lines[1])
    table = [line for line in lines[2:] if len(line.split()) > 2 and line.split()[2][:4] == "2024"]
    return max(len(lines[0]), rule, *map(len, table))


def _fingerprint(target: str) -> str | None:
    return hashlib.sha256(Path(target).read_bytes()).hexdigest() if not target.startswith("postgresql") else None


# ------------------------------------------------------------------------------------------------ listing
def test_default_is_the_latest_verdict_per_model_newest_first(target, capsys, audits):
    before = _fingerprint(target)
    code, out, err = _run(capsys, "--warehouse", target)
    assert code == 0 and err == ""
    assert _table_rows(out) == [("alpha", "2024-01-03", "WEAK_PASS"), ("beta", "2024-01-03", "INCONCLUSIVE")]
    beta = _line_of(out, "beta")
    assert beta.split()[0] == "no-power" and beta.split()[4:7] == ["nightly", "trusted", "inf"]  # run, trust, claim
    assert _line_of(out, "alpha").split()[0] == "no-evidence" and _table_width(out) <= 100
    # the legend only on request
    assert "eps_lb: valid lower bound" not in out and "WEAK_PASS: a PASS on weak evidence" not in out
    code, wide, _ = _run(capsys, "--warehouse", target, "--wide")
    assert not _line_of(wide, "alpha").split()[12].endswith("w")  # the status says it: no mark
    assert wide.splitlines()[0].split() == ["decision", "model", "date", "status", "run", "trust", "claimed", "eps_lb",
                                            "paper", "mean+-std", "max", "cert.", "brk.kap", "floor", "exp.fl", "m",
                                            "rows", "report"]
    assert "eps_lb: valid lower bound" not in wide
    code, out, _ = _run(capsys, "--warehouse", target, "--explain")
    assert out.count("eps_lb: valid lower bound at 95% confidence") == 1  # format_rows' legend, once
    assert "WEAK_PASS: a PASS on weak evidence: this audit would have flagged the claim only if more than 1%" in out
    assert _fingerprint(target) == before  # read-only: the file is byte for byte the same


def test_model_history_is_every_row_newest_first(target, capsys, records):
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha")
    assert code == 0
    assert _table_rows(out) == [("alpha", "2024-01-03", "WEAK_PASS"), ("alpha", "2024-01-03", "WEAK_PASS"),
                                ("alpha", "2024-01-02", "VIOLATION"), ("alpha", "2024-01-01", "WEAK_PASS")]
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha", "--json")
    hashes = [r["audit_config_hash"] for r in json.loads(out)]
    assert hashes[:2] == [records[6][0].audit_config_hash, records[2][0].audit_config_hash]  # finished last first


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
    assert len(rows) == 7 and all(list(r) == [*RESULT_NAMES, "slices", "inputs_replaced_since"] and r["slices"] is None
                                  and r["inputs_replaced_since"] is None for r in rows)
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
    record = out.split("\nrecord: ")[1].splitlines()[1:]  # every stored column, rounded
    lines = [line[2:] for line in record if line.startswith("  ") and not line.startswith("   ")]
    fields = dict(line.split(": ", 1) for line in lines)
    row, curve = records[1]
    assert [line.split(": ", 1)[0] for line in lines[:len(RESULT_NAMES)]] == list(RESULT_NAMES)
    assert fields["status"] == "VIOLATION" and fields["partition_date"] == "2024-01-02"
    assert fields["epsilon_lower_bound"] == f"{row.epsilon_lower_bound:.4g}" and fields["gamma"] == "0.05"
    assert fields["curve_points"] == str(len(curve)) and len(curve) > 0
    assert fields["model_uri"] == "NULL"

    # latest date by default (the audit that finished last), the other config named; options after show too
    code, out, _ = _run(capsys, "show", "beta", "--warehouse", target, "--json")
    record = json.loads(out)
    assert record["partition_date"] == "2024-01-03" and record["claimed_epsilon"] == "inf"
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha")
    assert f"audit_config_hash: {records[6][0].audit_config_hash}" in out
    assert f"other_verdicts_that_date: nightly, claim 0.5, config {records[2][0].audit_config_hash}" in out
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--config", records[2][0].audit_config_hash)
    assert f"flow_run_id: {records[2][0].flow_run_id}" in out


def test_show_prints_sections_rounded_for_people_and_its_json_exact(target, capsys, records):
    """`results show`: the decision, the evidence, the trust, the risk, the slices and the family, in that order, each
    figure rounded; --json keeps every stored value exact, with the same keys as before the sections."""
    row, curve = records[1]
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02", "--run-kind", "nightly")
    assert code == 0 and out.startswith("alpha 2024-01-02: nightly run, claim eps 0.5, target\ndecision:\n")
    heads = [line.split(":")[0] for line in out.splitlines() if line and not line.startswith(" ")]
    order = ["decision", "evidence", "trust", "risk", "slices", "family", "runs", "record"]
    assert [h for h in heads if h in order] == order
    assert "\n  CONFIRMED LEAK: ACT\n  why: the capacity check vouches for it" in out
    assert (f"\n  valid eps_lb: {row.epsilon_lower_bound:.4g} at 95% confidence (bonferroni selection, binomial, "
            "delta 0, kappa 0)\n") in out
    assert not re.search(r"\d\.\d{6,}", out.split("\nrecord: ")[0])  # no figure with more digits than a person reads
    code, text, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02", "--run-kind", "nightly",
                         "--json")
    shown = json.loads(text)
    assert set(shown) == set(RESULT_NAMES) | {"curve_points", "slices", "runs", "inputs_replaced_since"}
    assert shown["epsilon_lower_bound"] == row.epsilon_lower_bound and shown["gamma"] == row.gamma
    assert shown["curve_points"] == len(curve) and text.startswith('{\n  "model_id": "alpha",\n')


def test_every_run_is_reached_by_its_id_and_a_rerun_is_listed_under_its_row(target, capsys, records):
    """A re-run on identical inputs (another run id) is recorded against the row: `results --run ID` and
    `results show --run ID` reach the rows of either run, and show lists both runs, saying when the later one
    computed another bound."""
    row, curve = records[1]
    with open_warehouse(target) as wh:
        assert not wh.write_audit(row.replace(run_id="rerun-1", epsilon_lower_bound=0.25), curve).new
    code, out, _ = _run(capsys, "--warehouse", target, "--run", "rerun-1")
    assert code == 0 and _table_rows(out) == [("alpha", "2024-01-02", "VIOLATION")]
    code, out, _ = _run(capsys, "--warehouse", target, "--run", "run-1", "--json")
    assert [r["run_id"] for r in json.loads(out)] == ["run-1"]
    code, out, _ = _run(capsys, "--warehouse", target, "show", "--run", "rerun-1")
    assert code == 0 and out.startswith("# 1 of 1: alpha 2024-01-02 nightly")
    assert f"epsilon_lower_bound: {row.epsilon_lower_bound:.4g}" in out and "runs: 2" in out
    assert "  run-1 (start not recorded, flow run run-1): wrote the row" in out
    assert "  rerun-1 (start not recorded, flow run run-1): identical inputs, recorded; the row unchanged; " \
           f"computed VIOLATION eps_lb 0.25, not the stored VIOLATION {row.epsilon_lower_bound:.4g}" in out
    code, out, _ = _run(capsys, "--warehouse", target, "show", "beta", "--run", "rerun-1", "--json")
    assert code == 2
    code, _, err = _run(capsys, "--warehouse", target, "show", "alpha", "--run", "run-3")
    assert code == 2 and "no audit result of run run-3 for model alpha" in err
    code, out, _ = _run(capsys, "--warehouse", target, "show", "--run", "run-3", "--json")
    assert [(r["model_id"], [x["run_id"] for x in r["runs"]]) for r in json.loads(out)] == [("beta", ["run-3"])]


def test_show_summarises_curves_and_histograms_and_json_keeps_them_whole(target, capsys, records):
    """The stored result holds the curve and two histograms (thousands of characters on one line): show names the
    JSON-text column with its number of keys, --json prints the stored text as it is."""
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02")
    assert code == 0 and max(len(line) for line in out.splitlines()) < 400, max(out.splitlines(), key=len)
    stored = json.loads(records[1][0].result_json)
    assert f"\n  result_json: (JSON of {len(stored)} keys; --json prints it whole)\n" in out
    assert "values, from" not in out and "points (correct" not in out  # named, not dumped
    code, out, _ = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-01-02", "--json")
    assert json.loads(json.loads(out)["result_json"]) == stored


def test_run_kinds_keep_their_own_verdicts_and_filter(target, capsys, records):
    """A guardrail of alpha on its VIOLATION night, with another claim: its own row; the nightly's VIOLATION is
    still listed, and --run-kind picks each."""
    guardrail = _result(0.45)
    row, curve = audit_record(judge(guardrail, math.inf), run_kind="guardrail", model_id="alpha", partition_date=D2,
                              lineage={"flow_run_id": "run-g", "finished_at": dt.datetime(2024, 2, 1, tzinfo=dt.UTC)})
    with open_warehouse(target) as wh:
        wh.write_audit(row, curve)
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
        wh.write_audit(row.replace(status="PASS", partition_date=dt.date(2023, 12, 31)), curve)
    code, out, _ = _run(capsys, "--warehouse", target, "--model", "alpha", "--until", "2023-12-31", "--wide")
    assert code == 0
    line = _line_of(out, "alpha")
    assert line.split()[3] == "PASS" and line.split()[12].endswith("w")
    assert "w (exp.fl): a PASS stored before WEAK_PASS was a status whose floors make it one" in out


def test_table_columns_fit_their_longest_value(target, capsys, records):
    long_name = "team-nonprivate-click-model-v2"  # 30 characters
    row, curve = records[1]
    with open_warehouse(target) as wh:
        wh.write_audit(row.replace(model_id=long_name), curve)
    code, out, _ = _run(capsys, "--warehouse", target, "--all", "--wide")
    assert code == 0
    lines = out.splitlines()
    header, table = lines[0], [line for line in lines[2:] if line.split()[1:2] in (["alpha"], ["beta"], [long_name])]
    assert len(table) == 8 and header.index(" date ") - header.index(" model ") == len(long_name) + 1
    for column in ("date", "status", "trust", "run", "rows"):  # left-aligned: every value starts under its header
        start = header.index(f" {column} ") + 1
        assert all(line[start - 1] == " " and line[start] != " " for line in table), column
    for column in ("claimed", "eps_lb", "m"):  # right-aligned: every value ends under its header
        end = header.index(f" {column} ") + len(column)
        assert all(line[end] != " " and line[end + 1] == " " for line in table), column


def test_the_default_table_fits_100_columns_with_the_decision_first(target, capsys, records):
    """The default table: the decision, then model, date, status, run, trust, claim and bound, within 100 characters;
    a model name too long for it is shortened with '~' and said so under it; --wide has it whole, --json too."""
    long_name = "team-nonprivate-click-model-for-the-ads-ranking-platform-v2"  # 59 characters
    row, curve = records[1]
    with open_warehouse(target) as wh:
        wh.write_audit(row.replace(model_id=long_name), curve)
    code, out, _ = _run(capsys, "--warehouse", target, "--all")
    assert code == 0 and _table_width(out) <= 100
    assert out.splitlines()[0].split() == ["decision", "model", "date", "status", "run", "trust", "claimed", "eps_lb"]
    shortened = next(line for line in out.splitlines() if line.split()[1:2] and line.split()[1].endswith("~"))
    assert long_name.startswith(shortened.split()[1][:-1]) and shortened.split()[3] == "VIOLATION"
    assert "'~': a model name shortened to fit (--wide shows it whole)" in out
    code, wide, _ = _run(capsys, "--warehouse", target, "--all", "--wide")
    assert _line_of(wide, long_name) and _table_width(wide) > 100
    code, as_json, _ = _run(capsys, "--warehouse", target, "--all", "--json")
    assert long_name in {r["model_id"] for r in json.loads(as_json)}


def test_show_not_found_names_model_and_date(target, capsys):
    code, out, err = _run(capsys, "--warehouse", target, "show", "alpha", "--date", "2024-02-01")
    assert (code, out) == (2, "") and "alpha" in err and "2024-02-01" in err and len(err.splitlines()) == 1
    code, _, err = _run(capsys, "--warehouse", target, "show", "gamma")
    assert code == 2 and "gamma" in err


def test_list_options_are_refused_with_show(target, capsys):
    code, _, err = _run(capsys, "--warehouse", target, "--status", "PASS", "show", "alpha")
    assert code == 2 and "--status" in err


# ------------------------------------------------------------------------------------------------ trust
def _legacy_row(row: ResultRow, model: str, day: dt.date, *, flagged: bool) -> ResultRow:
    """``row`` as a version before per-verdict trust stored it: no trust figures; the night's label-blind control's
    figures, and its untrusted_reason when that control flagged the reference."""
    from auditing.sinks.warehouse.schema import TRUST_COLUMNS

    return row.replace(**dict.fromkeys(TRUST_COLUMNS), model_id=model, partition_date=day,
                       label_blind_bound=0.21 if flagged else 0.0, reference_misfit_kappa=0.35 if flagged else 0.0,
                       label_blind_flagged=int(flagged), reference_checked=1,
                       untrusted_reason=f"the reference does not fit day {day}" if flagged else None)


@pytest.fixture
def trust_target(target, records):
    """The warehouse with a verdict of every trust: gamma's VIOLATION is the reference's misfit (untrusted),
    delta's had nothing to check the reference (reference unchecked), epsilon's too, accepted; and two rows
    written before per-verdict trust, one of a night the label-blind control flagged."""
    from auditing.verdict.trust import NightTrust

    misfit, unchecked = _result(0.0, misfit=0.45), _result(0.45, check=False)
    verdicts = {"gamma": judge(misfit, 0.1), "delta": judge(unchecked, 0.5),
                "epsilon": judge(unchecked, 0.5, night=NightTrust(accept_unchecked=True))}
    assert {m: (v.status, v.trust.state) for m, v in verdicts.items()} == {
        "gamma": ("VIOLATION", "untrusted"), "delta": ("VIOLATION", "reference unchecked"),
        "epsilon": ("VIOLATION", "reference unchecked, accepted")}
    row, curve = records[0]
    with open_warehouse(target) as wh:
        for model, verdict in verdicts.items():
            wh.write_audit(*audit_record(verdict, run_kind="nightly", model_id=model, partition_date=D2))
        wh.write_audit(_legacy_row(row, "old-flagged", D1, flagged=True), curve)
        wh.write_audit(_legacy_row(row, "old-plain", D1, flagged=False), curve)
    return target


def _trust_cells(out: str) -> dict[str, str]:
    """model -> (status, trust) cells of the table."""
    return {line.split()[1]: (line.split()[3], line.split()[5]) for line in out.splitlines()[2:]
            if len(line.split()) > 2 and line.split()[2][:4] == "2024"}


def test_the_table_shows_each_verdicts_trust_and_why(trust_target, capsys):
    code, out, _ = _run(capsys, "--warehouse", trust_target)
    assert code == 0
    assert _trust_cells(out) == {
        "alpha": ("WEAK_PASS", "trusted"), "beta": ("INCONCLUSIVE", "trusted"), "gamma": ("VIOLATION!", "untrusted"),
        "delta": ("VIOLATION!", "unchecked"), "epsilon": ("VIOLATION!", "accepted"),
        "old-flagged": ("WEAK_PASS!", "untrusted"), "old-plain": ("WEAK_PASS", "-")}
    lines = out.splitlines()
    gamma = next(line for line in lines if line.startswith("! UNTRUSTED (gamma@2024-01-02): "))
    assert "the reference's misfit can explain it: epsilon_check 0 <= claim 0.1" in gamma
    assert any(line.startswith("! REFERENCE UNCHECKED (delta@2024-01-02): no check rows") for line in lines)
    assert any(line.startswith("! REFERENCE UNCHECKED, ACCEPTED (epsilon@2024-01-02): ") for line in lines)
    assert "! UNTRUSTED (old-flagged@2024-01-01): the reference does not fit day 2024-01-01" in lines
    assert "'!' after the status: not trusted (why below)" in out and "; -: not recorded" not in out
    code, out, _ = _run(capsys, "--warehouse", trust_target, "--explain")
    assert "; -: not recorded (a row written before per-verdict trust)" in out
    assert "label-blind" not in out  # the legend names the retired control only beside a control row
    code, out, _ = _run(capsys, "--warehouse", trust_target, "--model", "alpha", "--status", "VIOLATION")
    assert any(line.startswith("trusted VIOLATION alpha@2024-01-02: the capacity check vouches for it: epsilon_check ")
               for line in out.splitlines())


@pytest.mark.parametrize("word, models, violations", [
    ("trusted", {"alpha", "beta"}, {"alpha"}), ("untrusted", {"gamma", "old-flagged"}, {"gamma"}),
    ("unchecked", {"delta"}, {"delta"}), ("accepted", {"epsilon"}, {"epsilon"}),
])
def test_trust_filter(trust_target, capsys, word, models, violations):
    """--trust picks the stored trust; untrusted includes a row written before per-verdict trust whose night was
    untrusted, and a row before it without a reason matches no trust."""
    code, out, _ = _run(capsys, "--warehouse", trust_target, "--all", "--trust", word, "--json")
    assert code == 0
    rows = json.loads(out)
    assert {r["model_id"] for r in rows} == models
    from auditing.sinks.report.wording import TRUST_SHORT, stored_trust
    from auditing.verdict.types import TrustFigures

    assert {TRUST_SHORT[stored_trust(TrustFigures.read(r))] for r in rows} == {word}  # the table's reading agrees with the query
    code, out, _ = _run(capsys, "--warehouse", trust_target, "--trust", word, "--status", "VIOLATION")
    assert set(_trust_cells(out)) == violations  # the filters combine, before the latest per model


def test_show_prints_the_trust_block_and_the_groups(trust_target, capsys):
    code, out, _ = _run(capsys, "--warehouse", trust_target, "show", "alpha", "--date", "2024-01-02")
    assert code == 0
    block = out.split("\ntrust: (")[1].splitlines()[1:]
    assert block[0].startswith("  trust: trusted: the capacity check vouches for it: epsilon_check ")
    assert block[1] == "    capacity check on 500 check rows (rows of the day the model never saw)"
    from auditing.sinks.report.wording import ASSUMPTION_T

    assert block[2].startswith("      epsilon_check ") and block[2].endswith(
        f", a lower bound on eps at 95% confidence that needs no kappa (under {ASSUMPTION_T})")
    assert block[3].startswith("      misfit where the verdict's guesses are: kappa <= ")
    assert block[3].endswith(" (upper confidence limit, within the same 95%)")
    assert block[4] == "      misfit the model shows at all: kappa >= 0 (lower confidence figure at 95%)"
    assert block[5] == ("    row groups: rows with the same feature vector or rows with the same user_id form a group; "
                        "311 audited row(s) left out for sharing a group; labels agree in 98.1% of the 152 pairs of "
                        "rows sharing a group, against 97.8% for independent labels at the reference's probabilities "
                        "(a diagnostic, not a confidence figure)")
    code, out, _ = _run(capsys, "--warehouse", trust_target, "show", "gamma")
    block = out.split("\ntrust: (")[1]
    assert "  trust: untrusted: the reference's misfit can explain it" in block
    assert "row groups: no grouping recorded" in block
    code, out, _ = _run(capsys, "--warehouse", trust_target, "show", "old-flagged")
    block = out.split("\ntrust: (")[1].split("\nrisk:")[0]
    assert ("  trust: not recorded (a row written before per-verdict trust); its night was untrusted: the reference "
            "does not fit day 2024-01-01") in block
    assert ("    label-blind control (retired; the capacity check replaced it): valid eps_lb 0.21, measured misfit "
            "kappa 0.35, flagged") in block
    assert "capacity check on" not in block and "epsilon_check" not in block  # it did not exist then


def test_csv_and_json_carry_the_trust_figures(trust_target, capsys, audits):
    code, out, _ = _run(capsys, "--warehouse", trust_target, "--all", "--csv")
    assert code == 0
    table = list(csv.reader(io.StringIO(out)))
    cells = {line[0]: dict(zip(CSV_COLUMNS, line, strict=True)) for line in table[1:]}
    alpha = next(c for c in csv.DictReader(io.StringIO(out)) if c["status"] == "VIOLATION" and c["model_id"] == "alpha")
    assert alpha["trust"] == "trusted" and float(alpha["epsilon_check"]) == audits[1][0].epsilon_check > 0.5
    assert float(alpha["misfit_kappa_upper"]) == audits[1][0].misfit_kappa_upper and alpha["check_rows"] == "500"
    assert (alpha["rows_excluded_groups"], alpha["group_pairs"], alpha["group_label_agreement"]) == ("311", "152", "0.9812")
    assert cells["gamma"]["trust"] == "untrusted" and cells["gamma"]["trust_reason"].startswith("the reference's misfit")
    assert cells["delta"]["check_rows"] == "0" and cells["delta"]["epsilon_check"] == ""
    assert cells["epsilon"]["accepted_unchecked"] == "1" and cells["old-plain"]["trust"] == ""
    code, out, _ = _run(capsys, "--warehouse", trust_target, "--model", "gamma", "--json")
    gamma = json.loads(out)[0]
    assert gamma["trust"] == "untrusted" and gamma["epsilon_check"] == 0.0 and gamma["misfit_kappa_upper"] > 0
    assert gamma["detectability"] == "measured under a reference that misfits"


# ------------------------------------------------------------------------------------------------ slices
def test_stored_slices_are_listed_shown_and_in_json(empty_target, capsys):
    """A verdict written with its slices (tests/support/sliced_audits.py: a trusted and an untrusted slice
    VIOLATION among
    12 slices): the list prints its largest slice bounds under the table with the budget, S, the slices'
    confidence and the claim, and what a slice VIOLATION means; --json and show --json carry the slices object;
    show prints every slice. A verdict without slices says so."""
    from auditing.sinks.report.wording import SLICE_TABLE_ROWS, SLICE_VIOLATION_MEANING
    from auditing.sinks.warehouse import slice_record
    from tests.support.sliced_audits import sliced

    verdict = judge(sliced(), 1.0)
    audit = verdict.result.slices
    row, curve = audit_record(verdict, run_kind="nightly", model_id="gamma", partition_date=D2)
    assert write_or_spool(empty_target, row, curve, empty_target + ".spool", slices=slice_record(verdict)) == WRITTEN
    plain, plain_curve = audit_record(judge(_result(0.0), 0.5), run_kind="nightly", model_id="alpha",
                                      partition_date=D1)
    with open_warehouse(empty_target) as wh:
        wh.write_audit(plain, plain_curve)
    confidence = f"{100 * audit.confidence:.4g}%"

    code, out, _ = _run(capsys, "--warehouse", empty_target)
    assert code == 0
    header = (f"gamma@2024-01-02 slices (own budget {audit.budget:.3g} over 12 slices, each at confidence "
              f"{confidence}); claim eps 1:")
    lines = out.splitlines()
    at = lines.index(header)
    assert lines[at + 1].split() == ["slicing", "slice", "rows", "eps_lb", "vs", "claim", "max", "cert.", "status",
                                     "trust", "note"]
    table = lines[at + 2:at + 2 + SLICE_TABLE_ROWS]
    assert [line.split()[0] for line in table] == [s.slicing for s in verdict.slices[:SLICE_TABLE_ROWS]]
    assert "VIOLATION trusted" in table[0] and "VIOLATION untrusted" in table[1] and "> claim" in table[0]
    assert lines[at + 2 + SLICE_TABLE_ROWS].strip().startswith("... 7 more slice(s), 0 of them VIOLATION")
    assert SLICE_VIOLATION_MEANING in out and "alpha@2024-01-01 slices" not in out

    code, out, _ = _run(capsys, "--warehouse", empty_target, "--all", "--json")
    listed = {r["model_id"]: r for r in json.loads(out)}
    assert listed["alpha"]["slices"] is None
    stored = listed["gamma"]["slices"]
    assert (stored["budget"], stored["declared"], stored["confidence"]) == (audit.budget, 12, audit.confidence)
    assert stored["design"] == audit.design
    assert stored["slices"] == [encode(piece) for piece in verdict.slices]

    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "gamma", "--json")
    assert json.loads(out)["slices"] == stored
    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "gamma")
    assert (f"slices: own budget {audit.budget:.3g} over 12 slices, each at confidence {confidence}; claim eps 1 "
            "(every slice, the largest bound first)") in out
    assert sum(piece.name in out for piece in verdict.slices) == 12 and f"  design: {audit.design}" in out
    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "alpha")
    assert "slices: none declared" in out.splitlines()
    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "alpha", "--json")
    assert json.loads(out)["slices"] is None


# ------------------------------------------------------------------------------------------------ attack, family
def _attack_text(curve) -> str:
    """The attack's figures as the table prints them, from the record (not from the columns)."""
    def pct(name):
        return f"{100 * getattr(curve, name):.1f}%"

    def interval(name, fmt):
        return f"[{fmt(f'{name}_lower')}, {fmt(f'{name}_upper')}]"

    def auroc(name):
        return f"{getattr(curve, name):.3f}"

    return (f"TPR {pct('tpr_at_fpr_0_01')} at 1% FPR {interval('tpr_at_fpr_0_01', pct)}, "
            f"{pct('tpr_at_fpr_0_001')} at 0.1% FPR {interval('tpr_at_fpr_0_001', pct)}, "
            f"AUROC {auroc('auroc')} {interval('auroc', auroc)} ({100 * curve.bootstrap_confidence:g}% percentile "
            "bootstrap intervals)")


def test_the_attack_curve_and_the_familys_evidence_sit_beside_each_verdict(empty_target, capsys):
    """Rows stored with the attack's ROC figures and the family's evidence (each night through family_with, as the
    nightly computes it): under the table each verdict has one attack line (its bootstrap confidence read from the
    stored record: 90% here for loud) and one family line (the number of nights only when the listing is the
    model's whole history; FLAGGED when the row says so); show prints the same sentences; a row written before
    these columns prints neither."""
    import dataclasses

    from auditing.game.attack_curve import attack_curve
    from auditing.sinks.family import family_with
    from auditing.sinks.warehouse.schema import ATTACK_COLUMNS, FAMILY_COLUMNS
    from auditing.verdict.family_evidence import NightCounts, NightEvidence

    clean, leaky = _result(0.0), _result(0.45)
    stored, verdicts = [], {}
    with open_warehouse(empty_target) as wh:
        for index, (day, result) in enumerate(((D1, clean), (D2, leaky))):
            verdict = judge(result, 0.5)
            _, night = family_with(stored, "alpha", NightCounts.of_result(day, 0.5, verdict.result))
            at = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(1, index), tzinfo=dt.UTC)
            row, curve = audit_record(verdict, run_kind="nightly", model_id="alpha", partition_date=day,
                                      lineage={"started_at": at, "finished_at": at}, family=night)
            wh.write_audit(row, curve)
            stored.append(row)
            verdicts[day] = verdict
        # loud: a family past 1/alpha, its attack's intervals at 90%
        ninety = attack_curve(leaky.attack_curve.positives, leaky.attack_curve.negatives, seed=3, confidence=0.9)
        loud = judge(dataclasses.replace(leaky, attack_curve=ninety), 0.5)
        crossed = NightEvidence(D2, e_value=3.1e10, evidence=4.95e51, log_evidence=math.log(4.95e51), flagged=True)
        wh.write_audit(*audit_record(loud, run_kind="nightly", model_id="loud", partition_date=D2, family=crossed))
        # old: written before the attack and family columns existed
        row, curve = audit_record(judge(leaky, 0.5), run_kind="nightly", model_id="old", partition_date=D2)
        wh.write_audit(row.replace(**dict.fromkeys((*ATTACK_COLUMNS, *FAMILY_COLUMNS))), curve)
    alpha = stored[-1]
    assert alpha.family_flagged == 0 and alpha.family_evidence is not None and alpha.attack_auroc is not None
    attack = "attack (how well repetition 0's attack separates the labels; descriptive, not a bound on eps): "
    hint = "`labeldp-audit results family alpha` shows each night"

    code, out, _ = _run(capsys, "--warehouse", empty_target)
    assert code == 0 and attack not in out  # descriptive: with --wide
    code, out, _ = _run(capsys, "--warehouse", empty_target, "--wide")
    lines = out.splitlines()
    assert f"alpha@2024-01-02 {attack}{_attack_text(verdicts[D2].result.attack_curve)}" in lines
    assert f"loud@2024-01-02 {attack}{_attack_text(ninety)}" in lines and "(90% percentile bootstrap" in out
    family = next(line for line in lines if line.startswith("alpha@2024-01-02 family across nights: "))
    kappa = ": secondary, it holds only if kappa covers every night's reference"
    # these nights' coins were not keyed by their days: they enter no family, so its evidence stays 1
    assert family.startswith("alpha@2024-01-02 family across nights: the check's evidence 1 (kappa-free, this "
                             f"night's e-value {alpha.check_e_value:.3g}), not confirmed (1/alpha = 20); kappa-based "
                             f"evidence {alpha.family_evidence:.3g}{kappa}")  # latest only: no count
    assert family.endswith(f"; {hint}")
    assert "loud@2024-01-02 family across nights: the check's evidence 1 (kappa-free, this night's e-value" in out
    assert f"not confirmed (1/alpha = 20); kappa-based evidence 4.95e+51 (at 1/alpha){kappa}" in out
    # a row written before: no attack, no family line (its decision line, if any, stands on its own)
    assert not any(line.startswith("old@") and ("attack (" in line or "family across" in line) for line in lines)

    code, out, _ = _run(capsys, "--warehouse", empty_target, "--model", "alpha", "--wide")  # the whole history: counted
    assert "alpha@2024-01-02 family across nights after 2 nights: the check's evidence 1 " in out
    assert "alpha@2024-01-01 family across nights after 1 night: the check's evidence 1 " in out
    assert f"alpha@2024-01-01 {attack}{_attack_text(verdicts[D1].result.attack_curve)}" in out
    code, out, _ = _run(capsys, "--warehouse", empty_target, "--model", "alpha", "--since", "2024-01-02")
    assert "family across nights: the check's evidence" in out and "nights after" not in out  # filtered: not counted

    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "alpha", "--date", "2024-01-02")
    assert code == 0
    lines = out.splitlines()
    assert f"  {attack}{_attack_text(verdicts[D2].result.attack_curve)}" in lines
    shown = family.removeprefix("alpha@2024-01-02 ").replace("family across nights:", "family across nights after 2 "
                                                                                             "nights:", 1)
    assert "  " + shown in lines  # the same sentence, counted: show reads the model's history
    assert out.index("\ntrust: (") < out.index("\nslices: none declared") < out.index("\nfamily:\n") < out.index(attack)
    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "loud")
    assert f"  {attack}{_attack_text(ninety)}" in out.splitlines()
    assert "family across nights after 1 night: the check's evidence 1 (kappa-free, this night's e-value" in out
    code, out, _ = _run(capsys, "--warehouse", empty_target, "show", "old")
    assert "attack (" not in out and "family across nights" not in out
    assert "attack_auroc: NULL" in out and "family_evidence: NULL" in out  # the raw columns, as stored

    code, out, _ = _run(capsys, "--warehouse", empty_target, "--all", "--json")  # unchanged: the stored columns
    listed = {r["model_id"]: r for r in json.loads(out) if r["partition_date"] == "2024-01-02"}
    assert all(list(r) == [*RESULT_NAMES, "slices", "inputs_replaced_since"] for r in listed.values())
    assert listed["loud"]["family_flagged"] == 1 and listed["old"]["attack_auroc"] is None


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
    from auditing.sinks.warehouse.base import open_read_only

    with open_read_only(target) as wh:
        assert "gdp_mu_lower_bound" not in wh.columns and wh.version == LATEST
    with open_warehouse(target) as wh:  # a writer heals it, as before
        assert wh.fetch_results(model_id="beta")[0].gdp_mu_lower_bound is None


def test_the_readme_queries_run(target):
    """docs/warehouse.md "Querying the tables yourself": the query block of each backend, run as written on this
    warehouse."""
    import re

    doc = Path(__file__).resolve().parents[3] / "docs" / "warehouse.md"
    section = doc.read_text().split("## Querying the tables yourself")[1]
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
