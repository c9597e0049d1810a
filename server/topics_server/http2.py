"""HTTP/2 over cleartext (h2c) with prior knowledge (RFC 9113 §3.3), on the HTTP/1.1 port.

``http.HttpProtocol`` hands a connection whose first bytes are the HTTP/2 preface to
:class:`Http2Connection` (the same transport, a new protocol). Frames, HPACK, stream states and
flow-control windows are the ``h2`` sans-I/O library's; this module maps its events onto the
same :class:`TopicsApp` the HTTP/1.1 server calls.

Semantics (each request is answered as over HTTP/1.1: the same status, headers minus the
connection-specific ones — ``connection``, ``keep-alive``, ``transfer-encoding`` … — and body)
    A stream's request is handed to the app once its END_STREAM arrived; a body over
    ``TOPICS_MAX_BODY_BYTES`` is not buffered (its bytes are discarded as they arrive; the
    handler answers 413). Requests on different streams run concurrently, each answered when its
    own response is ready (a long-poll on one stream holds up nothing else). ``HEAD`` gets the
    head alone, ``content-length`` that of the body a ``GET`` would get. ``Expect:
    100-continue`` gets an interim ``100``. Streams (SSE) are HTTP/2 streams of DATA frames;
    many run on one connection. A response body goes out as the client's flow-control windows
    allow: what they do not take yet waits on its stream. An SSE stream's sink is ``blocked``
    while its stream holds data the client's window did not take (or the socket is not taking
    writes), so a client that stops reading one stream meets the slow-consumer rules of
    ``streams.StreamLoop`` on that stream alone, as a client that stops reading its HTTP/1.1
    connection does; a stream that ended with unread data is reset (CANCEL) after
    :data:`transport.STALLED_CLOSE_S`. A stream the client resets (RST_STREAM) cancels that
    request or stream only; one reset in the same read as its request is never run.
    ``GET /v0/ws`` gets the answer HTTP/1.1 gives a ``GET`` without an upgrade (400,
    ``detail.field: "upgrade"``): WebSocket over HTTP/2 (RFC 8441) is not served and
    ``SETTINGS_ENABLE_CONNECT_PROTOCOL`` is not sent; a CONNECT (whose request never ends) is
    answered as soon as its headers arrive (405), then its stream is reset NO_ERROR.

Limits
    :data:`MAX_CONCURRENT_STREAMS` streams at a time, :data:`MAX_HEADER_LIST_SIZE` bytes of
    headers (HTTP/1.1's bound), :data:`INITIAL_WINDOW_SIZE` bytes in flight per request body.
    The request bodies held on one connection (received, not yet answered) total at most
    ``TOPICS_MAX_BODY_BYTES``: a stream whose body would take them past that is refused
    (RST_STREAM REFUSED_STREAM: nothing was done, the client may retry) — one body alone always
    fits. Responses waiting on flow control are bounded by the streams.
    Malformed HTTP/2 (the ``h2`` library's ``ProtocolError``) is a GOAWAY with its error code,
    then the connection closes. After a GOAWAY that closes the connection, the server ends its
    side and reads until the client closes (at most :data:`LINGER_S`), so that no reset destroys
    the GOAWAY before the client reads it.

Shutdown and idle
    :meth:`Http2Connection.wind_down` refuses new streams (RST_STREAM REFUSED_STREAM: retryable),
    ends SSE streams cleanly (a final ``event: error`` 503, then END_STREAM; one whose client
    does not read is reset after ``STALLED_CLOSE_S``) and lets requests in flight finish
    (the server bounds the wait); once no stream is left it sends GOAWAY (NO_ERROR, the last
    stream taken) and closes. The GOAWAY goes last, not first: clients built on the ``h2``
    library (httpx) treat any frame after a GOAWAY as a protocol error (python-hyper/h2#1181),
    so a GOAWAY first would lose the very responses the drain waits for. A connection with no
    stream for ``http.KEEP_ALIVE_S`` is closed with a GOAWAY by the server's idle sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import ProtocolError
from h2.settings import SettingCodes, Settings
from topics_engine.errors import InvalidRequest

from .app import Outcome
from .request import Request
from .responses import JSON_HEADERS, Response
from .sse import SHUTDOWN_EVENT, SSE_HEADERS, StreamReply
from .streams import Frame
from .transport import (
    STALLED_CLOSE_S,
    BadTarget,
    BodyBuffer,
    Listener,
    bound_stream_buffers,
    build_request,
    content_length,
)
from .websocket import WebSocketReply

log = logging.getLogger("topics.http2")

MAX_CONCURRENT_STREAMS = 100
"""RFC 9113 §6.5.2 recommends no fewer; past it ``h2`` refuses the connection (a client must
respect the setting)."""
MAX_HEADER_LIST_SIZE = 64 << 10
"""As HTTP/1.1's ``MAX_HEADER_BYTES``; past it the connection gets GOAWAY ENHANCE_YOUR_CALM."""
INITIAL_WINDOW_SIZE = 1 << 20
"""Per stream: the request-body bytes a client may send before our WINDOW_UPDATE (received bytes
are acknowledged as they arrive; memory is bounded by the body limits, not the window)."""
CONNECTION_WINDOW = 16 << 20
"""The connection's receive window (the protocol starts it at 65 535)."""
LINGER_S = 1.0
"""After the GOAWAY that closes a connection, how long the client may take to close its side."""

