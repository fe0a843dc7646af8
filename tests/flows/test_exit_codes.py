"""The exit codes of nightly / guardrail / backfill (flows/exit_codes.py), each produced by a real run of the command
line as a subprocess (synthetic days of 20K rows, 40 CatBoost iterations, 3 repetitions, controls off unless the
test is about them), a quiet terminal (no traceback, no Beam or Prefect noise), Ctrl-C, and a deployment run
through a real Prefect server that ends Failed with the spool path in its logs.

    0   tests below: test_violation_is_exit_1_only_when_asked_and_the_table_is_printed_either_way (without the flag)
    1   the same test (--fail-on-violation, and the guardrail)
    2   tests/flows/test_preflight.py (every kind of bad input), and test_a_missing_warehouse_directory_...
    3   test_an_unreachable_warehouse_is_exit_3_and_a_later_run_writes_the_spool
    4   test_a_failing_control_is_exit_4_with_the_table
    130 test_ctrl_c_during_scoring_exits_130_and_leaves_nothing_behind
    143 test_sigterm_during_scoring_exits_143_..., test_sigterm_during_training_exits_143_... (and a cancellation
        through Prefect: tests/behaviour/test_operations.py)

A closed stdout (`results --json | head`): read-only commands end quietly with 0, audit commands keep their code.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows import exit_codes
from flows.exit_codes import Outcome
from labeldp.codec import encode
from tests.support.data_root_files import snapshot
from tests.support.kill_harness import signal_when
from tests.support.pg_schema import postgres_url  # noqa: F401  (fixture: a PostgreSQL schema of this session)
from tests.support.planted import register_memorizer

REPO = Path(__file__).resolve().parents[2]
ROWS = 20_000
D0, D1, D2 = "2026-10-01", "2026-10-02", "2026-10-03"
DEAD = "postgresql://nobody@127.0.0.1:1/none"
RUN_TIMEOUT = 600


# ------------------------------------------------------------------------------------------ the contract


def _row(model="m", status="PASS", kind="target", warehouse="written", spool=None, **columns):
    """A published verdict as a run lists it (trusted, as a published verdict carries its trust, unless
    ``columns`` say otherwise)."""
    from auditing.sinks.listing import ListedVerdict
    from auditing.sinks.warehouse.records import upgrade_row

    row = upgrade_row({"model_id": model, "model_fingerprint": "fp", "partition_date": dt.date.fromisoformat(D1),
                       "run_kind": "nightly", "claimed_epsilon": 1.0, "audit_config_hash": "abc", "delta": 0.0,
                       "confidence": 0.95, "gamma": 0.05, "m": 100, "selected_guesses": 10, "selected_correct": 9,
                       "epsilon_lower_bound": 1.5, "strategy": "bonferroni", "method": "binomial", "status": status,
                       "max_certifiable_epsilon": 5.0, "repetitions": 3, "seed": 0, "result_json": "{}",
                       "kind": kind, "trust": "trusted", **columns})
    return ListedVerdict(row, report="r.html", warehouse=warehouse, spool_path=spool)


def _with(listed, **columns):
    """``listed`` with some of its row's columns changed."""
    from dataclasses import replace

    return replace(listed, row=listed.row.replace(**columns))


