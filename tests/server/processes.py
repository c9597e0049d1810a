"""``topics serve`` as a child process: the installed command, a free port, readiness, and
:class:`ServerProcess` to start, kill -9 and restart one."""

from __future__ import annotations

import os
import signal
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


class ServerProcess:
    """One ``topics serve`` on a free port and its own data directory, restartable (same port,
    same data) after a clean stop or a ``kill -9``; a context manager (start/stop). Its output
    goes to ``<data_dir>.log`` (a pipe nobody reads would block a chatty server)."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.extra_env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        env = dict(os.environ)
        env.update(
            TOPICS_PORT=str(self.port),
            TOPICS_HOST="127.0.0.1",
            TOPICS_DATA_DIR=str(self.data_dir),
            TOPICS_LOG_LEVEL="warning",
        )
        env.update(self.extra_env)
        env.pop("TOPICS_URL", None)
        with open(f"{self.data_dir}.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(TOPICS), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            wait_ready(self.url, self.proc)
        except AssertionError as err:
            self.stop()
            log = Path(f"{self.data_dir}.log").read_text(errors="replace")[-2000:]
            raise AssertionError(f"{err}; its log ends:\n{log}") from None
        return self

    def kill(self) -> None:
        """``kill -9``: no drain, no checkpoint."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
