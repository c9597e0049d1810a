"""JSON responses with the ``performance`` block (§0.9), written straight to ASGI ``send``.

A handler returns a :class:`Reply`: a status, and either a dict (serialized once with orjson) or
pre-encoded JSON object bytes *without* their closing brace (record reads, which join record
bytes encoded at append time). ``performance`` is appended last, so ``server_total_ms`` covers
everything up to serialization.

Compression (ruling 10): a JSON response larger than :data:`GZIP_MIN_BYTES` is gzip-encoded
when the request's ``Accept-Encoding`` allows gzip (fast level 1: the server's CPU, not the
network, is the bottleneck of a local deployment). Streams (SSE) are never compressed.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.types import Send

JSON_HEADERS = [(b"content-type", b"application/json")]
GZIP_MIN_BYTES = 1400
"""Smaller responses fit one packet; compressing them only costs CPU."""
GZIP_LEVEL = 1


@dataclass(slots=True)
class Reply:
    status: int
    body: dict[str, Any] | bytes
    performance: dict[str, Any] = field(default_factory=dict)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


async def await_ack(wait: Awaitable[float] | None) -> dict[str, Any]:
    """Wait until a mutation may be acknowledged (its fsync, for the ``fsync`` class); returns
    the ``performance`` fields that wait contributes."""
    if wait is None:
        return {}
    started = time.perf_counter()
    fsync_ms = await wait
    return {"fsync_ms": fsync_ms, "wal_append_ms": round((time.perf_counter() - started) * 1000, 3)}


def performance_block(started: float, extra: dict[str, Any]) -> dict[str, Any]:
    perf: dict[str, Any] = {
        "server_total_ms": round((time.perf_counter() - started) * 1000, 3),
        "wal_append_ms": 0.0,
        "fsync_ms": 0.0,
        "throttle_wait_ms": 0.0,
    }
    perf.update(extra)
    return perf


def encode_reply(reply: Reply, started: float) -> bytes:
    perf = performance_block(started, reply.performance)
    if isinstance(reply.body, bytes):
        return reply.body + b',"performance":' + orjson.dumps(perf) + b"}"
    body = dict(reply.body)
    body["performance"] = perf
    return orjson.dumps(body)


def accepts_gzip(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether ``Accept-Encoding`` allows gzip (``gzip`` or ``*`` listed without ``q=0``)."""
    for key, value in headers:
        if key == b"accept-encoding":
            for item in value.lower().split(b","):
                coding, _, params = item.strip().partition(b";")
                if coding.strip() in (b"gzip", b"*"):
                    q = params.strip()
                    return not (q.startswith(b"q=") and float(q[2:] or b"0") == 0)
    return False


def gzip_bytes(payload: bytes) -> bytes:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
    return compressor.compress(payload) + compressor.flush()


async def send_json(
    send: Send,
    status: int,
    payload: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
    gzip_ok: bool = False,
) -> None:
    extra = list(headers or ())
    if gzip_ok and len(payload) > GZIP_MIN_BYTES:
        payload = gzip_bytes(payload)
        extra += [(b"content-encoding", b"gzip"), (b"vary", b"accept-encoding")]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*JSON_HEADERS, (b"content-length", str(len(payload)).encode()), *extra],
        }
    )
    await send({"type": "http.response.body", "body": payload})
