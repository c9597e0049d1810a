"""Named consumers (an extension, issue 25): PUT / GET / DELETE
/v0/topics/{topic}/consumers/{consumer}, GET /v0/topics/{topic}/consumers and
POST /v0/topics/{topic}/consumers/{consumer}/commit. Each change is answered once its WAL
frame is durable (``topics_engine.consumers``)."""

from __future__ import annotations

from collections.abc import Awaitable

from .. import wire
from ..bodies import opt
from ..context import ServerContext
from ..responses import Reply, after_ack
from ..validation import ValidatedRequest


def put_consumer(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    body = req.json()
    result = ctx.consumers.put(
        req.path["topic"],
        req.path["consumer"],
        from_seq=opt(body.from_seq),
        from_ts=opt(body.from_ts),
        force=opt(body.force, False),
    )
    return after_ack(result.wait, 201 if result.created else 200, wire.consumer_put(result))


def get_consumer(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, wire.consumer(ctx.consumers.state(req.path["topic"], req.path["consumer"])))


def list_consumers(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    q = req.query
    page = ctx.consumers.page(
        req.path["topic"],
        prefix=q.get("prefix") or "",
        page_size=q.get("page_size", 0),
        cursor=q.get("cursor"),
    )
    return Reply(200, wire.consumer_page(page))


def commit_consumer(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    body = req.json()
    result = ctx.consumers.commit(
        req.path["topic"], req.path["consumer"], body.seq, force=opt(body.force, False)
    )
    return after_ack(result.wait, 200, wire.consumer(result.state))


def delete_consumer(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    result = ctx.consumers.delete(req.path["topic"], req.path["consumer"])
    body = {"consumer": result.consumer, "topic": result.topic, "deleted": result.deleted}
    return after_ack(result.wait, 200, body)
