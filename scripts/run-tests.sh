#!/usr/bin/env bash
# Installs everything the test suite needs, then runs the linter and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# Headless Chromium for the HTML report test (tests/auditing/sinks/report/test_pages.py skips it, loudly, if this fails).
command -v chromium >/dev/null || { ( export DEBIAN_FRONTEND=noninteractive; sudo=$([ "$(id -u)" = 0 ] || echo sudo);
  $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium ) >/dev/null 2>&1 ||
  echo "[run-tests] could not install chromium: the report's browser test will be skipped" >&2; }
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
.venv/bin/ruff check auditing pipelines flows tests benchmarks labeldp
# One pytest worker per core, a test file to a worker (its module fixtures are built once); later options win,
# so `-n 0` runs everything in this process.
.venv/bin/python -m pytest -n auto --dist loadfile "$@"
