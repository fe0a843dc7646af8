"""Operations for real: a long-lived `prefect server start` (its own SQLite database and PREFECT_HOME in a temp
dir, a free port on 127.0.0.1), the deployments of infra/prefect.yaml applied with `prefect deploy`, process
workers, runs triggered with `prefect deployment run`, and PostgreSQL (127.0.0.1:5432, database `test`, a
schema of its own) as the warehouse. Every command is the runbook's (infra/README.md), run through
scripts/ops.sh.

What is checked, in order (the tests share one server and build on each other's rows):
1. the nightly deployment on a worker: warehouse rows in PostgreSQL, the run's artifacts, the VIOLATION
   event and the run's heartbeats, all read back through the Prefect API (get_client);
2. nightly and guardrail runs writing the same and different keys at once: one row per key, none lost;
3. a 3-day backfill at concurrency 2 whose worker is SIGKILLed mid-run: the run ends Crashed (its engine
   process notices the dead worker and stops), `ops.sh retry` on a new worker resumes it, the days finished
   before the kill are skipped, and every (model, day) row is there exactly once;
4. a run whose machine died (worker and flow-run process SIGKILLed) is marked Crashed by the automation;
5. a run cancelled with `ops.sh cancel` while it works ends Cancelled (never Failed), stops, leaves nothing
   half-written, touches no earlier run's file and writes no row.

Sizes are small (20K rows/day, 20 CatBoost iterations, 3 repetitions); the module takes ~3-4 minutes on
2 cores, most of it Prefect and CatBoost start-up in each flow-run process.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.data_root_files import snapshot
from tests.support.pg_schema import own_schema
from tests.support.planted import register_memorizer
from tests.support.service_processes import (
    REPO,
    ServiceProcesses,
    assert_runbook_has_what_ran,
    free_port,
    ops_command,
    process_alive,
    run_ops,
    wait_until,
)

pytestmark = pytest.mark.slow

ROWS = 20_000
DAYS = [dt.date(2026, 10, 1) + dt.timedelta(days=i) for i in range(8)]  # D0 is only the first reference's day
D1, D2, D6, D7 = DAYS[1].isoformat(), DAYS[2].isoformat(), DAYS[6].isoformat(), DAYS[7].isoformat()
BACKFILL = [d.isoformat() for d in DAYS[3:6]]
TARGETS = ("rr-eps1", "leaky")
RUN_TIMEOUT = 420  # seconds for one flow run on 2 loaded cores (typically 20-60 s)


# --------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def warehouse_url():
    """A PostgreSQL schema of this module's own (search_path in the URL), dropped at the end."""
    with own_schema("labeldp_ops", "OPERATIONS TEST NOT RUN") as url:
        yield url


@pytest.fixture(scope="module")
def ops(tmp_path_factory, warehouse_url):
    """Server + deployments + one worker, all started with scripts/ops.sh and stopped by process group."""
    from flows.plan import AuditPlan
    from pipelines.data.synth import write_synthetic_day

    tmp = tmp_path_factory.mktemp("ops")
    data_root = tmp / "data"
    for day in DAYS:
        write_synthetic_day(data_root, day, rows=ROWS)
        if day != DAYS[0]:  # the planted violation, registered for every audited day
            register_memorizer(data_root, day.isoformat())
    plan = tmp / "plan.json"
    plan_data = {
        "targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0},
                    {"name": "leaky", "source": "registered", "claimed_epsilon": 0.0}],
        "catboost_iterations": 20,
        "audit": {"repetitions": 3, "grid_points": 30},
    }
    if "controls" in {f.name for f in dataclasses.fields(AuditPlan)}:
        # The nightly controls have their own tests; here they would only double each run's training.
        plan_data["controls"] = {"enabled": False}
    plan.write_text(json.dumps(plan_data))
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({
        "PREFECT_HOME": str(tmp / "prefect-home"),  # the server's SQLite database lives here
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "LABELDP_PREFECT_PORT": str(port),
        "PREFECT_API_URL": api,
        "LABELDP_DATA_ROOT": str(data_root),
        "LABELDP_WAREHOUSE": warehouse_url,
        "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".venv" / "numba-cache")),
    })
    services = ServiceProcesses(tmp, env)
    ns = SimpleNamespace(env=env, api=api, data_root=data_root, plan=str(plan), services=services,
                         warehouse=warehouse_url, worker=None)
    try:
        server = services.start("server", "server")
        wait_until(lambda: server.poll() is not None or _healthy(api), 240, f"the Prefect server at {api}",
                   on_timeout=lambda: services.log_tail("server"))
        assert server.poll() is None, f"prefect server exited {server.returncode}\n{services.log_tail('server')}"
        ns.deploy_output = run_ops("deploy", env=env)
        ns.worker = services.start("worker-1", "worker")
        yield ns
    finally:
        _kill_flow_run_processes(ns)
        services.stop_all()


