#!/usr/bin/env bash
# Idempotent set-up: creates .venv/ in the repo root and installs topics (editable) with its
# dev/test dependencies. Safe to re-run; a no-op when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
# Debian packages, as root: the record codec is a C extension (a compiler), and the docs page's
# and console browser tests (tests/server/test_api_docs.py, tests/console: Playwright driving
# this Chromium, never a downloaded one) run headless Chromium
missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# the web console's JavaScript unit tests (tests/console/test_js_units.py) run under Node
command -v node >/dev/null 2>&1 || missing+=(nodejs)
# the Spark connector's tests run a local SparkSession (a JVM)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
# the README's quickstart, and the h2c test with curl --http2-prior-knowledge (Debian's curl has HTTP/2)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# `topics completion fish|zsh` is tested by loading the scripts into those shells
command -v fish >/dev/null 2>&1 || missing+=(fish)
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
# the clock-step fault tests run the server under libfaketime (its wall clock stepped by a file)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
if [ "${#missing[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.topics-installed
# reinstall when the project's metadata or a C extension changed (the editable install builds them)
stale=0
for f in pyproject.toml setup.py server/topics_engine/*.c server/topics_server/*.c; do
  [ "$f" -nt "$stamp" ] && stale=1
done
if [ ! -f "$stamp" ] || [ "$stale" = 1 ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  TOPICS_STRICT_BUILD=1 .venv/bin/python -m pip install --quiet -e ".[dev,spark]"
  touch "$stamp"
fi
