#!/usr/bin/env bash
# Static checks over the repo: ruff (lint), ruff format --check, and mypy (strict, over the
# [tool.mypy] files in pyproject.toml). Prints the findings and exits non-zero if there is any.
# Needs the set-up's .venv (scripts/setup.sh); scripts/test.sh runs it before the tests.
# Fix formatting with: .venv/bin/ruff format .
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
.venv/bin/ruff check --quiet . || status=1
.venv/bin/ruff format --check --quiet . || status=1
.venv/bin/mypy --no-error-summary || status=1
[ "$status" = 0 ] && echo "check.sh: ruff, ruff format and mypy found nothing"
exit "$status"
