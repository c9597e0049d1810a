"""Routers: PUT / GET / DELETE /v0/routers/{router}, GET /v0/routers."""

from __future__ import annotations

from collections.abc import Awaitable

from .. import wire
from ..bodies import fields_set
from ..context import ServerContext
from ..responses import Reply, after_ack
from ..validation import ValidatedRequest


def put_router(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    result = ctx.routers.put(req.path["router"], fields_set(req.json()))
    return after_ack(result.wait, 201 if result.created else 200, wire.router_put(result))


def get_router(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, wire.router_state(ctx.routers.state(req.path["router"])))


def list_routers(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    q = req.query
    page = ctx.routers.page(
        prefix=q.get("prefix") or "",
        source=q.get("source"),
        dest=q.get("dest"),
        page_size=q.get("page_size", 0),
        cursor=q.get("cursor"),
        within=req.principal.prefixes if req.principal is not None else (),
    )
    return Reply(200, wire.router_page(page))


def delete_router(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    result = ctx.routers.delete(req.path["router"])
    return after_ack(result.wait, 200, {"router": result.name, "deleted": result.deleted})
