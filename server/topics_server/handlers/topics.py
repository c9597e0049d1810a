"""§1 — topic control plane: PUT / GET / DELETE /v0/topics/{topic}, GET /v0/topics."""

from __future__ import annotations

from ..context import ServerContext
from ..responses import Reply, settle
from ..validation import ValidatedRequest


async def put_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    result = ctx.engine.put_topic(req.path["topic"], req.body)
    perf = await settle(result.durable)
    return Reply(201 if result.created else 200, result.to_wire(), perf)


def get_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, ctx.engine.topic_state(req.path["topic"], touch=req.query["touch"]))


def list_topics(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    q = req.query
    topics, next_cursor = ctx.engine.list_topics(
        prefix=q["prefix"] or "",
        page_size=q["page_size"],
        cursor=q["cursor"],
        touch=q["touch"],
    )
    body: dict[str, object] = {"topics": topics}
    if next_cursor is not None:
        body["next_cursor"] = next_cursor
    return Reply(200, body)


async def delete_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    name = req.path["topic"]
    result = ctx.engine.delete_topic(name, if_empty=req.query["if_empty"])
    perf = await settle(result.durable)
    return Reply(200, {"topic": name, "deleted": result.deleted, "routers_removed": []}, perf)
