"""SIGTERM ends a run with 143 and SIGINT with 130 wherever the signal lands: the flow starting under Prefect,
CatBoost training (two seconds in: CatBoost turns the exception a signal raised into a plain KeyboardInterrupt, which
read as Ctrl-C before the first signal received decided), the Beam job scoring, and inside the warehouse transaction
(held there by the fault point `warehouse.transaction`, labeldp.faults), which rolls back.

Real nightly runs through the command line on small synthetic days (10,000 rows), one Prefect server for the module
(the test harness's). The seconds from the signal to the exit are printed, not asserted (benchmarks/bench_kill.py
measures them; the command's grace period ends a run that does not unwind within 2 s)."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flows import exit_codes
from tests.support.kill_harness import PHASES, phase_changes, signal_when

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ROWS = 10_000
D0, D1 = "2026-10-01", "2026-10-02"
CODES = {signal.SIGTERM: (exit_codes.TERMINATED, "terminated"), signal.SIGINT: (exit_codes.INTERRUPTED, "interrupted")}


@pytest.fixture(scope="module")
def prefect_api():
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=300):
        yield PREFECT_API_URL.value()


def _env(api: str, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LABELDP_FAULT"}
    env.setdefault("NUMBA_CACHE_DIR", str(REPO / ".venv" / "numba-cache"))
    return {**env, "PREFECT_API_URL": api, **extra}


def _plan(directory: Path, name: str, **changes) -> str:
    plan = {"targets": [{"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}], "catboost_iterations": 40,
            "audit": {"repetitions": 3, "grid_points": 30}, "controls": {"enabled": False}, **changes}
    path = directory / f"{name}.json"
    path.write_text(json.dumps(plan))
    return str(path)


def _nightly(root: Path, plan: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", "nightly", "--date", D1, "--data-root", str(root), "--plan", plan]


@pytest.fixture(scope="module")
def night(tmp_path_factory, prefect_api):
    """Two synthetic days and a first night run through (the reference, the target's model, its game)."""
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("signals")
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    plan = _plan(root.parent, f"{root.name}-plan")
    done = subprocess.run(_nightly(root, plan), cwd=REPO, capture_output=True, text=True, timeout=900,
                          env=_env(prefect_api))
    assert done.returncode == exit_codes.OK, done.stderr
    return root, plan


def _rows(root: Path) -> list:
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as store:
        return store.fetch_results()


# SIGTERM at every phase, SIGINT where a library handles the exception it raises (CatBoost) and in the transaction
# (benchmarks/bench_kill.py sends both at every phase)
CASES = [*((phase, signal.SIGTERM) for phase in PHASES), ("training", signal.SIGINT), ("warehouse", signal.SIGINT)]


@pytest.mark.parametrize("phase, number", CASES, ids=[f"{p}-{signal.Signals(n).name}" for p, n in CASES])
def test_a_signal_ends_the_run_with_its_code_wherever_it_lands(night, prefect_api, tmp_path, phase, number):
    root, _ = night
    _, marker, delay, fault = PHASES[phase]
    plan = _plan(tmp_path, phase, **phase_changes(phase, number))
    before = _rows(root)
    env = _env(prefect_api, **({"LABELDP_FAULT": fault} if fault else {}))
    returncode, err, took = signal_when(_nightly(root, plan), marker, delay, number, env)
    code, word = CODES[number]
    print(f"{signal.Signals(number).name} during {phase}: exit {returncode} {took:.1f} s after the signal")
    assert returncode == code, err
    assert err.strip().splitlines()[-1] == f"labeldp-audit nightly: {word}", err
    assert "Traceback" not in err
    # nothing half-written: the warehouse holds what it held (the transaction rolled back), no temporary left
    assert _rows(root) == before
    assert not list(root.rglob(".tmp-*")) and not list(root.rglob(".old-*"))
    if phase == "training":
        assert not list((root / "models").glob("rr-eps2-*"))