def test_the_first_of_2_3_4_1_wins_and_the_summary_names_each():
    assert Outcome(rows=[_row()]).exit_code() == exit_codes.OK
    violation = _row("leaky", "VIOLATION")
    assert Outcome(rows=[violation]).exit_code() == exit_codes.OK  # nightly default: not a failure
    assert Outcome(rows=[violation], fail_on_violation=True).exit_code() == exit_codes.VIOLATION
    control = _row("control-positive", "VIOLATION", kind="control")
    assert Outcome(rows=[control], fail_on_violation=True).exit_code() == exit_codes.OK  # judged as a control
    everything = Outcome(rows=[violation, _row("x", warehouse="spooled", spool="/r/spool/x.json")],
                         untrusted=["the controls failed"], failures=["y: boom"], bad_input=["z: no model"],
                         fail_on_violation=True)
    assert everything.codes() == [2, 3, 1, 4] and everything.exit_code() == 2
    lines = exit_codes.summary_lines(everything, "backfill", exit_codes.drain_command("/r", DEAD))
    assert [line.split(":")[1].strip() for line in lines] == ["exit 2", "also 3", "also 1", "also 4"]
    assert "/r/spool" in lines[1] and "labeldp-audit nightly --drain-only --data-root /r --warehouse" in lines[1]
    assert "leaky@" in lines[2] and "the controls failed" in lines[3] and "y: boom" in lines[3]
    # exit codes follow the decision: an unconfirmed leak exits 4, never 1; a leak to act on wins over it
    assert violation.row.decision == "act"  # a trusted VIOLATION's row
    untrusted = _with(violation, model_id="misfit", trust="untrusted", untrusted_reason="misfit explains it",
                      decision="unconfirmed", decision_reason="misfit explains it")
    assert Outcome(rows=[untrusted], fail_on_violation=True).codes() == [4]
    both = Outcome(rows=[violation, untrusted], fail_on_violation=True)
    assert both.codes() == [1, 4] and both.exit_code() == 1
    assert [r.row.model_id for r in both.violations] == ["leaky"]
    assert "misfit explains it" in " ".join(exit_codes.summary_lines(both, "nightly", ""))
    accepted = _row("leaky", "VIOLATION", trust="reference unchecked, accepted")
    assert accepted.row.decision == "act" and Outcome(rows=[accepted], fail_on_violation=True).exit_code() == 1
    # a PASS nothing checked is no evidence of a leak (exit 0); a VIOLATION nothing checked is unconfirmed (exit 4)
    assert Outcome(rows=[_row(trust="reference unchecked")]).exit_code() == 0
    assert Outcome(rows=[_row(status="VIOLATION", trust="reference unchecked")]).exit_code() == 4
    # a failed negative control voids its night: its targets have no power, and the run exits 4 for it; a positive
    # control below its floor voids the PASSes' floors only (no power, exit 0)
    failed_control = _row("control-negative", kind="control", control_passed=0, trust="untrusted",
                          untrusted_reason="the control failed: a copy of the reference shows evidence")
    void = _row("m", trust="untrusted", untrusted_reason="the night is void: control-negative failed")
    assert void.row.decision == "no_power"
    outcome = Outcome(rows=[failed_control, void])
    outcome.collect_untrusted()
    assert outcome.codes() == [4] and any("control-negative failed" in u for u in outcome.untrusted)
    floors = _row("m", detectability="void")
    assert floors.row.decision == "no_power" and Outcome(rows=[floors]).codes() == []
    assert exit_codes.summary_lines(Outcome(rows=[_row()]), "nightly", "") == []
    days = [exit_codes.DayOutcome(dt.date.fromisoformat(D1), "audited", Outcome(rows=[violation])),
            exit_codes.DayOutcome(dt.date.fromisoformat(D2), "audited (exit 4)", Outcome(failures=["a: b"]))]
    merged = Outcome.of_days(days, fail_on_violation=True)
    assert merged.codes() == [1, 4] and [d.date.isoformat() for d in merged.days] == [D1, D2]
    failed = exit_codes.OutcomeFailed("why", everything)
    import pickle

    again = pickle.loads(pickle.dumps(failed))
    assert again.rows == everything.rows and str(again) == "why"


@pytest.mark.parametrize("command", ["nightly", "guardrail", "backfill"])
def test_help_lists_every_exit_code(command):
    done = subprocess.run([sys.executable, "-m", "flows.cli", command, "--help"], cwd=REPO, capture_output=True,
                          text=True, check=True)
    text = " ".join(done.stdout.split())
    for code, meaning in exit_codes.MEANINGS.items():
        assert f"{code} {' '.join(meaning.split())}" in text, (code, meaning)