def _healthy(api: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api}/health", timeout=2) as response:
            return response.read().strip() == b"true"
    except OSError:
        return False


def _client(ns):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    class _Scoped:
        def __enter__(self):
            self._settings = temporary_settings(updates={PREFECT_API_URL: ns.api})
            self._settings.__enter__()
            self._client = get_client(sync_client=True)
            return self._client.__enter__()

        def __exit__(self, *exc):
            self._client.__exit__(*exc)
            self._settings.__exit__(*exc)

    return _Scoped()


def _kill_flow_run_processes(ns) -> None:
    """Flow-run processes run in sessions of their own (not in their worker's group): stop any still running."""
    import signal

    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType

    if not _healthy(ns.api):
        return
    with _client(ns) as client:
        running = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING, StateType.PENDING]))))
    for run in running:
        pid = _engine_pid(run)
        if pid and process_alive(pid) and b"prefect.engine" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.killpg(pid, signal.SIGKILL)


def _engine_pid(run) -> int | None:
    """The flow-run process id from `infrastructure_pid` ("host:pid" for a process worker)."""
    value = run.infrastructure_pid or ""
    tail = value.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


# --------------------------------------------------------------------------------------------- helpers
def trigger(ns, *args: str) -> uuid.UUID:
    """`bash scripts/ops.sh ARGS...` (a `prefect deployment run`); the new flow run's id."""
    output = run_ops(*args, env=ns.env, timeout=120)
    match = re.search(r"UUID: ([0-9a-f-]{36})", output)
    assert match, f"no flow run id in the output of `ops.sh {' '.join(args)}`:\n{output}"
    return uuid.UUID(match.group(1))


def read_run(ns, run_id):
    with _client(ns) as client:
        return client.read_flow_run(run_id)


def run_logs(ns, run_id) -> list[str]:
    """The run's newest 200 log messages, oldest first."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.client.schemas.sorting import LogSort

    with _client(ns) as client:
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])), limit=200,
                                sort=LogSort.TIMESTAMP_DESC)
    return [log.message for log in reversed(logs)]


def wait_final(ns, run_id, timeout: float = RUN_TIMEOUT):
    """Waits for a terminal state; the flow run. The failure message carries the run's last logs."""
    def final():
        run = read_run(ns, run_id)
        return run if run.state and run.state.is_final() else None

    return wait_until(final, timeout, f"flow run {run_id} to finish", interval=1.0,
                      on_timeout=lambda: "\n".join(run_logs(ns, run_id)[-30:]))


def assert_completed(ns, run):
    assert run.state.is_completed(), (f"flow run {run.name} ended {run.state.name}: {run.state.message}\n"
                                      + "\n".join(run_logs(ns, run.id)[-30:]))


def warehouse_rows(ns) -> list:
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(ns.warehouse) as store:
        return store.fetch_results()


def keys_of(rows) -> list[tuple[str, str]]:
    return sorted((r.model_id, r.partition_date.isoformat()) for r in rows)


def runbook_sql() -> list[str]:
    """The ```sql blocks of the runbook (infra/README.md), one statement per block."""
    text = (REPO / "infra" / "README.md").read_text()
    return [block.strip() for block in re.findall(r"```sql\n(.*?)```", text, flags=re.S)]


