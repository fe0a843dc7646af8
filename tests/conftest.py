import os
import tempfile

import pytest

# Every test process gets its own Prefect home (a fresh temporary directory: no test reads or writes the user's
# ~/.prefect profiles and database, and concurrent sessions share no SQLite file) and Prefect's server analytics
# off (no telemetry call from a test run). pytest-xdist's workers inherit the controller's environment, so a home
# this file made there is replaced by one per worker; a PREFECT_HOME the caller set is kept.
if "PREFECT_HOME" not in os.environ or (os.environ.get("PYTEST_XDIST_WORKER")
                                        and os.environ.get("LABELDP_TEST_PREFECT_HOME") == os.environ["PREFECT_HOME"]):
    os.environ["PREFECT_HOME"] = os.environ["LABELDP_TEST_PREFECT_HOME"] = tempfile.mkdtemp(prefix="labeldp-prefect-")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")



@pytest.fixture(scope="session", autouse=True)
def shared_prefect_api():
    """One Prefect API server per test process, exported as PREFECT_API_URL for every command the tests start.

    Without a server, each `labeldp-audit nightly` (or backfill, guardrail) starts Prefect's temporary one and stops
    it again: about 8 s a command, most of the suite's time in its command-line tests. The fresh machine's path, no
    server at all, stays tested where a test removes the variable from its command's environment. A PREFECT_API_URL the caller set is
    kept."""
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    import socket

    from prefect.server.api.server import SubprocessASGIServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = SubprocessASGIServer(port=port)
    server.start(timeout=300)
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield server.api_url
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        server.stop()

