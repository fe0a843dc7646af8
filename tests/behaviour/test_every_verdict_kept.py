"""Every verdict kept: a nightly VIOLATION, then a guardrail of the same model and day with another claim, each
through the real command line (synthetic days of 20K rows, 40 CatBoost iterations, the night's controls on). The
warehouse and the data root are compared before and after the guardrail: the nightly's rows, report and control
models are exactly as they were, and the guardrail's verdict has its own row and report beside them."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows import exit_codes
from tests.support.planted import register_memorizer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ROWS = 20_000
D0, D1 = "2026-10-01", "2026-10-02"
TARGET = "team-nonprivate-click-model"  # longer than 20 characters: the table's columns must still line up


def cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)  # PREFECT_API_URL: the test process's server (tests/conftest.py)
    env.setdefault("NUMBA_CACHE_DIR", str(REPO / ".venv" / "numba-cache"))
    return subprocess.run([sys.executable, "-m", "flows.cli", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=900, env=env)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path_factory.mktemp("data")
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=ROWS)
    register_memorizer(root, D1, TARGET, claimed_epsilon=0.5)  # the planted violation (tests/support/planted.py)
    return root


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("plans") / "plan.json"
    path.write_text(json.dumps({
        "targets": [{"name": TARGET, "source": "registered", "claimed_epsilon": 0.5}],
        "catboost_iterations": 40, "audit": {"repetitions": 3, "grid_points": 30}}))
    return str(path)


def files(root: Path, *tops: str) -> dict[str, str]:
    """relative path -> sha256 of every file under ``tops`` of the data root."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for top in tops for p in sorted((root / top).rglob("*")) if p.is_file()}


def rows(root: Path) -> list:
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as warehouse:
        return warehouse.fetch_results()


def test_a_guardrail_of_another_claim_keeps_the_nightlys_violation_report_and_controls(data_root, plan):
    done = cli("nightly", "--date", D1, "--data-root", str(data_root), "--plan", plan)
    assert done.returncode == exit_codes.OK, done.stderr
    night = rows(data_root)
    assert {r.run_kind for r in night} == {"nightly"} and len(night) == 3  # the target and two controls
    violation = next(r for r in night if r.model_id == TARGET)
    assert violation.status == "VIOLATION" and violation.claimed_epsilon == 0.5
    assert violation.trust == "trusted"  # the planted memoriser: the capacity check vouches for it
    assert violation.flow_run_id and violation.model_fingerprint.startswith("sha256:")
    before = files(data_root, "models", "reports")
    nightly_report = next(p for p in before if p.startswith(f"reports/{TARGET}/"))
    assert Path(nightly_report).name.startswith("nightly__eps-0.5__")

    done = cli("guardrail", "--model", TARGET, "--date", D1, "--claimed-epsilon", "inf", "--data-root",
               str(data_root), "--plan", plan, "--json")
    assert done.returncode == exit_codes.OK, done.stderr
    guarded = json.loads(done.stdout)
    assert [r["status"] for r in guarded if r["model_id"] == TARGET] == ["INCONCLUSIVE"]

    # The warehouse: every row of the night exactly as it was, and the guardrail's own rows beside them.
    after = rows(data_root)
    assert all(r in after for r in night)
    added = [r for r in after if r not in night]
    assert {r.run_kind for r in added} == {"guardrail"} and len(added) == 1  # the candidate's own verdict
    candidate = next(r for r in added if r.model_id == TARGET)
    assert (candidate.status, candidate.claimed_epsilon) == ("INCONCLUSIVE", float("inf"))
    assert candidate.model_fingerprint == violation.model_fingerprint
    assert candidate.flow_run_id and candidate.flow_run_id != violation.flow_run_id
    # The data root: no model or report of the night rewritten; the guardrail's report and reference are new files.
    now = files(data_root, "models", "reports")
    index = "reports/index.html"  # the page across models: every run rewrites it with its verdicts
    assert index in before and now[index] != before[index]
    assert "guardrail__eps-inf__" in (data_root / index).read_text()  # it links the guardrail's report
    assert {path: now.get(path) for path in before if path != index} == {p: h for p, h in before.items() if p != index}
    new = sorted(set(now) - set(before))
    guardrail_report = next(p for p in new if p.startswith(f"reports/{TARGET}/"))
    assert Path(guardrail_report).name.startswith("guardrail__eps-inf__") and nightly_report in now
    assert all(p.startswith("reports/") or "-guardrail-" in p for p in new), new

    # `results`: the VIOLATION is still listed, each run kind keeps its latest, the columns line up.
    done = cli("results", "--data-root", str(data_root), "--status", "VIOLATION")
    assert done.returncode == 0 and f" {TARGET} {D1} VIOLATION nightly " in done.stdout, done.stdout
    done = cli("results", "--data-root", str(data_root), "--model", TARGET)
    lines = [line for line in done.stdout.splitlines() if line.split()[1:2] == [TARGET]]  # the table rows, not the lines under it
    assert [line.split()[3:5] for line in lines] == [["INCONCLUSIVE", "guardrail"], ["VIOLATION", "nightly"]] or \
        [line.split()[3:5] for line in lines] == [["VIOLATION", "nightly"], ["INCONCLUSIVE", "guardrail"]]
    assert all(len(line) <= 100 for line in done.stdout.splitlines()[:2 + len(lines)])  # the default table fits
    assert len({line.index(" " + D1) for line in lines}) == 1

    # The same guardrail again: the same key, no row added, the night still untouched.
    done = cli("guardrail", "--model", TARGET, "--date", D1, "--claimed-epsilon", "inf", "--data-root",
               str(data_root), "--plan", plan)
    assert done.returncode == exit_codes.OK, done.stderr
    again = rows(data_root)
    assert len(again) == len(after) and all(r in again for r in night)
    assert {path: files(data_root, "models", "reports").get(path) for path in before if path != index} == \
        {p: h for p, h in before.items() if p != index}
