"""What the native server's two protocols share: HTTP/1.1 (``http``) and HTTP/2 over cleartext
(``http2``), served on one listener.

- :data:`H2_PREFACE`, the bytes a prior-knowledge HTTP/2 client opens with (RFC 9113 §3.4): the
  HTTP/1.1 protocol looks at a connection's first bytes once and hands a connection that starts
  with them to the HTTP/2 one.
- :class:`BodyBuffer`, a request body under ``TOPICS_MAX_BODY_BYTES``: past the limit its bytes
  are discarded as they arrive (never buffered) and the request is marked ``body_too_large`` —
  the app answers 413 where the handler asks for its body.
- :func:`build_request`, the app's :class:`Request` from a method, a request target
  (path and query, as sent) and the rest (the one use of httptools' URL parser).
- :func:`content_length`, the ``Content-Length`` of a response; a ``HEAD`` request gets it with
  the head alone (RFC 9110 §9.3.2): the transport owns that rule, whatever the app put in the
  body.
- :class:`Connection` and :class:`Listener`, what the server's idle sweep and graceful shutdown
  (``http.HttpServer``) see of a connection, and what a connection sees of its server.
- :func:`bound_stream_buffers`, the per-connection memory budget of a long-lived stream.
- :class:`ConnectionGate`, the most client connections the server holds
  (:func:`connection_limit`: its descriptor limit less :data:`FD_RESERVE`), and the one log line
  per episode of refusing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
from typing import TYPE_CHECKING, Protocol

import httptools

from .request import Request
from .responses import Response

if TYPE_CHECKING:
    from .app import TopicsApp

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""The HTTP/2 connection preface's fixed part (its SETTINGS frame follows)."""

log = logging.getLogger("topics.http")

STALLED_CLOSE_S = 5.0
"""A stream that ended on a client that is not reading is given this long to take the unread
bytes; then they are dropped (HTTP/1.1: the connection is aborted; HTTP/2: the stream is reset)."""


STREAM_SNDBUF = 64 << 10
"""``SO_SNDBUF`` of a connection once it carries a stream (SSE, WebSocket). Linux doubles it for
its bookkeeping, so the kernel holds at most 128 KiB for the connection — without it, send-buffer
autotuning lets the queue of a client that never reads grow to ``net.ipv4.tcp_wmem``'s maximum
(4 MiB by default) per connection. At 64 KiB in flight a stream still moves ~1 MiB/s over a
60 ms round trip, far above what a watch or ``/work`` stream needs."""

STREAM_HIGH_WATER = 32 << 10
"""The write-buffer high-water mark of a streaming connection: past it the stream is
``blocked`` and produces nothing more until the client takes what was sent
(``streams.StreamLoop``)."""

STREAM_BUDGET = 256 << 10
"""The documented most server memory a stalled streaming connection costs (docs/SECURITY.md):
the kernel's send buffer (2 × :data:`STREAM_SNDBUF`), the transport's buffer
(:data:`STREAM_HIGH_WATER` plus one delivery round: a watch step, whose record bytes are shared
with the topic and every other reader, or at most ``handlers.queues.WORK_ROUND_BYTES`` of
``/work`` job frames) and the connection's own state (parser, stream loop, session: a few KiB).
``tests/fault/test_hostile_readers.py`` measures it."""


