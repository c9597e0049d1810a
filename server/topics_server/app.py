"""The application: one dispatcher compiled from the OpenAPI document, behind either transport.

:class:`TopicsApp` turns a :class:`Request` into a :class:`Response` (or a stream): match the
route (``routes``, built by connexion from the spec), which carries its :class:`dispatch.Operation`
(handler, kind, throttling, body names), admit the caller (``access``: 401/403 from
the key, its scopes and its prefix allowlist), refuse data operations while recovering (503),
bind and validate the request lazily (``validation``), take a slot under the concurrency
caps (``admission``: a stream slot for the SSE GETs and the WebSocket, else an in-flight slot
per key, held until the response is ready or the stream ends), call the handler, render its
:class:`Reply` (``responses``) — and turn any failure into the error envelope (``wire``). A
handler returns its reply directly when it has nothing to wait for (a ``disk`` append, a read),
or an awaitable when it must wait (an fsync, a long-poll, a coalescing window): the common paths
never create a task.

Every request is counted once it is over, under its operation (``accounting``: a plain request
when its response is ready, a stream when it ends), and written to the access log when that is
on (``accesslog``); a response to an allowed browser origin gets its CORS headers (``cors``).
Every transport passes here (HTTP/1.1, h2c, ASGI), so none counts anything itself.

Beside the operations, matched by exact path before them: a CORS preflight, when CORS is on,
and the served contract and its interactive docs page (``apidocs``: public, not operations of
the document), and the web console's static files (``console``: public, no data in them).

Transports: ``http`` (the native HTTP/1.1 server ``topics serve`` runs, with ``http2`` for h2c
on its port) and ``asgi`` (an ASGI app, for in-process tests and ASGI servers:
``asgi.create_app``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from topics_engine import Engine, SystemClock
from topics_engine.datadir import DataDirectory, SegmentPolicy
from topics_engine.errors import NotReady
from topics_engine.jsonvalues import dumps
from topics_engine.queues import MAX_CLAIM

from . import apidocs, console, wire
from .access import Gate, check_body_names
from .accesslog import AccessLog
from .accounting import CLIENT_CLOSED, MeteredSink, OperationStats
from .admission import Slot
from .auth import KeyStore, Principal
from .context import ServerContext
from .cors import Cors
from .dispatch import OPERATIONS, Kind, Operation
from .errors import MethodNotAllowed, Unauthorized
from .request import Request
from .responses import Reply, Response, json_response, performance_block, render
from .routes import Match, RouteTable
from .settings import Settings
from .spec import load_document, load_specification, served_document
from .sse import StreamReply
from .streams import Sink
from .throttle import Parking, priority_of
from .validation import ValidatedRequest
from .websocket import WebSocketReply

log = logging.getLogger("topics.server")

Outcome = Response | StreamReply | WebSocketReply


def runtime_limits(ctx: ServerContext) -> dict[str, int]:
    """The configured value of every runtime limit the served document states, by variable."""
    limits = ctx.engine.limits
    return {
        "TOPICS_MAX_BATCH_RECORDS": limits.max_batch_records,
        "TOPICS_MAX_TAG_BYTES": limits.max_tag_bytes,
        "TOPICS_MAX_NODE_BYTES": limits.max_node_bytes,
        "TOPICS_MAX_WATCH_TOPICS": ctx.watches.max_topics,
        "TOPICS_MAX_CLAIM": MAX_CLAIM,
    }


class TopicsApp:
    def __init__(
        self,
        ctx: ServerContext,
        max_body_bytes: int,
        gate: Gate | None = None,
        *,
        access_log: bool = False,
        cors_origins: tuple[str, ...] = (),
    ) -> None:
        self.ctx = ctx
        self.max_body_bytes = max_body_bytes
        self.gate = gate or Gate(KeyStore())
        self.requests = ctx.requests
        self.access = AccessLog() if access_log else None
        """The access log, when ``TOPICS_ACCESS_LOG`` turned it on."""
        self.cors = Cors(cors_origins) if cors_origins else None
        """CORS, when ``TOPICS_CORS_ORIGINS`` lists origins."""
        # the contract as served: the document the route table is built from, its runtime
        # limits stated as configured
        self.docs = apidocs.contract_resources(served_document(load_document(), runtime_limits(ctx)))
        self.docs.update(console.console_resources())  # the web console's page and assets
        self.routes = RouteTable(
            load_specification(), operations=OPERATIONS, max_body_bytes=max_body_bytes, requests=ctx.requests
        )

    def handle(self, request: Request) -> Outcome | Awaitable[Outcome]:
        """The response to ``request``: at once, or an awaitable when the handler waits."""
        stats = self.requests.unmatched  # until the route is known
        principal: Principal | None = None
        with _Held() as held:
            try:
                if self.cors is not None and request.method == "OPTIONS":
                    preflight = self.cors.preflight(request)
                    if preflight is not None:  # answered before anything else: no key needed
                        self._account(request, self.requests.preflight, None, 204, preflight)
                        return preflight
                served = self.docs.get(request.path)
                if served is not None:  # the contract and the docs page: public, even while recovering
                    return self._answered(request, self.requests.docs, None, served.respond(request))
                match = self.routes.match(request.method, request.path)
                route = match.route
                stats, operation = route.stats, route.operation
                principal = self.gate.identify(request, route.requirement)
                self.gate.authorize(principal, operation.operation_id, route.requirement, match.path_params)
                req = self._bound(request, match, operation, principal)
                held.slot = self._slot(operation, principal)
                if operation.throttled and self.ctx.throttle.engaged():
                    parking = self._park(req, operation)
                    if parking is not None:
                        waited = self._after_parking(parking, operation, req)
                        return self._finish(waited, request, held.pass_on(), stats, principal, None)
                persistence = self.ctx.engine.persistence
                mark = persistence.mark()
                out = operation.handler(req, self.ctx)
                if isinstance(out, Reply):
                    persistence.write_queued(mark)  # what it acknowledges, first
            except Exception as exc:  # noqa: BLE001 — every failure becomes the envelope
                return self._answered(request, stats, principal, self._envelope(request, exc))
            if isinstance(out, Reply):
                response = render(out, request.started, request.accepts_gzip)
                return self._answered(request, stats, principal, response)
            if isinstance(out, StreamReply | WebSocketReply):
                return self._streaming(out, held.pass_on(), request, stats, principal)
            return self._finish(out, request, held.pass_on(), stats, principal, mark)

    def _bound(
        self, request: Request, match: Match, operation: Operation, principal: Principal | None
    ) -> ValidatedRequest:
        """The bound request, once the caller may run the operation (the key's scopes and the
        names in the path passed the gate): 503 while recovering (probes excepted), then the
        request's validation and the names in its body (``access``)."""
        if not self.ctx.ready and operation.kind is not Kind.PROBE:
            raise NotReady(
                "replaying the write-ahead log; retry shortly",
                {"replay_progress": round(self.ctx.replay_progress, 4), "retry_after_ms": 1000},
            )
        req = match.route.validator.bind(request, match.path_params)
        if principal is not None:
            req.principal = principal
            if operation.body_names is not None:
                check_body_names(principal, operation.body_names, req)
        return req

    def _slot(self, operation: Operation, principal: Principal | None) -> Slot | None:
        """The slot the request holds: a stream slot for a stream, else an in-flight slot
        per key (none without auth); 429 ``throttled`` when its cap is full."""
        if operation.kind is Kind.STREAM:
            return self.ctx.admission.open_stream(principal)
        if principal is not None:
            return self.ctx.admission.begin_request(principal)
        return None

    def _park(self, req: ValidatedRequest, operation: Operation) -> Parking | None:
        """Under CPU pressure: ``None`` if this request's topic may run now, else the wait
        for its turn (a patient request — a ``disable_backpressure`` write — waits
        without a deadline)."""
        ctx = self.ctx
        patient = operation.patient is not None and operation.patient(req)
        return ctx.throttle.admit(priority_of(ctx.engine, req.path["topic"]), patient)

    async def _after_parking(self, parking: Parking, operation: Operation, req: ValidatedRequest) -> Reply:
        """Run the handler once admitted (429 if refused); the reply reports the time parked on
        top of any wait of its own (a coalescing claim's). Throttled operations never stream."""
        waited = await parking
        if waited is None:
            raise self.ctx.throttle.refusal()
        persistence = self.ctx.engine.persistence
        mark = persistence.mark()
        result = operation.handler(req, self.ctx)
        out: Reply = result if isinstance(result, Reply) else await result
        persistence.write_queued(mark)  # what it acknowledges, first; another's failure is not its
        own = out.performance.get("throttle_wait_ms", 0)
        out.performance["throttle_wait_ms"] = round(own + waited, 3)
        return out

    async def _finish(
        self,
        pending: Awaitable[Reply | StreamReply | WebSocketReply],
        request: Request,
        slot: Slot | None,
        stats: OperationStats,
        principal: Principal | None,
        mark: int | None,
    ) -> Outcome:
        """The awaited reply, rendered; the slot goes back once it is (cancellation included),
        or goes on with a stream. A client gone meanwhile counts as status 499. ``mark``: the
        WAL mark taken before its handler ran, whose frames are written before the reply leaves
        (``None``: the awaitable wrote them itself — a parked request's)."""
        with _Held(slot) as held:
            try:
                out = await pending
                if isinstance(out, Reply) and mark is not None:
                    self.ctx.engine.persistence.write_queued(mark)  # what it acknowledges, first
            except asyncio.CancelledError:
                self._account(request, stats, principal, CLIENT_CLOSED, None)
                raise
            except Exception as exc:  # noqa: BLE001 — every failure becomes the envelope
                return self._answered(request, stats, principal, self._envelope(request, exc))
            if isinstance(out, StreamReply | WebSocketReply):
                return self._streaming(out, held.pass_on(), request, stats, principal)
            response = render(out, request.started, request.accepts_gzip)
            return self._answered(request, stats, principal, response)

    def error(self, request: Request, exc: BaseException) -> Response:
        """The error envelope of a failure a transport met itself — malformed HTTP, a refused
        upgrade — counted as a request of no operation."""
        return self._answered(request, self.requests.unmatched, None, self._envelope(request, exc))

    def _envelope(self, request: Request, exc: BaseException) -> Response:
        """The error envelope for any failure (with ``Allow`` on a 405, ``Retry-After`` on a
        429/503 that can clear)."""
        err = wire.to_topics_error(exc)
        headers: list[tuple[bytes, bytes]] = []
        if isinstance(err, MethodNotAllowed) and err.detail:
            headers.append((b"allow", ", ".join(err.detail["allowed"]).encode()))
        if isinstance(err, Unauthorized):
            headers.append((b"www-authenticate", b'Bearer realm="topics"'))
        retry_after = wire.retry_after_s(err)
        if retry_after is not None:
            headers.append((b"retry-after", str(retry_after).encode()))
        body: dict[str, Any] = wire.error_body(err)
        body["performance"] = performance_block(request.started, {})
        return json_response(wire.status_of(err), dumps(body), headers, request.accepts_gzip)

    # -- accounting, the access log, CORS ---------------------------------------------------------

    def _answered(
        self, request: Request, stats: OperationStats, principal: Principal | None, response: Response
    ) -> Response:
        """``response`` counted (and logged), with its CORS headers when the origin is allowed
        (a copy: a response may be shared, e.g. a served document's)."""
        self._account(request, stats, principal, response.status, response)
        cors = self.cors
        if cors is not None:
            extra = cors.headers(request)
            if extra is not None:
                return Response(response.status, [*response.headers, *extra], response.body)
        return response

    def _account(
        self,
        request: Request,
        stats: OperationStats,
        principal: Principal | None,
        status: int,
        response: Response | None,
    ) -> None:
        """Count a plain request (and write its access-log line)."""
        seconds = time.perf_counter() - request.started
        stats.answered(status, seconds)
        access = self.access
        if access is not None:
            sent = 0 if response is None or request.method == "HEAD" else response.length
            route = request.path if stats is self.requests.docs else stats.route
            key = None if principal is None else principal.key_id
            access.request(request.method, route, stats.operation_id, status, seconds, sent, key)

    def _streaming(
        self,
        reply: StreamReply | WebSocketReply,
        slot: Slot | None,
        request: Request,
        stats: OperationStats,
        principal: Principal | None,
    ) -> StreamReply | WebSocketReply:
        """``reply`` holding its stream slot until the stream ends (the transport closes it),
        then counted — 200 for SSE, 101 for the WebSocket — and logged with the bytes it sent."""

        def ended(status: int, sent: int) -> None:
            seconds = time.perf_counter() - request.started
            stats.stream_ended(status, seconds)
            if self.access is not None:
                key = None if principal is None else principal.key_id
                self.access.request(
                    request.method, stats.route, stats.operation_id, status, seconds, sent, key
                )

        if isinstance(reply, WebSocketReply):
            if slot is not None:
                reply.slot = slot
            reply.ended = lambda sent: ended(101, sent)
            reply.metered = self.access is not None
            return reply
        headers = reply.headers
        extra = self.cors.headers(request) if self.cors is not None else None
        if extra is not None:
            headers = [*headers, *extra]
        produce, close = reply.produce, reply.close
        meter: list[MeteredSink] = []
        if self.access is not None:
            produce = _metered(produce, meter)

        def closed() -> None:
            try:
                close()
            finally:
                if slot is not None:
                    slot.release()
                ended(200, meter[0].bytes if meter else 0)

        return StreamReply(produce, closed, headers)


