"""The ASGI application: connexion routing + spec validation around the dispatcher.

Stack (outermost first) — deliberately lean; each layer is one concept:

1. :class:`ErrorEnvelopeMiddleware` — stamps the request start time and turns every exception
   (engine, connexion, Starlette, unexpected) into the §0.5 envelope. Replaces connexion's
   ServerError/Exception middlewares, which render problem+json.
2. connexion ``RoutingMiddleware`` — matches the path/method against the spec, records the
   operationId (unknown path → falls through → 404; wrong method → 405).
3. :class:`SpecValidationMiddleware` — validators compiled once from the spec.
4. connexion ``LifespanMiddleware`` — startup/shutdown hooks.
5. :class:`Dispatcher` — calls the handler.

connexion's SwaggerUI, Security (no auth in this build), per-request Draft-4 validation,
response validation and context middlewares are left out of the serving stack: they cost more
per request than the whole handler. Response conformance is checked by the schemathesis suite.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from connexion import ConnexionMiddleware
from connexion.middleware.lifespan import LifespanMiddleware
from connexion.middleware.main import API
from connexion.middleware.routing import RoutingMiddleware
from connexion.resolver import Resolver
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from topics_engine import Engine, SystemClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.datadir.sealing import SegmentPolicy

from . import wire
from .context import ServerContext
from .dispatch import Dispatcher, resolve_handler
from .errors import MethodNotAllowed
from .responses import accepts_gzip, performance_block, send_json
from .settings import Settings
from .spec import allowed_methods, load_specification
from .validation import SpecValidationMiddleware


class ErrorEnvelopeMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = scope["topics.started"] = time.perf_counter()
        response_started = False

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # noqa: BLE001 — this is the one catch-all
            if response_started:
                raise
            await send_error(scope, send, exc, started)


async def send_error(scope: Scope, send: Send, exc: BaseException, started: float) -> None:
    err = wire.to_topics_error(exc)
    headers: list[tuple[bytes, bytes]] = []
    if isinstance(err, MethodNotAllowed):
        allowed = allowed_methods(scope["path"])
        err = MethodNotAllowed(
            f"{scope['method']} is not allowed on {scope['path']}; use {', '.join(allowed)}",
            {"method": scope["method"], "allowed": list(allowed)},
        )
        headers.append((b"allow", ", ".join(allowed).encode()))
    retry_after = wire.retry_after_s(err)
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    body = wire.error_body(err)
    body["performance"] = performance_block(started, {})
    await send_json(send, wire.status_of(err), orjson.dumps(body), headers, accepts_gzip(scope["headers"]))


class TopicsMiddleware(ConnexionMiddleware):
    """connexion's middleware with the lean stack and the 3.1-validated specification."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, **kwargs: Any) -> None:
        super().__init__(
            app,
            middlewares=[
                ErrorEnvelopeMiddleware,
                RoutingMiddleware,
                SpecValidationMiddleware,
                LifespanMiddleware,
            ],
            resolver=Resolver(function_resolver=resolve_handler),
            **kwargs,
        )
        options = self.options.replace()
        self.apis.append(
            API(
                load_specification(),
                base_path="",
                name=None,
                **options.__dict__,
                max_body_bytes=max_body_bytes,
            )
        )


def create_app(
    settings: Settings, engine: Engine | None = None, datadir: DataDirectory | None = None
) -> tuple[TopicsMiddleware, ServerContext]:
    """Build the ASGI app and its context.

    By default the engine is durable: a :class:`DataDirectory` on ``settings.data_dir``,
    recovered at startup (the ASGI lifespan). Tests may pass their own engine (e.g. on a manual
    clock) with or without a data directory; an engine without one is in-memory and ready at
    once.
    """
    if engine is None:
        engine = Engine(SystemClock(), settings.limits)
        datadir = datadir or DataDirectory(
            settings.data_dir,
            segment_policy=SegmentPolicy(
                settings.segment_max_events, settings.segment_max_bytes, settings.segment_max_age_ms
            ),
            checkpoint_wal_bytes=settings.checkpoint_wal_bytes,
        )
    ctx = ServerContext(engine, datadir, ready=datadir is None)

    @asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await ctx.start()
        try:
            yield
        finally:
            await ctx.stop()

    app = TopicsMiddleware(Dispatcher(ctx), max_body_bytes=settings.max_body_bytes, lifespan=lifespan)
    return app, ctx
