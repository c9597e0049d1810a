"""The operation table: every ``operationId`` of the spec and the handler that serves it.

connexion resolves each operation of ``openapi/v0.yaml`` through this table when the route
table is built (``routes``); an operation without a handler fails start-up, and a test checks
the table and the spec list the same operations.

A handler takes the validated request and the server context and returns a :class:`Reply`
(answered at once), a :class:`StreamReply`, or an awaitable of either when it has to wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .handlers import probes, queues, records, routers, topics, watch

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
    "metrics": probes.metrics,
    "claim_jobs": queues.claim_jobs,
    "ack_jobs": queues.ack_jobs,
    "nack_jobs": queues.nack_jobs,
    "extend_leases": queues.extend_leases,
    "work_stream": queues.work_stream,
    "put_router": routers.put_router,
    "get_router": routers.get_router,
    "list_routers": routers.list_routers,
    "delete_router": routers.delete_router,
    "create_watch": watch.create_watch,
    "watch_stream": watch.watch_stream,
    "open_websocket": watch.open_websocket,
}

PROBES = frozenset({"health", "ready", "healthz", "readyz", "metrics"})
"""Operations served while the server is still recovering (the metrics describe the recovering
process)."""

STREAMS = frozenset({"watch_stream", "work_stream", "open_websocket"})
"""Long-lived operations: they hold a stream slot (§11 SSE connection caps), not an in-flight one."""

THROTTLED = frozenset({"append_records", "diff_topic", "delete_records", "claim_jobs"})
"""Data-plane work the elastic throttle may park or refuse under CPU pressure (§0.6): writes,
reads and claims. Probes, metrics, the control plane and the operations that free work (ack,
nack, extend) always run."""
