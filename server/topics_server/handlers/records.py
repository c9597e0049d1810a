"""§2–§5 — the record data plane: append, diff (with long-poll), delete records."""

from __future__ import annotations

import time
from typing import Any

from topics_engine import Engine
from topics_engine.results import Diff

from .. import wire
from ..context import ServerContext
from ..responses import Reply, await_ack
from ..validation import ValidatedRequest


async def append_records(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    body = await req.json()
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
    perf = await await_ack(result.wait)
    return Reply(
        201 if result.created else 200, wire.appended(result, req.query.get("return_seqs", True)), perf
    )


async def diff_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    engine = ctx.engine
    name, body = req.path["topic"], await req.json()
    options = {
        "from_seq": body.get("from_seq", 0),
        "limit": body.get("limit", 0),
        "node": body.get("node"),
        "include_tags": body.get("include_tags", False),
        "include_meta": body.get("include_meta", True),
        "max_batch_bytes": body.get("max_batch_bytes", 0),
    }
    result = engine.diff(name, **options)
    wait_ms = engine.clamp_wait_ms(body.get("wait_ms", 0))
    if wait_ms and not result.count and result.tombstone is None:
        result = await _long_poll(engine, name, options, result, wait_ms)
    return Reply(200, wire.diff(result), {"records_scanned": result.scanned})


async def _long_poll(engine: Engine, name: str, options: dict[str, Any], result: Diff, wait_ms: int) -> Diff:
    """Park until an append makes records available (or the topic goes away), up to wait_ms.

    Records filtered out for the reader (own node) do not end the wait; the cursor keeps
    advancing past them between wake-ups so nothing is scanned twice.
    """
    deadline = time.monotonic() + wait_ms / 1000
    while not result.count and result.caught_up:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not await engine.notifier.wait(name, remaining):
            break
        options = {**options, "from_seq": result.next_from_seq}
        result = engine.diff(name, **options)
    return result


async def delete_records(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    body = await req.json()
    result = ctx.engine.delete_records(
        req.path["topic"], before_seq=body.get("before_seq"), match=body.get("match")
    )
    perf = await await_ack(result.wait)
    return Reply(200, wire.records_deleted(result), perf)
