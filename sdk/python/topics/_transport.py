"""Sending one request: connection settings, JSON encoding, the error envelope, and retries.

Everything here is shared by :class:`topics.Client` and :class:`topics.AsyncClient`: a request
is a :class:`Call` (a route, how to parse the answer, whether it may be repeated), and
:func:`outcome` decides, from an answer or a transport failure, whether the call is done, failed,
or should be tried again after a delay. :class:`Sender` (blocking) and :class:`AsyncSender` run
that loop on an httpx client; they differ only in how they send and sleep.

The dependency runs one way, as in httpx (whose transports never import the client): a client
builds its sender, and gives it to what sends on the client's behalf (its watches, a Worker's
``/work`` stream); nothing here knows :mod:`topics.client`.

Retry rules (the contract's ``429``/``503`` rules, and docs/DECISIONS.md, "WAL failure is fail-stop"):

- ``429 throttled`` and ``503 not_ready``/``shutting_down`` mean the server did nothing, so any
  call is retried — except a ``503`` with ``detail.wal_read_only`` (it clears only on restart).
- A connection that could not be opened (``httpx.ConnectError``, ``ConnectTimeout``) is retried
  for any call; a failure after the request may have been sent only for idempotent calls
  (every call but ``claim``; appends carry an idempotency key, so they are idempotent too).
- The delay is the server's advice — ``detail.retry_after_ms``, else the ``Retry-After`` header —
  or else capped exponential backoff with full jitter (0.1 s doubling, at most 5 s).
"""

from __future__ import annotations

import functools
import os
import random
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

import httpx
import msgspec
import orjson

from ._generated import Route
from ._json import dumps as json_bytes
from .errors import ConnectionError, Throttled, TopicsError, error_from_envelope

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:4000"
BACKOFF_BASE_S = 0.1
BACKOFF_MAX_S = 5.0
ADVICE_MAX_S = 60.0
"""A server's ``Retry-After`` above this is not waited for (the error is raised instead)."""

USER_AGENT = f"topics-python/{metadata.version('topics')}"
"""The installed package's version (pyproject.toml): the one place the SDK reads it."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Where and how a client connects (``client.settings``). ``url``/``api_key`` fall back to
    ``TOPICS_URL`` / ``TOPICS_API_KEY``, then ``http://127.0.0.1:4000`` and no key —
    :meth:`resolve` applies the fallbacks, e.g. once on a Spark driver for every task.

    >>> Settings.resolve("http://h:4000/", None, 10.0, 3).url
    'http://h:4000'
    """

    url: str
    api_key: str | None
    timeout: float
    retries: int

    @classmethod
    def resolve(cls, url: str | None, api_key: str | None, timeout: float, retries: int) -> Settings:
        if retries < 0:
            raise ValueError("retries must be >= 0")
        base = (url or os.environ.get("TOPICS_URL") or DEFAULT_URL).rstrip("/")
        key = api_key if api_key is not None else (os.environ.get("TOPICS_API_KEY") or None)
        return cls(base, key, timeout, retries)

    def headers(self) -> dict[str, str]:
        """Sent on every request. Compression is off (``Accept-Encoding: identity``): httpx asks
        for gzip unless told not to, and the contract has clients default it off."""
        headers = {"accept-encoding": "identity", "user-agent": USER_AGENT}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers


@dataclass(slots=True)
class Call(Generic[T]):
    """One request and what to make of its answer. ``parse`` gets the decoded JSON body of a
    2xx answer. ``idempotent`` calls may be repeated after a connection broke mid-request."""

    route: Route
    parse: Callable[[Any], T]
    idempotent: bool = True
    content: bytes | None = None
    """The encoded body when the operation built it itself (``append_many`` joins records it
    encoded once); ``None``: ``route.json`` is encoded."""
    raw: bool = False
    """``parse`` gets the answer's bytes (it decodes them itself), not the decoded JSON."""

    def request_args(self, settings: Settings) -> dict[str, Any]:
        """Keyword arguments for ``httpx.Client.request`` (absolute URL: an injected httpx
        client needs no ``base_url``)."""
        headers = settings.headers()
        headers.update(self.route.headers)
        content = self.content
        if content is None and self.route.json is not None:
            content = json_bytes(self.route.json)
        if content is not None:
            headers["content-type"] = "application/json"
        return {
            "method": self.route.method,
            "url": settings.url + self.route.url,
            "params": self.route.params or None,
            "headers": headers,
            "content": content,
        }


@dataclass(slots=True)
class Retry:
    """:func:`outcome`'s verdict that the call should be sent again after ``delay`` seconds."""

    delay: float


@dataclass(slots=True)
class Done(Generic[T]):
    value: T


def backoff_delay(attempt: int) -> float:
    """Capped exponential backoff with full jitter for the ``attempt``-th retry (0-based)."""
    return random.uniform(0, min(BACKOFF_MAX_S, BACKOFF_BASE_S * (2**attempt)))


