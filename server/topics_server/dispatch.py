"""The innermost ASGI app: calls the handler of the operation connexion routed to.

connexion's routing puts the ``operationId`` in the scope; the validation middleware puts the
:class:`ValidatedRequest`. Handlers are looked up in :data:`HANDLERS`, which the spec's
operationIds must match exactly (checked at startup by connexion's resolver).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connexion.middleware.abstract import ROUTING_CONTEXT
from starlette.types import Receive, Scope, Send
from topics_engine.errors import NotFound, NotReady

from .context import ServerContext
from .handlers import probes, queues, records, topics
from .responses import accepts_gzip, encode_reply, send_json
from .sse import StreamReply, run_stream
from .validation import SCOPE_KEY

HANDLERS: dict[str, Callable[..., Any]] = {
    "put_topic": topics.put_topic,
    "get_topic": topics.get_topic,
    "list_topics": topics.list_topics,
    "delete_topic": topics.delete_topic,
    "append_records": records.append_records,
    "diff_topic": records.diff_topic,
    "delete_records": records.delete_records,
    "health": probes.health,
    "ready": probes.ready,
    "healthz": probes.healthz,
    "readyz": probes.readyz,
    "claim_jobs": queues.claim_jobs,
    "ack_jobs": queues.ack_jobs,
    "nack_jobs": queues.nack_jobs,
    "extend_leases": queues.extend_leases,
    "work_stream": queues.work_stream,
}
PROBES = frozenset({"health", "ready", "healthz", "readyz"})


def resolve_handler(operation_id: str) -> Callable[..., Any]:
    """connexion resolver hook: fails startup if the spec names an operation we do not serve."""
    return HANDLERS[operation_id]


class Dispatcher:
    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        operation_id = scope.get("extensions", {}).get(ROUTING_CONTEXT, {}).get("operation_id")
        if operation_id is None:
            raise NotFound(
                f"no route for {scope['method']} {scope['path']}; see the /v0 API reference",
                {"method": scope["method"], "path": scope["path"]},
            )
        if not self.ctx.ready and operation_id not in PROBES:
            raise NotReady(
                "replaying the write-ahead log; retry shortly",
                {"replay_progress": round(self.ctx.replay_progress, 4), "retry_after_ms": 1000},
            )
        req = scope[SCOPE_KEY]
        reply = await HANDLERS[operation_id](req, self.ctx)
        if isinstance(reply, StreamReply):
            await run_stream(reply, receive, send)
            return
        payload = encode_reply(reply, scope["topics.started"])
        await send_json(send, reply.status, payload, reply.headers, accepts_gzip(scope["headers"]))
