"""Server-sent events: frame encoding and the streaming reply handlers return.

A handler that streams returns a :class:`StreamReply`. The transport sends :data:`SSE_HEADERS`,
then runs ``produce(emit)`` — ``emit`` writes one frame and waits while the client is slow to
read — until it returns (the stream ends) or the client goes away (``produce`` is cancelled).
``close`` always runs last, exactly once. Streams are never compressed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),
]

Emit = Callable[[bytes], Awaitable[None]]


def event(name: str, data: bytes, event_id: str | int | None = None) -> bytes:
    head = b"" if event_id is None else b"id: %s\n" % str(event_id).encode()
    return head + b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


def heartbeat() -> bytes:
    """A bare comment with the epoch milliseconds; never moves a client's resume cursor."""
    return b": hb %d\n\n" % (time.time_ns() // 1_000_000)


RETRY = b"retry: 2000\n\n"


@dataclass
class StreamReply:
    produce: Callable[[Emit], Awaitable[None]]
    close: Callable[[], None]
