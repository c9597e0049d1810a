"""``topics.Worker``: a queue consumer (§10) — claim, run a handler, ack / nack / extend.

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
  delay when ``None``);
- it raises **anything else**: the job is nacked with the :class:`Backoff` policy's delay for
  its delivery count (``job.deliveries``);
- on its **last delivery** (the queue has ``max_deliveries > 0`` and a ``dead_letter`` topic, and
  ``job.deliveries >= max_deliveries``) a failed job is nacked without delay: the server moves it
  to the dead-letter topic at its next claim (§10.6), and it counts as ``dead_lettered``.

Leases are extended at half their length while a job is held (running, or waiting for a free
slot, or waiting for its ack). When the server says a lease is gone (``extend`` skips the seq, or
a ``/work`` stream that delivered it dropped), the job is *lost*: an async handler's task is
cancelled, a sync handler (a thread cannot be interrupted) runs on, and either way its result is
neither acked nor nacked — someone else may already hold the job (at-least-once, §10.1).

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
- **Push or poll.** ``mode="auto"`` opens ``GET /v0/topics/{queue}/work`` (§10.8), where the
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

Backoff follows the "ulak" reference (``ulak-reliability.txt``, "Retry Strategies"), with its
retry count being ``job.deliveries - 1`` (the first failure waits the base delay):
exponential ``base × 2^retry`` capped at ``max``; linear ``base + retry × increment`` capped at
``max`` (``base`` defaults to the step); fixed ``base``. Not followed: ulak's overflow guard
("retry counts above 10 return max_delay") — Python integers do not overflow, so the formula holds
until the cap. Added (ulak has none): jitter — the delay is scaled by a uniform factor in
``[1 - jitter, 1]``, so it never exceeds the nominal delay or the cap and retries of jobs that
failed together spread out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import random
import secrets
import signal
import socket
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal, TypeVar

import httpx
import orjson

from . import _generated as g
from ._generated import work_stream_path
from ._sse import RETRY_DEFAULT_MS, WATCHDOG_SLACK_S, SSEParser, reconnect_delay_s
from ._transport import error_of, retryable
from .client import AsyncClient, Client
from .errors import ConnectionError, NotAQueue, TopicsError
from .models import Job, TopicState

__all__ = ["Backoff", "Retry", "Worker", "WorkerStats", "work_stream_path"]

log = logging.getLogger("topics.worker")

T = TypeVar("T")
Handler = Callable[[Job], Any]
"""``handler(job)``: a plain function (run in a thread) or a coroutine function (a task)."""
Mode = Literal["auto", "push", "poll"]

POLL_MIN_S = 0.05
POLL_MAX_S = 1.0
DRAIN_CHECK_MIN_S = 0.05
DRAIN_CHECK_MAX_S = 0.5
STREAM_HEARTBEAT_MS = 15_000
CALL_RETRY_MIN_S = 0.2
CALL_RETRY_MAX_S = 5.0


# -- public value types ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long a failed job waits before its next delivery, by its delivery count.

    Build one with :meth:`exponential` (the default policy), :meth:`linear` or :meth:`fixed`.
    ``delay_ms(deliveries)`` is the delay after the ``deliveries``-th delivery failed (the
    first failure is ``deliveries=1``); ``jitter`` scales it by a random factor in
    ``[1 - jitter, 1]`` (``jitter=0``: exact).

    >>> policy = Backoff.exponential(base_ms=1000, max_ms=60_000, jitter=0)
    >>> [policy.delay_ms(n) for n in range(1, 9)]
    [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]
    >>> 800 <= Backoff.exponential().delay_ms(1) <= 1000
    True
    """

    strategy: Literal["exponential", "linear", "fixed"]
    base_ms: int
    max_ms: int
    step_ms: int = 0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.base_ms < 0 or self.max_ms < 0 or self.step_ms < 0:
            raise ValueError("backoff delays must be >= 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be between 0 and 1")

    @classmethod
    def exponential(cls, base_ms: int = 1000, max_ms: int = 60_000, *, jitter: float = 0.2) -> Backoff:
        """``base_ms × 2^(deliveries-1)``, at most ``max_ms``.

        >>> Backoff.exponential(500, 3000, jitter=0).delay_ms(3)
        2000
        """
        return cls("exponential", base_ms, max_ms, 0, jitter)

    @classmethod
    def linear(
        cls, step_ms: int = 1000, max_ms: int = 60_000, *, base_ms: int | None = None, jitter: float = 0.2
    ) -> Backoff:
        """``base_ms + (deliveries-1) × step_ms`` (``base_ms`` defaults to ``step_ms``), at most
        ``max_ms``.

        >>> Backoff.linear(1000, 2500, jitter=0).delay_ms(2), Backoff.linear(1000, 2500, jitter=0).delay_ms(9)
        (2000, 2500)
        """
        return cls("linear", step_ms if base_ms is None else base_ms, max_ms, step_ms, jitter)

    @classmethod
    def fixed(cls, delay_ms: int = 1000, *, jitter: float = 0.2) -> Backoff:
        """The same ``delay_ms`` after every failure.

        >>> Backoff.fixed(500, jitter=0).delay_ms(3)
        500
        """
        return cls("fixed", delay_ms, delay_ms, 0, jitter)

    def nominal_ms(self, deliveries: int) -> int:
        """The delay before jitter."""
        retry = max(0, deliveries - 1)
        if self.strategy == "exponential":
            if self.base_ms == 0:
                return 0
            if retry >= 64:  # past any cap worth having; keeps the integer small
                return self.max_ms
            return min(self.max_ms, self.base_ms * (1 << retry))
        if self.strategy == "linear":
            return min(self.max_ms, self.base_ms + retry * self.step_ms)
        return self.base_ms

    def delay_ms(self, deliveries: int) -> int:
        """The delay (ms) to nack a job with after its ``deliveries``-th delivery failed."""
        nominal = self.nominal_ms(deliveries)
        if not self.jitter or not nominal:
            return nominal
        return int(nominal * random.uniform(1.0 - self.jitter, 1.0))


