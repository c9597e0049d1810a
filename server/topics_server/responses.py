"""JSON responses with the ``performance`` block (server-side timings and counters).

A handler returns a :class:`Reply`: a status, and either a dict (serialized once with orjson) or
pre-encoded JSON object bytes *without* their closing brace — as one ``bytes`` or as a list of
buffers (record reads: slices of the record bytes encoded at append time, never joined on the
server) — or, with ``content_type`` set, a non-JSON body sent as is (the metrics' text
exposition). :func:`render` turns it into a :class:`Response` — status, headers, body — that either
transport writes as is (the native one hands a parts body to one vectored write);
``performance`` is appended last, so ``server_total_ms`` covers everything up to serialization.

Compression (docs/DECISIONS.md, "Response compression"): a JSON (or raw) response larger than
:data:`GZIP_MIN_BYTES` is gzip-encoded when the request's ``Accept-Encoding`` allows gzip (fast
level 1: the server's CPU, not the network, is the bottleneck of a local deployment). Streams
(SSE) are never compressed.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

JSON_CONTENT_TYPE = (b"content-type", b"application/json")
JSON_HEADERS = [JSON_CONTENT_TYPE]
"""The headers of a plain JSON response (shared: transports may recognize it by identity)."""
GZIP_MIN_BYTES = 1400
"""Smaller responses fit one packet; compressing them only costs CPU."""
GZIP_LEVEL = 1
JOIN_BELOW_BYTES = 16 << 10
"""A parts body smaller than this is joined (one copy is cheaper than a vectored write)."""


Buffer = bytes | memoryview
Parts = list[Buffer]
"""A body in pieces, written in order as if joined."""


@dataclass(slots=True)
class Reply:
    status: int
    body: dict[str, Any] | bytes | Parts
    performance: dict[str, Any] = field(default_factory=dict)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    content_type: bytes | None = None
    """Set for a non-JSON reply: ``body`` (``bytes``) is the whole body, sent as is with this
    content type (no ``performance`` block)."""


@dataclass(slots=True)
class Response:
    """A complete response: what a transport writes (it adds framing headers itself). A large
    body may stay in parts (``list``), which the native transport writes with one vectored
    write instead of copying them together."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes | Parts

    @property
    def length(self) -> int:
        body = self.body
        return len(body) if isinstance(body, bytes) else sum(map(len, body))

    def joined(self) -> bytes:
        body = self.body
        return body if isinstance(body, bytes) else b"".join(body)


async def await_ack(wait: Awaitable[float] | None) -> dict[str, Any]:
    """Wait until a mutation may be acknowledged (its fsync, for the ``fsync`` class); returns
    the ``performance`` fields that wait contributes."""
    if wait is None:
        return {}
    started = time.perf_counter()
    fsync_ms = await wait
    return {"fsync_ms": fsync_ms, "wal_append_ms": round((time.perf_counter() - started) * 1000, 3)}


Body = dict[str, Any] | bytes | Parts


def after_ack(
    wait: Awaitable[float] | None,
    status: int,
    body: Body | Callable[[], Body],
    performance: dict[str, Any] | None = None,
) -> Reply | Awaitable[Reply]:
    """The reply once the mutation may be acknowledged: at once when nothing is to wait for,
    else an awaitable (``body`` may be a callable, read only after the wait — e.g. counters an
    fsync-class delete fills in when it is applied)."""
    if wait is None:
        return Reply(status, body() if callable(body) else body, dict(performance or {}))
    return _reply_after(wait, status, body, performance)


async def _reply_after(
    wait: Awaitable[float], status: int, body: Body | Callable[[], Body], performance: dict[str, Any] | None
) -> Reply:
    extra = await await_ack(wait)
    return Reply(status, body() if callable(body) else body, {**(performance or {}), **extra})


def performance_block(started: float, extra: dict[str, Any]) -> dict[str, Any]:
    perf: dict[str, Any] = {
        "server_total_ms": round((time.perf_counter() - started) * 1000, 3),
        "wal_append_ms": 0.0,
        "fsync_ms": 0.0,
        "throttle_wait_ms": 0.0,
    }
    perf.update(extra)
    return perf


def encode_reply(reply: Reply, started: float) -> bytes | Parts:
    perf = performance_block(started, reply.performance)
    body = reply.body
    if isinstance(body, bytes):
        return body + b',"performance":' + orjson.dumps(perf) + b"}"
    if isinstance(body, list):
        return [*body, b',"performance":' + orjson.dumps(perf) + b"}"]
    out = dict(body)
    out["performance"] = perf
    return orjson.dumps(out)


def gzip_bytes(payload: bytes | Parts) -> bytes:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    if isinstance(payload, bytes):
        return compressor.compress(payload) + compressor.flush()
    return b"".join([*map(compressor.compress, payload), compressor.flush()])


def json_response(
    status: int, payload: bytes | Parts, headers: list[tuple[bytes, bytes]] | None, gzip_ok: bool
) -> Response:
    size = len(payload) if isinstance(payload, bytes) else sum(map(len, payload))
    if not isinstance(payload, bytes) and size < JOIN_BELOW_BYTES:
        payload = b"".join(payload)
    if gzip_ok and size > GZIP_MIN_BYTES:
        payload = gzip_bytes(payload)
        extra = [(b"content-encoding", b"gzip"), (b"vary", b"accept-encoding")]
        return Response(status, [JSON_CONTENT_TYPE, *(headers or ()), *extra], payload)
    if headers:
        return Response(status, [JSON_CONTENT_TYPE, *headers], payload)
    return Response(status, JSON_HEADERS, payload)


def raw_response(reply: Reply, gzip_ok: bool) -> Response:
    """A non-JSON reply (``content_type`` set, ``body`` bytes), gzip-encoded like JSON."""
    assert isinstance(reply.body, bytes) and reply.content_type is not None
    headers = [(b"content-type", reply.content_type), *reply.headers]
    if gzip_ok and len(reply.body) > GZIP_MIN_BYTES:
        extra = [(b"content-encoding", b"gzip"), (b"vary", b"accept-encoding")]
        return Response(reply.status, [*headers, *extra], gzip_bytes(reply.body))
    return Response(reply.status, headers, reply.body)


def render(reply: Reply, started: float, gzip_ok: bool) -> Response:
    if reply.content_type is not None:
        return raw_response(reply, gzip_ok)
    return json_response(reply.status, encode_reply(reply, started), reply.headers, gzip_ok)