def server_advice(response: httpx.Response, detail: dict[str, Any]) -> float | None:
    """Seconds the server asked us to wait: ``detail.retry_after_ms`` (precise, jittered by the
    server) over the whole-second ``Retry-After`` header; ``None`` if it gave neither."""
    ms = detail.get("retry_after_ms")
    if isinstance(ms, int | float) and ms >= 0:
        return float(ms) / 1000.0
    header = response.headers.get("retry-after")
    if header is not None:
        try:
            return max(0.0, float(header))
        except ValueError:
            return None
    return None


def decode(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return None


def error_of(response: httpx.Response) -> TopicsError:
    """The typed exception for a non-2xx answer."""
    err = error_from_envelope(response.status_code, decode(response))
    if isinstance(err, Throttled):
        err.retry_after = server_advice(response, err.detail)
    return err


def retryable(err: TopicsError) -> bool:
    """429, and 503 unless the WAL went read-only (that lasts until a restart: waiting never
    clears it)."""
    if err.status == 429:
        return True
    return err.status == 503 and not err.detail.get("wal_read_only")


def outcome(call: Call[T], response: httpx.Response, attempt: int, retries: int) -> Done[T] | Retry:
    """Done (with the parsed value), a retry, or a raised :class:`TopicsError`."""
    status = response.status_code
    if 200 <= status < 300:
        body = response.content if call.raw else decode(response)
        try:
            return Done(call.parse(body))
        except (KeyError, TypeError, ValueError, AttributeError, msgspec.ValidationError) as exc:
            raise TopicsError(
                status, "bad_response", f"unexpected answer to {call.route.url}: {exc!r}"
            ) from exc
    err = error_of(response)
    if attempt < retries and retryable(err):
        advice = server_advice(response, err.detail)
        if advice is None:
            return Retry(backoff_delay(attempt))
        if advice <= ADVICE_MAX_S:
            return Retry(advice * random.uniform(1.0, 1.1))
    raise err


def after_transport_error(call: Call[Any], exc: httpx.TransportError, attempt: int, retries: int) -> Retry:
    """A retry after a broken/refused connection, or :class:`topics.ConnectionError`."""
    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    if attempt < retries and (never_sent or call.idempotent):
        return Retry(backoff_delay(attempt))
    raise ConnectionError(f"{call.route.method} {call.route.url}: {type(exc).__name__}: {exc}") from exc


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process, shared by every client: httpx builds a fresh one per client
    otherwise (loading the CA bundle, ~50 ms of CPU) — even for ``http://`` — which dominated
    short-lived clients (the Spark connector opens one per task and per micro-batch)."""
    return httpx.create_ssl_context()


def make_sync_http(settings: Settings, transport: httpx.BaseTransport | None) -> httpx.Client:
    return httpx.Client(timeout=settings.timeout, transport=transport, verify=_tls())


def make_async_http(settings: Settings, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=settings.timeout, transport=transport, verify=_tls())


class Sender:
    """Sends a :class:`Call` on ``http`` with ``settings`` (its URL, headers and ``retries``),
    retrying by the rules above and waiting with ``sleep``.

    Invariants: it holds no state between calls (one sender serves any number of threads, as
    ``httpx.Client`` does), and it never closes ``http`` — its owner does.
    """

    def __init__(self, http: httpx.Client, settings: Settings, sleep: Callable[[float], None]) -> None:
        self.http = http
        self.settings = settings
        self.sleep = sleep

    def send(self, call: Call[T]) -> T:
        """``call``'s parsed answer, after up to ``settings.retries`` retries; raises the
        :class:`TopicsError` (or :class:`topics.ConnectionError`) of the last attempt."""
        attempt = 0
        while True:
            try:
                response = self.http.request(**call.request_args(self.settings))
            except httpx.TransportError as exc:
                retry = after_transport_error(call, exc, attempt, self.settings.retries)
            else:
                verdict = outcome(call, response, attempt, self.settings.retries)
                if isinstance(verdict, Done):
                    return verdict.value
                retry = verdict
            self.sleep(retry.delay)
            attempt += 1


class AsyncSender:
    """:class:`Sender` on an ``httpx.AsyncClient``: ``send`` is a coroutine and ``sleep`` is
    awaited. The same invariants: stateless between calls, never closes ``http``."""

    def __init__(
        self, http: httpx.AsyncClient, settings: Settings, sleep: Callable[[float], Awaitable[None]]
    ) -> None:
        self.http = http
        self.settings = settings
        self.sleep = sleep

    async def send(self, call: Call[T]) -> T:
        """:meth:`Sender.send`, awaited."""
        attempt = 0
        while True:
            try:
                response = await self.http.request(**call.request_args(self.settings))
            except httpx.TransportError as exc:
                retry = after_transport_error(call, exc, attempt, self.settings.retries)
            else:
                verdict = outcome(call, response, attempt, self.settings.retries)
                if isinstance(verdict, Done):
                    return verdict.value
                retry = verdict
            await self.sleep(retry.delay)
            attempt += 1
