#!/usr/bin/env bash
# Installs everything the test suite needs, then runs the linter and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
.venv/bin/ruff check auditing pipelines flows tests benchmarks
.venv/bin/python -m pytest "$@"
