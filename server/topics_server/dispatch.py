"""The operation table: one :class:`Operation` per ``operationId`` of the spec — its handler and
every trait the server acts on for it (like Starlette's ``Route``, but the path, method,
parameters, body schema and scopes stay in ``openapi/v0.yaml``).

connexion resolves each operation of the spec through this table when the route table is built
(``routes``: each compiled route carries its entry); an operation without an entry fails
start-up, and ``tests/test_architecture.py`` checks the table and the spec list the same
operations. ``app`` reads the traits of the matched route per request; nothing else keeps a list
of operation names.

A handler takes the validated request and the server context and returns a :class:`Reply`
(answered at once), a :class:`StreamReply`, or an awaitable of either when it has to wait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .access import (
    BodyNames,
    appended_config_names,
    dead_letter_names,
    router_names,
    schedule_names,
    watched_names,
)
from .context import ServerContext
from .handlers import auth, consumers, probes, queues, records, routers, schedules, topics, watch
from .validation import ValidatedRequest

Handler = Callable[[ValidatedRequest, ServerContext], Any]


class Kind(Enum):
    """How an operation is served."""

    REQUEST = "request"
    """Answered once, under the caller's in-flight slot (a resource cap); refused (503) while recovering."""
    PROBE = "probe"
    """Answered even while the server recovers (the metrics describe the recovering process;
    ``whoami`` depends only on the configured keys)."""
    STREAM = "stream"
    """Long-lived (the SSE GETs, the WebSocket): holds a stream slot (a resource cap), not an
    in-flight one."""


@dataclass(frozen=True, slots=True)
class Operation:
    """What the server does for one ``operationId``.

    Invariants (checked when the entry is made): only a :attr:`Kind.REQUEST` is ``throttled``
    (probes always answer, streams are paced instead), and only a throttled operation may be
    ``patient``.
    """

    operation_id: str
    handler: Handler
    kind: Kind = Kind.REQUEST
    throttled: bool = False
    """Data-plane work the elastic throttle may park or refuse under CPU pressure (``429 throttled``): writes,
    reads and claims. Probes, metrics, the control plane and the operations that free work
    (ack, nack, extend) always run."""
    body_names: BodyNames | None = None
    """The topic names its body holds, checked against a prefix-limited key (``access``);
    ``None``: the body names none."""
    patient: Callable[[ValidatedRequest], bool] | None = None
    """Whether a request of it waits for admission without a deadline (a
    ``disable_backpressure`` write); ``None``: never."""

    def __post_init__(self) -> None:
        if self.throttled and self.kind is not Kind.REQUEST:
            raise ValueError(f"operation {self.operation_id}: only a request may be throttled")
        if self.patient is not None and not self.throttled:
            raise ValueError(f"operation {self.operation_id}: only a throttled operation may be patient")


def _disables_backpressure(req: ValidatedRequest) -> bool:
    """The write asks to wait instead of being refused. Only a body that may hold the flag is
    decoded before admission (a gzip body may: its bytes do not show it)."""
    body = req.request
    return (
        b"disable_backpressure" in body.body or body.header("content-encoding") is not None
    ) and req.json().disable_backpressure is True


def _table(*operations: Operation) -> dict[str, Operation]:
    """The operations by ``operationId``; an id listed twice is an error."""
    table: dict[str, Operation] = {}
    for operation in operations:
        if operation.operation_id in table:
            raise ValueError(f"operation {operation.operation_id} is listed twice")
        table[operation.operation_id] = operation
    return table


OPERATIONS: dict[str, Operation] = _table(
    Operation("put_topic", topics.put_topic, body_names=dead_letter_names),
    Operation("get_topic", topics.get_topic),
    Operation("list_topics", topics.list_topics),
    Operation("delete_topic", topics.delete_topic),
    Operation(
        "append_records",
        records.append_records,
        throttled=True,
        body_names=appended_config_names,
        patient=_disables_backpressure,
    ),
    Operation("diff_topic", records.diff_topic, throttled=True),
    Operation("delete_records", records.delete_records, throttled=True),
    Operation("health", probes.health, Kind.PROBE),
    Operation("ready", probes.ready, Kind.PROBE),
    Operation("healthz", probes.healthz, Kind.PROBE),
    Operation("readyz", probes.readyz, Kind.PROBE),
    Operation("metrics", probes.metrics, Kind.PROBE),
    Operation("whoami", auth.whoami, Kind.PROBE),
    Operation("claim_jobs", queues.claim_jobs, throttled=True),
    Operation("ack_jobs", queues.ack_jobs),
    Operation("nack_jobs", queues.nack_jobs),
    Operation("extend_leases", queues.extend_leases),
    Operation("list_leases", queues.list_leases),
    Operation("dead_letter_jobs", queues.dead_letter_jobs),
    Operation("work_stream", queues.work_stream, Kind.STREAM),
    Operation("put_router", routers.put_router, body_names=router_names),
    Operation("get_router", routers.get_router),
    Operation("list_routers", routers.list_routers),
    Operation("delete_router", routers.delete_router),
    Operation("put_schedule", schedules.put_schedule, body_names=schedule_names),
    Operation("get_schedule", schedules.get_schedule),
    Operation("list_schedules", schedules.list_schedules),
    Operation("delete_schedule", schedules.delete_schedule),
    Operation("put_consumer", consumers.put_consumer),
    Operation("get_consumer", consumers.get_consumer),
    Operation("list_consumers", consumers.list_consumers),
    Operation("commit_consumer", consumers.commit_consumer),
    Operation("delete_consumer", consumers.delete_consumer),
    Operation("create_watch", watch.create_watch, body_names=watched_names),
    Operation("watch_stream", watch.watch_stream, Kind.STREAM),
    Operation("open_websocket", watch.open_websocket, Kind.STREAM),
)
"""Every operation of ``openapi/v0.yaml``, exactly once."""
