"""``topics.Worker``: a queue consumer — claim, run a handler, ack / nack / extend.

>>> import topics
>>> _ = client.create_topic("thumbnails", type="queue")
>>> _ = client.append_many("thumbnails", [{"data": {"file": f"{i}.png"}} for i in range(3)])
>>> done = []
>>> worker = topics.Worker(client, "thumbnails", lambda job: done.append(job.data["file"]))
>>> worker.drain()
WorkerStats(processed=3, failed=0, retried=0, dead_lettered=0, lost=0, released=0)
>>> sorted(done)
['0.png', '1.png', '2.png']

What a handler's outcome does:

- it **returns**: the job is acked (completed, deleted). Acks carry the job's ``lease_id``, so a
  worker whose lease moved on can never complete a job someone else now holds;
- it raises :class:`Retry`: the job is nacked with ``Retry.delay_ms`` (the backoff policy's
  delay when ``None``); not a failure, unless ``Retry(..., failure=True)`` — a failure that
  knows its delay (counted in ``failed`` and by the circuit breaker, logged at INFO);
- it raises :class:`Permanent` (or an exception type listed in ``permanent=``): the job goes to
  the queue's dead-letter topic now, whatever its delivery count, with the reason in its
  ``meta`` (``$dead_letter_reason``); on a queue without a ``dead_letter`` topic it is nacked as
  below;
- it raises **anything else**: the job is nacked with the :class:`Backoff` policy's delay for
  its delivery count (``job.deliveries``);
- on its **last delivery** (the queue has ``max_deliveries > 0`` and a ``dead_letter`` topic, and
  ``job.deliveries >= max_deliveries``) a failed job is nacked without delay: the server moves it
  to the dead-letter topic at its next claim, and it counts as ``dead_lettered``.

With ``circuit_breaker=topics.CircuitBreaker(threshold=10, cooldown_s=30)``, after ``threshold``
handler failures in a row the worker takes no jobs for ``cooldown_s`` (handing back those it
holds), then lets one probe job through: its success closes the breaker, its failure opens it
again. The state is ``WorkerStats.breaker`` (and logged).

With ``rate_limit=`` (jobs per second) the worker starts jobs at most that fast — a token
bucket holding one second's worth, so an idle worker may start that many at once; jobs held
meanwhile wait with their leases extended.

Leases are extended at half their length while a job is held (running, or waiting for a free
slot, or waiting for its ack). When the server says a lease is gone (``extend`` skips the seq, or
a ``/work`` stream that delivered it dropped), the job is *lost*: an async handler's task is
cancelled, a sync handler (a thread cannot be interrupted) runs on, and either way its result is
neither acked nor nacked — someone else may already hold the job (delivery is at least once).

Design choices
--------------

- **One engine, on asyncio.** :meth:`Worker.run_async` / :meth:`Worker.drain_async` are the
  engine; :meth:`Worker.run` / :meth:`Worker.drain` run it on a fresh event loop. With a sync
  :class:`topics.Client` the worker builds a private :class:`topics.AsyncClient` from its
  ``settings`` (url, api key, timeout, retries) for each run, rather than calling the sync client
  through ``asyncio.to_thread``: the ``/work`` stream, sleeps and in-flight calls must be
  cancellable at shutdown (a blocking ``iter_lines`` in a thread is not), and it costs no thread
  per HTTP call. The price: an ``http_client``/``transport`` given to the sync ``Client`` is not
  carried over — pass an ``AsyncClient`` built with it instead.
- **Handlers**: a coroutine function runs as an asyncio task; anything else runs in a thread pool
  of ``concurrency`` threads.
- **Push or poll.** ``mode="auto"`` opens ``GET /v0/topics/{queue}/work`` (push), where the
  server keeps ``concurrency`` jobs leased to the connection and pushes a replacement per ack; if
  the server has no such route (``404 not_found``, ``405``, ``406``) it falls back to polling
  ``claim`` (``max`` = free slots; 50 ms → 1 s backoff while the queue is empty). ``"push"`` and
  ``"poll"`` force one. A dropped stream is reopened after the server's ``retry:`` delay (with
  jitter; doubling, up to 30 s, while reconnects fail in a row); the jobs it had delivered were
  released by the server, so they are lost here. The server pushes a delayed retry when it comes
  due, and a job whose lease another worker let lapse at the expiry; as a safety net ``drain``
  claims whatever its state checks find ready while the worker is idle.
- **Graceful shutdown** (:meth:`Worker.stop`, SIGINT/SIGTERM): claiming stops, running handlers
  get ``shutdown_grace_s`` to finish (their jobs are acked), then the rest are released — async
  tasks cancelled — with a nack without delay, so they are redelivered at once rather than after
  their lease. In push mode the stream is closed only at the end, because the server releases
  everything it pushed when the connection closes — running jobs included; acks completed during
  the grace are sent together just before the close, and jobs the stream pushed after the stop
  are released by that close.

Layout (as arq splits its worker): this module is the public :class:`Worker`; the value types
(:class:`Backoff` — its formulas and their reference —, :class:`Retry`, :class:`WorkerStats`) are
in :mod:`topics._worker_types`, the engine (one session per run) in :mod:`topics._session`, and
the ``/work`` push connection in :mod:`topics._work_stream`. They are re-exported here, and their
examples run as this module's (``__test__``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from . import tracing
from ._generated import work_stream_path
from ._session import Session
from ._worker_types import Backoff, CircuitBreaker, Handler, Mode, Permanent, Retry, WorkerStats, blocking
from .client import AsyncClient, Client
from .typed import typed_handler

__all__ = ["Backoff", "CircuitBreaker", "Permanent", "Retry", "Worker", "WorkerStats", "work_stream_path"]

log = logging.getLogger("topics.worker")

T = TypeVar("T")


def _examples(*classes: type) -> dict[str, str]:
    """The docstrings with examples of ``classes`` and their methods, by name: doctest runs the
    ``__test__`` entries of a module with its own examples, so the value types defined in
    :mod:`topics._worker_types` are checked as part of ``topics.worker``, their public home."""
    found: dict[str, str] = {}
    for cls in classes:
        members: list[tuple[str, Any]] = [(cls.__name__, cls)]
        for name, member in vars(cls).items():
            func = member.__func__ if isinstance(member, classmethod | staticmethod) else member
            if inspect.isfunction(func) or isinstance(func, property):
                members.append((f"{cls.__name__}.{name}", func))
        found.update((name, m.__doc__) for name, m in members if m.__doc__ and ">>>" in m.__doc__)
    return found


__test__ = _examples(Backoff, Retry, WorkerStats)


# -- the public class --------------------------------------------------------------------------


class Worker:
    """Consumes queue ``queue`` with ``handler(job)`` (a function, run in a thread pool, or a
    coroutine function, run as tasks), ``concurrency`` jobs at a time.

    ``client`` is a :class:`topics.Client` or :class:`topics.AsyncClient`. ``node`` is the
    worker's identity on the server (default ``<host>-<pid>-<random>``). ``lease_ms`` is the
    lease per job (default: the queue's ``lease_ms``, read once at start); leases are extended
    at half their length while a job is held (``auto_extend=False`` turns that off). ``backoff``
    is the delay policy for failed jobs. ``mode``: ``"auto"`` (push over ``/work``, polling if the
    server lacks it), ``"push"`` or ``"poll"``. ``shutdown_grace_s``: how long running handlers
    may take to finish after a stop before their jobs are released. ``model`` (a pydantic model, a
    dataclass…): the handler gets :class:`topics.TypedJob` objects whose ``data`` is validated
    into it; a job that does not validate is dead-lettered at once with the validation errors as
    its ``$dead_letter_reason`` (a :class:`Permanent` failure: nacked on a queue without a
    ``dead_letter`` topic).

    :meth:`run` serves until :meth:`stop` (or SIGINT/SIGTERM); :meth:`drain` until the queue is
    empty; :meth:`run_async` / :meth:`drain_async` are the same for asyncio programs. All return
    the run's :class:`WorkerStats`; a fatal error (the queue deleted, a bad API key…) is raised
    after a graceful shutdown.

    >>> import asyncio, topics
    >>> _ = client.create_topic("invoices", type="queue")
    >>> _ = client.append_many("invoices", [{"data": n} for n in (1, 2, 3, 4)])
    >>> async def handle(job):
    ...     if job.data % 2 and job.deliveries == 1:
    ...         raise topics.Retry(delay_ms=100)     # odd ones: once more, in 100 ms
    >>> async def main():
    ...     async with topics.AsyncClient() as aclient:
    ...         worker = topics.Worker(aclient, "invoices", handle, concurrency=4)
    ...         return await worker.drain_async()
    >>> asyncio.run(main())
    WorkerStats(processed=4, failed=0, retried=2, dead_lettered=0, lost=0, released=0)
    """

    def __init__(
        self,
        client: Client | AsyncClient,
        queue: str,
        handler: Handler,
        *,
        node: str | None = None,
        concurrency: int = 1,
        lease_ms: int | None = None,
        backoff: Backoff | None = None,
        mode: Mode = "auto",
        auto_extend: bool = True,
        shutdown_grace_s: float = 30.0,
        permanent: tuple[type[BaseException], ...] = (),
        rate_limit: float | None = None,
        circuit_breaker: CircuitBreaker | None = None,
        model: Any = None,
    ) -> None:
        if not isinstance(client, Client | AsyncClient):
            raise TypeError(f"client must be a topics.Client or topics.AsyncClient, got {client!r:.80}")
        if not callable(handler):
            raise TypeError("handler must be callable")
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if lease_ms is not None and lease_ms < 100:
            raise ValueError("lease_ms must be >= 100 (the server's minimum)")
        if mode not in ("auto", "push", "poll"):
            raise ValueError(f"mode must be 'auto', 'push' or 'poll', got {mode!r}")
        if shutdown_grace_s < 0:
            raise ValueError("shutdown_grace_s must be >= 0")
        if not isinstance(permanent, tuple) or not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in permanent
        ):
            raise TypeError("permanent must be a tuple of exception types")
        if rate_limit is not None and not rate_limit > 0:
            raise ValueError("rate_limit must be > 0 jobs per second (or None)")
        self.client = client
        self.queue = queue
        if model is not None:
            handler = typed_handler(handler, model, queue)
        self.handler = tracing.consuming(handler, queue) if tracing.ENABLED else handler
        """``handler`` behind validation into ``model`` (:func:`topics.typed.typed_handler`),
        in a span per job with OpenTelemetry installed (:func:`topics.tracing.consuming`)."""
        self.node = node or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.backoff = backoff if backoff is not None else Backoff.exponential()
        self.mode: Mode = mode
        self.auto_extend = auto_extend
        self.shutdown_grace_s = shutdown_grace_s
        self.permanent = permanent
        self.rate_limit = rate_limit
        if circuit_breaker is not None and not isinstance(circuit_breaker, CircuitBreaker):
            raise TypeError("circuit_breaker must be a topics.CircuitBreaker")
        self.circuit_breaker = circuit_breaker
        self._lock = threading.RLock()  # re-entrant: stop() may run in a signal handler on this thread
        self._session: Session | None = None
        self._stops = 0
        """``stop()`` calls (``hurry=False`` ones not counted) during this run: the second hurries."""
        self._stop_requested = False
        self._last = WorkerStats()

    def __repr__(self) -> str:
        fields = (
            f"queue={self.queue!r}, node={self.node!r}, concurrency={self.concurrency}, mode={self.mode!r}"
        )
        return f"Worker({fields})"

    @property
    def stats(self) -> WorkerStats:
        """The counters of the current run (a snapshot), or of the last one."""
        with self._lock:
            session = self._session
        return dataclasses.replace(session.stats if session is not None else self._last)

    def stop(self, *, hurry: bool = True) -> None:
        """Stops :meth:`run` / :meth:`drain` gracefully: no more claims, running handlers get
        ``shutdown_grace_s`` to finish, the rest are released. A second call skips what is left
        of the grace. Safe from any thread, a handler or a signal handler; a stop before the run
        starts makes it return at once.

        ``hurry=False`` asks for the graceful stop only, for code that stops the worker for a
        reason of its own (:class:`topics.Relay` on a ``410``): it never cuts the grace short,
        does nothing once a stop is under way, and is not counted as a first call — a person's
        ``stop()`` after it (a Ctrl-C) still gives running handlers their grace, and only the
        next one skips it.

        >>> worker = topics.Worker(client, "nothing-to-do", print)
        >>> worker.stop()
        >>> worker.stop(hurry=False)    # a stop is pending: nothing more
        """
        with self._lock:
            if hurry:
                self._stops += 1
            hurrying = hurry and self._stops > 1
            self._stop_requested = True
            session = self._session
        if session is not None:
            with contextlib.suppress(RuntimeError):  # its loop just closed: the run is over anyway
                session.loop.call_soon_threadsafe(session.on_stop, hurrying)

    def run(self, *, handle_signals: bool = True) -> WorkerStats:
        """Serves the queue until :meth:`stop`, SIGINT or SIGTERM (handled when called on the
        main thread, the previous handlers restored after), then shuts down gracefully. Blocks;
        runs its own event loop.

        >>> _ = client.append("orders-out", {"id": 1}, config={"type": "queue"})
        >>> worker = topics.Worker(client, "orders-out", lambda job: worker.stop())
        >>> worker.run()
        WorkerStats(processed=1, failed=0, retried=0, dead_lettered=0, lost=0, released=0)
        """
        return blocking(self.run_async(handle_signals=handle_signals))

    def drain(self, *, timeout_s: float | None = None, handle_signals: bool = True) -> WorkerStats:
        """Processes jobs until the queue has nothing ready, delayed or in flight (its ``count``
        is 0, by anyone) and this worker holds nothing, then returns the counts. ``timeout_s``
        bounds it (then a graceful stop and :class:`TimeoutError`).

        >>> _ = client.create_topic("crawl", type="queue")
        >>> _ = client.append_many("crawl", [{"data": url} for url in ("a", "b")])
        >>> topics.Worker(client, "crawl", lambda job: None, concurrency=2).drain().processed
        2
        """
        return blocking(self.drain_async(timeout_s=timeout_s, handle_signals=handle_signals))

    async def run_async(self, *, handle_signals: bool = False) -> WorkerStats:
        """:meth:`run` as a coroutine, on the running loop. ``handle_signals`` is off by default
        (an asyncio application usually owns its signals): call :meth:`stop` instead."""
        return await self._execute(draining=False, timeout_s=None, handle_signals=handle_signals)

    async def drain_async(
        self, *, timeout_s: float | None = None, handle_signals: bool = False
    ) -> WorkerStats:
        """:meth:`drain` as a coroutine, on the running loop."""
        return await self._execute(draining=True, timeout_s=timeout_s, handle_signals=handle_signals)

    async def _execute(self, *, draining: bool, timeout_s: float | None, handle_signals: bool) -> WorkerStats:
        async with contextlib.AsyncExitStack() as cleanup:  # undone in reverse order
            if isinstance(self.client, AsyncClient):
                client = self.client
            else:
                s = self.client.settings
                private = AsyncClient(s.url, api_key=s.api_key, timeout=s.timeout, retries=s.retries)
                client = await cleanup.enter_async_context(private)
            session = Session(self, client, draining=draining)
            with self._lock:
                if self._session is not None:
                    raise RuntimeError("this worker is already running")
                self._session = session
                stopped_early = self._stop_requested
            cleanup.callback(self._finished, session)
            if stopped_early:
                session.on_stop(hurry=False)
            if handle_signals:
                cleanup.callback(_install_signals(self.stop))
            return await session.execute(timeout_s)

    def _finished(self, session: Session) -> None:
        with self._lock:
            self._session = None
            self._stops = 0
            self._stop_requested = False
            self._last = session.stats


def _install_signals(stop: Callable[[], None]) -> Callable[[], None]:
    """SIGINT/SIGTERM call ``stop`` (main thread only); returns what restores the previous
    handlers. A signal whose handler was not set from Python (``getsignal`` is ``None``) is
    left alone: it could not be put back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("worker: %s received, stopping", signal.Signals(signum).name)
        stop()

    previous = {
        sig: signal.signal(sig, on_signal)
        for sig in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(sig) is not None
    }

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