class Retry(Exception):  # noqa: N818 - the name the issue fixes: `raise topics.Retry(...)`
    """Raise from a handler to nack its job for another delivery after ``delay_ms``
    (``None``: the worker's backoff policy decides). It is not counted as a failure.

    >>> err = Retry(delay_ms=250)
    >>> (err.delay_ms, str(err))
    (250, 'retry in 250 ms')
    """

    def __init__(self, delay_ms: int | None = None, *, reason: str | None = None) -> None:
        if delay_ms is not None and delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        default = "retry with backoff" if delay_ms is None else f"retry in {delay_ms} ms"
        super().__init__(reason or default)
        self.delay_ms = delay_ms


@dataclass(slots=True)
class WorkerStats:
    """What one ``run()`` / ``drain()`` did. Each job handed to the worker ends in exactly one
    of ``processed``, ``retried``, ``dead_lettered``, ``lost`` or ``released``; ``failed``
    counts handler exceptions (not :class:`Retry`) alongside them.

    - ``processed``: the handler returned and the ack was accepted;
    - ``failed``: the handler raised an exception other than :class:`Retry`;
    - ``retried``: nacked for another delivery (after an exception or a ``Retry``);
    - ``dead_lettered``: nacked on its last delivery — the server moves it to the queue's
      ``dead_letter`` topic at its next claim;
    - ``lost``: the lease was gone before the job was settled (lease expired and taken, stream
      dropped, ack/nack skipped): its result was discarded;
    - ``released``: handed back unprocessed at shutdown (nack without delay, or the ``/work``
      stream's release on close).

    >>> WorkerStats(processed=2, failed=1, retried=1)
    WorkerStats(processed=2, failed=1, retried=1, dead_lettered=0, lost=0, released=0)
    """

    processed: int = 0
    failed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    lost: int = 0
    released: int = 0


# -- the engine --------------------------------------------------------------------------------


class _Reconnect(Exception):
    """The /work stream ended or failed in a way that reconnecting may cure."""


class _Fallback(Exception):
    """The server has no /work stream: poll instead."""


