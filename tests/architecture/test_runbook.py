"""The runbook (infra/README.md) and scripts/ops.sh agree: every `bash scripts/ops.sh X` the runbook shows is a
subcommand of the script, the script is valid bash, and it refuses unknown or incomplete commands with exit 2.
(The slow tests, tests/behaviour/test_operations.py and tests/behaviour/test_dask_cluster.py, run the commands
themselves.)"""

import re
import subprocess

from tests.support.service_processes import OPS, REPO, runbook_subcommands


def script_subcommands() -> set[str]:
    return set(re.findall(r"^  ([a-z][a-z-]*)\)$", OPS.read_text(), flags=re.M))


def test_every_runbook_command_is_an_ops_subcommand():
    shown = runbook_subcommands()
    assert {"server", "deploy", "worker", "nightly", "guardrail", "backfill", "retry", "dask-scheduler",
            "dask-worker"} <= shown
    assert shown <= script_subcommands(), shown - script_subcommands()


def test_ops_script_is_valid_bash_and_refuses_bad_usage():
    assert subprocess.run(["bash", "-n", str(OPS)], capture_output=True).returncode == 0
    for args in ([], ["no-such-command"], ["nightly"], ["backfill", "2026-10-01", "2026-10-02"]):
        done = subprocess.run(["bash", str(OPS), *args], capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 2 and "ops.sh" in done.stderr, (args, done.returncode, done.stderr)
