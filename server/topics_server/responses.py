"""JSON responses with the ``performance`` block (§0.9), written straight to ASGI ``send``.

A handler returns a :class:`Reply`: a status, and either a dict (serialized once with orjson) or
pre-encoded JSON object bytes *without* their closing brace (the diff path, which joins record
bytes encoded at append time). ``performance`` is appended last, so ``server_total_ms`` covers
everything up to serialization.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.types import Send

JSON_HEADERS = [(b"content-type", b"application/json")]


@dataclass(slots=True)
class Reply:
    status: int
    body: dict[str, Any] | bytes
    performance: dict[str, Any] = field(default_factory=dict)
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


async def settle(durable: Awaitable[float] | None) -> dict[str, Any]:
    """Wait for a durability promise; the ``performance`` fields it contributes."""
    if durable is None:
        return {}
    started = time.perf_counter()
    fsync_ms = await durable
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


async def send_json(send: Send, status: int, payload: bytes, headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*JSON_HEADERS, (b"content-length", str(len(payload)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": payload})
