"""The Beam scoring job on a Dask cluster started from the command line, as operations runs it: one
`dask scheduler` and two `dask worker` processes (`bash scripts/ops.sh dask-scheduler` / `dask-worker`, the
runbook's commands), not an in-process LocalCluster.

1. The job's counts and bound equal the in-process audit exactly (as the LocalCluster test does).
2. One worker is SIGKILLed (its whole process group: nanny and worker) while the job runs. The job must then
   end in a clear failure or a correct result, never a wrong count: Dask re-runs the dead worker's tasks on
   the survivor, and the job's row accounting (`exact_counts`) refuses lost or duplicated rows.

World: 20,000 rows in 10 row groups (10 Dask partitions), 10 repetitions, tiny CatBoost models.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading

import numpy as np
import pytest

from auditing.audit import run_audit
from auditing.config import BoundConfig
from auditing.game.config import GameConfig
from labeldp.codec import encode
from pipelines.data import schema, synth
from pipelines.scoring import beam_request
from pipelines.scoring.beam_request import ScoringRequest
from pipelines.scoring.beam_scoring import score_day
from pipelines.training import train as training
from tests.support.scoring_worlds import in_process_counts, register_tiny_model
from tests.support.service_processes import (
    ServiceProcesses,
    assert_runbook_has_what_ran,
    free_port,
    wait_until,
)

pytestmark = pytest.mark.slow
distributed = pytest.importorskip("dask.distributed")

DAY, PREVIOUS = dt.date(2024, 5, 2), dt.date(2024, 5, 1)
ROWS, ROWS_PER_FILE = 20_000, 2_000
logging.getLogger("apache_beam").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask-root")
    models = {}
    for seed, date in enumerate((PREVIOUS, DAY)):
        synth.write_synthetic_day(root, date, rows=ROWS, rows_per_file=ROWS_PER_FILE)
        table = schema.read_partition(root, date)
        models[date] = register_tiny_model(root, "target", date, training.feature_frame(table),
                                 table.column(schema.LABEL).to_numpy(), seed=seed)
    table = schema.read_partition(root, DAY)
    frame = training.feature_frame(table)
    return {"root": root, "row_ids": table.column(schema.ROW_ID).to_numpy(),
            "labels": table.column(schema.LABEL).to_numpy().astype(np.int64),
            "p_target": models[DAY].predict_proba(frame), "p_reference": models[PREVIOUS].predict_proba(frame)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers from the command line, stopped by process group."""
    port = free_port()
    env = {**os.environ, "LABELDP_DASK_PORT": str(port), "LABELDP_DASK_HOST": "127.0.0.1"}
    services = ServiceProcesses(tmp_path_factory.mktemp("dask-logs"), env)
    address = f"127.0.0.1:{port}"
    try:
        services.start("scheduler", "dask-scheduler")
        workers = [services.start(f"worker-{i}", "dask-worker") for i in (1, 2)]
        with distributed.Client(address, timeout=120) as client:
            try:
                client.wait_for_workers(2, timeout=180)
            except TimeoutError:
                pytest.fail("two dask workers did not register\n" + services.log_tail("scheduler")
                            + services.log_tail("worker-1") + services.log_tail("worker-2"))
            yield {"address": address, "client": client, "services": services, "workers": workers}
    finally:
        services.stop_all()


def dask_args(address: str) -> list[str]:
    return [f"--runner={beam_request.DASK_RUNNER}", f"--dask_client_address={address}"]


def expected(world, game, bound):
    return (in_process_counts(world, game),
            run_audit(world["p_target"], world["p_reference"], world["labels"], world["row_ids"], game, bound))


def test_job_on_a_command_line_cluster_equals_in_process(world, cluster):
    game, bound = GameConfig(repetitions=10, seed=5), BoundConfig(strategy="split")
    request = ScoringRequest(str(world["root"]), DAY, "target", game, bound, batch_size=ROWS_PER_FILE)
    with distributed.get_task_stream(client=cluster["client"]) as stream:
        outcome = score_day(request, dask_args(cluster["address"]))
    counts, result = expected(world, game, bound)
    assert np.array_equal(outcome.counts.correct, counts)
    assert encode(outcome.result) == encode(result)
    record = json.loads((outcome.output_dir / beam_request.RESULT_FILE).read_text())
    assert record["diagnostics"]["plan_mode"] == "two-stage"
    assert record["diagnostics"]["rows"]["rows_scored"] == ROWS
    # Both command-line workers ran tasks of the job (it was really distributed).
    assert len({task["worker"] for task in stream.data}) == 2


def test_a_worker_killed_mid_job_gives_a_clear_failure_or_the_exact_counts(world, cluster):
    client, services = cluster["client"], cluster["services"]
    victim = cluster["workers"][0]
    game, bound = GameConfig(repetitions=10, seed=9), BoundConfig()
    request = ScoringRequest(str(world["root"]), DAY, "target", game, bound, batch_size=ROWS_PER_FILE)
    outcome: dict = {}

    def job():
        try:
            outcome["value"] = score_day(request, dask_args(cluster["address"]))
        except BaseException as exc:  # recorded and judged below
            outcome["error"] = exc

    thread = threading.Thread(target=job, daemon=True)
    thread.start()
    victim_address = _worker_address_of(client, victim.pid)

    def victim_busy():
        return bool(client.processing().get(victim_address)) or not thread.is_alive()

    wait_until(victim_busy, 240, "the first worker to be running a task of the job", interval=0.05)
    assert thread.is_alive(), "the job finished before a worker could be killed"
    busy = len(client.processing().get(victim_address, ()))
    services.kill(victim)  # SIGKILL to nanny + worker: the machine is gone
    thread.join(timeout=420)
    assert not thread.is_alive(), "the job hung after a worker died"

    assert len(client.scheduler_info()["workers"]) == 1  # the scheduler saw the worker go
    counts, result = expected(world, game, bound)
    if "error" in outcome:
        message = str(outcome["error"])
        assert any(word in message for word in ("KilledWorker", "worker", "rows", "lost")), \
            f"the failure does not say what went wrong: {type(outcome['error']).__name__}: {message}"
    else:
        got = outcome["value"]
        assert np.array_equal(got.counts.correct, counts), "a killed worker changed the counts"
        assert encode(got.result) == encode(result)
    assert_runbook_has_what_ran()
    print(f"killed a worker with {busy} task(s) in progress; outcome: "
          + (f"error: {str(outcome['error'])[:300]}" if "error" in outcome else "exact counts"))


def _worker_address_of(client, nanny_pid: int) -> str:
    """The scheduler's address of the worker process whose nanny is `nanny_pid` (the ops.sh process)."""
    pids = client.run(os.getppid)  # worker address -> its parent's pid (the nanny)
    for address, parent in pids.items():
        if parent == nanny_pid:
            return address
    raise AssertionError(f"no worker is a child of process {nanny_pid}: {pids}")
