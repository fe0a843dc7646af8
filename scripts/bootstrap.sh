#!/usr/bin/env bash
# Creates ./.venv (if missing) and installs labeldp-audit with its exact pinned dependency set.
# Idempotent: re-running only installs what changed. Needs python3.11 with venv and network access
# to the Python package index.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "[bootstrap] creating virtual environment .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.labeldp-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[bootstrap] installing pinned dependencies (first run takes a few minutes)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[dev]"
  echo "$want" > "$stamp"
fi
