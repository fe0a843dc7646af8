"""The report tests' fixtures, each built once per session (read-only: frozen records, no test changes them).

``run`` (the realistic run) and ``checked`` (audits with a capacity check) are defined in
tests/support/report_pages.py, which tests/behaviour/test_cli_report.py and tests/auditing/sinks/test_listing.py
also use; ``sliced_verdict`` serves the files here only."""

import pytest

from auditing.verdict.judge import judge
from tests.support.report_pages import CLAIMED, checked, run  # noqa: F401  (fixtures)


@pytest.fixture(scope="session")
def sliced_verdict():
    """A trusted VIOLATION at claimed eps 1 with 12 declared slices: a trusted and an untrusted slice VIOLATION,
    the rest PASS (tests/support/sliced_audits.py)."""
    from tests.support.sliced_audits import sliced

    return judge(sliced(), CLAIMED)