# --------------------------------------------------------------------------------------------- tests
def test_nightly_deployment_on_a_worker_writes_postgres_artifacts_and_events(ops):
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter

    assert "labeldp-unresponsive-flow-runs" in ops.deploy_output
    started = dt.datetime.now(dt.UTC)
    run_id = trigger(ops, "nightly", D1, "-p", f"plan_file={ops.plan}")
    run = wait_final(ops, run_id)
    assert_completed(ops, run)
    assert run.work_pool_name == "labeldp-process" and "labeldp" in run.tags

    rows = {r.model_id: r for r in warehouse_rows(ops)}
    assert keys_of(rows.values()) == sorted((m, D1) for m in TARGETS)
    assert rows["leaky"].status == "VIOLATION"  # a memoriser claiming eps = 0: the planted violation
    assert rows["rr-eps1"].status != "VIOLATION"
    assert {r.flow_run_id for r in rows.values()} == {str(run_id)}  # lineage names the deployment's run

    with _client(ops) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
    by_key = {a.key: a for a in artifacts}
    assert {"labeldp-audit-summary", "report-leaky", "report-rr-eps1"} <= set(by_key)
    table = json.loads(by_key["labeldp-audit-summary"].data)
    assert {(r["model_id"], r["status"]) for r in table} >= {("leaky", "VIOLATION")}
    link = re.search(r"file://[^)\s]+", str(by_key["report-leaky"].data))
    assert link, by_key["report-leaky"].data
    report = Path(urllib.parse.unquote(urllib.parse.urlsplit(link.group(0)).path))
    assert report.is_file() and report.stat().st_size > 0

    def events(name):
        with _client(ops) as client:
            page = client.read_events(filter=EventFilter(
                occurred=EventOccurredFilter(since=started), event=EventNameFilter(name=[name]),
                resource=EventResourceFilter(id_prefix=["labeldp.model.", f"prefect.flow-run.{run_id}"])),
                limit=50)  # the server allows at most 50 per page (the client's default is 100)
        return page.events

    violation = wait_until(lambda: events("labeldp.audit.violation"), 60, "the labeldp.audit.violation event")
    assert [e.resource.id for e in violation] == ["labeldp.model.leaky"]
    assert violation[0].payload["partition_date"] == D1 and violation[0].payload["claimed_epsilon"] == 0.0
    # Heartbeats (PREFECT_FLOWS_HEARTBEAT_FREQUENCY from infra/prefect.yaml) drive the unresponsive-run automation.
    assert wait_until(lambda: events("prefect.flow-run.heartbeat"), 60, "a heartbeat event of the nightly run")

    # The runbook's SQL reads these rows back (latest status per model, then the trend of one model).
    import psycopg

    statements = runbook_sql()
    assert statements, "infra/README.md has no ```sql block"
    with psycopg.connect(ops.warehouse) as conn:
        for statement in statements:
            result = conn.execute(statement).fetchall()
            assert result, f"the runbook's query returned nothing:\n{statement}"


def test_concurrent_nightly_and_guardrail_writers_keep_one_row_per_key(ops):
    """Four runs at once on one worker: two nightly runs (a re-run of D1 and a new day D2) and two guardrails
    on D1 models, all writing into the same PostgreSQL tables: the re-run on the keys of the night before, each
    guardrail on a key of its own (run kind guardrail) beside the nightly's."""
    # The release pipeline's form: --watch waits for the run and exits 1 unless it Completed.
    blocking = subprocess.Popen(ops_command("guardrail", "leaky", D1, "0", "-p", f"plan_file={ops.plan}", "--watch"),
                                env=ops.env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    runs = {
        "nightly D1 (re-run)": trigger(ops, "nightly", D1, "-p", f"plan_file={ops.plan}"),
        "nightly D2": trigger(ops, "nightly", D2, "-p", f"plan_file={ops.plan}"),
        "guardrail rr-eps1": trigger(ops, "guardrail", "rr-eps1", D1, "20", "-p", f"plan_file={ops.plan}"),
    }
    try:
        watched, _ = blocking.communicate(timeout=RUN_TIMEOUT)
    finally:
        blocking.kill()
    assert blocking.returncode == 1, f"`ops.sh guardrail ... --watch` exited {blocking.returncode}:\n{watched}"
    runs["guardrail leaky"] = uuid.UUID(re.search(r"UUID: ([0-9a-f-]{36})", watched).group(1))
    final = {name: wait_final(ops, run_id) for name, run_id in runs.items()}
    for name in ("nightly D1 (re-run)", "nightly D2", "guardrail rr-eps1"):
        assert_completed(ops, final[name])
    # A violation ends the guardrail run Failed (the release must be blocked), with the figure in the message.
    blocked = final["guardrail leaky"]
    assert blocked.state.is_failed() and "VIOLATION" in blocked.state.message, blocked.state.message
    # The writers really were concurrent: at least two of the four were running at the same time. (Which ones
    # overlap depends on when the worker picked each run up and how long each took, so no particular pair is
    # required; a worker that ran them one after another would fail this.)
    def overlap(a, b):
        return a.start_time < b.end_time and b.start_time < a.end_time

    schedule = {name: (run.start_time, run.end_time) for name, run in final.items()}
    names = sorted(final)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if overlap(final[a], final[b])]
    assert pairs, f"no two runs overlapped: {schedule}"

    rows = warehouse_rows(ops)
    # one row per key, none lost: the nightly re-run on identical inputs was recorded against its rows (audit_runs),
    # each guardrail added its own verdict
    assert sorted((r.model_id, r.partition_date.isoformat(), r.run_kind, r.claimed_epsilon) for r in rows) == \
        sorted([*((m, d, "nightly", {"rr-eps1": 1.0, "leaky": 0.0}[m]) for m in TARGETS for d in (D1, D2)),
                ("leaky", D1, "guardrail", 0.0), ("rr-eps1", D1, "guardrail", 20.0)])
    assert not list((ops.data_root / "spool").glob("*.json"))  # nothing fell back to the spool
    import psycopg

    with psycopg.connect(ops.warehouse) as conn:
        per_key = conn.execute("SELECT model_id, model_fingerprint, partition_date, run_kind, claimed_epsilon, "
                               "audit_config_hash, inputs_fingerprint, count(*), count(DISTINCT point_index) "
                               "FROM audit_curves GROUP BY 1, 2, 3, 4, 5, 6, 7").fetchall()
        reruns = conn.execute("SELECT count(*) FROM audit_runs r JOIN audit_results a USING (model_id, "
                              "model_fingerprint, partition_date, run_kind, claimed_epsilon, audit_config_hash, "
                              "inputs_fingerprint) WHERE r.run_id <> a.run_id").fetchone()[0]
    assert len(per_key) == 6 and all(n == distinct > 0 for *_, n, distinct in per_key), per_key
    assert reruns >= len(TARGETS)  # the nightly re-run of D1, recorded against (at least) each target's row


