#!/usr/bin/env bash
# Operations commands for labeldp-audit: the Prefect server, deployments, workers, runs, and a Dask cluster.
# infra/README.md ("Runbook") explains each; tests/behaviour/test_operations.py and
# tests/behaviour/test_dask_cluster.py run exactly these commands, so the runbook is what the test suite
# exercises.
#
#   bash scripts/ops.sh server                 # Prefect API + UI on $LABELDP_PREFECT_HOST:$LABELDP_PREFECT_PORT
#   bash scripts/ops.sh deploy                 # work pool, the deployments of infra/prefect.yaml, automations
#   bash scripts/ops.sh worker                 # a process worker for the pool (runs flows from this checkout)
#   bash scripts/ops.sh nightly DATE [-p key=value ...]
#   bash scripts/ops.sh guardrail MODEL DATE CLAIMED_EPS [-p key=value ...]
#   bash scripts/ops.sh backfill START END CONCURRENCY [-p key=value ...]
#   bash scripts/ops.sh retry FLOW_RUN_ID      # re-run a Crashed/Failed run (a backfill skips days already done)
#   bash scripts/ops.sh cancel FLOW_RUN_ID     # cancel a run: it stops within seconds and ends Cancelled
#   bash scripts/ops.sh dask-scheduler         # Dask scheduler on $LABELDP_DASK_HOST:$LABELDP_DASK_PORT
#   bash scripts/ops.sh dask-worker            # one Dask worker process (1 thread) for that scheduler
#
# Environment (defaults in brackets):
#   LABELDP_PREFECT_HOST [127.0.0.1], LABELDP_PREFECT_PORT [4200]; PREFECT_API_URL [http://HOST:PORT/api]
#   PREFECT_HOME [~/.prefect]: the server's SQLite database is $PREFECT_HOME/prefect.db unless
#     PREFECT_API_DATABASE_CONNECTION_URL names another (postgresql+asyncpg://... for a team)
#   LABELDP_CHECKOUT [this checkout]: where workers find flows/ (the pull step of infra/prefect.yaml)
#   LABELDP_DATA_ROOT, LABELDP_WAREHOUSE, LABELDP_WEBHOOK_URL: deployment parameters, read at `deploy` time
#   LABELDP_DASK_HOST [127.0.0.1], LABELDP_DASK_PORT [8786]: the scheduler; LABELDP_DASK_WORKER_HOST
#     [127.0.0.1]: the address a worker listens on (this machine's address on a cluster)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${LABELDP_BIN:-$REPO/.venv/bin}"
POOL=labeldp-process
PREFECT_HOST="${LABELDP_PREFECT_HOST:-127.0.0.1}"
PREFECT_PORT="${LABELDP_PREFECT_PORT:-4200}"
export PREFECT_API_URL="${PREFECT_API_URL:-http://$PREFECT_HOST:$PREFECT_PORT/api}"
export PREFECT_SERVER_ANALYTICS_ENABLED="${PREFECT_SERVER_ANALYTICS_ENABLED:-false}"
export LABELDP_CHECKOUT="${LABELDP_CHECKOUT:-$REPO}"
DASK_ADDRESS="${LABELDP_DASK_HOST:-127.0.0.1}:${LABELDP_DASK_PORT:-8786}"

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
need() { [ "$1" -ge "$2" ] || usage; }

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  server)
    exec "$BIN/prefect" server start --host "$PREFECT_HOST" --port "$PREFECT_PORT" ;;
  deploy)
    cd "$REPO"
    "$BIN/prefect" work-pool create "$POOL" --type process --overwrite
    "$BIN/prefect" --no-prompt deploy --prefect-file infra/prefect.yaml --all
    # Replace (not duplicate) the automation on a re-deploy.
    "$BIN/prefect" automation delete --name labeldp-unresponsive-flow-runs >/dev/null 2>&1 || true
    "$BIN/prefect" automation create --from-file infra/automations/unresponsive-flow-runs.yaml ;;
  worker)
    cd "$LABELDP_CHECKOUT"
    exec "$BIN/prefect" worker start --pool "$POOL" "$@" ;;
  nightly)
    need $# 1
    date="$1"; shift
    exec "$BIN/prefect" deployment run nightly-audit/nightly-audit -p "date=\"$date\"" "$@" ;;
  guardrail)
    need $# 3
    model="$1" date="$2" claimed="$3"; shift 3
    exec "$BIN/prefect" deployment run release-guardrail/release-guardrail -p "model=\"$model\"" \
      -p "date=\"$date\"" -p "claimed_epsilon=$claimed" "$@" ;;
  backfill)
    need $# 3
    start="$1" end="$2" concurrency="$3"; shift 3
    exec "$BIN/prefect" deployment run backfill/backfill -p "start=\"$start\"" -p "end=\"$end\"" \
      -p "concurrency=$concurrency" "$@" ;;
  retry)
    need $# 1
    exec "$BIN/prefect" flow-run retry "$1" ;;
  cancel)
    need $# 1
    exec "$BIN/prefect" flow-run cancel "$1" ;;
  dask-scheduler)
    exec "$BIN/dask" scheduler --host "${LABELDP_DASK_HOST:-127.0.0.1}" --port "${LABELDP_DASK_PORT:-8786}" \
      --no-dashboard "$@" ;;
  dask-worker)
    exec "$BIN/dask" worker "tcp://$DASK_ADDRESS" --host "${LABELDP_DASK_WORKER_HOST:-127.0.0.1}" \
      --nworkers 1 --nthreads 1 --no-dashboard "$@" ;;
  *)
    usage ;;
esac
