#!/usr/bin/env bash
# Install what is needed, then run the whole test suite (unit, HTTP, property and schemathesis
# conformance tests). Extra arguments go to pytest. pytest's "no tests ran" (exit 5) fails too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
