"""``topics serve`` as a child process: the installed command, a free port, readiness."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

TOPICS = Path(sys.executable).with_name("topics")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    """Poll ``/readyz`` until 200; fail if the process exits first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stdout.read() if proc.stdout else ''!r}")
        try:
            if httpx.get(f"{base}/readyz", timeout=0.5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("server did not become ready")