def _metered(
    produce: Callable[[Sink], Awaitable[None]], meter: list[MeteredSink]
) -> Callable[[Sink], Awaitable[None]]:
    """``produce`` writing through a :class:`MeteredSink` (kept in ``meter`` for the count)."""

    async def metered(sink: Sink) -> None:
        meter.append(MeteredSink(sink))
        await produce(meter[0])

    return metered


class _Held:
    """The slot a request holds while it is being answered: released exactly once, when the
    ``with`` block ends however it ends (an answer, an error, a cancellation) — unless
    :meth:`pass_on` handed it to what outlives the block (a stream, or the wait for a reply),
    which then releases it. The one place a request's slot is released."""

    __slots__ = ("slot",)

    def __init__(self, slot: Slot | None = None) -> None:
        self.slot = slot

    def __enter__(self) -> _Held:
        return self

    def __exit__(self, *exc_info: object) -> None:
        slot = self.pass_on()
        if slot is not None:
            slot.release()

    def pass_on(self) -> Slot | None:
        """The slot, no longer held here."""
        slot, self.slot = self.slot, None
        return slot


def build(
    settings: Settings, engine: Engine | None = None, datadir: DataDirectory | None = None
) -> tuple[TopicsApp, ServerContext]:
    """The app and its context. By default the engine is durable: a :class:`DataDirectory` on
    ``settings.data_dir``, recovered when the context starts. Tests may pass their own engine
    (e.g. on a manual clock) with or without a data directory; an engine without one is
    in-memory and ready at once."""
    production = engine is None
    if engine is None:
        engine = Engine(SystemClock(), settings.limits)
        datadir = datadir or DataDirectory(
            settings.data_dir,
            segment_policy=SegmentPolicy(
                settings.segment_max_events, settings.segment_max_bytes, settings.segment_max_age_ms
            ),
            checkpoint_wal_bytes=settings.checkpoint_wal_bytes,
            checkpoint_interval_ms=settings.checkpoint_interval_ms,
            cache_bytes=settings.cache_bytes,
            wal_sync_delay_s=settings.wal_sync_ms / 1000,
        )
    ctx = ServerContext(
        engine,
        datadir,
        max_watch_topics=settings.max_watch_topics,
        caps=settings.caps,
        throttle_enabled=settings.throttle,
        monitor_pressure=production,
        ready=datadir is None,
    )
    app = TopicsApp(
        ctx,
        settings.max_body_bytes,
        Gate(settings.api_keys, settings.probe_auth),
        access_log=settings.access_log,
        cors_origins=settings.cors_origins,
    )
    return app, ctx
