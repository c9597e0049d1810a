"""The application: one dispatcher compiled from the OpenAPI document, behind either transport.

:class:`TopicsApp` turns a :class:`Request` into a :class:`Response` (or a stream): match the
route (``routes``, built by connexion from the spec), refuse data operations while recovering
(503), bind and validate the request lazily (``validation``), call the handler, render its
:class:`Reply` (``responses``) — and turn any failure into the §0.5 envelope (``wire``). A
handler returns its reply directly when it has nothing to wait for (a ``disk`` append, a read),
or an awaitable when it must wait (an fsync, a long-poll, a coalescing window): the common paths
never create a task.

Transports: ``http`` (the native HTTP/1.1 server ``topics serve`` runs) and ``asgi`` (an ASGI
app, for in-process tests and ASGI servers: ``asgi.create_app``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from topics_engine import Engine, SystemClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.errors import NotReady
from topics_engine.jsonvalues import dumps

from . import wire
from .context import ServerContext
from .dispatch import HANDLERS, PROBES
from .errors import MethodNotAllowed
from .request import Request
from .responses import Reply, Response, json_response, performance_block, render
from .routes import RouteTable
from .settings import Settings
from .spec import load_specification
from .sse import StreamReply
from .websocket import WebSocketReply

log = logging.getLogger("topics.server")

Outcome = Response | StreamReply | WebSocketReply


class TopicsApp:
    def __init__(self, ctx: ServerContext, max_body_bytes: int) -> None:
        self.ctx = ctx
        self.max_body_bytes = max_body_bytes
        self.routes = RouteTable(load_specification(), handlers=HANDLERS, max_body_bytes=max_body_bytes)

    def handle(self, request: Request) -> Outcome | Awaitable[Outcome]:
        """The response to ``request``: at once, or an awaitable when the handler waits."""
        try:
            match = self.routes.match(request.method, request.path)
            operation = match.operation
            if not self.ctx.ready and operation.operation_id not in PROBES:
                raise NotReady(
                    "replaying the write-ahead log; retry shortly",
                    {"replay_progress": round(self.ctx.replay_progress, 4), "retry_after_ms": 1000},
                )
            req = operation.validator.bind(request, match.path_params)
            out = operation.handler(req, self.ctx)
        except Exception as exc:  # noqa: BLE001 — every failure becomes the envelope
            return self.error(request, exc)
        if isinstance(out, Reply):
            return render(out, request.started, request.accepts_gzip)
        if isinstance(out, StreamReply | WebSocketReply):
            return out
        return self._finish(out, request)

    async def _finish(
        self, pending: Awaitable[Reply | StreamReply | WebSocketReply], request: Request
    ) -> Outcome:
        try:
            out = await pending
        except Exception as exc:  # noqa: BLE001 — every failure becomes the envelope
            return self.error(request, exc)
        if isinstance(out, StreamReply | WebSocketReply):
            return out
        return render(out, request.started, request.accepts_gzip)

    def error(self, request: Request, exc: BaseException) -> Response:
        """The §0.5 envelope for any failure (with ``Allow`` on a 405, ``Retry-After`` on a
        429/503 that can clear)."""
        err = wire.to_topics_error(exc)
        headers: list[tuple[bytes, bytes]] = []
        if isinstance(err, MethodNotAllowed) and err.detail:
            headers.append((b"allow", ", ".join(err.detail["allowed"]).encode()))
        retry_after = wire.retry_after_s(err)
        if retry_after is not None:
            headers.append((b"retry-after", str(retry_after).encode()))
        body: dict[str, Any] = wire.error_body(err)
        body["performance"] = performance_block(request.started, {})
        return json_response(wire.status_of(err), dumps(body), headers, request.accepts_gzip)


def build(
    settings: Settings, engine: Engine | None = None, datadir: DataDirectory | None = None
) -> tuple[TopicsApp, ServerContext]:
    """The app and its context. By default the engine is durable: a :class:`DataDirectory` on
    ``settings.data_dir``, recovered when the context starts. Tests may pass their own engine
    (e.g. on a manual clock) with or without a data directory; an engine without one is
    in-memory and ready at once."""
    if engine is None:
        engine = Engine(SystemClock(), settings.limits)
        datadir = datadir or DataDirectory(
            settings.data_dir,
            segment_policy=SegmentPolicy(
                settings.segment_max_events, settings.segment_max_bytes, settings.segment_max_age_ms
            ),
            checkpoint_wal_bytes=settings.checkpoint_wal_bytes,
            wal_sync_delay_s=settings.wal_sync_ms / 1000,
        )
    ctx = ServerContext(engine, datadir, max_watch_topics=settings.max_watch_topics, ready=datadir is None)
    return TopicsApp(ctx, settings.max_body_bytes), ctx
