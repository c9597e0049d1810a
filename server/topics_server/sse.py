"""Server-sent events: frame encoding and the streaming reply handlers return.

A handler that streams returns a :class:`StreamReply`. The transport sends its ``headers``
(:data:`SSE_HEADERS`, plus any the app adds: CORS), then runs ``produce(sink)`` (a
:class:`streams.Sink` of SSE frames) until it returns (the stream ends) or the client goes away
(``produce`` is cancelled); ``close`` always runs last, exactly once. Streams are never
compressed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import orjson

from .streams import Sink

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
    (b"connection", b"keep-alive"),
]

RETRY = b"retry: 2000\n\n"


def accepts_event_stream(accept: str | None) -> bool:
    """``Accept`` allows an event stream (no header, ``text/event-stream``, ``text/*``, ``*/*``)."""
    if accept is None:
        return True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(kinds & {"text/event-stream", "text/*", "*/*"})


def event(name: str, data: bytes, event_id: str | int | None = None) -> bytes:
    head = b"" if event_id is None else b"id: %s\n" % str(event_id).encode()
    return head + b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


def error_event(code: int, message: str, **detail: object) -> bytes:
    """The ``event: error`` frame of a stream: ``{"code", "error", **detail}`` in that
    order, ``code`` the HTTP status the condition stands for. Every SSE error frame is built
    here; an advisory one (429, paced) leaves the stream open, any other ends it."""
    return event("error", orjson.dumps({"code": code, "error": message, **detail}))


SHUTDOWN_EVENT = error_event(503, "the server is shutting down: reconnect (resume from your last id)")
"""The last frame of a stream the server's graceful shutdown ends (a terminal ``event: error``,
``shutting_down``'s status), before the stream's clean end."""


def event_parts(
    name: bytes, data: list[bytes | memoryview], event_id: str | None
) -> list[bytes | memoryview]:
    """:func:`event` with the data in parts (a shared record frame is not copied per reader).
    The data must hold no newline (compact JSON never does)."""
    head = (
        b"event: %s\ndata: " % name
        if event_id is None
        else b"id: %s\nevent: %s\ndata: " % (event_id.encode(), name)
    )
    return [head, *data, b"\n\n"]


def heartbeat(now_ms: int) -> bytes:
    """A bare comment with the epoch milliseconds; never moves a client's resume cursor."""
    return b": hb %d\n\n" % now_ms


@dataclass
class StreamReply:
    produce: Callable[[Sink], Awaitable[None]]
    close: Callable[[], None]
    headers: list[tuple[bytes, bytes]] = field(default_factory=lambda: SSE_HEADERS)
    """The response's headers (shared :data:`SSE_HEADERS` unless the app added some: never
    mutated in place)."""
