"""In-process HTTP fixtures: the real ASGI app over httpx's ASGI transport, manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_server import http as native
from topics_server.app import build
from topics_server.asgi import create_app
from topics_server.context import ServerContext
from topics_server.settings import load_settings

from .processes import NO_THROTTLE


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_client(clock: ManualClock) -> Callable[..., httpx.AsyncClient]:
    def make(env: dict[str, str] | None = None, limits: Limits | None = None) -> httpx.AsyncClient:
        settings = load_settings(env or {})
        engine = Engine(clock, limits or settings.limits)
        app, _ = create_app(settings, engine)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://topics.test")

    return make


@pytest.fixture
async def client(make_client: Callable[..., httpx.AsyncClient]) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client() as c:
        yield c


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[ServerContext, int]]:
    """A durable server (its data under ``tmp_path``) on the system clock over the native
    HTTP/1.1 transport, without the elastic throttle: its context and port."""
    app, ctx = build(load_settings({"TOPICS_DATA_DIR": str(tmp_path / "data"), **NO_THROTTLE}))
    await ctx.start()
    await ctx.wait_ready()
    server = native.HttpServer(app)
    await server.start("127.0.0.1", 0)
    try:
        yield ctx, server.sockets[0].getsockname()[1]
    finally:
        await server.shutdown(2.0)
        await ctx.stop()


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The response is the §0.5 envelope with this status and code; returns ``error``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) <= {"error", "performance"}
    error = body["error"]
    assert error["code"] == code, body
    assert isinstance(error["message"], str) and error["message"]
    return error