_CONFIG = H2Configuration(
    client_side=False,
    header_encoding=None,
    # the response headers are the app's own (lower-case names, connection-specific ones dropped
    # by _h2_headers, values it built): checking them again per response costs ~5 % of a request
    validate_outbound_headers=False,
    normalize_outbound_headers=False,
)
_HOP_BY_HOP = frozenset((b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"))
"""Connection-specific header fields, which HTTP/2 forbids (RFC 9113 §8.2.2)."""
_STATUS = {status: b"%d" % status for status in range(100, 600)}
_JSON_H2_HEADERS = [(b"content-type", b"application/json")]
_SSE_H2_HEADERS = [(b":status", b"200"), *((k, v) for k, v in SSE_HEADERS if k not in _HOP_BY_HOP)]
_CONTINUE = [(b":status", b"100")]
_NONE: set[int | None] = set()


def _h2_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """A response's headers for HTTP/2: lower-case names, connection-specific ones dropped."""
    if headers is JSON_HEADERS:
        return _JSON_H2_HEADERS
    return [(k.lower(), v) for k, v in headers if k.lower() not in _HOP_BY_HOP]


class _Stream:
    """One stream: its request as it arrives, then its response as it goes out."""

    __slots__ = (
        "body",
        "drained",
        "end_after",
        "ending",
        "headers",
        "held",
        "id",
        "pending",
        "over",
        "request",
        "sent",
        "started",
        "streaming",
        "task",
    )

    def __init__(self, stream_id: int, headers: list[tuple[bytes, bytes]], limit: int) -> None:
        self.id = stream_id
        self.headers = headers
        self.started = time.perf_counter()
        self.body = BodyBuffer(limit)
        self.request: Request | None = None
        """Set once the request went to the app."""
        self.sent = False
        """The client ended its side (END_STREAM): its request is whole."""
        self.task: asyncio.Task[None] | None = None
        self.pending: deque[bytes | memoryview] = deque()
        """Response bytes the client's flow-control windows have not taken yet."""
        self.end_after = False
        """The response is complete: END_STREAM goes with its last pending byte."""
        self.drained: asyncio.Future[None] | None = None
        self.streaming = False
        self.ending = False
        """The server's graceful shutdown ends this SSE stream: its cancellation is its end."""
        self.over = False
        """Answered whole, or reset (by the client or by this side): nothing more goes out."""
        self.held = 0
        """Bytes of its request body counted in the connection's ``buffered``."""


class Http2Connection(asyncio.Protocol):
    """One client connection speaking HTTP/2 (from its first byte: the preface)."""

    def __init__(self, server: Listener, transport: asyncio.Transport) -> None:
        self.server = server
        self.app = server.app
        self.loop = server.loop
        self.transport = transport
        self.h2 = H2Connection(_CONFIG)
        self.h2.local_settings = Settings(
            client=False,
            initial_values={
                SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
                SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_SIZE,
                SettingCodes.INITIAL_WINDOW_SIZE: INITIAL_WINDOW_SIZE,
            },
        )
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(CONNECTION_WINDOW - 65_535)
        self.streams: dict[int, _Stream] = {}
        self.buffered = 0
        """Request-body bytes held for the open streams (at most ``max_body_bytes``)."""
        self.closed = False
        self.write_paused = False
        self.bounded = False
        """The socket and transport buffers are a streaming connection's (``bound_stream_buffers``:
        set when its first SSE stream starts, kept for the connection's life)."""
        self.going_away = False
        """Shutting down: new streams are refused, GOAWAY goes out once no stream is left."""
        self.last_taken = 0
        """The highest stream id taken (not refused): the GOAWAY's last stream."""
        self.resetting: set[int | None] = _NONE
        """The streams reset in the read being handled."""
        self.last_active = self.loop.time()
        server.connections.add(self)

    # -- connection -------------------------------------------------------------------------------

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        connections = self.server.connections
        if self in connections:
            connections.discard(self)
            self.server.gate.released(len(connections))
        for stream in list(self.streams.values()):
            self._forget(stream)

    def pause_writing(self) -> None:
        # a client that does not read what it is sent is not read from either: its PINGs,
        # SETTINGS and requests would otherwise keep adding acks and answers to the buffer
        self.write_paused = True
        if not self.closed:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if not self.closed:
            self.transport.resume_reading()
        self._wake_drained()

    @property
    def streaming(self) -> bool:
        """Some stream is an open SSE stream."""
        return any(stream.streaming for stream in self.streams.values())

    def idle_for(self, now: float) -> float:
        """Seconds since the connection last received bytes; 0 while the app works on a request
        or an SSE stream is open. A stream only waiting for the client — a request that never
        ends, a response its window holds back — does not keep the connection alive."""
        for stream in self.streams.values():
            if stream.streaming or (stream.task is not None and not stream.task.done()):
                return 0.0
        return now - self.last_active

    def close(self) -> None:
        """GOAWAY (NO_ERROR), then close (a second call closes at once)."""
        if self.closed:
            self.transport.close()
            return
        with contextlib.suppress(ProtocolError):  # the connection is closed already (a GOAWAY)
            self.h2.close_connection(ErrorCodes.NO_ERROR, last_stream_id=self.last_taken)
        self._linger()

    def _linger(self) -> None:
        """Send what is queued (a GOAWAY), then end our side and read until the client closes,
        at most :data:`LINGER_S`: closing with bytes of the client's unread would reset the
        connection, and the reset can destroy the GOAWAY before the client reads it."""
        self._flush()
        self.closed = True
        try:
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self.loop.call_later(LINGER_S, self.transport.close)
                return
        except OSError:  # the client is gone already
            pass
        self.transport.close()

    def eof_received(self) -> None:
        """The client closed its side: close (returning None lets the transport close)."""

    def wind_down(self) -> None:
        """Refuse new streams from now on; end SSE streams (a final ``event: error`` 503, then
        END_STREAM); once no stream is left, GOAWAY and close."""
        if self.closed:
            return
        self.going_away = True
        for stream in list(self.streams.values()):
            if stream.streaming and stream.task is not None:
                stream.streaming = False
                stream.ending = True
                stream.task.cancel()
        if not self.streams:
            self.close()

    # -- receiving --------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.closed:  # lingering after a GOAWAY: what the client still sends is dropped
            return
        self.last_active = self.loop.time()
        try:
            events = self.h2.receive_data(data)
        except ProtocolError as err:  # malformed: ``h2`` queued a GOAWAY with the error's code
            log.info("HTTP/2 connection error: %s", err)
            self._linger()
            for stream in list(self.streams.values()):
                self._forget(stream)
            return
        # a stream reset in the same read as its request is never handed to the app
        resets = [event.stream_id for event in events if isinstance(event, StreamReset)]
        self.resetting = set(resets) if resets else _NONE
        for event in events:
            self._event(event)
        self._flush()

    def _event(self, event: Event) -> None:
        if isinstance(event, RequestReceived):
            self._request_received(event)
        elif isinstance(event, DataReceived):
            self._data_received(event)
        elif isinstance(event, StreamEnded):
            stream = self.streams.get(event.stream_id or 0)
            if stream is not None:
                stream.sent = True
                if stream.request is None:
                    self._dispatch(stream)
        elif isinstance(event, WindowUpdated):
            if event.stream_id:
                stream = self.streams.get(event.stream_id)
                if stream is not None:
                    self._send_pending(stream)
            else:
                self._send_all_pending()
        elif isinstance(event, RemoteSettingsChanged):
            if SettingCodes.INITIAL_WINDOW_SIZE in event.changed_settings:
                self._send_all_pending()
        elif isinstance(event, StreamReset):
            stream = self.streams.get(event.stream_id or 0)
            if stream is not None:
                self._forget(stream)
        elif isinstance(event, ConnectionTerminated):  # the client's GOAWAY: nothing more can go out
            self.closed = True
            self.transport.close()
        # settings acks, pings (answered by ``h2``), priorities, trailers: nothing to do

    def _request_received(self, event: RequestReceived) -> None:
        stream_id = event.stream_id
        assert stream_id is not None and event.headers is not None
        if stream_id in self.resetting:
            return
        if self.going_away:
            self.h2.reset_stream(stream_id, ErrorCodes.REFUSED_STREAM)
            return
        headers = [(bytes(k), bytes(v)) for k, v in event.headers]
        stream = self.streams[stream_id] = _Stream(stream_id, headers, self.app.max_body_bytes)
        self.last_taken = stream_id
        if event.stream_ended is not None:
            return
        for name, value in headers:  # a request whose body is to come
            if name == b":method" and value == b"CONNECT":
                # a tunnel (RFC 8441's WebSocket included) never ends its request: answer now
                # (405: no operation takes CONNECT), then end the stream
                self._dispatch(stream)
                return
            if name == b"expect" and value.lower() == b"100-continue":
                self.h2.send_headers(stream_id, _CONTINUE)

    def _data_received(self, event: DataReceived) -> None:
        stream_id = event.stream_id
        assert stream_id is not None and event.data is not None
        self.h2.acknowledge_received_data(event.flow_controlled_length or 0, stream_id)
        stream = self.streams.get(stream_id)
        if stream is None or stream.request is not None:
            return
        kept = stream.body.add(event.data)
        stream.held += kept
        self.buffered += kept
        if kept > 0 and self.buffered > self.app.max_body_bytes:
            # the connection's bodies would go over the limit: refuse this one (retryable)
            self._reset(stream, ErrorCodes.REFUSED_STREAM)

    # -- answering --------------------------------------------------------------------------------

    def _dispatch(self, stream: _Stream) -> None:
        """Hand the stream's request to the app; answer now or in a task."""
        try:
            request = stream.request = self._build(stream)
        except BadTarget as err:  # HTTP/1.1's parser refuses such a request line: 400
            method = dict(stream.headers).get(b":method", b"GET").decode("latin-1")
            request = stream.request = Request(method, "/", b"", [], started=stream.started)
            self._respond(stream, self.app.error(request, InvalidRequest(str(err))))
            return
        outcome = self.app.handle(request)
        if isinstance(outcome, Response):
            self._respond(stream, outcome)
        elif isinstance(outcome, WebSocketReply):
            self._refuse_websocket(stream, outcome)
        else:
            stream.task = self.loop.create_task(self._finish(stream, outcome))

    def _build(self, stream: _Stream) -> Request:
        """The stream's request (:class:`BadTarget` if ``:path`` is not a request target)."""
        method = target = authority = b""
        headers: list[tuple[bytes, bytes]] = []
        for name, value in stream.headers:
            if name[:1] != b":":
                headers.append((name, value))
            elif name == b":method":
                method = value
            elif name == b":path":
                target = value
            elif name == b":authority":
                authority = value
        if authority and not any(name == b"host" for name, _ in headers):
            headers.append((b"host", authority))
        body, too_large = stream.body.take()
        return build_request(method, target, headers, body, too_large, stream.started)

    async def _finish(self, stream: _Stream, outcome: Outcome | Awaitable[Outcome]) -> None:
        try:
            if not isinstance(outcome, StreamReply | Response | WebSocketReply):
                outcome = await outcome
            if isinstance(outcome, StreamReply):
                await self._stream(stream, outcome)
            elif isinstance(outcome, Response):
                self._respond(stream, outcome)
            else:
                self._refuse_websocket(stream, outcome)
        except asyncio.CancelledError:  # reset by the client, or the connection is shutting down
            self._reset(stream, ErrorCodes.CANCEL)
            raise
        except Exception:
            self._reset(stream, ErrorCodes.INTERNAL_ERROR)
            raise
        finally:
            stream.task = None
            self._flush()

    def _respond(self, stream: _Stream, response: Response) -> None:
        if stream.over or self.closed:
            return
        assert stream.request is not None
        length = content_length(response)
        headers = [
            (b":status", _STATUS.get(response.status) or b"%d" % response.status),
            *_h2_headers(response.headers),
        ]
        if response.status != 204:  # none on a 204 (RFC 9110 §8.6): a CORS preflight's
            headers.append((b"content-length", b"%d" % length))
        head_only = stream.request.method == "HEAD" or not length
        try:
            self.h2.send_headers(stream.id, headers, end_stream=head_only)
        except ProtocolError:  # reset meanwhile (the ``StreamReset`` is still to come)
            self._forget(stream)
            return
        if head_only:
            self._done(stream)
            return
        body = response.body
        if isinstance(body, bytes):
            stream.pending.append(body)
        else:
            stream.pending.extend(part for part in body if part)
        stream.end_after = True
        self._send_pending(stream)

    def _refuse_websocket(self, stream: _Stream, reply: WebSocketReply) -> None:
        """A WebSocket needs HTTP/1.1: the 400 HTTP/1.1 gives a request that cannot upgrade. (The
        handler refuses a request without ``Upgrade: websocket`` first, and HTTP/2 forbids that
        header: this answers whatever reaches here anyway.)"""
        if reply.slot is not None:
            reply.slot.release()
        assert stream.request is not None
        error = InvalidRequest(
            "WebSocket over HTTP/2 (RFC 8441) is not served: use HTTP/1.1", {"field": "upgrade"}
        )
        self._respond(stream, self.app.error(stream.request, error))

    async def _stream(self, stream: _Stream, reply: StreamReply) -> None:
        """Run an SSE stream to its end; END_STREAM once the client took every frame (reset if it
        has not after :data:`STALLED_CLOSE_S`). The reply is closed on every path."""
        if stream.over or self.closed:
            reply.close()
            return
        head = (
            _SSE_H2_HEADERS
            if reply.headers is SSE_HEADERS
            else [(b":status", b"200"), *_h2_headers(reply.headers)]  # the app added some (CORS)
        )
        try:
            self.h2.send_headers(stream.id, head)
        except ProtocolError:  # reset meanwhile
            self._forget(stream)
            reply.close()
            return
        self._flush()
        stream.streaming = True
        if not self.bounded:  # the connection now carries a stream: the budget of one
            self.bounded = True
            bound_stream_buffers(self.transport)
        try:
            await reply.produce(_StreamSink(self, stream))
        except (ConnectionError, OSError):
            return
        except asyncio.CancelledError:
            if not stream.ending or stream.over or self.closed:
                raise  # reset by the client
            asyncio.current_task().uncancel()  # type: ignore[union-attr]  # the server's shutdown
            stream.pending.append(SHUTDOWN_EVENT)  # then END_STREAM: a clean end
        finally:
            stream.streaming = False
            reply.close()
        if stream.over or self.closed:
            return
        stream.end_after = True
        self._send_pending(stream)
        if not stream.over and stream.pending:  # it ended on a client that is not reading
            self.loop.call_later(STALLED_CLOSE_S, self._give_up, stream)

    def _give_up(self, stream: _Stream) -> None:
        if self.streams.get(stream.id) is stream and stream.pending:
            self._reset(stream, ErrorCodes.CANCEL)
            self._flush()

    # -- sending ----------------------------------------------------------------------------------

    def _send_pending(self, stream: _Stream) -> None:
        """Send what the flow-control windows take of the stream's pending bytes; END_STREAM
        with the last of a complete response."""
        if stream.over or self.closed:
            return
        h2 = self.h2
        pending = stream.pending
        ended = False
        try:
            while pending:
                size = min(h2.local_flow_control_window(stream.id), h2.max_outbound_frame_size)
                if size <= 0:
                    break
                chunk = pending[0]
                if len(chunk) <= size:
                    pending.popleft()
                else:
                    view = chunk if isinstance(chunk, memoryview) else memoryview(chunk)
                    chunk, pending[0] = view[:size], view[size:]
                ended = stream.end_after and not pending
                h2.send_data(stream.id, chunk, end_stream=ended)
            if not pending and stream.end_after and not ended:
                h2.end_stream(stream.id)
        except ProtocolError:  # reset meanwhile (the ``StreamReset`` is still to come)
            self._forget(stream)
            return
        if pending:
            return
        if stream.end_after:
            self._done(stream)
        elif stream.drained is not None and not self.write_paused:
            self._wake(stream)

    def _send_all_pending(self) -> None:
        for stream in list(self.streams.values()):
            if stream.pending:
                self._send_pending(stream)
        self._wake_drained()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.transport.write(data)

    # -- stream ends ------------------------------------------------------------------------------

    def _done(self, stream: _Stream) -> None:
        """The response went out whole (END_STREAM sent): the stream is over — if the client is
        still sending (a CONNECT), it is told to stop (RST_STREAM NO_ERROR, RFC 9113 §8.1)."""
        stream.over = True
        if not stream.sent:
            with contextlib.suppress(ProtocolError):
                self.h2.reset_stream(stream.id, ErrorCodes.NO_ERROR)
        self._drop(stream)
        if self.going_away and not self.streams:
            self.close()

    def _reset(self, stream: _Stream, code: ErrorCodes) -> None:
        """Reset the stream from this side (if it still is open) and forget it."""
        if stream.over:
            return
        if not self.closed:
            with contextlib.suppress(ProtocolError):  # already closed in ``h2``
                self.h2.reset_stream(stream.id, code)
        self._forget(stream)
        if self.going_away and not self.streams:
            self.close()

    def _forget(self, stream: _Stream) -> None:
        """The stream is over, reset or lost with the connection: drop what it holds, wake its
        sink's writer (which finds it closed) and cancel its task."""
        stream.over = True
        stream.pending.clear()
        self._drop(stream)
        self._wake(stream)
        if stream.task is not None:
            # on the next iteration: a task cancelled before it ever ran would skip its
            # ``finally`` blocks — the app's slot release, the stream reply's close
            self.loop.call_soon(stream.task.cancel)

    def _drop(self, stream: _Stream) -> None:
        if self.streams.get(stream.id) is stream:
            del self.streams[stream.id]
        self.buffered -= stream.held
        stream.held = 0

    def _wake(self, stream: _Stream) -> None:
        drained = stream.drained
        if drained is not None:
            stream.drained = None
            if not drained.done():
                drained.set_result(None)

    def _wake_drained(self) -> None:
        if self.write_paused:
            return
        for stream in list(self.streams.values()):
            if stream.drained is not None and not stream.pending:
                self._wake(stream)

    async def drain(self, stream: _Stream) -> None:
        """Return once the stream's pending bytes went out and the socket takes writes;
        ``ConnectionResetError`` if the stream or the connection ends meanwhile."""
        while True:
            if stream.over or self.closed:
                raise ConnectionResetError("client went away")
            if not stream.pending and not self.write_paused:
                return
            if stream.drained is None or stream.drained.done():  # (cancelled with a waiter)
                stream.drained = self.loop.create_future()
            await stream.drained


class _StreamSink:
    """An SSE stream's frames as DATA frames on its HTTP/2 stream (a frame in parts is joined:
    HTTP/2 frames it anyway)."""

    __slots__ = ("conn", "stream")

    def __init__(self, conn: Http2Connection, stream: _Stream) -> None:
        self.conn = conn
        self.stream = stream

    @property
    def closed(self) -> bool:
        return self.stream.over or self.conn.closed

    @property
    def blocked(self) -> bool:
        return bool(self.stream.pending) or self.conn.write_paused

    def write(self, frame: Frame) -> None:
        if self.closed:
            raise ConnectionResetError("client went away")
        self.stream.pending.append(frame if isinstance(frame, bytes) else b"".join(frame))
        self.conn._send_pending(self.stream)
        self.conn._flush()

    async def drain(self) -> None:
        await self.conn.drain(self.stream)
