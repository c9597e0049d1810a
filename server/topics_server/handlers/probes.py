"""Liveness and readiness, at /v0 and as /healthz, /readyz aliases; the metrics."""

from __future__ import annotations

from topics_engine.errors import NotReady, ShuttingDown

from ..context import VERSION, ServerContext
from ..metrics import TEXT_CONTENT_TYPE, metrics_snapshot, metrics_text
from ..responses import Reply
from ..validation import ValidatedRequest


def health(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, {"status": "ok", "version": VERSION, "uptime_ms": ctx.uptime_ms})


def ready(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    """200 once the WAL is replayed; 503 ``not_ready`` (with progress) during replay, 503
    ``shutting_down`` while draining, and 503 ``not_ready`` with ``wal_read_only`` once the WAL
    turned read-only after an I/O error — so load balancers stop routing writes here; reads
    keep working on the instance (docs/DECISIONS.md, "WAL failure is fail-stop")."""
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


VARY_ACCEPT = (b"vary", b"accept")


def metrics(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    """The Prometheus text exposition, or the JSON snapshot when ``Accept`` prefers
    ``application/json``. 200 always — also while the WAL replays."""
    principal = req.principal
    # a prefix-limited key sees only its own topics' block
    allowed = principal.allows if principal is not None and principal.prefixes else None
    if wants_json(req.header("accept")):
        return Reply(200, metrics_snapshot(ctx, allowed), headers=[VARY_ACCEPT])
    return Reply(200, metrics_text(ctx, allowed), headers=[VARY_ACCEPT], content_type=TEXT_CONTENT_TYPE)


def wants_json(accept: str | None) -> bool:
    """``Accept`` lists ``application/json`` with a quality above 0 and at least that of
    ``text/plain`` (absent types have quality 0; ``*/*`` and ``text/*`` do not count)."""
    if not accept:
        return False
    quality: dict[str, float] = {}
    for item in accept.split(","):
        kind, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        kind = kind.lower()
        quality[kind] = max(quality.get(kind, 0.0), q)
    json_q = quality.get("application/json", 0.0)
    return json_q > 0 and json_q >= quality.get("text/plain", 0.0)


healthz = health
readyz = ready
