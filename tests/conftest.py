import os
import tempfile

# Every test session gets its own Prefect home (a fresh temporary directory: no test reads or writes the user's
# ~/.prefect profiles and database, and concurrent sessions share no SQLite file) and Prefect's server analytics
# off (no telemetry call from a test run).
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="labeldp-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
