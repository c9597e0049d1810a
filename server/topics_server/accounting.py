"""What the server counts about the requests it serves, for ``GET /v0/metrics``
(docs/METRICS.md, "Requests"): counts by operation and status, durations by operation, stream
lifetimes, WebSocket commands, and the records pushed down streams.

What counts as one request: every HTTP request the app answers, once, under its OpenAPI
``operationId`` — or one of the pseudo-operations :data:`UNMATCHED` (no operation: an unknown
path, a wrong method, malformed HTTP), :data:`API_DOCS` (the served contract and its docs page)
and :data:`PREFLIGHT` (a CORS preflight). A plain request counts when its response is ready
(its duration: from its first byte received to then); a stream — the SSE ``GET``\\s, the
WebSocket — counts when it ends, with status 200 (SSE) or 101 (WebSocket), its lifetime going to
the stream histogram instead. A refused stream (401, 429, ...) is a plain request. A request
whose client went away before its response was ready counts with status 499 (nginx's "client
closed request"). Each WebSocket command (``subscribe``, ``publish``, ...) counts apart, by
command and the HTTP status its answer stands for (200, or its error's).

Cost: everything here runs on the event loop, so it is plain attribute and dict arithmetic —
no locks, and per request only a clock read, a dict slot (allocated once per new status), a
bisection into the bucket bounds and two adds (``bench/request_path.py``). Nothing is
rendered until a scrape reads it (``metrics``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Protocol, cast

from .streams import Frame, Sink

DURATION_BUCKETS_S = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
"""Request duration buckets (seconds): a served request takes 0.05–1 ms; a long-poll (``wait_ms``,
at most ``TOPICS_MAX_WAIT_MS``, 30 s by default) or a coalescing claim takes up to its wait."""
STREAM_BUCKETS_S = (1.0, 10.0, 60.0, 300.0, 1800.0, 3600.0, 21600.0, 86400.0)
"""Stream lifetime buckets (seconds): a second to a day."""

UNMATCHED = "unmatched"
API_DOCS = "api_docs"
PREFLIGHT = "cors_preflight"
CLIENT_CLOSED = 499
"""The status a request whose client went away before its response was ready counts with."""
STREAMS = ("watch", "websocket", "work")
"""The kinds of push stream records are counted for (``topics_records_pushed_total{stream}``)."""


class Histogram:
    """Cumulative-on-read bucket counts: ``counts[i]`` holds the observations ``<= bounds[i]``
    and above the bound before it; the last slot is ``+Inf``."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)


class OperationStats:
    """One operation's counters: responses by status, request durations, stream lifetimes."""

    __slots__ = ("operation_id", "route", "statuses", "durations", "lifetimes")

    def __init__(self, operation_id: str, route: str) -> None:
        self.operation_id = operation_id
        self.route = route
        """The path template (``/v0/topics/{topic}``; ``-`` for a pseudo-operation)."""
        self.statuses: dict[int, int] = {}
        self.durations = Histogram(DURATION_BUCKETS_S)
        self.lifetimes = Histogram(STREAM_BUCKETS_S)

    def answered(self, status: int, seconds: float) -> None:
        """A plain request was answered ``seconds`` after it arrived (the observation is
        :meth:`Histogram.observe` inlined: this runs for every request)."""
        statuses = self.statuses
        statuses[status] = statuses.get(status, 0) + 1
        durations = self.durations
        durations.counts[bisect_left(durations.bounds, seconds)] += 1
        durations.sum += seconds

    def stream_ended(self, status: int, seconds: float) -> None:
        """A stream that opened with ``status`` ended ``seconds`` after its request arrived."""
        statuses = self.statuses
        statuses[status] = statuses.get(status, 0) + 1
        self.lifetimes.observe(seconds)


class RequestStats:
    """Every counter of this module for one server (``ServerContext.requests``)."""

    def __init__(self) -> None:
        self.operations: dict[str, OperationStats] = {}
        """By ``operationId``, in the order the route table registered them."""
        self.unmatched = OperationStats(UNMATCHED, "-")
        self.docs = OperationStats(API_DOCS, "-")
        self.preflight = OperationStats(PREFLIGHT, "-")
        self.commands: dict[tuple[str, int], int] = {}
        """WebSocket commands by (command, status)."""
        self.pushed = dict.fromkeys(STREAMS, 0)
        """Records (jobs, on ``/work``) written to push streams, by :data:`STREAMS` kind."""

    def operation(self, operation_id: str, route: str) -> OperationStats:
        """The counters of ``operation_id`` (made on first use)."""
        stats = self.operations.get(operation_id)
        if stats is None:
            stats = self.operations[operation_id] = OperationStats(operation_id, route)
        return stats

    def every_operation(self) -> list[OperationStats]:
        """The operations, then the pseudo-operations."""
        return [*self.operations.values(), self.unmatched, self.docs, self.preflight]

    def command(self, command: str, status: int) -> None:
        key = (command, status)
        self.commands[key] = self.commands.get(key, 0) + 1


class _MessageSink(Sink, Protocol):
    def ping(self, payload: bytes) -> None: ...

    def close(self, code: int, reason: str) -> None: ...


class MeteredSink:
    """A stream's sink that counts the bytes of the frames written through it (the access log
    of a stream; only made while the access log is on). WebSocket pings and closes pass
    through uncounted."""

    __slots__ = ("sink", "bytes")

    def __init__(self, sink: Sink) -> None:
        self.sink = cast("_MessageSink", sink)  # ping and close are only called on a WebSocket's
        self.bytes = 0

    @property
    def closed(self) -> bool:
        return self.sink.closed

    @property
    def blocked(self) -> bool:
        return self.sink.blocked

    def write(self, frame: Frame) -> None:
        self.sink.write(frame)
        self.bytes += len(frame) if isinstance(frame, bytes) else sum(map(len, frame))

    async def drain(self) -> None:
        await self.sink.drain()

    def ping(self, payload: bytes) -> None:
        self.sink.ping(payload)

    def close(self, code: int, reason: str) -> None:
        self.sink.close(code, reason)


StreamEnded = Callable[[int], None]
"""Called once when a stream ends, with the bytes it sent (0 when not metered)."""