def test_the_readme_lists_every_decision_and_exit_code_in_one_table():
    """The README's short table names each decision and exit code, with the exit code it gives; docs/concepts.md
    gives each status the words of --help, the report and the table's legend (`STATUS_MEANINGS`), and names every
    decision, trust state and exit code."""
    from auditing.sinks.report.wording import STATUS_MEANINGS
    from auditing.verdict.types import DECISIONS, STATUSES, TRUST_STATES

    text = (REPO / "README.md").read_text()
    block = text[text.index("## Decisions and exit codes"):]
    table = block[block.index("\n|"):]
    table = table[:table.index("\n\n")]
    for code in exit_codes.MEANINGS:
        assert f"| exit `{code}` |" in table and table.count(f"| {code} |") >= 1, code
    for decision in DECISIONS:
        assert f"| `{decision}` | " in table and f"| {exit_codes.decision_exit_code(decision)}" in table, decision
    concepts = " ".join((REPO / "docs" / "concepts.md").read_text().split())
    for status in STATUSES:
        assert f"- `{status}`: {' '.join(STATUS_MEANINGS[status].split())};" in concepts, status
    for state in TRUST_STATES:
        assert f"- trust `{state}`: " in concepts, state
    for decision in DECISIONS:
        assert f"- `{decision}`: " in concepts, decision
    for code in exit_codes.MEANINGS:
        assert f"- exit `{code}`: " in concepts, code


def test_help_lists_every_decision_with_its_exit_code_and_every_status():
    from auditing.sinks.report.wording import STATUS_MEANINGS
    from auditing.verdict.types import DECISIONS, HEADLINES, MEANINGS

    done = subprocess.run([sys.executable, "-m", "flows.cli", "nightly", "--help"], cwd=REPO, capture_output=True,
                          text=True, check=True)
    text = " ".join(done.stdout.split())
    for decision in DECISIONS:
        assert (f"{decision} {HEADLINES[decision]}: {' '.join(MEANINGS[decision].split())} "
                f"(exit {exit_codes.decision_exit_code(decision)}") in text, decision
    for status, meaning in STATUS_MEANINGS.items():
        assert f"{status} {' '.join(meaning.split())}" in text, status


# ------------------------------------------------------------------------------------------ real runs

slow = pytest.mark.slow


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("data")
    for day in (D0, D1, D2):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    for day in (D1, D2):  # the planted violation (tests/support/planted.py)
        register_memorizer(root, day)
    return root


def _plan(directory: Path, name: str, **changes) -> str:
    plan = {"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0},
                        {"name": "leaky", "source": "registered", "claimed_epsilon": 0.0}],
            "catboost_iterations": 40, "audit": {"repetitions": 3, "grid_points": 30},
            "controls": {"enabled": False}}
    plan.update(changes)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(plan))
    return str(path)


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("plans"), "plan")


@pytest.fixture(scope="module")
def prefect_api():
    """A real Prefect server (the test harness's) for the tests that read a run's state or run a deployment;
    its API URL."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield PREFECT_API_URL.value()


def _env() -> dict:
    env = dict(os.environ)  # PREFECT_API_URL: the test process's server (tests/conftest.py)
    env.setdefault("NUMBA_CACHE_DIR", str(REPO / ".venv" / "numba-cache"))
    return env


def cli(*argv: str, timeout: float = RUN_TIMEOUT, ephemeral: bool = False) -> subprocess.CompletedProcess:
    """``labeldp-audit *argv``; ``ephemeral``: with no Prefect server (Prefect starts its temporary one, as on a
    fresh machine), otherwise the test process's server."""
    env = _env()
    if ephemeral:
        env.pop("PREFECT_API_URL", None)
    return subprocess.run([sys.executable, "-m", "flows.cli", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env)


def assert_quiet(err: str) -> None:
    """Only our own lines on the terminal: progress, warnings and the summary; no traceback, no library noise."""
    for line in err.splitlines():
        assert line.startswith(("[labeldp-audit", "[score ", "labeldp-audit ")), f"noise on the terminal: {line!r}"
    assert "Traceback" not in err


def nightly(root, plan, *extra) -> list[str]:
    return ["nightly", "--date", D1, "--data-root", str(root), "--plan", plan, *extra]


def stored(root, warehouse=None) -> list:
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(warehouse, data_root=root) as store:
        return store.fetch_results()


@slow
def test_violation_is_exit_1_only_when_asked_and_the_table_is_printed_either_way(data_root, plan):
    done = cli(*nightly(data_root, plan, "--fail-on-violation"), ephemeral=True)  # no Prefect server: a fresh machine
    assert done.returncode == exit_codes.VIOLATION, done.stderr
    assert re.search(r"^\S.* leaky +2026-10-02 +VIOLATION", done.stdout, re.M), done.stdout
    assert "rr-eps1" in done.stdout
    assert_quiet(done.stderr)
    assert "labeldp-audit nightly: exit 1: 1 VIOLATION: the claimed epsilon is disproved for leaky@2026-10-02" \
        in done.stderr
    assert "debug log" not in done.stderr  # its path is printed on a failure only
    logs = list((data_root / "logs").glob("labeldp-*.log"))
    assert logs and any("Beginning flow run" in p.read_text() for p in logs)  # Prefect's lines went there

    done = cli(*nightly(data_root, plan, "--json"))
    assert done.returncode == exit_codes.OK, done.stderr
    rows = json.loads(done.stdout)  # stdout holds the JSON and nothing else
    assert {r["model_id"]: r["status"] for r in rows}["leaky"] == "VIOLATION"
    assert_quiet(done.stderr)
    assert "exit" not in done.stderr

    done = cli("guardrail", "--model", "leaky", "--date", D1, "--claimed-epsilon", "0", "--data-root",
               str(data_root), "--plan", plan)
    assert done.returncode == exit_codes.VIOLATION and "leaky" in done.stdout, done.stderr
    assert_quiet(done.stderr)
    # the guardrail's verdict (claim 0) sits beside the nightly's rows, which it does not replace
    assert sorted((r.model_id, r.run_kind, r.claimed_epsilon) for r in stored(data_root)) == [
        ("leaky", "guardrail", 0.0), ("leaky", "nightly", 0.0), ("rr-eps1", "nightly", 1.0)]


@slow
def test_a_missing_warehouse_directory_is_exit_2_unless_asked_to_create_it(data_root, plan, tmp_path):
    target = tmp_path / "new" / "warehouse.duckdb"
    done = cli(*nightly(data_root, plan, "--warehouse", str(target)))
    assert done.returncode == exit_codes.BAD_INPUT and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "new").exists()
    done = cli(*nightly(data_root, plan, "--warehouse", str(target), "--create-warehouse"))
    assert done.returncode == exit_codes.OK, done.stderr
    assert {r.model_id for r in stored(data_root, str(target))} == {"rr-eps1", "leaky"}


