"""§2–§5 — the record data plane: append, diff (with long-poll), delete records."""

from __future__ import annotations

import time
from typing import Any

import orjson
from topics_engine import DiffResult, Engine

from ..context import ServerContext
from ..responses import Reply, settle
from ..validation import ValidatedRequest


async def append_records(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    body = req.body
    key = body.get("idempotency_key")
    if key is None:
        key = req.headers.get("Idempotency-Key")
    result = ctx.engine.append(
        req.path["topic"],
        body["records"],
        node=body.get("node"),
        idempotency_key=key,
        create=body.get("create"),
        config=body.get("config"),
    )
    perf = await settle(result.durable)
    wire = result.to_wire(return_seqs=req.query["return_seqs"])
    return Reply(201 if result.created else 200, wire, perf)


async def diff_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    engine = ctx.engine
    name, body = req.path["topic"], req.body
    options = {
        "from_seq": body.get("from_seq", 0),
        "limit": body.get("limit", 0),
        "node": body.get("node"),
        "include_tags": body.get("include_tags", False),
        "include_meta": body.get("include_meta", True),
    }
    result = engine.diff(name, **options)
    wait_ms = engine.clamp_wait_ms(body.get("wait_ms", 0))
    if wait_ms and not result.read.records and result.read.tombstone is None:
        result = await _long_poll(engine, name, options, result, wait_ms)
    return Reply(200, encode_diff(result), {"records_scanned": result.read.scanned})


async def _long_poll(
    engine: Engine, name: str, options: dict[str, Any], result: DiffResult, wait_ms: int
) -> DiffResult:
    """Park until an append makes records available (or the topic goes away), up to wait_ms.

    Records filtered out for the reader (own node) do not end the wait; the cursor keeps
    advancing past them between wake-ups so nothing is scanned twice.
    """
    deadline = time.monotonic() + wait_ms / 1000
    while not result.read.records and result.caught_up:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not await engine.notifier.wait(name, remaining):
            break
        options = {**options, "from_seq": result.read.next_from_seq}
        result = engine.diff(name, **options)
    return result


def encode_diff(result: DiffResult) -> bytes:
    """The diff response as JSON bytes without the closing brace (performance goes last)."""
    read = result.read
    tombstone = orjson.dumps(read.tombstone.to_wire()) if read.tombstone else b"null"
    return b"".join(
        (
            b'{"topic":',
            orjson.dumps(result.topic),
            b',"records":[',
            b",".join(read.records),
            b"]",
            b',"next_from_seq":%d,"head_seq":%d,"earliest_seq":%d'
            % (read.next_from_seq, read.head_seq, read.earliest_seq),
            b',"caught_up":',
            b"true" if result.caught_up else b"false",
            b',"tombstone":',
            tombstone,
            b',"lag":%d' % (read.head_seq - read.next_from_seq),
        )
    )


async def delete_records(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    body = req.body
    name = req.path["topic"]
    result = ctx.engine.delete_records(name, before_seq=body.get("before_seq"), match=body.get("match"))
    perf = await settle(result.durable)
    return Reply(200, result.to_wire(), perf)
