#!/usr/bin/env bash
# Regenerate the typed client sdk/python/topics_client from openapi/v0.yaml (see scripts/gen_client.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/gen_client.py "$@"
