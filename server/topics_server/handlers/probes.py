"""§8.1–§8.2 — liveness and readiness, at /v0 and as /healthz, /readyz aliases."""

from __future__ import annotations

from topics_engine.errors import NotReady, ShuttingDown

from ..context import VERSION, ServerContext
from ..responses import Reply
from ..validation import ValidatedRequest


def health(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, {"status": "ok", "version": VERSION, "uptime_ms": ctx.uptime_ms})


def ready(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    """200 once the WAL is replayed; 503 ``not_ready`` (with progress) during replay and 503
    ``shutting_down`` while draining. A WAL that turned read-only after an I/O error still
    serves reads, so the probe stays 200 and says ``wal_read_only: true``."""
    if ctx.shutting_down:
        raise ShuttingDown(
            "the server is shutting down; retry against another instance", {"retry_after_ms": 1000}
        )
    if not ctx.ready:
        raise NotReady(
            "replaying the write-ahead log; retry shortly",
            {"replay_progress": round(ctx.replay_progress, 4), "retry_after_ms": 1000},
        )
    body: dict[str, object] = {
        "status": "ready",
        "wal_replay_complete": True,
        "topics": ctx.engine.topic_count,
    }
    wal = ctx.store.wal if ctx.store else None
    if wal is not None and wal.read_only:
        body["wal_read_only"] = True
    return Reply(200, body)


healthz = health
readyz = ready
