"""The app as an ASGI application: for in-process tests (httpx's ASGI transport) and for running
under any ASGI server. ``topics serve`` uses the native server (``http``) instead.

The lifespan starts and stops the server context (recovery, checkpoints). A request's body is
read under ``TOPICS_MAX_BODY_BYTES`` (a larger one is not kept: the handler answers 413 when it
asks for it); streams are run until the client disconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from urllib.parse import quote

from starlette.types import Message, Receive, Scope, Send
from topics_engine import Engine
from topics_engine.datadir.directory import DataDirectory

from .app import TopicsApp, build
from .context import ServerContext
from .request import Request
from .settings import Settings
from .sse import SSE_HEADERS, StreamReply


def create_app(
    settings: Settings, engine: Engine | None = None, datadir: DataDirectory | None = None
) -> tuple[AsgiApp, ServerContext]:
    """An ASGI app over :func:`app.build`; the ASGI lifespan starts and stops the context."""
    app, ctx = build(settings, engine, datadir)
    return AsgiApp(app), ctx


class AsgiApp:
    def __init__(self, app: TopicsApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.app.ctx.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.app.ctx.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_path = scope.get("raw_path")
        path = raw_path.decode("latin-1") if raw_path else quote(scope["path"])
        request = Request(scope["method"], path, scope.get("query_string", b""), list(scope["headers"]))
        await self._read_body(request, receive)
        outcome = self.app.handle(request)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if isinstance(outcome, StreamReply):
            await _run_stream(outcome, receive, send)
            return
        body = outcome.joined()
        await send(
            {
                "type": "http.response.start",
                "status": outcome.status,
                "headers": [*outcome.headers, (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def _read_body(self, request: Request, receive: Receive) -> None:
        limit = self.app.max_body_bytes
        declared = request.header("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            request.body_too_large = True
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                request.body_too_large = True
            if not request.body_too_large:
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        request.body = b"".join(chunks) if not request.body_too_large else b""


async def _run_stream(reply: StreamReply, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

    async def emit(frame: bytes) -> None:
        await send({"type": "http.response.body", "body": frame, "more_body": True})

    async def disconnected() -> None:
        message: Message = await receive()
        while message["type"] != "http.disconnect":
            message = await receive()

    producer = asyncio.ensure_future(reply.produce(emit))
    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({producer, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (producer, watcher):
            task.cancel()
        for task in (producer, watcher):
            with contextlib.suppress(asyncio.CancelledError, OSError, Exception):
                await task
        reply.close()
    if producer.done() and not producer.cancelled() and producer.exception() is None:
        with contextlib.suppress(OSError, Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
