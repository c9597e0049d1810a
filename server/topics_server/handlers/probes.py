"""§8.1–§8.2 — liveness and readiness, at /v0 and as /healthz, /readyz aliases."""

from __future__ import annotations

from topics_engine.errors import ShuttingDown

from ..context import VERSION, ServerContext
from ..responses import Reply
from ..validation import ValidatedRequest


def health(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, {"status": "ok", "version": VERSION, "uptime_ms": ctx.uptime_ms})


def ready(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    """Ready once serving; 503 ``shutting_down`` while draining. The in-memory engine has no WAL
    to replay, so it is ready as soon as it accepts connections."""
    if ctx.shutting_down:
        raise ShuttingDown(
            "the server is shutting down; retry against another instance", {"retry_after_ms": 1000}
        )
    return Reply(200, {"status": "ready", "wal_replay_complete": True, "topics": ctx.engine.topic_count})


healthz = health
readyz = ready