@dataclass(eq=False)
class _Held:
    """One job leased to this worker, from its arrival until it is settled or given up."""

    job: Job
    conn: int | None
    """The /work connection that pushed it (its close releases the job), ``None``: claimed."""
    next_extend: float
    state: Literal["waiting", "running", "finished"] = "waiting"
    lost: bool = False
    released: bool = False
    future: asyncio.Future[Any] | None = None


class _Session:
    """One run or drain: its client, counters, held jobs and background tasks."""

    def __init__(self, worker: Worker, client: AsyncClient, *, draining: bool) -> None:
        self.w = worker
        self.client = client
        self.draining = draining
        self.queue = worker.queue
        self.node = worker.node
        self.loop = asyncio.get_running_loop()
        self.stats = WorkerStats()
        self.held: dict[int, _Held] = {}
        self.waiting: deque[_Held] = deque()
        self.running = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stop_evt = asyncio.Event()
        self.hurry = asyncio.Event()
        self.drained = asyncio.Event()
        self.slot_evt = asyncio.Event()
        self.extend_evt = asyncio.Event()
        self.idle_evt = asyncio.Event()
        self.ack_evt = asyncio.Event()
        self.ack_queue: list[_Held] = []
        self.settling = 0
        self.defer_acks = False
        self.closing_stream = False
        self.fatal: BaseException | None = None
        self.mode: Literal["push", "poll"] = "poll" if worker.mode == "poll" else "push"
        self.conn_seq = 0
        self.assisting = False
        self.lease_ms = 0
        self.max_deliveries = 0
        self.dead_letter: str | None = None
        self.is_async = _is_async(worker.handler)
        self.pool: ThreadPoolExecutor | None = None

    # -- plumbing ------------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        exc = None if task.cancelled() else task.exception()
        if exc is not None:
            log.error("worker %s: internal task failed", self.node, exc_info=exc)
            self.fail(exc)

    def notify(self) -> None:
        """Something changed: a slot freed, a job arrived or was settled."""
        self.slot_evt.set()
        self.extend_evt.set()
        self.idle_evt.set()

    def on_stop(self) -> None:
        """``Worker.stop()`` (on the loop): the first stops gracefully, the next hurries."""
        if self.stop_evt.is_set():
            self.hurry.set()
        self.stop_evt.set()
        self.notify()

    def fail(self, exc: BaseException) -> None:
        """An error that waiting will not cure: stop, and ``run()`` raises it."""
        if self.fatal is None:
            self.fatal = exc
        self.stop_evt.set()
        self.notify()

    async def sleep(self, seconds: float) -> None:
        """Sleeps, or less if a stop is requested."""
        if not self.stop_evt.is_set():
            await _wait_event(self.stop_evt, seconds)

    async def call(self, make: Callable[[], Awaitable[T]], what: str, *, persistent: bool) -> T | None:
        """``make()``'s result; ``None`` after a transient failure (tried again until it works
        when ``persistent``, until the shutdown grace ends) or a fatal one (recorded)."""
        delay = CALL_RETRY_MIN_S
        while True:
            try:
                return await make()
            except (ConnectionError, TopicsError) as exc:  # the client turns httpx errors into these
                if isinstance(exc, TopicsError) and not retryable(exc):  # worth waiting: 429, 503
                    log.error("worker %s: %s failed: %s", self.node, what, exc)
                    self.fail(exc)
                    return None
                if not persistent or self.hurry.is_set():
                    log.warning("worker %s: %s failed: %s", self.node, what, exc)
                    return None
                log.warning("worker %s: %s failed (%s); trying again in %.1f s", self.node, what, exc, delay)
                await _wait_event(self.hurry, delay)
                delay = min(CALL_RETRY_MAX_S, delay * 2)

    def configure(self, state: TopicState) -> None:
        if state.queue is None:
            raise NotAQueue(409, "not_a_queue", f"topic {self.queue!r} is not a queue", {"topic": self.queue})
        self.max_deliveries = state.config.max_deliveries
        self.dead_letter = state.config.dead_letter

    def free_slots(self) -> int:
        return self.w.concurrency - self.running - len(self.waiting)

    def locally_idle(self) -> bool:
        return not self.held and self.running == 0 and self.settling == 0 and not self.ack_queue

    def will_dead_letter(self, job: Job) -> bool:
        return (
            self.max_deliveries > 0 and self.dead_letter is not None and job.deliveries >= self.max_deliveries
        )

    # -- main ----------------------------------------------------------------------------------

    async def execute(self, timeout_s: float | None) -> WorkerStats:
        state = await self.client.topic(self.queue, touch=False)
        self.configure(state)
        self.lease_ms = self.w.lease_ms or state.config.lease_ms
        if not self.is_async:
            self.pool = ThreadPoolExecutor(
                self.w.concurrency, thread_name_prefix=f"topics-worker-{self.queue}"
            )
        source = self.spawn(self.push() if self.mode == "push" else self.poll())
        background = [self.spawn(self.acker())]
        if self.w.auto_extend:
            background.append(self.spawn(self.extender()))
        if self.draining:
            background.append(self.spawn(self.monitor()))
        try:
            await _wait_any([self.stop_evt, self.drained], timeout_s)
        finally:
            timed_out = not (self.stop_evt.is_set() or self.drained.is_set())
            await self.shutdown(source, background)
        if self.fatal is not None:
            raise self.fatal
        if timed_out:
            raise TimeoutError(f"drain of {self.queue!r} did not finish within {timeout_s} s ({self.stats})")
        return self.stats

    async def shutdown(self, source: asyncio.Task[Any], background: list[asyncio.Task[Any]]) -> None:
        self.stop_evt.set()
        self.notify()
        grace = 0.0 if self.drained.is_set() and self.locally_idle() else self.w.shutdown_grace_s
        deadline = self.loop.time() + grace
        if self.mode == "poll":
            # let a claim in progress come back (its jobs are released below) rather than
            # cancelling it: the server would hold an unseen answer's jobs until their lease ends
            bound = deadline - self.loop.time() if grace else self.client.settings.timeout
            hurry = self.loop.create_task(self.hurry.wait())
            await asyncio.wait([source, hurry], timeout=max(0.0, bound), return_when=asyncio.FIRST_COMPLETED)
            hurry.cancel()
        else:
            self.defer_acks = True  # sent together right before the stream closes
        # jobs that never started: claimed ones are nacked now, pushed ones go with the stream
        await self.release([e for e in list(self.waiting) if e.conn is None])
        # running handlers get the grace to finish
        while self.running and not self.hurry.is_set():
            left = deadline - self.loop.time()
            if left <= 0:
                break
            self.idle_evt.clear()
            await _wait_any([self.idle_evt, self.hurry], left)
        self.hurry.set()
        late = [e for e in self.held.values() if e.state == "running" and not e.lost and not e.released]
        if late:
            log.warning("worker %s: releasing %d job(s) still running after the grace", self.node, len(late))
        for e in late:
            e.released = True
            if self.is_async and e.future is not None:
                e.future.cancel()
            if e.conn is not None:
                self.stats.released += 1  # pushed: the stream's close below releases it
        await self.release([e for e in late if e.conn is None])
        # settle what finished, then close the stream (which releases whatever it still holds)
        self.defer_acks = False
        self.ack_evt.set()
        while (self.ack_queue or self.settling) and not background[0].done():
            self.idle_evt.clear()
            await _wait_event(self.idle_evt, 0.5)
        self.closing_stream = True
        for task in [source, *background]:
            task.cancel()
        await asyncio.gather(source, *background, return_exceptions=True)  # push: stream_gone() ran
        # cancelled async handlers wind down; sync handlers cannot be stopped (their results
        # are discarded when they return)
        rest = [t for t in self.tasks if not t.done()]
        if rest:
            await asyncio.wait(rest, timeout=1.0)
        for t in list(self.tasks):
            t.cancel()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def give_back(self, e: _Held) -> None:
        """Count a job handed back at shutdown and forget it."""
        e.released = True
        if e in self.waiting:
            self.waiting.remove(e)
        self.stats.released += 1
        self.forget(e)

    async def release(self, entries: list[_Held]) -> None:
        """Nack ``entries`` without delay (shutdown: redeliver them at once)."""
        if not entries:
            return
        for e in entries:
            e.released = True
            if e in self.waiting:
                self.waiting.remove(e)
        self.settling += 1
        try:
            result = await self.call(
                lambda: self.client.nack(self.queue, self.node, [e.job for e in entries]),
                "nack",
                persistent=False,
            )
        finally:
            self.settling -= 1
        skipped = set(result.skipped) if result is not None else set()
        for e in entries:
            if result is None or e.job.seq in skipped:
                # not released: the lease ends by itself (or someone else holds it already)
                self.stats.lost += 1
                self.forget(e)
            else:
                self.give_back(e)

    def forget(self, e: _Held) -> None:
        if self.held.get(e.job.seq) is e:
            del self.held[e.job.seq]
        self.notify()

    # -- jobs ----------------------------------------------------------------------------------

    def accept(self, job: Job, conn: int | None) -> None:
        """A job leased to this worker (claimed or pushed)."""
        old = self.held.get(job.seq)
        if old is not None:
            if old.job.lease_id == job.lease_id:
                return
            # re-leased to us: the old lease is gone, whatever its handler does now is void
            self.lose(old, "it was delivered again")
            if self.held.get(job.seq) is old:
                del self.held[job.seq]
        e = _Held(job, conn, self.loop.time() + self.lease_ms / 2000)
        self.held[job.seq] = e
        if self.stop_evt.is_set():
            if conn is None:  # claimed after the stop: hand it straight back
                self.spawn(self.release([e]))
            return  # pushed after the stop: parked, released when the stream closes
        self.waiting.append(e)
        self.notify()
        self.pump()

    def pump(self) -> None:
        while self.waiting and self.running < self.w.concurrency and not self.stop_evt.is_set():
            e = self.waiting.popleft()
            e.state = "running"
            self.running += 1
            self.spawn(self.process(e))

    def lose(self, e: _Held, why: str) -> None:
        """The server no longer leases ``e`` to us: never settle it; stop its handler if we can."""
        if e.lost or e.released or e.state == "finished":
            return
        e.lost = True
        self.stats.lost += 1
        log.warning("worker %s: lost the lease of %s #%d (%s)", self.node, self.queue, e.job.seq, why)
        if e.state == "waiting":
            if e in self.waiting:
                self.waiting.remove(e)
            self.forget(e)
        elif self.is_async and e.future is not None:
            e.future.cancel()

    async def process(self, e: _Held) -> None:
        job = e.job
        try:
            if self.is_async:
                e.future = asyncio.ensure_future(self.w.handler(job))
            else:
                e.future = self.loop.run_in_executor(self.pool, self.w.handler, job)
            await asyncio.wait([e.future])
            fut = e.future
            if not fut.cancelled() and fut.exception() is None and inspect.isawaitable(fut.result()):
                e.future = asyncio.ensure_future(fut.result())  # a sync callable returning an awaitable
                await asyncio.wait([e.future])
        finally:
            self.running -= 1
            e.state = "finished"
            self.notify()
            self.pump()
        if e.lost or e.released:
            self.forget(e)
            return
        fut = e.future
        exc: BaseException | None = asyncio.CancelledError() if fut.cancelled() else fut.exception()
        if exc is None:
            self.ack_queue.append(e)
            self.ack_evt.set()
            return
        if isinstance(exc, Retry):
            delay = exc.delay_ms if exc.delay_ms is not None else self.w.backoff.delay_ms(job.deliveries)
        else:
            self.stats.failed += 1
            log.warning(
                "worker %s: %s #%d failed on delivery %d: %r",
                self.node,
                self.queue,
                job.seq,
                job.deliveries,
                exc,
                exc_info=exc if isinstance(exc, Exception) else None,
            )
            delay = self.w.backoff.delay_ms(job.deliveries)
        await self.nack(e, delay)

    async def nack(self, e: _Held, delay_ms: int) -> None:
        job = e.job
        dead = self.will_dead_letter(job)
        if dead:
            delay_ms = 0  # the server moves it at its next claim; no point waiting
        self.settling += 1
        try:
            result = await self.call(
                lambda: self.client.nack(self.queue, self.node, [job], delay_ms=delay_ms),
                "nack",
                persistent=True,
            )
        finally:
            self.settling -= 1
        if result is None or job.seq in result.skipped:
            self.stats.lost += 1
        elif dead:
            self.stats.dead_lettered += 1
        else:
            self.stats.retried += 1  # pushed again by the server once the delay ends
        self.forget(e)

    async def acker(self) -> None:
        """Acks completed jobs, all that completed while the previous ack was on its way in one
        call (batching without a timer)."""
        while True:
            await self.ack_evt.wait()
            self.ack_evt.clear()
            while self.ack_queue and not self.defer_acks:
                batch, self.ack_queue = self.ack_queue, []
                self.settling += len(batch)
                try:
                    ack = functools.partial(self.client.ack, self.queue, self.node, [e.job for e in batch])
                    result = await self.call(ack, "ack", persistent=True)
                finally:
                    self.settling -= len(batch)
                skipped = set(result.skipped) if result is not None else set()
                for e in batch:
                    if result is None or e.job.seq in skipped:
                        self.stats.lost += 1
                        log.warning(
                            "worker %s: the ack of %s #%d was not accepted (lease lost)",
                            self.node,
                            self.queue,
                            e.job.seq,
                        )
                    else:
                        self.stats.processed += 1
                    self.forget(e)

    async def extender(self) -> None:
        """Extends every held job at half its lease, in one call for all that are due."""
        half = self.lease_ms / 2000
        while True:
            now = self.loop.time()
            live = [e for e in self.held.values() if not e.lost and not e.released]
            due = [e for e in live if e.next_extend <= now + half / 4]
            if due:
                for e in due:
                    e.next_extend = now + half
                extend = functools.partial(
                    self.client.extend, self.queue, self.node, [e.job for e in due], lease_ms=self.lease_ms
                )
                result = await self.call(extend, "extend", persistent=False)
                if result is None:
                    for e in due:  # try again soon, well before the lease ends
                        e.next_extend = self.loop.time() + min(0.5, half / 4)
                else:
                    skipped = set(result.skipped)
                    for e in due:
                        if e.job.seq in skipped:
                            self.lose(e, "extend was refused")  # (a finished job learns it from its ack)
                        elif e.job.seq in result.deadlines:
                            e.job.deadline = result.deadlines[e.job.seq]
                continue
            upcoming = [e.next_extend for e in live]
            wait = (min(upcoming) - half / 4 - now) if upcoming else half
            self.extend_evt.clear()
            await _wait_event(self.extend_evt, max(0.005, wait))

    # -- sources -------------------------------------------------------------------------------

    async def claim(self, n: int) -> list[Job]:
        jobs = await self.call(
            lambda: self.client.claim(self.queue, self.node, max=n, lease_ms=self.lease_ms),
            "claim",
            persistent=False,
        )
        return jobs or []

    async def poll(self) -> None:
        """Claim as many jobs as there are free slots; back off while the queue is empty."""
        delay = POLL_MIN_S
        while not self.stop_evt.is_set():
            free = self.free_slots()
            if free <= 0:
                self.slot_evt.clear()
                await _wait_any([self.slot_evt, self.stop_evt], None)
                continue
            jobs = await self.claim(free)
            for job in jobs:
                self.accept(job, None)
            if len(jobs) >= free:
                delay = POLL_MIN_S
                continue
            await self.sleep(POLL_MIN_S if jobs else delay)
            delay = POLL_MIN_S if jobs else min(POLL_MAX_S, delay * 2)

    def assist(self) -> None:
        """Push mode: claim for free slots now (jobs the stream will not push soon)."""
        if self.assisting or self.stop_evt.is_set() or self.free_slots() <= 0:
            return
        self.assisting = True

        async def go() -> None:
            try:
                for job in await self.claim(self.free_slots()):
                    self.accept(job, None)
            finally:
                self.assisting = False

        self.spawn(go())

    async def push(self) -> None:
        """The /work stream, reopened after failures; falls back to polling if the server has
        no such route (``mode="auto"``)."""
        failures = 0  # in a row, counted from the last stream that opened
        retry_ms = RETRY_DEFAULT_MS
        while not self.stop_evt.is_set():
            self.conn_seq += 1
            conn = self.conn_seq
            parser = SSEParser()
            try:
                async with self.open_stream() as rsp:
                    failures = 0
                    await self.consume(rsp, conn, parser)
            except _Fallback:
                log.info("worker %s: the server has no /work stream; polling claim instead", self.node)
                self.mode = "poll"
                await self.poll()
                return
            except TopicsError as err:  # not cured by reconnecting
                self.fail(err)
                return
            except (httpx.TransportError, _Reconnect) as exc:
                failures += 1
                if not self.stop_evt.is_set():
                    log.warning(
                        "worker %s: /work stream of %s failed: %r; reconnecting", self.node, self.queue, exc
                    )
            finally:
                self.stream_gone(conn)
                if parser.retry_ms is not None:
                    retry_ms = parser.retry_ms
            # the server's retry: delay after a drop, doubling while reconnects fail (as watch)
            await self.sleep(reconnect_delay_s(retry_ms, failures - 1))

    @contextlib.asynccontextmanager
    async def open_stream(self) -> AsyncIterator[httpx.Response]:
        """The /work stream's response once it answered 200. Otherwise raises :class:`_Fallback`
        (no such route, ``mode="auto"``), :class:`_Reconnect` (429, 503) or the error."""
        sender = self.client.sender
        settings = sender.settings
        params: dict[str, Any] = {"node": self.node, "max": self.w.concurrency, "lease_ms": self.lease_ms}
        headers = dict(settings.headers(), accept="text/event-stream")
        timeout = httpx.Timeout(settings.timeout, read=2 * STREAM_HEARTBEAT_MS / 1000 + WATCHDOG_SLACK_S)
        url = settings.url + work_stream_path(self.queue)
        stream = sender.http.stream("GET", url, params=params, headers=headers, timeout=timeout)
        async with stream as rsp:
            if rsp.status_code != 200:
                await rsp.aread()
                err = error_of(rsp)
                missing = err.status in (405, 406) or (err.status == 404 and err.code == "not_found")
                if missing and self.w.mode == "auto":
                    raise _Fallback()
                if retryable(err):
                    raise _Reconnect(str(err))
                raise err
            yield rsp

    async def consume(self, rsp: httpx.Response, conn: int, parser: SSEParser) -> None:
        """Accepts the jobs stream ``conn`` pushes until it ends (:class:`_Reconnect`)."""
        async for line in rsp.aiter_lines():
            event = parser.feed(line)
            if event is None:
                continue
            if event.event == "job":
                self.accept(g.jobs(self.queue, [orjson.loads(event.data)])[0], conn)
            elif event.event == "error":
                body = _json(event.data)
                if body.get("code") == 429:
                    log.info("worker %s: the server paces the /work stream: %s", self.node, body)
                    continue
                raise _Reconnect(f"stream error {body}")
        raise _Reconnect("the server ended the stream")

    def stream_gone(self, conn: int) -> None:
        """The server released every job connection ``conn`` pushed that we still hold: at the
        end of a shutdown that is the release of what was not processed; otherwise those jobs
        are lost (finished ones learn it from their ack)."""
        for e in [e for e in self.held.values() if e.conn == conn]:
            if e.lost or e.released or e.state == "finished":
                continue  # counted already, or settled by its ack / nack
            if not self.closing_stream:
                self.lose(e, "its /work stream dropped")
            elif e.state == "waiting":
                self.give_back(e)  # pushed but never started

    # -- drain ---------------------------------------------------------------------------------

    async def monitor(self) -> None:
        """drain(): done when the worker holds nothing and the queue's ``count`` is 0 (nothing
        ready, delayed or in flight anywhere)."""
        interval = DRAIN_CHECK_MIN_S
        await self.sleep(interval)  # give the first claim / push a moment
        while not self.stop_evt.is_set():
            if self.locally_idle():
                state = await self.call(
                    lambda: self.client.topic(self.queue, touch=False), "topic", persistent=False
                )
                if state is not None:
                    self.configure(state)
                    if state.count == 0 and self.locally_idle():
                        self.drained.set()
                        return
                    if self.mode == "push" and state.queue is not None and state.queue.ready > 0:
                        self.assist()
            else:
                interval = DRAIN_CHECK_MIN_S
            await self.sleep(interval)
            interval = min(DRAIN_CHECK_MAX_S, interval * 1.5)


