"""SDK tests run against a real ``topics serve`` child process (the SDK is an HTTP client:
in-process transports would hide what a user meets).

``server`` is one server shared by the whole session (tests use unique topic names, from
``name``); ``make_server`` starts a private one — for restarts, kill -9, env settings.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import topics

from tests.server.processes import ServerProcess


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
