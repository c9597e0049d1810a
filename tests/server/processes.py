"""``topics serve`` as a child process: the installed command, a free port, readiness,
:class:`ServerProcess` to start, kill -9 and restart one, and the two ways a test meets the
elastic CPU-pressure throttle (§0.6) of a real server on a busy machine: :data:`NO_THROTTLE`
(a test not about the throttle runs without it) or :class:`WaitsOutThrottle` (an end-to-end
crash test, where a ``429 throttled`` is a legitimate answer, retries as told)."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

TOPICS = Path(sys.executable).with_name("topics")

NO_THROTTLE = {"TOPICS_THROTTLE": "false"}
"""The server environment without the elastic throttle: on a loaded machine (CI: 2 shared
cores) the event loop lags, the throttle turns on and refuses writes and reads on default
priority topics with ``429 throttled`` — an answer a test that is not about the throttle must
not depend on (``tests/server/test_throttle.py`` tests the throttle, on a manual clock)."""

THROTTLE_PATIENCE_S = 30.0
"""How long :class:`WaitsOutThrottle` keeps resending one request before it hands the 429 on."""


def retry_after_s(response: httpx.Response) -> float:
    """When a ``429`` says to come back: ``error.detail.retry_after_ms`` (the throttle's,
    jittered), else the ``Retry-After`` header (seconds), else 1 s."""
    try:
        ms = response.json()["error"]["detail"]["retry_after_ms"]
        return float(ms) / 1000
    except (ValueError, KeyError, TypeError):
        pass
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return 1.0


class WaitsOutThrottle(httpx.AsyncBaseTransport):
    """An httpx transport that resends a request answered ``429 throttled`` once the server's
    Retry-After has passed, for at most :data:`THROTTLE_PATIENCE_S` per request (then the 429
    is the answer, and the test's assertion shows it). A 429 means the server did nothing, so
    the resend is safe for any request; a server gone meanwhile (kill -9) makes the resend
    raise the transport error the caller expects of a dead server. For end-to-end tests against
    a real process (``httpx.AsyncClient(transport=WaitsOutThrottle(), ...)``)."""

    def __init__(self, patience_s: float = THROTTLE_PATIENCE_S) -> None:
        self.patience_s = patience_s
        self.inner = httpx.AsyncHTTPTransport()
        self.waited = 0
        """429s waited out (for a test's diagnostics)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        give_up = time.monotonic() + self.patience_s
        while True:
            response = await self.inner.handle_async_request(request)
            if response.status_code != 429:
                return response
            await response.aread()
            wait = retry_after_s(response)
            if _error_code(response) != "throttled" or time.monotonic() + wait > give_up:
                return response
            await response.aclose()
            self.waited += 1
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _error_code(response: httpx.Response) -> object:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


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
    goes to ``<data_dir>.log`` (or ``log_path``) (a pipe nobody reads would block a chatty server). It runs
    without the elastic throttle (:data:`NO_THROTTLE`) unless ``env`` turns it on."""

    def __init__(
        self,
        data_dir: Path,
        env: dict[str, str] | None = None,
        nofile: int | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.nofile = nofile
        """The server's descriptor limit (``RLIMIT_NOFILE``, soft and hard), if not inherited."""
        self.log_path = log_path or Path(f"{data_dir}.log")
        """The server's output (beside the data directory unless told: a test filling the data
        directory's file system keeps its log elsewhere)."""
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
        env.update(NO_THROTTLE)
        env.update(self.extra_env)
        env.pop("TOPICS_URL", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [str(TOPICS), "serve"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=None if self.nofile is None else self._limit_descriptors,
            )
        try:
            wait_ready(self.url, self.proc)
        except AssertionError as err:
            self.stop()
            log = self.log_path.read_text(errors="replace")[-2000:]
            raise AssertionError(f"{err}; its log ends:\n{log}") from None
        return self

    def _limit_descriptors(self) -> None:  # in the child, before exec
        assert self.nofile is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

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