def _json(data: str) -> dict[str, Any]:
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    return body if isinstance(body, dict) else {}


def _is_async(handler: Any) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one."""
    call = getattr(type(handler), "__call__", None)  # noqa: B004 - looking for an async __call__
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


async def _wait_event(event: asyncio.Event, timeout: float | None) -> None:
    """Waits for ``event`` at most ``timeout`` seconds. Not ``asyncio.wait_for``: on 3.11 it
    swallows a cancellation that arrives as the event is set (the task then never stops)."""
    await _wait_any([event], timeout)


async def _wait_any(events: list[asyncio.Event], timeout: float | None) -> None:
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


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
    may take to finish after a stop before their jobs are released.

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
        self.client = client
        self.queue = queue
        self.handler = handler
        self.node = node or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.backoff = backoff if backoff is not None else Backoff.exponential()
        self.mode: Mode = mode
        self.auto_extend = auto_extend
        self.shutdown_grace_s = shutdown_grace_s
        self._lock = threading.RLock()  # re-entrant: stop() may run in a signal handler on this thread
        self._session: _Session | None = None
        self._stops = 0
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

    def stop(self) -> None:
        """Stops :meth:`run` / :meth:`drain` gracefully: no more claims, running handlers get
        ``shutdown_grace_s`` to finish, the rest are released. A second call skips what is left
        of the grace. Safe from any thread, a handler or a signal handler; a stop before the run
        starts makes it return at once.

        >>> worker = topics.Worker(client, "nothing-to-do", print)
        >>> worker.stop()
        """
        with self._lock:
            self._stops += 1
            session = self._session
        if session is not None:
            with contextlib.suppress(RuntimeError):  # its loop just closed: the run is over anyway
                session.loop.call_soon_threadsafe(session.on_stop)

    def run(self, *, handle_signals: bool = True) -> WorkerStats:
        """Serves the queue until :meth:`stop`, SIGINT or SIGTERM (handled when called on the
        main thread, the previous handlers restored after), then shuts down gracefully. Blocks;
        runs its own event loop.

        >>> _ = client.append("orders-out", {"id": 1}, config={"type": "queue"})
        >>> worker = topics.Worker(client, "orders-out", lambda job: worker.stop())
        >>> worker.run()
        WorkerStats(processed=1, failed=0, retried=0, dead_lettered=0, lost=0, released=0)
        """
        return _blocking(self.run_async(handle_signals=handle_signals))

    def drain(self, *, timeout_s: float | None = None, handle_signals: bool = True) -> WorkerStats:
        """Processes jobs until the queue has nothing ready, delayed or in flight (its ``count``
        is 0, by anyone) and this worker holds nothing, then returns the counts. ``timeout_s``
        bounds it (then a graceful stop and :class:`TimeoutError`).

        >>> _ = client.create_topic("crawl", type="queue")
        >>> _ = client.append_many("crawl", [{"data": url} for url in ("a", "b")])
        >>> topics.Worker(client, "crawl", lambda job: None, concurrency=2).drain().processed
        2
        """
        return _blocking(self.drain_async(timeout_s=timeout_s, handle_signals=handle_signals))

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
            session = _Session(self, client, draining=draining)
            with self._lock:
                if self._session is not None:
                    raise RuntimeError("this worker is already running")
                self._session = session
                stopped_early = self._stops > 0
            cleanup.callback(self._finished, session)
            if stopped_early:
                session.on_stop()
            if handle_signals:
                cleanup.callback(_install_signals(self.stop))
            return await session.execute(timeout_s)

    def _finished(self, session: _Session) -> None:
        with self._lock:
            self._session = None
            self._stops = 0
            self._last = session.stats


def _blocking(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("run()/drain() block; inside a running event loop use run_async()/drain_async()")


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