@slow
def test_a_failing_control_voids_what_it_guards_with_the_table(data_root, tmp_path):
    """A positive control below its floor voids the PASSes' detectability, not the verdicts: exit 0, the table
    shows the failed control and the target's floors as void."""
    weak = _plan(tmp_path, "weak", targets=[{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}],
                 controls={"positive_epsilon": 0.01})
    done = cli(*nightly(data_root, weak, "--json"))
    assert done.returncode == exit_codes.OK, done.stderr
    assert_quiet(done.stderr)
    rows = {r["model_id"]: r for r in json.loads(done.stdout)}
    assert rows["control-positive"]["control_passed"] == 0 and rows["control-positive"]["trust"] == "untrusted"
    assert rows["rr-eps1"]["trust"] == "trusted" and rows["rr-eps1"]["detectability"] == "void"


@slow
def test_an_unreachable_warehouse_is_exit_3_and_a_later_run_writes_the_spool(data_root, plan, postgres_url):  # noqa: F811
    """An outage of a PostgreSQL warehouse (nothing listens at its address), then the same address back: the
    rows spool for that warehouse, a drain aimed at another warehouse exits 2 and touches nothing, a drain while
    it is still down exits 3, and the next night on it writes them first."""
    from tests.support.pg_gate import PostgresGate

    spool = data_root / "spool"
    with PostgresGate(postgres_url) as gate:
        down = gate.url
        done = cli(*nightly(data_root, plan, "--warehouse", down, "--fail-on-violation"))
        assert done.returncode == exit_codes.NOT_IN_WAREHOUSE, done.stderr
        assert_quiet(done.stderr)
        files = sorted(p.name for p in spool.glob("*.json"))
        assert len(files) == 2 and all(name in done.stderr for name in files) and str(spool) in done.stderr
        assert all("__nightly__" in name for name in files)
        assert f"labeldp-audit nightly --drain-only --data-root {data_root} --warehouse {shlex.quote(down)}" \
            in done.stderr
        assert "labeldp-audit nightly: also 1: 1 VIOLATION" in done.stderr  # both applied; 3 wins
        assert f"warning: warehouse {down} does not answer" in done.stderr
        assert "leaky" in done.stdout  # the table, though nothing reached the warehouse

        done = cli("backfill", "--start", D1, "--end", D1, "--data-root", str(data_root), "--plan", plan,
                   "--warehouse", down)
        assert done.returncode == exit_codes.NOT_IN_WAREHOUSE, done.stderr
        assert f"{D1}: audited (exit 3)" in done.stdout and "exit 3:" in done.stderr
        assert len(list(spool.glob("*__backfill__*.json"))) == 2  # a backfill's verdicts are its own

        spooled = {p: p.read_bytes() for p in spool.glob("*.json")}
        local = data_root / "warehouse.duckdb"
        local_before = local.read_bytes() if local.exists() else None
        done = cli("nightly", "--drain-only", "--data-root", str(data_root))  # aimed at the local DuckDB file
        assert done.returncode == exit_codes.BAD_INPUT and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "4 spooled result(s)" in done.stderr and "meant for the postgres warehouse postgresql://127.0.0.1:" \
            f"{gate.port}/test" in done.stderr
        assert f"--drain-only --data-root {data_root} --warehouse 'postgresql://127.0.0.1:{gate.port}/test" \
            in done.stderr
        assert {p: p.read_bytes() for p in spool.glob("*.json")} == spooled  # nothing removed
        assert (local.read_bytes() if local.exists() else None) == local_before  # nor the local warehouse touched

        done = cli("nightly", "--drain-only", "--data-root", str(data_root), "--warehouse", down)
        assert done.returncode == exit_codes.NOT_IN_WAREHOUSE and "4 result(s) still in" in done.stderr

        # The warehouse is back at its address: a later night (another day) writes the spooled rows first.
        gate.open()
        done = cli("nightly", "--date", D2, "--models", "rr-eps1", "--data-root", str(data_root), "--plan", plan,
                   "--warehouse", down)
        assert done.returncode == exit_codes.OK, done.stderr
        assert "wrote 4 spooled result(s) from an earlier run" in done.stderr
        assert not list(spool.glob("*.json"))
        keys = {(r.model_id, r.partition_date.isoformat(), r.run_kind) for r in stored(data_root, postgres_url)}
        assert {("rr-eps1", D1, "nightly"), ("leaky", D1, "nightly"), ("rr-eps1", D1, "backfill"),
                ("leaky", D1, "backfill"), ("rr-eps1", D2, "nightly")} <= keys


