"""SDK tests run against a real ``topics serve`` child process (the SDK is an HTTP client:
in-process transports would hide what a user meets).

``server`` is one server shared by the whole session (tests use unique topic names, from
``name``); ``make_server`` starts a private one — for restarts, kill -9, env settings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import topics

from tests.server.processes import TOPICS, free_port, wait_ready


class ServerProcess:
    """One ``topics serve`` on a fixed port and data directory, restartable (same port, same
    data) after a clean stop or a ``kill -9``."""

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
        self.proc = subprocess.Popen(
            [str(TOPICS), "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        wait_ready(self.url, self.proc)
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


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("sdk-server")).start()
    yield srv
    srv.stop()


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def make(env: dict[str, str] | None = None) -> ServerProcess:
        srv = ServerProcess(tmp_path / f"data-{len(started)}", env)
        started.append(srv)
        return srv.start()

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture
def name() -> Callable[[str], str]:
    """Unique topic names for this test: ``name("orders")`` → ``orders-<hex>``."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{suffix}"


@pytest.fixture
def client(server: ServerProcess) -> Iterator[topics.Client]:
    with topics.Client(server.url, retries=2) as c:
        yield c


@pytest.fixture
async def aclient(server: ServerProcess) -> AsyncIterator[topics.AsyncClient]:
    async with topics.AsyncClient(server.url, retries=2) as c:
        yield c
