#!/usr/bin/env bash
# Idempotent set-up: creates .venv/ in the repo root and installs topics (editable) with its
# dev/test dependencies. Safe to re-run; a no-op when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.topics-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  touch "$stamp"
fi
