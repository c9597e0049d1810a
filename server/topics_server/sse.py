"""Server-sent events: frame encoding and the streaming reply the dispatcher runs.

A handler that streams returns a :class:`StreamReply`: the dispatcher sends the SSE headers,
then runs ``produce`` while watching the connection; when the client disconnects (or a write
fails — a broken pipe) ``produce`` is cancelled, and ``close`` always runs last, exactly once.
Frames are flushed one ``send`` each; uvicorn disables Nagle on its sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.types import Receive, Send

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


async def run_stream(reply: StreamReply, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})

    async def emit(frame: bytes) -> None:
        await send({"type": "http.response.body", "body": frame, "more_body": True})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

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
