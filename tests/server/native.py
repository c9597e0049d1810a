"""An in-process server on the native HTTP transport for tests that need real sockets (SSE,
WebSocket, the connection's own state): the app on a :class:`ManualClock` engine, listening on
an ephemeral 127.0.0.1 port, and a polling wait for what the server does on its own time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
from topics_engine import Engine, ManualClock
from topics_server.app import build
from topics_server.context import ServerContext
from topics_server.http import HttpServer
from topics_server.settings import load_settings


@asynccontextmanager
async def native_server(
    clock: ManualClock, env: dict[str, str]
) -> AsyncIterator[tuple[int, ServerContext, HttpServer, httpx.AsyncClient]]:
    """The server configured by ``env``: its port, context, transport and an HTTP client on it;
    shut down (requests in flight given 1 s) on exit."""
    settings = load_settings(env)
    app, ctx = build(settings, engine=Engine(clock, settings.limits))
    await ctx.start()
    native = HttpServer(app)
    await native.start("127.0.0.1", 0)
    port: int = native.sockets[0].getsockname()[1]
    try:
        # plain HTTP: verify=False spares building an SSL context (~80 ms) per test
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5.0, verify=False) as http:
            yield port, ctx, native, http
    finally:
        await native.shutdown(1.0)
        await ctx.stop()


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` every 5 ms until it holds; fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)
