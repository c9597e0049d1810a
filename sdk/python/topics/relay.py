"""``topics.Relay``: a webhook relay — each job of a queue POSTed to one HTTP endpoint, reliably.

A relay is a :class:`topics.Worker` whose handler is the delivery: the job's ``data`` as the
JSON body (``Content-Type: application/json``). The worker does the rest — claims, leases, acks,
nacks with backoff, dead-letter moves, the circuit breaker, graceful shutdown — so a relay
behaves as a worker does, and its :class:`topics.WorkerStats` count the same things
(``processed``: delivered).

What the endpoint's answer does (:mod:`topics._delivery` has the full table, redirects
included): ``2xx`` acks; ``429``/``503`` retry after the ``Retry-After`` (at most 24 h), counted
as failures by the breaker; other ``5xx``, timeouts and connection errors retry with the
backoff; other ``4xx`` dead-letter the job at once (reason ``http <status>``); ``410 Gone``
dead-letters it and stops the relay — :meth:`Relay.run` then raises :class:`EndpointGone`.

Every delivery carries ``webhook-id: <queue>:<seq>`` (the same on every attempt of a job, so a
receiver dedupes redeliveries) and ``webhook-timestamp`` (seconds, at this attempt); with a
``secret`` (``whsec_<base64>``) also ``webhook-signature``, per the Standard Webhooks convention
(:mod:`topics._signing`). A job redriven from the dead-letter topic is a new job: a new seq,
a new id.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import orjson

from ._delivery import Endpoint, Outcome, judge, post, shown
from ._signing import signature
from ._transport import USER_AGENT
from ._worker_types import Mode, blocking
from .client import AsyncClient, Client
from .models import Job
from .worker import Backoff, CircuitBreaker, Permanent, Retry, Worker, WorkerStats

__all__ = ["Delivery", "EndpointGone", "Relay"]

log = logging.getLogger("topics.relay")

T = TypeVar("T")

RELAY_USER_AGENT = f"{USER_AGENT} (webhook relay)"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery attempt, as the relay reports it to ``on_delivery`` (before the worker acks,
    nacks or moves the job):

    - ``seq``: the job; ``attempt``: its delivery count (1 for the first);
    - ``outcome``: ``delivered``, ``retry``, ``dead_letter`` or ``gone`` (a ``410``);
    - ``status``: the HTTP status of the last answer (after redirects), ``None`` when there was
      none (a timeout, a connection error);
    - ``reason``: why it was not delivered (``http 503``, ``timeout after 30 s``…), else ``None``;
    - ``delay_ms``: for a retry, the delay the job is nacked with (the ``Retry-After``, or the
      backoff's), else ``None`` — on the queue's last delivery the worker nacks without delay
      instead, and the server dead-letters the job;
    - ``elapsed_ms``: how long the attempt took; ``url``: the URL that answered.

    >>> Delivery(7, 1, "retry", 503, "http 503", 2000, 12, "https://example.org/hook").as_dict()["delay_ms"]
    2000
    """

    seq: int
    attempt: int
    outcome: Outcome
    status: int | None
    reason: str | None
    delay_ms: int | None
    elapsed_ms: int
    url: str

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (``topics relay`` prints one per line)."""
        return dataclasses.asdict(self)


class EndpointGone(Exception):  # noqa: N818 - it names what happened, like TopicNotFound
    """Raised by :meth:`Relay.run` / :meth:`Relay.drain` (after the graceful stop it caused) when
    the endpoint answered ``410 Gone``: the job that got it (``seq``) was dead-lettered and the
    relay stopped. ``stats`` are the run's counts.

    >>> str(EndpointGone("https://example.org/hook", 12, topics.WorkerStats()))
    'https://example.org/hook answered 410 Gone to job 12: the relay stopped'
    """

    def __init__(self, url: str, seq: int, stats: WorkerStats) -> None:
        super().__init__(f"{url} answered 410 Gone to job {seq}: the relay stopped")
        self.url = url
        self.seq = seq
        self.stats = stats


class Relay:
    """Delivers the jobs of queue ``queue`` to ``url`` (``http``/``https``): each job's ``data``
    POSTed as JSON, ``concurrency`` at a time (in no particular order), on a
    :class:`topics.Worker` built with the arguments below.

    - ``headers``: extra request headers, sent as given (a mapping or ``(name, value)`` pairs;
      they may replace ``Content-Type`` and ``User-Agent``, not ``webhook-id``,
      ``webhook-timestamp`` or ``webhook-signature``; values in visible ASCII, spaces and tabs);
    - ``secret``: a Standard Webhooks secret ``whsec_<base64>`` (or several, during a rotation:
      one signature each) — every delivery is signed;
    - ``timeout_s``: how long one delivery may take, redirects included (then it is retried);
    - ``follow_redirects``: follow redirects to other origins too (within the origin, and up from
      ``http`` to ``https`` on the same host, they always are); a hop to another origin carries
      none of ``headers`` but ``Content-Type`` and ``User-Agent``;
    - ``circuit_breaker``: the endpoint's breaker (default ulak's: 10 failures in a row open it
      for 30 s; ``None``: none); ``backoff``, ``rate_limit``, ``node``, ``mode``, ``lease_ms``:
      as for a :class:`topics.Worker`; ``shutdown_grace_s``: how long deliveries in flight may
      take to finish after a stop (default ``timeout_s`` + 1, so they finish);
    - ``on_delivery``: called with a :class:`Delivery` after each attempt, on the relay's event
      loop (keep it quick; an exception it raises is logged and ignored);
    - ``transport``: an ``httpx.AsyncBaseTransport`` for the outbound requests (a proxy, custom
      TLS, a test double).

    A malformed URL, header or secret raises :class:`ValueError` here. :meth:`run` serves until
    :meth:`stop` (SIGINT/SIGTERM), :meth:`drain` until the queue is empty; both return the run's
    :class:`topics.WorkerStats` (``processed``: delivered) and raise :class:`EndpointGone` if the
    endpoint answered ``410``.

    >>> import httpx, orjson
    >>> _ = client.create_topic("hooks", type="queue")
    >>> _ = client.append_many("hooks", [{"data": {"order": n}} for n in (1, 2)])
    >>> received = []
    >>> def endpoint(request):                   # stands in for the receiving service
    ...     received.append((request.headers["webhook-id"], orjson.loads(request.content)))
    ...     return httpx.Response(204)
    >>> relay = topics.Relay(client, "hooks", "https://example.org/hook",
    ...                      transport=httpx.MockTransport(endpoint))
    >>> relay.drain()
    WorkerStats(processed=2, failed=0, retried=0, dead_lettered=0, lost=0, released=0)
    >>> sorted(received)
    [('hooks:1', {'order': 1}), ('hooks:2', {'order': 2})]
    """

    def __init__(
        self,
        client: Client | AsyncClient,
        queue: str,
        url: str,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        secret: str | Sequence[str] | None = None,
        concurrency: int = 10,
        timeout_s: float = 30.0,
        follow_redirects: bool = False,
        circuit_breaker: CircuitBreaker | None = CircuitBreaker(),  # noqa: B008 - frozen, shared
        backoff: Backoff | None = None,
        rate_limit: float | None = None,
        node: str | None = None,
        mode: Mode = "auto",
        lease_ms: int | None = None,
        shutdown_grace_s: float | None = None,
        on_delivery: Callable[[Delivery], None] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        secrets = [] if secret is None else [secret] if isinstance(secret, str) else list(secret)
        self._endpoint = Endpoint.build(url, headers, secrets, timeout_s, follow_redirects)
        if on_delivery is not None and not callable(on_delivery):
            raise TypeError("on_delivery must be callable")
        grace = self._endpoint.timeout_s + 1.0 if shutdown_grace_s is None else shutdown_grace_s
        self.worker = Worker(
            client,
            queue,
            self._deliver,
            node=node,
            concurrency=concurrency,
            lease_ms=lease_ms,
            backoff=backoff,
            mode=mode,
            shutdown_grace_s=grace,
            rate_limit=rate_limit,
            circuit_breaker=circuit_breaker,
        )
        """The :class:`topics.Worker` that runs the deliveries."""
        self.queue = queue
        self.url = shown(self._endpoint.url)
        """The endpoint for messages and logs: its user name and password masked (``***``)."""
        self.on_delivery = on_delivery
        self.transport = transport
        self.in_flight = 0
        """Deliveries on their way now."""
        self._lock = threading.Lock()
        self._running = False
        self._http: httpx.AsyncClient | None = None
        self._gone: int | None = None

    def __repr__(self) -> str:
        return f"Relay(queue={self.queue!r}, url={self.url!r}, concurrency={self.worker.concurrency})"

    @property
    def stats(self) -> WorkerStats:
        """The counts of the current run (a snapshot), or of the last one."""
        return self.worker.stats

    def stop(self, *, hurry: bool = True) -> None:
        """Stops :meth:`run` / :meth:`drain` gracefully: deliveries in flight get
        ``shutdown_grace_s`` to finish, the jobs not started are released; a second call
        releases the rest at once. Safe from any thread or a signal handler. ``hurry=False``:
        the graceful stop only, never the release at once (:meth:`topics.Worker.stop`)."""
        self.worker.stop(hurry=hurry)

    def run(self, *, handle_signals: bool = True) -> WorkerStats:
        """Relays until :meth:`stop`, SIGINT or SIGTERM (handled on the main thread), or a
        ``410``. Blocks; runs its own event loop."""
        return blocking(self.run_async(handle_signals=handle_signals))

    def drain(self, *, timeout_s: float | None = None, handle_signals: bool = True) -> WorkerStats:
        """Relays until the queue has nothing ready, delayed or in flight (a job waiting out a
        24 h ``Retry-After`` keeps it going), then returns; ``timeout_s`` bounds it
        (:class:`TimeoutError`)."""
        return blocking(self.drain_async(timeout_s=timeout_s, handle_signals=handle_signals))

    async def run_async(self, *, handle_signals: bool = False) -> WorkerStats:
        """:meth:`run` as a coroutine, on the running loop."""
        return await self._serve(self.worker.run_async, handle_signals=handle_signals)

    async def drain_async(
        self, *, timeout_s: float | None = None, handle_signals: bool = False
    ) -> WorkerStats:
        """:meth:`drain` as a coroutine, on the running loop."""

        async def drain(*, handle_signals: bool) -> WorkerStats:
            return await self.worker.drain_async(timeout_s=timeout_s, handle_signals=handle_signals)

        return await self._serve(drain, handle_signals=handle_signals)

    async def _serve(
        self, serve: Callable[..., Coroutine[Any, Any, WorkerStats]], *, handle_signals: bool
    ) -> WorkerStats:
        """Runs ``serve`` (the worker's run or drain) with one HTTP client for the deliveries:
        at most ``concurrency`` connections, no redirects of its own (see :func:`post`)."""
        with self._lock:
            if self._running:
                raise RuntimeError("this relay is already running")
            self._running = True
        try:
            self._gone = None
            size = self.worker.concurrency
            async with httpx.AsyncClient(
                timeout=self._endpoint.timeout_s,
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                follow_redirects=False,
                transport=self.transport,
            ) as http:
                self._http = http
                stats = await serve(handle_signals=handle_signals)
        finally:
            self._http = None
            with self._lock:
                self._running = False
        if self._gone is not None:
            raise EndpointGone(self.url, self._gone, stats)
        return stats

    # -- one delivery ----------------------------------------------------------------------------

    def _headers(self, job: Job, body: bytes) -> list[tuple[str, str]]:
        """The request's headers: the defaults the user did not replace, the user's, then the
        ``webhook-*`` ones (signed at this attempt's time)."""
        msg_id = f"{self.queue}:{job.seq}"
        timestamp = int(time.time())
        given = {name.lower() for name, _ in self._endpoint.headers}
        defaults = [
            ("content-type", "application/json"),
            ("user-agent", RELAY_USER_AGENT),
            ("accept-encoding", "identity"),  # the answer's body is thrown away: no decoding
        ]
        headers = [(k, v) for k, v in defaults if k not in given]
        headers += self._endpoint.headers
        headers += [("webhook-id", msg_id), ("webhook-timestamp", str(timestamp))]
        if self._endpoint.secrets:
            headers.append(("webhook-signature", signature(self._endpoint.secrets, msg_id, timestamp, body)))
        return headers

    async def _deliver(self, job: Job) -> None:
        """The worker's handler: POST the job, report the attempt, then return (ack), raise
        :class:`topics.Retry` (a failure with its delay) or :class:`topics.Permanent`."""
        http = self._http
        assert http is not None, "a delivery outside a run"
        started = time.monotonic()
        self.in_flight += 1
        try:
            body = orjson.dumps(job.data)
            attempt = await post(http, self._endpoint, self._headers(job, body), body)
        finally:
            self.in_flight -= 1
        verdict = judge(attempt)
        delay = verdict.delay_ms
        if verdict.outcome == "retry" and delay is None:
            delay = self.worker.backoff.delay_ms(job.deliveries)
        elapsed = int((time.monotonic() - started) * 1000)
        report = Delivery(
            job.seq,
            job.deliveries,
            verdict.outcome,
            attempt.status,
            verdict.reason,
            delay,
            elapsed,
            shown(attempt.url),
        )
        self._report(report)
        if verdict.outcome == "delivered":
            return
        if verdict.outcome == "retry":
            raise Retry(delay, reason=verdict.reason, failure=True)
        if verdict.outcome == "gone":
            self._endpoint_gone(job)
        raise Permanent(verdict.reason)

    def _report(self, delivery: Delivery) -> None:
        if self.on_delivery is None:
            return
        try:
            self.on_delivery(delivery)
        except Exception:
            log.exception("relay %s: on_delivery failed (ignored)", self.queue)

    def _endpoint_gone(self, job: Job) -> None:
        """A ``410``: stop the relay (the caller's Permanent dead-letters the job), gracefully
        only: if a stop is under way (a Ctrl-C) this is no second ``stop()`` cutting short the
        grace of the deliveries still in flight, and a Ctrl-C after it still gives them their
        grace. Logged once per run."""
        if self._gone is not None:
            return
        self._gone = job.seq
        log.error(
            "relay %s: %s answered 410 Gone to job %d: it is dead-lettered and the relay stops",
            self.queue,
            self.url,
            job.seq,
        )
        self.worker.stop(hurry=False)
