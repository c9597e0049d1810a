#!/usr/bin/env bash
# Install what is needed, then run the server (TOPICS_* environment variables configure it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/topics serve
