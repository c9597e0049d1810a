"""§8.1–§8.2 — liveness and readiness, at /v0 and as /healthz, /readyz aliases."""

from __future__ import annotations

from topics_engine.errors import NotReady, ShuttingDown

from ..context import VERSION, ServerContext
from ..responses import Reply
from ..validation import ValidatedRequest


def health(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, {"status": "ok", "version": VERSION, "uptime_ms": ctx.uptime_ms})


def ready(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    """200 once the WAL is replayed; 503 ``not_ready`` (with progress) during replay, 503
    ``shutting_down`` while draining, and 503 ``not_ready`` with ``wal_read_only`` once the WAL
    turned read-only after an I/O error — so load balancers stop routing writes here; reads
    keep working on the instance (ruling 5)."""
    if ctx.shutting_down:
        raise ShuttingDown(
            "the server is shutting down; retry against another instance", {"retry_after_ms": 1000}
        )
    if not ctx.ready:
        raise NotReady(
            "replaying the write-ahead log; retry shortly",
            {"replay_progress": round(ctx.replay_progress, 4), "retry_after_ms": 1000},
        )
    if ctx.wal_read_only:
        raise NotReady(
            "the write-ahead log hit an I/O error and is read-only: writes are refused until a "
            "restart, reads still work — fix the disk and restart the server",
            {"wal_read_only": True},
        )
    return Reply(200, {"status": "ready", "wal_replay_complete": True, "topics": ctx.engine.topic_count})


healthz = health
readyz = ready
