#!/usr/bin/env bash
# Installs labeldp-audit, then runs the main job on the embedded default: the nightly pipeline end to end on
# synthetic data (`labeldp-audit demo`): two synthetic days, a D-1 reference and three label-DP targets
# trained with CatBoost, Beam scoring (FnApiRunner), valid epsilon lower bounds, DuckDB warehouse rows and
# HTML reports under ./.labeldp. Extra arguments are passed to the command (see `labeldp-audit demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
export PREFECT_SERVER_ANALYTICS_ENABLED=false
exec .venv/bin/labeldp-audit demo "$@"
