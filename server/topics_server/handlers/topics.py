"""The topic control plane: PUT / GET / DELETE /v0/topics/{topic}, GET /v0/topics (a delete
cascades to the routers naming the topic and the schedules appending to it)."""

from __future__ import annotations

from collections.abc import Awaitable

from .. import wire
from ..bodies import fields_set
from ..context import ServerContext
from ..errors import Forbidden
from ..responses import Reply, after_ack
from ..validation import ValidatedRequest


def put_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    result = ctx.engine.put_topic(req.path["topic"], fields_set(req.json()))
    return after_ack(result.wait, 201 if result.created else 200, wire.topic_put(result))


def get_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    state = ctx.engine.topic_state(req.path["topic"], touch=req.query.get("touch", True))
    return Reply(200, wire.topic_state(state))


def list_topics(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    q = req.query
    page = ctx.engine.list_topics(
        prefix=q.get("prefix") or "",
        page_size=q.get("page_size", 0),
        cursor=q.get("cursor"),
        touch=q.get("touch", False),
        within=req.principal.prefixes if req.principal is not None else (),
    )
    return Reply(200, wire.topic_page(page))


def delete_topic(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    principal, name = req.principal, req.path["topic"]
    # the delete would remove these routers too: a key may only remove ones it may touch (and
    # is not told the names of the others)
    if principal is not None and any(not principal.allows(r.name) for r in ctx.routers.naming(name)):
        raise Forbidden(
            f'topic "{name}" is the source or dest of a router outside this key\'s prefix '
            "allowlist; a key allowed that router must delete it first",
            {"topic": name},
        )
    if principal is not None and any(not principal.allows(s.name) for s in ctx.schedules.naming(name)):
        raise Forbidden(
            f'topic "{name}" is the topic of a schedule outside this key\'s prefix allowlist; a '
            "key allowed that schedule must delete it first",
            {"topic": name},
        )
    result = ctx.routers.delete_topic(name, if_empty=req.query.get("if_empty", False))
    if result.deleted:
        result.schedules_removed = ctx.schedules.topic_deleted(name)
    return after_ack(result.wait, 200, wire.topic_deleted(result))
