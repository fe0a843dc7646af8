import os
import tempfile

# Every test process gets its own Prefect home (a fresh temporary directory: no test reads or writes the user's
# ~/.prefect profiles and database, and concurrent sessions share no SQLite file) and Prefect's server analytics
# off (no telemetry call from a test run). pytest-xdist's workers inherit the controller's environment, so a home
# this file made there is replaced by one per worker; a PREFECT_HOME the caller set is kept.
if "PREFECT_HOME" not in os.environ or (os.environ.get("PYTEST_XDIST_WORKER")
                                        and os.environ.get("LABELDP_TEST_PREFECT_HOME") == os.environ["PREFECT_HOME"]):
    os.environ["PREFECT_HOME"] = os.environ["LABELDP_TEST_PREFECT_HOME"] = tempfile.mkdtemp(prefix="labeldp-prefect-")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
