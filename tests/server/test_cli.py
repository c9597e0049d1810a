"""``topics serve`` as a user runs it: a real subprocess, real socket, clean signal shutdown."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

TOPICS = Path(sys.executable).with_name("topics")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stdout.read() if proc.stdout else ''!r}")
        try:
            if httpx.get(f"{base}/readyz", timeout=0.5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("server did not become ready")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_and_stops_cleanly_on_signal(tmp_path: Path, sig: signal.Signals) -> None:
    port = _free_port()
    env = {**os.environ, "TOPICS_PORT": str(port), "TOPICS_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen([str(TOPICS), "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base, proc)
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