def test_backfill_with_a_killed_worker_is_retried_without_loss(ops):
    """Backfill of 3 days at concurrency 2; the worker is SIGKILLed once a day is in the warehouse."""
    before = keys_of(warehouse_rows(ops))
    run_id = trigger(ops, "backfill", BACKFILL[0], BACKFILL[-1], "2", "-p", f"plan_file={ops.plan}")

    def backfilled_days():
        rows = [r for r in warehouse_rows(ops) if r.partition_date.isoformat() in BACKFILL]
        return {d for d in BACKFILL if sum(r.partition_date.isoformat() == d for r in rows) == len(TARGETS)}

    done_before_kill = wait_until(backfilled_days, RUN_TIMEOUT, "the first backfilled day in the warehouse",
                                  on_timeout=lambda: "\n".join(run_logs(ops, run_id)[-30:]))
    running = read_run(ops, run_id)
    engine_pid = _engine_pid(running)
    ops.services.kill(ops.worker)  # SIGKILL to the worker's process group: the worker dies mid-run
    assert running.state.is_running(), f"the backfill was not running when its worker was killed: {running.state}"
    assert len(done_before_kill) < len(BACKFILL), "every day finished before the kill: nothing to resume"

    # Prefect 3.8: the flow-run process (a session of its own) loses its worker, stops, and reports Crashed.
    crashed = wait_final(ops, run_id, timeout=120)
    assert crashed.state.is_crashed(), f"expected Crashed after the worker died, got {crashed.state}"
    assert engine_pid is not None
    wait_until(lambda: not process_alive(engine_pid), 60, f"the flow-run process {engine_pid} to exit")
    done_at_crash = backfilled_days()

    ops.worker = ops.services.start("worker-2", "worker")
    run_ops("retry", str(run_id), env=ops.env)
    retried = wait_final(ops, run_id)
    assert_completed(ops, retried)
    assert retried.run_count == 2

    def outcomes_logged():
        """{day: [outcome]} from the summary lines the flow logs last, once all of them reached the server (a
        run's final state can be reported before its flow-run process has shipped its last log lines)."""
        found_outcomes = {}
        for message in run_logs(ops, run_id):
            found = re.fullmatch(r"(\d{4}-\d{2}-\d{2}): (skipped|audited|failed).*", message)
            if found:
                found_outcomes.setdefault(found.group(1), []).append(found.group(2))
        return found_outcomes if set(found_outcomes) >= set(BACKFILL) else None

    outcomes = wait_until(outcomes_logged, 60, "the backfill's per-day summary lines in the run's logs",
                          on_timeout=lambda: "\n".join(run_logs(ops, run_id)[-30:]))
    print(f"backfill: days in the warehouse when the run crashed: {sorted(done_at_crash)}; retry: {outcomes}")
    # The retry resumed: days already in the warehouse were skipped, the others audited, each exactly once.
    assert outcomes == {d: ["skipped" if d in done_at_crash else "audited"] for d in BACKFILL}, outcomes
    rows = warehouse_rows(ops)
    assert keys_of(rows) == sorted(before + [(m, d) for m in TARGETS for d in BACKFILL])  # none lost, no duplicate
    assert {r.flow_run_id for r in rows if r.partition_date.isoformat() in BACKFILL} == {str(run_id)}


