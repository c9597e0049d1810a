"""§1 — topic control plane: PUT / GET / DELETE /v0/topics/{topic}, GET /v0/topics."""

from __future__ import annotations

from ..context import ServerContext
from ..responses import Reply
from ..validation import ValidatedRequest


def put_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    engine = ctx.engine
    result = engine.put_topic(req.path["topic"], req.body)
    return Reply(201 if result.created else 200, result.to_wire())


def get_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    engine = ctx.engine
    return Reply(200, engine.topic_state(req.path["topic"], touch=req.query["touch"]))


def list_topics(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    engine = ctx.engine
    q = req.query
    topics, next_cursor = engine.list_topics(
        prefix=q["prefix"] or "",
        page_size=q["page_size"],
        cursor=q["cursor"],
        touch=q["touch"],
    )
    body: dict[str, object] = {"topics": topics}
    if next_cursor is not None:
        body["next_cursor"] = next_cursor
    return Reply(200, body)


def delete_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    engine = ctx.engine
    name = req.path["topic"]
    deleted = engine.delete_topic(name, if_empty=req.query["if_empty"])
    return Reply(200, {"topic": name, "deleted": deleted, "routers_removed": []})
