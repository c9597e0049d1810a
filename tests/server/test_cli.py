"""``topics serve`` as a user runs it: a real subprocess, real socket, clean signal shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from .processes import NO_THROTTLE, TOPICS, free_port, wait_ready


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_and_stops_cleanly_on_signal(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    env = {**os.environ, "TOPICS_PORT": str(port), "TOPICS_DATA_DIR": str(tmp_path / "data"), **NO_THROTTLE}
    proc = subprocess.Popen([str(TOPICS), "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, proc)
        r = httpx.post(f"{base}/v0/topics/cli", json={"records": [{"data": 1}]})
        assert r.status_code == 201
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_refuses_bad_configuration() -> None:
    env = {**os.environ, "TOPICS_PORT": "not-a-port"}
    done = subprocess.run([str(TOPICS), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "TOPICS_PORT" in done.stderr and "Traceback" not in done.stderr