def test_a_run_whose_machine_died_is_marked_crashed_by_the_automation_and_retried(ops):
    """Worker and flow-run process both SIGKILLed (the machine died): nobody is left to report, so the run
    stays Running until infra/automations/unresponsive-flow-runs.yaml sees its heartbeats stop (60 s) and
    marks it Crashed; `ops.sh retry` then completes it on a new worker."""
    import signal

    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    before = keys_of(warehouse_rows(ops))
    run_id = trigger(ops, "nightly", D6, "-p", f"plan_file={ops.plan}")  # a new day: it trains for a while

    def heartbeat():
        with _client(ops) as client:
            return client.read_events(filter=EventFilter(
                event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
                resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"])), limit=50).events

    wait_until(heartbeat, RUN_TIMEOUT, "the first heartbeat of the nightly run", interval=0.5)
    running = read_run(ops, run_id)
    engine_pid = _engine_pid(running)
    assert running.state.is_running() and engine_pid and process_alive(engine_pid), running.state
    ops.services.kill(ops.worker)
    os.killpg(engine_pid, signal.SIGKILL)  # the flow-run process leads a session (and group) of its own
    wait_until(lambda: not process_alive(engine_pid), 30, f"the flow-run process {engine_pid} to die")
    killed_at = time.monotonic()

    crashed = wait_final(ops, run_id, timeout=240)
    assert crashed.state.is_crashed(), crashed.state
    assert "No heartbeat" in (crashed.state.message or ""), crashed.state.message  # the automation's words
    print(f"machine death: marked Crashed {time.monotonic() - killed_at:.0f} s after the kill")

    ops.worker = ops.services.start("worker-3", "worker")
    run_ops("retry", str(run_id), env=ops.env)
    assert_completed(ops, wait_final(ops, run_id))
    assert keys_of(warehouse_rows(ops)) == sorted(before + [(m, D6) for m in TARGETS])  # none lost, no duplicate
    assert_runbook_has_what_ran()



def test_a_run_cancelled_through_prefect_ends_cancelled_and_leaves_nothing_half_written(ops):
    """`ops.sh cancel` (prefect flow-run cancel) while a nightly run works: its worker sends the flow-run process
    SIGTERM, and the run ends Cancelled, not Failed with an audit error. Its process is gone, no temporary
    directory is left, every file of the earlier runs is as it was, and the cancelled day has no row but the whole
    rows of targets it had finished before the signal."""
    rows_before = keys_of(warehouse_rows(ops))
    before = snapshot(ops.data_root)
    # A run SIGKILLed by an earlier test (the machine that died) may have left hidden temporary directories of its
    # own, which readers never see and nothing removes: this run must add none.
    temporary_before = set(ops.data_root.rglob(".tmp-*"))
    run_id = trigger(ops, "nightly", D7, "-p", f"plan_file={ops.plan}")  # a new day: it trains, then scores

    def working():
        return any("making sure the model is there" in message for message in run_logs(ops, run_id))

    wait_until(working, RUN_TIMEOUT, "the nightly run to start on its targets", interval=0.5,
               on_timeout=lambda: "\n".join(run_logs(ops, run_id)[-30:]))
    running = read_run(ops, run_id)
    engine_pid = _engine_pid(running)
    assert running.state.is_running() and engine_pid, running.state
    cancelled_at = time.monotonic()
    run_ops("cancel", str(run_id), env=ops.env)
    final = wait_final(ops, run_id, timeout=120)
    print(f"cancellation: {final.state.name} {time.monotonic() - cancelled_at:.0f} s after `ops.sh cancel`")
    assert final.state.is_cancelled(), (final.state, "\n".join(run_logs(ops, run_id)[-30:]))
    wait_until(lambda: not process_alive(engine_pid), 60, f"the flow-run process {engine_pid} to exit")
    logs = run_logs(ops, run_id)
    assert not any("AUDIT_FAILED" in message or "audit(s) failed" in message for message in logs), logs[-20:]
    assert not set(ops.data_root.rglob(".tmp-*")) - temporary_before
    after = snapshot(ops.data_root)
    assert {path: after.get(path) for path in before} == before  # no earlier file rewritten or removed
    # A target the run had finished before the signal keeps its whole row (each target's row is its own
    # transaction); no other row of the cancelled day, and no earlier row lost.
    rows_after = keys_of(warehouse_rows(ops))
    assert set(rows_before) <= set(rows_after)
    unexplained = [(model, day) for model, day in set(rows_after) - set(rows_before)
                   if day != D7 or not any(f"{model}: warehouse " in message for message in logs)]
    assert not unexplained, (unexplained, logs[-20:])
    assert_runbook_has_what_ran()