@slow
def test_ctrl_c_during_scoring_exits_130_and_leaves_nothing_behind(data_root, tmp_path):
    """Ctrl-C (SIGINT to the command's process group, as a terminal sends it) once the scoring has started: exit 130
    within 5 s, one line "interrupted", no new model or sweep directory, the warehouse as it was."""
    other = _plan(tmp_path, "four", audit={"repetitions": 4, "grid_points": 30})  # same models, a new sweep

    def layout():
        return sorted(str(p.relative_to(data_root)) for top in ("models", "sweeps", "scored")
                      for p in (data_root / top).rglob("*") if (data_root / top).exists())

    before, rows_before = layout(), stored(data_root)
    child = subprocess.Popen([sys.executable, "-m", "flows.cli", *nightly(data_root, other)], cwd=REPO, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), start_new_session=True)
    seen = []
    for line in child.stderr:
        seen.append(line)
        if ": inference" in line:  # the Beam job is scoring ("pipeline: ..." or, two-stage, "pipeline 1: ...")
            break
    assert child.poll() is None, "".join(seen)
    sent = time.monotonic()
    os.killpg(child.pid, signal.SIGINT)
    _out, err = child.communicate(timeout=30)
    took = time.monotonic() - sent
    assert child.returncode == exit_codes.INTERRUPTED, "".join(seen) + err
    assert took < 5, f"exit took {took:.1f} s"
    assert err.strip().splitlines()[-1] == "labeldp-audit nightly: interrupted" and "Traceback" not in err
    assert_quiet(err)
    assert layout() == before and not list(data_root.rglob(".tmp-*"))
    assert stored(data_root) == rows_before


def _stop_when(argv: list[str], marker: str, number: int, env: dict | None = None):
    """Runs the command line, sends ``number`` to its process (as a scheduler or Kubernetes does: the process,
    not its group) once a stderr line holds ``marker``; (exit code, stderr, seconds from the signal to the
    exit). The process must end within 30 s of the signal (tests/support/kill_harness.py's `signal_when`)."""
    return signal_when([sys.executable, "-m", "flows.cli", *argv], marker, 0.0, number, env or _env(), timeout=30)


