"""The warehouse package as a whole (auditing/sinks/warehouse/): the auditing core never imports it, nor any other
sink or a database driver. Its modules' tests are in tests/auditing/sinks/warehouse/test_<module>.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_auditing_core_does_not_import_the_sinks():
    code = ("import sys; import auditing.audit, auditing.verdict.guardrail, auditing.bounds.lower_bound; "
            "bad = [m for m in ('duckdb', 'psycopg', 'prefect', 'auditing.sinks.warehouse', 'auditing.sinks.report', "
            "'auditing.sinks.alerts') if m in sys.modules]; print(bad)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr
