"""The native HTTP/1.1 server ``topics serve`` runs: an asyncio protocol over httptools, and
the listener it shares with HTTP/2 over cleartext (``http2``).

Why not an ASGI server: on one core, uvicorn's per-request machinery (a task, ASGI message
dicts, two writes per response) costs more than the whole append of a small record; measured
with a bare app on one connection, a minimal httptools protocol used 57–65 µs of server CPU per
request against uvicorn's 135–157 (docs/BENCHMARKS.md). This server hands each parsed request straight to
:class:`TopicsApp`; a handler that has nothing to wait for is answered within the same event-loop
callback that parsed it — no task is created — and the response goes out in one write.

Semantics
    Keep-alive (HTTP/1.1 default, HTTP/1.0 ``Connection: keep-alive``), pipelining (requests
    are answered strictly in order; while one waits, later ones queue and reading pauses when
    too many are queued; while the client does not take what it is sent — the transport's
    write buffer is over its high-water mark — nothing more is answered and the connection is
    not read, so a client that pipelines without reading holds at most the high-water mark
    plus one answer, and one read's requests), ``Expect: 100-continue``, chunked request bodies. A body over
    ``TOPICS_MAX_BODY_BYTES`` is not buffered (its bytes are discarded as they arrive; the
    handler answers 413). Streams (SSE) use chunked transfer encoding and honour the socket's
    write flow control; a client that goes away cancels its stream. ``GET /v0/ws`` upgrades
    the connection to a WebSocket (the handshake and client frames by the ``websockets``
    sans-I/O protocol; server text frames are written directly, their record bytes never
    joined). Any other upgrade request is answered over HTTP/1.1, then the connection closes.
    A ``HEAD`` request is answered with the head alone (RFC 9110 §9.3.2) — the status and
    headers, ``Content-Length`` that of the body a ``GET`` would get — whatever the app put in
    the response: the transport owns that rule (bytes after the head would be read as the next
    response on the connection). Only ``GET`` operations stream or upgrade.
    Malformed HTTP is a 400 in the error envelope and closes the connection. Idle keep-alive
    connections close after :data:`KEEP_ALIVE_S`. Shutdown stops accepting, lets requests in
    flight finish (bounded) and ends streams cleanly — an SSE stream with a final
    ``event: error`` (code 503) and its terminating chunk, a WebSocket with a close frame 1001
    "going away" (a client that is not reading is cut) — then closes everything.

HTTP/2
    A connection whose first bytes are the HTTP/2 preface (prior knowledge, RFC 9113 §3.3) is
    handed to :class:`http2.Http2Connection` on the same transport: the first bytes are looked at
    once per connection, never per request (the data path tests one flag, ``diverted``, which
    also stands for an upgraded connection). ``Upgrade: h2c`` (RFC 7540 §3.2, deprecated by
    RFC 9113) is not taken up: such a request is answered over HTTP/1.1 like any other
    non-WebSocket upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import httptools
from topics_engine.errors import InvalidRequest
from websockets.datastructures import Headers
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.http11 import Request as WsRequest
from websockets.protocol import State
from websockets.server import ServerProtocol

from .app import Outcome, TopicsApp
from .http2 import Http2Connection
from .request import Request, run_after_answer
from .responses import JSON_HEADERS, Response
from .sse import SHUTDOWN_EVENT, StreamReply
from .streams import Frame
from .transport import (
    H2_PREFACE,
    STALLED_CLOSE_S,
    BodyBuffer,
    Connection,
    ConnectionGate,
    bound_stream_buffers,
    build_request,
    connection_limit,
    content_length,
)
from .websocket import CLOSE_GOING_AWAY, WebSocketReply, WebSocketSession, text_frame_head

log = logging.getLogger("topics.http")
_WS_LOG = logging.getLogger("topics.ws.protocol")
_WS_LOG.setLevel(logging.WARNING)  # not a line per opened socket

KEEP_ALIVE_S = 75.0
MAX_HEADER_BYTES = 64 << 10
MAX_QUEUED = 32
"""Pipelined requests queued behind one that waits before reading pauses."""

_REASONS = {s.value: s.phrase.encode() for s in http.HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class _NoCallbacks:
    """The callbacks of :data:`_DETACHED`: none."""


_DETACHED = httptools.HttpRequestParser(_NoCallbacks())
"""What a connection's ``parser`` becomes once it is done (closed, or handed to HTTP/2): its
own parser refers back to it (the callbacks), a cycle that the server's freezing
(``context.Freezer``) would keep until a sweep; dropping it lets reference counting free the
protocol at once."""


_JSON_HEADS: dict[int, bytes] = {}


def _json_head(status: int) -> bytes:
    head = _JSON_HEADS[status] = b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: " % (
        status,
        _REASONS.get(status, b""),
    )
    return head


def _head(status: int, headers: list[tuple[bytes, bytes]], extra: bytes) -> bytes:
    lines = [b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b""))]
    lines.extend(b"%s: %s\r\n" % (k, v) for k, v in headers)
    lines.append(extra)
    lines.append(b"\r\n")
    return b"".join(lines)


class HttpProtocol(asyncio.Protocol):
    """One client connection."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.app = server.app
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.pending: deque[tuple[Request, bool]] = deque()
        self.malformed: InvalidRequest | None = None
        """Malformed bytes came after the requests in ``pending`` (or in hand): their 400 goes
        out once those are answered, then the connection closes."""
        self.busy = False
        self.streaming = False
        self.closed = False
        self.task: asyncio.Task[None] | None = None
        self.write_paused = False
        self.drained: asyncio.Future[None] | None = None
        self.last_active = self.loop.time()
        self.reading_paused = False
        """Reading is paused: too many pipelined requests queued, or the client is not reading
        what it is sent (``write_paused``)."""
        self.ending = False
        """A graceful shutdown ends this connection's stream: its cancellation is the end of
        the stream, not a client gone (:meth:`wind_down`)."""
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.header_bytes = 0
        self.body = BodyBuffer(server.app.max_body_bytes)
        self.started = 0.0
        self.diverted = True
        """The bytes received do not go to the HTTP/1.1 parser: the connection's first bytes
        (until they show it is not HTTP/2), or the connection was upgraded."""
        self.first_bytes = b""
        """The start of an HTTP/2 preface, while it is incomplete."""
        self.upgrade_data: bytearray | None = None
        """Bytes after an upgrade request's head (set once the parser met the upgrade)."""
        self.websocket: _NativeWebSocket | None = None
        self.fd = -1
        """The socket's descriptor (cached at ``connection_made``; -1 for a TLS transport, whose
        bytes must go through it): a stream's frames may be sent to it directly
        (``streams`` "Broadcast", :meth:`direct_fd`)."""

    # -- connection -------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are duck-typed
        if not self.server.gate.admit(len(self.server.connections)):
            self.closed = True  # over the connection limit: refused (the gate logs the episode)
            transport.abort()  # type: ignore[attr-defined]
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if transport.get_extra_info("sslcontext") is None:
                self.fd = sock.fileno()
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.parser = _DETACHED
        connections = self.server.connections
        if self in connections:
            connections.discard(self)
            self.server.gate.released(len(connections))
        if self.task is not None and not self.task.done():
            # on the next iteration, as http2 does: a task cancelled before it first ran would
            # skip its ``finally`` blocks (the app's slot release, a stream reply's close)
            self.loop.call_soon(self.task.cancel)
        if self.drained is not None and not self.drained.done():
            self.drained.set_exception(ConnectionResetError("client went away"))
            self.drained.exception()  # retrieved: nobody may be waiting

    def data_received(self, data: bytes) -> None:
        self.last_active = self.loop.time()
        if self.diverted:
            self._divert(data)
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            rest = data[upgrade.args[0] :]
            self.diverted = True
            if self.websocket is not None:  # upgraded while parsing: the rest is WebSocket frames
                self.upgrade_data = bytearray()
                if rest:
                    self.websocket.receive(rest)
                return
            self.upgrade_data = bytearray(rest)
            if self.pending:  # answered as HTTP unless it is a WebSocket upgrade; then closed
                request, _ = self.pending[-1]
                self.pending[-1] = (request, False)
        except httptools.HttpParserError as err:
            error = InvalidRequest(f"malformed HTTP request: {err}")
            if self.busy or self.pending:  # answered in order, after the requests before it
                self.malformed = error
                self._pause_reading()  # the byte stream is lost from here on
            else:
                self._fail(error)

    def _divert(self, data: bytes) -> None:
        """Bytes that are not for the HTTP/1.1 parser, or the connection's first bytes."""
        if self.websocket is not None:
            self.websocket.receive(data)
        elif self.upgrade_data is not None:  # the upgrade is not answered yet
            self.upgrade_data += data
        else:  # the first bytes: HTTP/2 with prior knowledge, or HTTP/1.1
            head = self.first_bytes + data if self.first_bytes else data
            if len(head) < len(H2_PREFACE) and H2_PREFACE.startswith(head):
                self.first_bytes = head  # could still be the preface: wait for more
                return
            self.diverted = False
            self.first_bytes = b""
            if head.startswith(H2_PREFACE):
                self._to_http2(head)
            else:
                self.data_received(head)

    def _to_http2(self, data: bytes) -> None:
        """Hand the connection to HTTP/2: the same transport, a new protocol."""
        assert self.transport is not None
        self.closed = True  # this protocol is done with the connection
        self.parser = _DETACHED
        self.server.connections.discard(self)
        h2 = Http2Connection(self.server, self.transport)
        self.transport.set_protocol(h2)
        h2.data_received(data)

    def pause_writing(self) -> None:
        """The client is not taking what it is sent: stop reading it too (as ``http2`` does),
        so pipelined requests cannot keep adding answers to the write buffer."""
        self.write_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        if not self.busy and (self.pending or self.malformed is not None):
            self._next()  # requests (or a 400) held back while the client was not reading
        else:
            self._maybe_resume_reading()

    def _pause_reading(self) -> None:
        if not self.reading_paused and not self.closed and self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True

    def _maybe_resume_reading(self) -> None:
        """Resume reading once the queue is short again and the client takes what it is sent."""
        if (
            self.reading_paused
            and not self.write_paused
            and self.malformed is None
            and len(self.pending) <= MAX_QUEUED // 2
            and not self.closed
            and self.transport is not None
        ):
            self.transport.resume_reading()
            self.reading_paused = False

    def direct_fd(self) -> int:
        """The socket's descriptor if bytes sent to it now go out in order, else -1: the
        connection is open and not winding down, the client takes what it is sent, and the
        transport is not closing and holds no unsent bytes (``streams`` "Broadcast")."""
        transport = self.transport
        if (
            self.closed
            or self.write_paused
            or self.ending
            or transport is None
            or transport.is_closing()
            or transport.get_write_buffer_size()
        ):
            return -1
        return self.fd

    async def drain(self) -> None:
        if self.closed:
            raise ConnectionResetError("client went away")
        if self.write_paused:
            self.drained = self.loop.create_future()
            await self.drained

    def close(self) -> None:
        """Close once the write buffer is flushed; a client that takes none of it for
        :data:`STALLED_CLOSE_S` is cut (else a client that never reads would keep the
        connection — its descriptor, its buffers, its place under the gate — for ever)."""
        if self.transport is not None and not self.closed:
            self.transport.close()
            self._abort_if_stalled(None)
        self.closed = True

    def _abort_if_stalled(self, before: int | None) -> None:
        """Abort a closing connection whose unsent bytes did not shrink since ``before``."""
        transport = self.transport
        if transport is None or self not in self.server.connections:
            return  # gone (connection_lost)
        left = transport.get_write_buffer_size()
        if not left:
            return  # flushed: the transport closes by itself
        if before is not None and left >= before:
            transport.abort()
            return
        self.loop.call_later(STALLED_CLOSE_S, self._abort_if_stalled, left)

    def idle_for(self, now: float) -> float:
        """Seconds since the connection last received bytes, 0 while a request is in hand —
        requests held back only because the client does not read its answers do not count (a
        client that pipelines and never reads is closed like an idle one)."""
        in_hand = self.busy or (self.pending and not self.write_paused)
        return 0.0 if in_hand else now - self.last_active

    def wind_down(self) -> None:
        """Close once no request is in hand; end a stream (an SSE stream gets a final
        ``event: error`` 503 and its last chunk; a WebSocket a close frame 1001)."""
        if not self.busy and not self.pending:
            self.close()
        elif self.streaming and self.task is not None and not self.ending:
            self.ending = True
            self.task.cancel()

    # -- parser callbacks (each request: url, headers, body parts, complete) ----------------------

    def on_url(self, url: bytes) -> None:
        if not self.url:
            self.started = time.perf_counter()
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        """Headers are kept as sent (``Request`` compares names case-insensitively)."""
        self.header_bytes += len(name) + len(value)
        if self.header_bytes > MAX_HEADER_BYTES:
            raise httptools.HttpParserError("request headers are too large")
        self.headers.append((name, value))
        # the interim response only to a request answered next: written while an earlier
        # response (or a stream) is still going out, it would land inside it; a pipelining
        # client sends its body after its own wait for the interim response instead
        expects = len(name) == 6 and name.lower() == b"expect" and value.lower() == b"100-continue"
        if expects and not self.busy and not self.pending:
            assert self.transport is not None
            self.transport.write(_CONTINUE)  # a body over the limit is discarded as it arrives

    def on_body(self, body: bytes) -> None:
        self.body.add(body)

    def on_message_complete(self) -> None:
        body, too_large = self.body.take()
        request = build_request(
            self.parser.get_method(), self.url, self.headers, body, too_large, self.started
        )
        self.url = b""
        self.headers = []
        self.header_bytes = 0
        self.pending.append((request, self.parser.should_keep_alive()))
        if not self.busy and not self.write_paused:
            self._next()
        elif len(self.pending) > MAX_QUEUED or self.write_paused:
            self._pause_reading()

    # -- answering ---------------------------------------------------------------------------------

    def _next(self) -> None:
        """Answer queued requests in order; stop at one that has to wait, or while the client
        is not taking what it is sent (``resume_writing`` goes on): the write buffer holds at
        most the transport's high-water mark plus one response."""
        while self.pending and not self.busy and not self.closed and not self.write_paused:
            request, keep_alive = self.pending.popleft()
            later: list[Callable[[], None]] = []
            request.apply_later = later
            try:
                outcome = self.app.handle(request)
                if isinstance(outcome, Response):
                    self._write(outcome, keep_alive, request.method == "HEAD")
                    continue
                if isinstance(outcome, WebSocketReply):
                    self._upgrade(request, outcome)
                    return
                self.busy = True
                self.task = self.loop.create_task(self._finish(outcome, keep_alive, request))
            finally:
                request.apply_later = None  # what runs later (a parked request's handler) applies at once
                if later:
                    run_after_answer(later)
        if self.malformed is not None:
            if not self.pending and not self.busy and not self.closed and not self.write_paused:
                self._fail(self.malformed)  # every request before the bad bytes is answered
            return  # nothing more is read
        self._maybe_resume_reading()

    async def _finish(
        self, outcome: Outcome | Awaitable[Outcome], keep_alive: bool, request: Request
    ) -> None:
        try:
            if not isinstance(outcome, StreamReply | Response | WebSocketReply):
                outcome = await outcome
            if isinstance(outcome, StreamReply):
                keep_alive = await self._stream(outcome) and keep_alive
            elif isinstance(outcome, Response):
                self._write(outcome, keep_alive, request.method == "HEAD")
        finally:
            self.busy = False
            self.task = None
        if isinstance(outcome, WebSocketReply):
            if not self.closed:
                self._upgrade(request, outcome)
        elif keep_alive and not self.closed:
            self._next()

    def _write(self, response: Response, keep_alive: bool, head_only: bool = False) -> None:
        """Write ``response`` in one write; ``head_only`` (a ``HEAD`` request): its status and
        headers, with the Content-Length of its body, but not the body."""
        if self.closed or self.transport is None:
            return
        body = response.body
        length = content_length(response)
        if keep_alive and response.headers is JSON_HEADERS:  # the common case, pre-formatted
            head = b"%s%d\r\n\r\n" % (_JSON_HEADS.get(response.status) or _json_head(response.status), length)
        else:  # no Content-Length on a 204 (RFC 9110 §8.6): a CORS preflight's
            extra = b"content-length: %d\r\n" % length if response.status != 204 else b""
            if not keep_alive:
                extra += b"connection: close\r\n"
            head = _head(response.status, response.headers, extra)
        if head_only:
            self.transport.write(head)
        elif isinstance(body, bytes):
            self.transport.write(head + body)
        else:  # a record page in parts: one vectored write, the record bytes never joined
            self.transport.writelines([head, *body])
        if not keep_alive:
            self.close()

    async def _stream(self, reply: StreamReply) -> bool:
        """Run a stream to its end; True if the connection can carry another request. The
        reply is closed on every path (its close gives the stream slot back)."""
        transport = self.transport
        if transport is None or self.closed:  # the client left before the stream started
            reply.close()
            return False
        transport.write(_head(200, reply.headers, b"transfer-encoding: chunked\r\n"))
        self.streaming = True
        bound_stream_buffers(transport)
        ended = False
        try:
            await reply.produce(_ChunkedSink(self))
            ended = True
        except (ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            if not self.ending or self.closed:
                raise  # the client went away
            asyncio.current_task().uncancel()  # type: ignore[union-attr]  # the server's shutdown
            if not self.write_paused:  # a client that reads gets a well-formed end
                transport.write(_chunk(SHUTDOWN_EVENT) + b"0\r\n\r\n")
                self.close()
                return False
        finally:
            self.streaming = False
            reply.close()
        if ended and not self.closed and not self.write_paused:
            transport.write(b"0\r\n\r\n")
            return True
        if not self.closed:  # it ended on a client that is not reading: close the connection
            self.close()
            self.loop.call_later(STALLED_CLOSE_S, transport.abort)
        return False

    def _upgrade(self, request: Request, reply: WebSocketReply) -> None:
        """Complete the WebSocket handshake and run the session on this connection."""
        assert self.transport is not None
        handshake = ServerProtocol(logger=_WS_LOG)
        headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers])
        response = handshake.accept(WsRequest(request.path, headers))
        if response.status_code != 101:
            reason = response.body.decode("utf-8", "replace").strip() or response.reason_phrase
            error = self.app.error(request, InvalidRequest(reason, {"field": "upgrade"}))
            self._write(error, keep_alive=False)
            return
        handshake.send_response(response)
        self.transport.writelines(handshake.data_to_send())
        # frames from here on: a protocol that starts open (the handshake was parsed above)
        protocol = ServerProtocol(state=State.OPEN, max_size=self.app.max_body_bytes, logger=_WS_LOG)
        ws = self.websocket = _NativeWebSocket(self, protocol)
        ws.session = reply.open(ws)
        self.busy = self.streaming = True
        bound_stream_buffers(self.transport)
        self.task = self.loop.create_task(ws.serve())
        # a task cancelled before it first ran (the client reset the connection right after the
        # upgrade) never reaches serve()'s ``finally``: close the session when the task ends
        session = ws.session
        self.task.add_done_callback(lambda _: session.close())
        early, self.upgrade_data = bytes(self.upgrade_data or b""), bytearray()
        if early:
            ws.receive(early)

    def _fail(self, err: Exception) -> None:
        """Malformed HTTP: a 400 in the envelope, then close (the byte stream is lost)."""
        request = Request("GET", "/", b"", [], started=time.perf_counter())
        self._write(self.app.error(request, err), keep_alive=False)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class _ChunkedSink:
    """A stream's frames as HTTP/1.1 chunks (a frame in parts goes out in one vectored write)."""

    __slots__ = ("conn",)

    def __init__(self, conn: HttpProtocol) -> None:
        self.conn = conn

    @property
    def closed(self) -> bool:
        return self.conn.closed

    @property
    def blocked(self) -> bool:
        return self.conn.write_paused

    def write(self, frame: Frame) -> None:
        conn = self.conn
        if conn.closed or conn.transport is None:
            raise ConnectionResetError("client went away")
        if isinstance(frame, bytes):
            conn.transport.write(_chunk(frame))
        else:
            conn.transport.writelines([b"%x\r\n" % sum(map(len, frame)), *frame, b"\r\n"])

    async def drain(self) -> None:
        await self.conn.drain()

    # -- DirectSink (streams "Broadcast") -------------------------------------------------------

    def direct_fd(self) -> int:
        return self.conn.direct_fd()

    def wire(self, frames: list[Frame]) -> bytes:
        return b"".join([_chunk(frame if isinstance(frame, bytes) else b"".join(frame)) for frame in frames])

    def write_wire(self, data: memoryview) -> None:
        conn = self.conn
        if conn.closed or conn.transport is None:
            raise ConnectionResetError("client went away")
        conn.transport.write(data)


class _NativeWebSocket:
    """A WebSocket on an :class:`HttpProtocol` connection: the :class:`MessageSink` of its
    session, and the reader of client frames (reassembling fragmented messages)."""

    def __init__(self, conn: HttpProtocol, protocol: ServerProtocol) -> None:
        self.conn = conn
        self.protocol = protocol
        self.session: WebSocketSession | None = None
        self.fragments: list[bytes] = []
        self.fragment_text = False

    # -- MessageSink --------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.conn.closed or self.protocol.state is not State.OPEN

    @property
    def blocked(self) -> bool:
        return self.conn.write_paused

    def write(self, frame: Frame) -> None:
        transport = self.conn.transport
        if self.closed or transport is None:
            raise ConnectionResetError("client went away")
        if isinstance(frame, bytes):
            transport.write(text_frame_head(len(frame)) + frame)
        else:
            transport.writelines([text_frame_head(sum(map(len, frame))), *frame])

    async def drain(self) -> None:
        await self.conn.drain()

    # -- DirectSink (streams "Broadcast") -------------------------------------------------------

    def direct_fd(self) -> int:
        return -1 if self.protocol.state is not State.OPEN else self.conn.direct_fd()

    def wire(self, frames: list[Frame]) -> bytes:
        out: list[bytes | memoryview] = []
        for frame in frames:
            payload = frame if isinstance(frame, bytes) else b"".join(frame)
            out += (text_frame_head(len(payload)), payload)
        return b"".join(out)

    def write_wire(self, data: memoryview) -> None:
        transport = self.conn.transport
        if self.closed or transport is None:
            raise ConnectionResetError("client went away")
        transport.write(data)

    def ping(self, payload: bytes) -> None:
        if not self.closed:
            self.protocol.send_ping(payload)
            self._flush_protocol()

    def close(self, code: int, reason: str) -> None:
        if not self.closed:
            self.protocol.send_close(code, reason)
            self._flush_protocol()

    # -- reading ------------------------------------------------------------------------------

    def receive(self, data: bytes) -> None:
        protocol = self.protocol
        protocol.receive_data(data)
        for frame in protocol.events_received():
            if not isinstance(frame, WsFrame):
                continue
            if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                self.fragments = [bytes(frame.data)]
                self.fragment_text = frame.opcode is Opcode.TEXT
            elif frame.opcode is Opcode.CONT:
                self.fragments.append(bytes(frame.data))
            else:
                continue  # ping (answered by the protocol), pong, close
            if frame.fin and self.session is not None:
                message = self.fragments[0] if len(self.fragments) == 1 else b"".join(self.fragments)
                self.fragments = []
                self.session.received(message, self.fragment_text)
        self._flush_protocol()

    def _flush_protocol(self) -> None:
        """Write what the protocol queued (handshake replies, pongs, close frames); close the
        transport once it asks to (after a close handshake or a protocol error)."""
        transport = self.conn.transport
        if transport is None or self.conn.closed:
            return
        for chunk in self.protocol.data_to_send():
            if chunk:
                transport.write(chunk)
            else:  # SEND_EOF: the closing handshake is over
                self.conn.close()
                return

    async def serve(self) -> None:
        """Run the session's delivery until the socket goes away."""
        assert self.session is not None
        try:
            await self.session.run()
        except (ConnectionError, OSError):
            pass
        finally:
            self.session.close()
            if self.protocol.state is State.OPEN:
                if self.conn.ending:  # the server's graceful shutdown
                    self.close(CLOSE_GOING_AWAY, "server shutting down")
                else:
                    self.close(1000, "")
            self.conn.streaming = self.conn.busy = False


