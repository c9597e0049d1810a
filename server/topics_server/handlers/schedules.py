"""Schedules (an extension, issue 24): PUT / GET / DELETE /v0/schedules/{schedule},
GET /v0/schedules."""

from __future__ import annotations

from collections.abc import Awaitable

import msgspec

from .. import wire
from ..bodies import fields_set
from ..context import ServerContext
from ..responses import Reply, after_ack
from ..validation import ValidatedRequest


def put_schedule(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    body = req.json()
    fields = fields_set(body)
    fields["records"] = msgspec.json.encode(body.records)  # data and meta values verbatim
    result = ctx.schedules.put(req.path["schedule"], fields)
    return after_ack(result.wait, 201 if result.created else 200, wire.schedule_put(result))


def get_schedule(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, wire.schedule_state(ctx.schedules.get(req.path["schedule"])))


def list_schedules(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    q = req.query
    page = ctx.schedules.page(
        prefix=q.get("prefix") or "",
        topic=q.get("topic"),
        page_size=q.get("page_size", 0),
        cursor=q.get("cursor"),
        within=req.principal.prefixes if req.principal is not None else (),
    )
    return Reply(200, wire.schedule_page(page))


def delete_schedule(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    result = ctx.schedules.delete(req.path["schedule"])
    return after_ack(result.wait, 200, {"schedule": result.name, "deleted": result.deleted})
