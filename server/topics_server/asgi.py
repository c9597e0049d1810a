"""The app as an ASGI application: for in-process tests (httpx's ASGI transport) and for running
under any ASGI server. ``topics serve`` uses the native server (``http``) instead.

The lifespan starts and stops the server context (recovery, checkpoints). A request's body is
read under ``TOPICS_MAX_BODY_BYTES`` (a larger one is not kept: the handler answers 413 when it
asks for it); streams are run until the client disconnects. A ``HEAD`` request is answered with
the status and headers alone (``Content-Length`` that of the body a ``GET`` would get), never
body bytes (RFC 9110 §9.3.2; an ASGI server need not drop them). A ``websocket`` scope is served by
the ``GET /v0/ws`` handler: refused with the HTTP error envelope when the server offers the
``websocket.http.response`` extension (docs/WEBSOCKET.md, "Auth"), else with a close; accepted, it runs a
:class:`WebSocketSession`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from urllib.parse import quote

from starlette.types import Message, Receive, Scope, Send
from topics_engine import Engine
from topics_engine.datadir import DataDirectory

from .app import TopicsApp, build
from .context import ServerContext
from .request import Request
from .responses import Response
from .settings import Settings
from .sse import StreamReply
from .streams import Frame
from .websocket import WebSocketReply


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
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)

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
        if isinstance(outcome, WebSocketReply):  # an upgrade over plain HTTP: the server has none
            outcome = self.app.error(request, RuntimeError("this ASGI server did not upgrade the request"))
        await send(
            {
                "type": "http.response.start",
                "status": outcome.status,
                "headers": [*outcome.headers, *_content_length(outcome)],
            }
        )
        body = b"" if request.method == "HEAD" else outcome.joined()
        await send({"type": "http.response.body", "body": body})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_path = scope.get("raw_path")
        path = raw_path.decode("latin-1") if raw_path else quote(scope["path"])
        headers = list(scope["headers"])
        request = Request("GET", path, scope.get("query_string", b""), headers)
        first = await receive()  # websocket.connect
        if first["type"] != "websocket.connect":
            return
        outcome = self.app.handle(request)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if not isinstance(outcome, WebSocketReply):
            response = (
                outcome
                if isinstance(outcome, Response)
                else self.app.error(request, TypeError("not a socket"))
            )
            await _refuse(scope, send, response)
            return
        await send({"type": "websocket.accept"})
        sink = _AsgiMessages(send)
        session = outcome.open(sink)
        delivery = asyncio.ensure_future(session.run())
        try:
            while not delivery.done():
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    break
                if message["type"] == "websocket.receive":
                    text = message.get("text")
                    if text is not None:
                        session.received(text.encode(), True)
                    else:
                        session.received(message.get("bytes") or b"", False)
                    await sink.drain()
        finally:
            delivery.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await delivery
            session.close()

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


def _content_length(response: Response) -> list[tuple[bytes, bytes]]:
    """The body's length (none on a 204: RFC 9110 §8.6)."""
    return [] if response.status == 204 else [(b"content-length", str(response.length).encode())]


async def _refuse(scope: Scope, send: Send, response: Response) -> None:
    """A refused upgrade: the HTTP response itself where the server can send one."""
    if "websocket.http.response" in scope.get("extensions", {}):
        body = response.joined()
        headers = [*response.headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "websocket.http.response.start", "status": response.status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})


class _AsgiQueue:
    """Frames written while the stream runs, sent in order by :meth:`drain` (ASGI ``send`` is a
    coroutine; a sink's ``write`` may not wait)."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.pending: list[Frame | None] = []
        self.closed = False

    @property
    def blocked(self) -> bool:
        return bool(self.pending)

    def write(self, frame: Frame) -> None:
        if self.closed:
            raise ConnectionResetError("client went away")
        self.pending.append(frame)

    async def drain(self) -> None:
        while self.pending:
            frame = self.pending.pop(0)
            try:
                await self.send(self.message(frame))
            except OSError as err:
                self.closed = True
                raise ConnectionResetError("client went away") from err

    def message(self, frame: Frame | None) -> Message:
        raise NotImplementedError


class _AsgiChunks(_AsgiQueue):
    def message(self, frame: Frame | None) -> Message:
        body = frame if isinstance(frame, bytes) else b"".join(frame or ())
        return {"type": "http.response.body", "body": body, "more_body": True}


class _AsgiMessages(_AsgiQueue):
    """WebSocket text messages; ``None`` queued is the close (pings are left to the ASGI server,
    which keeps the socket alive itself)."""

    def message(self, frame: Frame | None) -> Message:
        if frame is None:
            return {"type": "websocket.close", "code": self.close_code}
        payload = frame if isinstance(frame, bytes) else b"".join(frame)
        return {"type": "websocket.send", "text": payload.decode()}

    def ping(self, payload: bytes) -> None:
        pass

    close_code = 1000

    def close(self, code: int, reason: str) -> None:
        self.close_code = code
        self.pending.append(None)
        self.closed = True


async def _run_stream(reply: StreamReply, receive: Receive, send: Send) -> None:
    try:
        await send({"type": "http.response.start", "status": 200, "headers": reply.headers})
    except BaseException:  # the client is gone already: the reply still closes (its slot)
        reply.close()
        raise
    sink = _AsgiChunks(send)

    async def disconnected() -> None:
        message: Message = await receive()
        while message["type"] != "http.disconnect":
            message = await receive()

    async def produce() -> None:
        await reply.produce(sink)
        await sink.drain()

    producer = asyncio.ensure_future(produce())
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
