"""The new user's case, through the real command line: a nightly finds a VIOLATION of a registered model; its day
is ingested again (`data ingest --replace`) from a 5,000-row subset of itself; the re-run refuses the registered
model (exit 2, naming the model and both partition fingerprints, nothing written) and the VIOLATION stays, marked
"inputs replaced since" in `results` and in its report; once the model is registered again on the new rows
(`models register --replace`), the next night's verdict is a row of its own beside the VIOLATION, and `results
family` names the fingerprints that changed. Synthetic days of 20,000 rows, the planted memoriser
(tests/support/planted.py),
40 CatBoost iterations, no controls."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows import exit_codes
from labeldp.codec import encode
from tests.support.planted import register_memorizer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
D0, D1 = "2026-10-01", "2026-10-02"
MODEL = "team-model"


def cli(*argv) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LABELDP_FAULT"}  # the server: tests/conftest.py
    env.setdefault("NUMBA_CACHE_DIR", str(REPO / ".venv" / "numba-cache"))
    return subprocess.run([sys.executable, "-m", "flows.cli", *map(str, argv)], cwd=REPO, capture_output=True,
                          text=True, timeout=900, env=env)


def rows(root: Path) -> list:
    from auditing.sinks.warehouse import open_warehouse

    with open_warehouse(None, data_root=root) as store:
        return store.fetch_results(model_id=MODEL)


def test_a_replaced_day_keeps_its_violation_refuses_the_stale_model_and_adds_a_row_beside_it(tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.data import schema
    from pipelines.data.dataset_spec import criteo
    from pipelines.data.synth import write_synthetic_day

    root = tmp_path / "data"
    for day in (D0, D1):
        write_synthetic_day(root, dt.date.fromisoformat(day), rows=20_000)
    register_memorizer(root, D1, MODEL, claimed_epsilon=0.5)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"targets": [{"name": MODEL, "source": "registered"}], "catboost_iterations": 40,
                                "audit": {"repetitions": 3, "grid_points": 30}, "controls": {"enabled": False}}))
    common = ("--data-root", root, "--plan", plan)

    # 1. The night: a VIOLATION the capacity check vouches for.
    done = cli("nightly", "--date", D1, *common)
    assert done.returncode == exit_codes.OK, done.stderr
    (violation,) = rows(root)
    assert (violation.status, violation.trust) == ("VIOLATION", "trusted")
    old_fingerprint = violation.partition_fingerprint

    # 2. The day ingested again from a 5,000-row subset of itself: refused without --replace, then replaced.
    day = schema.read_partition(root, dt.date.fromisoformat(D1)).slice(0, 5_000)
    subset, spec = tmp_path / "subset.parquet", tmp_path / "criteo.json"
    pq.write_table(day, subset)
    spec.write_text(json.dumps(encode(criteo())))
    ingest = ("data", "ingest", subset, "--dataset", spec, "--date", D1, "--data-root", root)
    refused = cli(*ingest)
    assert refused.returncode == exit_codes.BAD_INPUT and "pass --replace" in refused.stderr
    assert schema.partition_fingerprint(root, dt.date.fromisoformat(D1)) == old_fingerprint
    replaced = cli(*ingest, "--replace")
    assert replaced.returncode == 0, replaced.stderr
    assert f"replaced the partition of {D1} ({old_fingerprint[:19]}..., 20000 rows)" in replaced.stdout
    assert "1 run report(s) marked" in replaced.stdout
    new_fingerprint = schema.partition_fingerprint(root, dt.date.fromisoformat(D1))

    # 3. The re-run refuses the registered model before anything is scored, naming it and both fingerprints.
    before = rows(root)
    again = cli("nightly", "--date", D1, *common)
    assert again.returncode == exit_codes.BAD_INPUT, again.stderr
    (line,) = again.stderr.strip().splitlines()
    assert f"registered target {MODEL}@{D1} was registered on the partition {old_fingerprint}" in line
    assert f"is now {new_fingerprint}" in line and "--replace" in line
    assert rows(root) == before  # the VIOLATION stays exactly as it was

    # ... and `results` and its report say that the inputs it judged were replaced since.
    listed = cli("results", "--data-root", root, "--model", MODEL)
    assert f" {MODEL} {D1} VIOLATION* nightly " in listed.stdout, listed.stdout
    lines = listed.stdout.splitlines()
    table = lines[:2] + [line for line in lines if line.split()[1:2] == [MODEL]]
    assert table[0].startswith("decision ") and max(map(len, table)) <= 100  # a registered model's night fits
    assert f"* {MODEL}@{D1} VIOLATION: inputs replaced since " in listed.stdout
    record = json.loads(cli("results", "--data-root", root, "--model", MODEL, "--json").stdout)
    assert record[0]["inputs_replaced_since"] and record[0]["epsilon_lower_bound"] == violation.epsilon_lower_bound
    page = next((root / "reports" / MODEL / f"date={D1}").glob("*.html")).read_text()
    assert 'id="inputs-replaced"' in page and "INPUTS REPLACED SINCE" in page

    # 4. Registered again on the new rows: the next night's verdict is a row of its own beside the VIOLATION.
    files = root / "files"
    keys = pq.read_table(files / f"{MODEL}-{D1}-keys.parquet").column("row_id").to_numpy()
    kept = files / "keys-new-day.parquet"  # its training keys that are rows of the new day
    pq.write_table(pa.table({"row_id": np.intersect1d(keys, day.column("row_id").to_numpy())}), kept)
    registered = cli("models", "register", "--name", MODEL, "--date", D1, "--file", files / f"{MODEL}-{D1}.parquet",
                     "--claimed-epsilon", 0.5, "--training-rows", kept, "--replace", "--data-root", root)
    assert registered.returncode == 0, registered.stderr
    third = cli("nightly", "--date", D1, *common)
    assert third.returncode in (exit_codes.OK, exit_codes.UNTRUSTED), third.stderr
    after = rows(root)
    assert len(after) == 2 and violation in after  # beside it, never instead of it
    (new,) = [r for r in after if r != violation]
    assert new.partition_fingerprint == new_fingerprint and new.inputs_fingerprint != violation.inputs_fingerprint
    family = cli("results", "family", MODEL, "--data-root", root)
    assert (f"{D1}: a later run ({new.run_id}: {new.status}" in family.stdout
            and "saw other inputs (partition_fingerprint, training_rows_fingerprint" in family.stdout
            and f"the family counts the night's first run ({violation.run_id}: VIOLATION" in family.stdout), \
        family.stdout
    listed = cli("results", "--data-root", root, "--model", MODEL, "--all")
    lines = [line for line in listed.stdout.splitlines() if line.split()[1:2] == [MODEL]]
    assert len(lines) == 2 and any(" VIOLATION* " in line for line in lines), listed.stdout
