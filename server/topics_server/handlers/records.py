"""The record data plane: append, diff (with long-poll; from a named consumer's cursor,
an extension), delete records."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import msgspec
from topics_engine import Engine
from topics_engine.batch import check_batch_node
from topics_engine.coldreads import ColdRead, examine_cold, read_strictly, read_without_blocking
from topics_engine.errors import TopicNotFound
from topics_engine.results import Appended, Diff, RecordsDeleted
from topics_engine.topic import DeletePlan

from .. import wire
from ..bodies import fields_set, new_records, opt
from ..context import ServerContext
from ..responses import Reply, after_ack
from ..validation import ValidatedRequest

UNSET = msgspec.UNSET


def append(
    engine: Engine,
    topic: str,
    body: Any,
    idempotency_key: str | None = None,
    apply_later: list[Callable[[], None]] | None = None,
) -> Appended:
    """The write of a decoded ``AppendRequest`` (HTTP, or a WebSocket ``publish``); the body's
    ``idempotency_key`` wins over the one given (the header). ``apply_later``: see
    :meth:`Engine.append`."""
    config = opt(body.config)
    node = opt(body.node)
    check_batch_node(node, engine.limits)
    return engine.append(
        topic,
        new_records(body.records, node, opt(body.delay_ms)),
        idempotency_key=opt(body.idempotency_key, idempotency_key),
        create=opt(body.create),
        config=fields_set(config) if config is not None else None,
        apply_later=apply_later,
    )


def append_records(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    key, later = req.headers.get("Idempotency-Key"), req.request.apply_later
    result = append(ctx.engine, req.path["topic"], req.json(), key, later)
    wire_body = wire.appended(result, req.query.get("return_seqs", True))
    return after_ack(result.wait, 201 if result.created else 200, wire_body)


def diff_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    engine = ctx.engine
    name, body = req.path["topic"], req.json()
    consumer = opt(body.consumer)
    options = {
        # a named consumer's committed cursor, looked up once (a long-poll's re-reads go on
        # from where the first read got); the schema keeps consumer, from_seq and from_ts apart
        "from_seq": ctx.consumers.cursor(name, consumer) if consumer is not None else opt(body.from_seq, 0),
        "from_ts": opt(body.from_ts),
        "limit": opt(body.limit, 0),
        "node": opt(body.node),
        "include_tags": opt(body.include_tags, False),
        "include_meta": opt(body.include_meta, True),
        "max_batch_bytes": opt(body.max_batch_bytes, 0),
    }
    wait_ms = opt(body.wait_ms, 0)
    try:
        result = read_strictly(lambda: engine.diff(name, **options))
    except ColdRead:
        return _diff_cold(engine, name, options, wait_ms)
    return _diff_reply(engine, name, options, result, engine.clamp_wait_ms(wait_ms))


async def _diff_cold(engine: Engine, name: str, options: dict[str, Any], wait_ms: int) -> Reply:
    """A diff that reads cold records: they are loaded off the event loop first."""
    result = await read_without_blocking(lambda: engine.diff(name, **options))
    reply = _diff_reply(engine, name, options, result, engine.clamp_wait_ms(wait_ms))
    return await reply if isinstance(reply, Awaitable) else reply


def _diff_reply(
    engine: Engine, name: str, options: dict[str, Any], result: Diff, wait_ms: int
) -> Reply | Awaitable[Reply]:
    if wait_ms and not result.count and result.tombstone is None:
        return _long_poll(engine, name, options, result, wait_ms)
    return Reply(200, wire.diff(result), {"records_scanned": result.scanned})


async def _long_poll(engine: Engine, name: str, options: dict[str, Any], result: Diff, wait_ms: int) -> Reply:
    """Park until an append makes records available (or the topic goes away), up to wait_ms.

    Records filtered out for the reader (own node) do not end the wait; the cursor keeps
    advancing past them between wake-ups so nothing is scanned twice.
    """
    deadline = time.monotonic() + wait_ms / 1000
    started_after = result.from_seq
    while not result.count and result.caught_up:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not await engine.hub.wait(name, remaining):
            break
        options = {**options, "from_seq": result.next_from_seq, "from_ts": None}
        result = await read_without_blocking(partial(engine.diff, name, **options))
    result.from_seq = min(started_after, result.from_seq)  # where the whole call started
    return Reply(200, wire.diff(result), {"records_scanned": result.scanned})


def delete_records(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    body = req.json()
    engine = ctx.engine
    plan = engine.plan_records_delete(
        req.path["topic"], before_seq=opt(body.before_seq), match=opt(body.match)
    )
    if plan.cold:
        return _delete_cold(engine, plan)
    return _deleted(engine.delete_seqs(plan.topic, plan.seqs()))


async def _delete_cold(engine: Engine, plan: DeletePlan) -> Reply:
    """A tag delete whose matches may lie in cold chunks: they are read off the event loop,
    a group at a time (what matches is kept, not the records), then the delete runs."""
    await examine_cold(plan)
    if engine.get(plan.topic.name) is not plan.topic:  # recreated meanwhile (deleted: 404)
        raise TopicNotFound(plan.topic.name)
    reply = _deleted(engine.delete_seqs(plan.topic, plan.seqs()))
    return await reply if isinstance(reply, Awaitable) else reply


def _deleted(result: RecordsDeleted) -> Reply | Awaitable[Reply]:
    return after_ack(result.wait, 200, lambda: wire.records_deleted(result))