class HttpServer:
    """Listens, tracks connections, and shuts down gracefully."""

    def __init__(self, app: TopicsApp) -> None:
        self.app = app
        self.loop = asyncio.get_running_loop()
        self.connections: set[Connection] = set()
        """Open connections: :class:`HttpProtocol`, or :class:`Http2Connection` once one spoke
        HTTP/2."""
        self.gate = ConnectionGate(connection_limit())
        """At most this many connections (the descriptor limit less what storage needs)."""
        self._server: asyncio.base_events.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self, host: str, port: int) -> None:
        self._server = await self.loop.create_server(
            lambda: HttpProtocol(self), host, port, backlog=2048, reuse_address=True
        )
        self._sweeper = self.loop.create_task(self._sweep())

    async def _sweep(self) -> None:
        """Close idle keep-alive connections: one sweep every few seconds instead of a timer
        per request."""
        while True:
            await asyncio.sleep(KEEP_ALIVE_S / 8)
            self.close_idle(self.loop.time())

    def close_idle(self, now: float) -> int:
        """Close the connections idle (no request in hand) for :data:`KEEP_ALIVE_S` at ``now``
        (loop time); returns how many."""
        idle = [conn for conn in self.connections if conn.idle_for(now) >= KEEP_ALIVE_S]
        for conn in idle:
            conn.close()
        return len(idle)

    @property
    def sockets(self) -> list[Any]:
        return list(self._server.sockets) if self._server is not None else []

    async def shutdown(self, timeout_s: float) -> None:
        """Stop accepting; close idle connections at once and busy ones once their requests are
        answered (streams end cleanly, see ``wind_down``; HTTP/2 connections get their GOAWAY
        last), waiting at most ``timeout_s``."""
        if self._server is not None:
            self._server.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        deadline = time.monotonic() + timeout_s
        while self.connections and time.monotonic() < deadline:
            for conn in list(self.connections):
                conn.wind_down()
            if self.connections:
                await asyncio.sleep(0.01)
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            await self._server.wait_closed()
