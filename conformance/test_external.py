"""The outsider's run: the schemathesis CLI against a live ``topics serve``, with nothing but the
document that server serves.

No schemathesis configuration file, hook, exclusion or documented-rejection list: what an
outsider has. All four phases and every check, the streaming operations (the SSE GETs) included;
the run must find no failure and meet no error. The command line only bounds the run for the
suite's time budget (``--max-examples``) and fixes its seed, so a failure reproduces exactly
(``st replay`` needs nothing more); the server runs as ``topics serve`` does, with one key and a
short long-poll clamp (``TOPICS_MAX_WAIT_MS``: a long-poll otherwise legitimately outlasts the
CLI's 10 s read timeout) and without the CPU-pressure throttle (a 429 is an answer the checks
accept, but a test must not depend on machine speed).

Run it by hand against any server (what docs/DECISIONS.md "The served spec is exact" states)::

    st run http://127.0.0.1:4000/v0/openapi.json --url http://127.0.0.1:4000 \\
        -H 'Authorization: Bearer KEY' --checks all --phases examples,coverage,fuzzing,stateful
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.server.processes import ServerProcess

ST = Path(sys.executable).with_name("st")
KEY = "outsider-key"
MAX_EXAMPLES = 40
"""Per operation and phase: the suite's budget (schemathesis' default is 100)."""
SEED = 20261127


def test_the_schemathesis_cli_finds_nothing_with_the_served_document(tmp_path: Path) -> None:
    env = {"TOPICS_API_KEYS": KEY, "TOPICS_MAX_WAIT_MS": "1000"}
    with ServerProcess(tmp_path / "data", env=env) as server:
        command = [str(ST), "run", f"{server.url}/v0/openapi.json", "--url", server.url]
        command += ["-H", f"Authorization: Bearer {KEY}", "--checks", "all"]
        command += ["--phases", "examples,coverage,fuzzing,stateful"]
        command += ["--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--no-color"]
        run = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,  # no configuration file can be picked up from the repository
        )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-12000:]  # st exits non-zero on any failure or error
    summary = report[report.rfind("SUMMARY") :]
    assert "Failures:" not in summary and "Errors:" not in summary, summary
