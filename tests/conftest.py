import os
import tempfile

# Every test session gets its own Prefect home and no analytics (see shared DESIGN.md pitfalls).
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="labeldp-prefect-"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
