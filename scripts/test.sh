#!/usr/bin/env bash
# Install what is needed, run the static checks (scripts/check.sh: ruff, ruff format, mypy; any
# finding fails), then the whole test suite (unit, HTTP, property and schemathesis conformance
# tests). Extra arguments go to pytest. pytest's "no tests ran" (exit 5) fails too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/check.sh
exec .venv/bin/python -m pytest "$@"