@slow
def test_sigterm_during_scoring_exits_143_leaves_nothing_and_the_run_crashed(data_root, plan, tmp_path,
                                                                           prefect_api):
    """SIGTERM (what Kubernetes, systemd or a Prefect worker sends) once the Beam job scores: exit 143, one line
    "terminated", no new or rewritten file under the data root, the warehouse as it was, and the flow run
    Crashed (a signal from outside), not Failed with an audit error."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterStartTime
    from prefect.client.schemas.sorting import FlowRunSort

    assert cli(*nightly(data_root, plan)).returncode == exit_codes.OK  # the night's models exist (or are made)
    before, rows_before = snapshot(data_root), stored(data_root)
    started = dt.datetime.now(dt.UTC)
    six = _plan(tmp_path, "six", audit={"repetitions": 6, "grid_points": 30})  # same models, a new sweep
    code, err, took = _stop_when(nightly(data_root, six), ": inference", signal.SIGTERM,
                                 env={**_env(), "PREFECT_API_URL": prefect_api})
    print(f"SIGTERM during scoring: exit {code} {took:.1f} s after the signal")
    assert code == exit_codes.TERMINATED, err
    assert err.strip().splitlines()[-1] == "labeldp-audit nightly: terminated"
    assert_quiet(err)
    assert "failed" not in err and "exit 4" not in err
    assert snapshot(data_root) == before and not list(data_root.rglob(".tmp-*"))
    assert stored(data_root) == rows_before
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(
            after_=started)), sort=FlowRunSort.START_TIME_DESC, limit=5)
    assert runs and runs[0].state.is_crashed(), [(r.name, r.state) for r in runs]
    assert "termination signal" in runs[0].state.message


@slow
def test_sigterm_during_training_exits_143_and_touches_no_other_runs_files(data_root, plan, tmp_path):
    """SIGTERM while CatBoost trains a new target: exit 143, the target's model never appears, and no file of
    another run (partitions, models, sweeps, reports) is rewritten."""
    fresh = _plan(tmp_path, "fresh", targets=[{"name": "rr-eps2", "mechanism": "rr", "epsilon": 2.0}],
                  catboost_iterations=400)  # long enough to be caught training
    assert cli(*nightly(data_root, plan)).returncode == exit_codes.OK  # the night's models exist (or are made)
    before, rows_before = snapshot(data_root), stored(data_root)
    code, err, took = _stop_when(nightly(data_root, fresh), "rr eps=2: fitting CatBoost", signal.SIGTERM)
    print(f"SIGTERM during training: exit {code} {took:.1f} s after the signal")
    assert code == exit_codes.TERMINATED, err
    assert err.strip().splitlines()[-1] == "labeldp-audit nightly: terminated"
    assert_quiet(err)
    assert not (data_root / "models" / "rr-eps2").exists()
    assert snapshot(data_root) == before and not list(data_root.rglob(".tmp-*"))
    assert stored(data_root) == rows_before


@slow
def test_a_closed_stdout_ends_read_only_commands_quietly_and_audit_commands_keep_their_code(data_root, plan,
                                                                                                tmp_path):
    """`results --json | head`: the reader goes away before the output is written. A read-only command ends with
    0 and says nothing; an audit keeps its outcome's code (1: a VIOLATION with --fail-on-violation) and its
    summary on stderr."""
    root = str(data_root)
    assert stored(data_root), "an earlier test of this module writes the rows read here"
    read_only = [["results", "--json", "--data-root", root], ["results", "--data-root", root],
                 ["results", "--csv", "--all", "--data-root", root], ["models", "list", "--data-root", root],
                 ["models", "show", "leaky", "--json", "--data-root", root], ["plan", "check", plan],
                 ["plan", "schema"]]

    def closed(argv):
        child = subprocess.Popen([sys.executable, "-m", "flows.cli", *argv], cwd=REPO, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=_env())
        child.stdout.close()  # as `| head` does once it has its lines
        err = child.stderr.read().decode()
        return child.wait(RUN_TIMEOUT), err

    for argv in read_only:
        code, err = closed(argv)
        assert (code, err) == (0, ""), (argv, code, err)
    code, err = closed(nightly(data_root, plan, "--fail-on-violation"))
    assert code == exit_codes.VIOLATION, err
    assert_quiet(err)
    assert "labeldp-audit nightly: exit 1: 1 VIOLATION" in err

    # And through a real pipe to head, as a user types it.
    for argv in (["results", "--json", "--all"], ["models", "list"]):
        done = subprocess.run(["bash", "-c", f"set -o pipefail; {shlex.join([sys.executable, '-m', 'flows.cli', *argv])}"
                               f" --data-root {shlex.quote(root)} | head -c 10"], cwd=REPO, capture_output=True,
                              text=True, env=_env(), timeout=RUN_TIMEOUT)
        assert (done.returncode, done.stderr) == (0, ""), (argv, done.stderr)
        assert len(done.stdout) == 10


@slow
def test_a_deployment_run_with_an_unreachable_warehouse_ends_failed_with_the_spool_path_in_its_logs(
        data_root, plan, prefect_api):
    """`labeldp-audit serve` registers the nightly deployment with a real Prefect server (the test harness's) and
    runs it in a flow-run process of its own; the run ends Failed and its logs name the spooled file."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.deployments import run_deployment

    for path in (data_root / "spool").glob("*.json"):
        path.unlink()
    env = {**_env(), "PREFECT_API_URL": prefect_api, "PREFECT_RUNNER_POLL_FREQUENCY": "2"}
    server = subprocess.Popen([sys.executable, "-m", "flows.cli", "serve", "--name", "exit-codes", "--cron",
                               "0 3 1 1 *", "--data-root", str(data_root), "--warehouse", DEAD, "--plan", plan],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with get_client(sync_client=True) as client:
                    client.read_deployment_by_name("nightly-audit/exit-codes")
                break
            except Exception:
                assert time.monotonic() < deadline and server.poll() is None, "the deployment never appeared"
                time.sleep(1)
        run = run_deployment("nightly-audit/exit-codes", parameters={"date": D1, "models": ["rr-eps1"]},
                             timeout=RUN_TIMEOUT)
        assert run.state.is_failed(), run.state
        spooled = [p.name for p in (data_root / "spool").glob("*.json")]
        assert spooled and spooled[0].startswith("rr-eps1__2026-10-02__")
        assert spooled[0] in run.state.message and "exit 3" in run.state.message
        # the run's logs reach the API in batches after the run's state does: read until they are there (a loaded
        # machine once read none right after the run ended)
        logs_deadline = time.monotonic() + 60
        while True:
            with get_client(sync_client=True) as client:
                logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
            found = any(spooled[0] in log.message and "--drain-only" in log.message for log in logs)
            if found or time.monotonic() > logs_deadline:
                break
            time.sleep(1)
        assert found, [log.message for log in logs][-10:]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


# What Outcome.to_dict gave before the codec (json.dumps(default=str) of it), for `_outcome_sample`.
OUTCOME_BEFORE = (Path(__file__).parent / "fixtures" / "outcome_before.json").read_text(encoding="utf-8")


def _outcome_sample():
    """An outcome with a listed verdict, a skipped target and a backfill's days, built by hand."""
    import datetime as dt

    from auditing.sinks.listing import ListedVerdict, SkippedTarget
    from auditing.sinks.warehouse import normalize_row
    from auditing.sinks.warehouse.records import upgrade_row
    from flows.exit_codes import DayOutcome, Outcome
    from tests.support.warehouse_rows import make_row

    listed = ListedVerdict(upgrade_row(normalize_row(make_row(started_at=None, finished_at=None)[0])), report="/r.html")
    skipped = SkippedTarget("late", dt.date(2024, 1, 2), "no model file")
    day = DayOutcome(dt.date(2024, 1, 2), "1 verdict", Outcome(rows=[skipped]))
    return Outcome(rows=[listed, skipped], untrusted=["why"], failures=["m: boom"], bad_input=["plan: bad"],
                   fail_on_violation=True, days=[day, DayOutcome(dt.date(2024, 1, 3), "skipped: done", Outcome())])


def test_an_outcome_encodes_as_its_to_dict_wrote_it():
    assert json.dumps(encode(_outcome_sample())) + "\n" == OUTCOME_BEFORE