def bound_stream_buffers(transport: asyncio.BaseTransport) -> None:
    """Give a connection that now carries a long-lived stream its bounded buffers
    (:data:`STREAM_SNDBUF`, :data:`STREAM_HIGH_WATER`)."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, STREAM_SNDBUF)
    set_limits = getattr(transport, "set_write_buffer_limits", None)  # uvloop's are duck-typed
    if set_limits is not None:
        set_limits(high=STREAM_HIGH_WATER)


class BodyBuffer:
    """One request body as it arrives, kept up to ``limit`` bytes; past it, the body is dropped
    and every further byte discarded (``too_large``)."""

    __slots__ = ("chunks", "limit", "size", "too_large")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        """Bytes received (kept or not)."""
        self.too_large = False

    def add(self, data: bytes) -> int:
        """Take ``data``; returns the change in bytes kept (negative when the body just went
        over the limit and what was kept is dropped)."""
        if self.too_large:
            return 0
        n = len(data)
        self.size += n
        if self.size > self.limit:
            self.too_large = True
            self.chunks = []
            return n - self.size
        self.chunks.append(data)
        return n

    @property
    def kept(self) -> int:
        """Bytes held."""
        return 0 if self.too_large else self.size

    def take(self) -> tuple[bytes, bool]:
        """The body (empty when too large) and whether it was too large; the buffer starts over."""
        chunks, too_large = self.chunks, self.too_large
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        self.chunks = []
        self.size = 0
        self.too_large = False
        return body, too_large


class BadTarget(ValueError):
    """A request target that is not one (``build_request``)."""


def build_request(
    method: bytes,
    target: bytes,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    too_large: bool,
    started: float,
) -> Request:
    """The app's request; ``target`` is the request target as sent (``httptools.parse_url``
    splits it; :class:`BadTarget` if it is not one)."""
    try:
        parsed = httptools.parse_url(target)
    except httptools.HttpParserInvalidURLError as err:
        raise BadTarget(f"malformed request target: {err}") from None
    return Request(
        method.decode("latin-1"),
        parsed.path.decode("latin-1"),
        parsed.query or b"",
        headers,
        body,
        too_large,
        started,
    )


def content_length(response: Response) -> int:
    """The length of ``response``'s body: what ``Content-Length`` says, a ``HEAD`` answer's
    included."""
    body = response.body
    return len(body) if isinstance(body, bytes) else response.length


class Connection(Protocol):
    """A client connection as the server's idle sweep and graceful shutdown handle it."""

    def idle_for(self, now: float) -> float:
        """Seconds since the connection last received bytes (``now``: loop time), 0 while a
        request is in hand."""

    def close(self) -> None:
        """Close now (what was written still goes out)."""

    def wind_down(self) -> None:
        """One step of a graceful shutdown (called until the connection is gone): take no new
        requests, cancel streams, close once no request is in hand."""


FD_RESERVE = 64
"""File descriptors never given to client connections: the storage's (WAL and segment files
opened for writing, a segment opened per cold read, a snapshot being written, directory
fsyncs) and the event loop's own. Without them, a descriptor-limit episode would fail a WAL
rotation or a checkpoint and turn the WAL read-only."""


def connection_limit(nofile: int | None = None) -> int:
    """The most client connections the server holds: the process's descriptor limit
    (``RLIMIT_NOFILE``'s soft value, or ``nofile``) less :data:`FD_RESERVE` — half of it when the
    limit is under twice the reserve."""
    if nofile is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        nofile = soft if soft != resource.RLIM_INFINITY else 1 << 20
    return nofile - FD_RESERVE if nofile >= 2 * FD_RESERVE else max(1, nofile // 2)


class ConnectionGate:
    """Admits a new connection while fewer than ``limit`` are open; past it, the connection is
    closed at once (the client sees it reset), the connections already open keep being served,
    and the server logs **one** warning per episode (not one per refusal) and one line when it
    ends: once the open connections fell a tenth below the limit (hysteresis, so a server at
    its limit does not log each time one connection closes and another is refused)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.refused = 0
        """Connections refused in the current episode (0: none is under way)."""
        self.refused_total = 0
        self.episodes = 0

    def admit(self, open_now: int) -> bool:
        if open_now < self.limit:
            return True
        if not self.refused:
            self.episodes += 1
            log.warning(
                "connection limit reached: %d connections open (the descriptor limit less %d kept "
                "for storage); refusing new connections until some close",
                open_now,
                FD_RESERVE,
            )
        self.refused += 1
        self.refused_total += 1
        return False

    def released(self, open_now: int) -> None:
        """A connection closed, ``open_now`` remain."""
        if self.refused and open_now <= self.limit - max(1, self.limit // 10):
            log.info(
                "connection limit episode over: %d connections open, %d refused meanwhile",
                open_now,
                self.refused,
            )
            self.refused = 0


class Listener(Protocol):
    """What a connection needs of its server."""

    app: TopicsApp
    loop: asyncio.AbstractEventLoop
    connections: set[Connection]
    gate: ConnectionGate
