#!/usr/bin/env bash
# Installs labeldp-audit, then runs the main job on the embedded default.
# Today: the randomized-response validation of the audit engine (paper Sec. 6.6 / App. 11) at a
# size that finishes in a few minutes on 2 cores. Extra arguments are passed to the command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache}"
exec .venv/bin/labeldp-audit validate-rr "$@"
