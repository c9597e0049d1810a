"""The Worker's engine: one :class:`Session` per ``run()`` / ``drain()``, on asyncio.

A session holds the run's client, counters and leased jobs (:class:`Held`), and runs the
background tasks that move them: a source (the ``/work`` stream of :mod:`topics._work_stream`,
or polling ``claim``), the acker (batched acks), the extender (leases at half their length) and,
for a drain, the monitor. The public :class:`topics.Worker` builds one and waits for it; this
module knows the worker only through :class:`WorkerSpec`, so the dependency runs one way
(worker -> session -> work stream -> transport).

Invariants: every job handed to a session ends in exactly one :class:`WorkerStats` outcome
(processed, retried, dead_lettered, lost, released); a job whose lease is lost or released is
never acked or nacked afterwards; everything runs on the session's loop (``Worker.stop()`` reaches
it through ``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

import httpx

from ._sse import RETRY_DEFAULT_MS, SSEParser, reconnect_delay_s
from ._transport import retryable
from ._work_stream import Fallback, Reconnect, consume_work_stream, open_work_stream
from ._worker_types import Backoff, CircuitBreaker, Handler, Mode, Permanent, Retry, TokenBucket, WorkerStats
from .client import AsyncClient
from .errors import ConnectionError, NoDeadLetter, NotAQueue, TopicsError
from .models import DeadLetterResult, Job, TopicState

log = logging.getLogger("topics.worker")

T = TypeVar("T")

POLL_MIN_S = 0.05
POLL_MAX_S = 1.0
DRAIN_CHECK_MIN_S = 0.05
DRAIN_CHECK_MAX_S = 0.5
ACK_FLUSH_S = 2.0
"""The longest the circuit breaker waits for the acks of finished jobs before it closes a stream."""
CALL_RETRY_MIN_S = 0.2
CALL_RETRY_MAX_S = 5.0


class WorkerSpec(Protocol):
    """What a session reads from its :class:`topics.Worker` — read as the run goes, not copied
    at its start (as when the session held the worker itself)."""

    @property
    def queue(self) -> str: ...
    @property
    def node(self) -> str: ...
    @property
    def handler(self) -> Handler: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def lease_ms(self) -> int | None: ...
    @property
    def backoff(self) -> Backoff: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def auto_extend(self) -> bool: ...
    @property
    def permanent(self) -> tuple[type[BaseException], ...]: ...
    @property
    def rate_limit(self) -> float | None: ...
    @property
    def circuit_breaker(self) -> CircuitBreaker | None: ...
    @property
    def shutdown_grace_s(self) -> float: ...


@dataclass(eq=False)
class Held:
    """One job leased to this worker, from its arrival until it is settled or given up."""

    job: Job
    conn: int | None
    """The /work connection that pushed it (its close releases the job), ``None``: claimed."""
    next_extend: float
    state: Literal["waiting", "running", "finished"] = "waiting"
    lost: bool = False
    released: bool = False
    future: asyncio.Future[Any] | None = None


class Session:
    """One run or drain: its client, counters, held jobs and background tasks."""

    def __init__(self, worker: WorkerSpec, client: AsyncClient, *, draining: bool) -> None:
        self.w = worker
        self.client = client
        self.draining = draining
        self.queue = worker.queue
        self.node = worker.node
        self.loop = asyncio.get_running_loop()
        self.stats = WorkerStats()
        self.held: dict[int, Held] = {}
        self.waiting: deque[Held] = deque()
        self.running = 0
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stop_evt = asyncio.Event()
        self.hurry = asyncio.Event()
        self.drained = asyncio.Event()
        self.slot_evt = asyncio.Event()
        self.extend_evt = asyncio.Event()
        self.idle_evt = asyncio.Event()
        self.ack_evt = asyncio.Event()
        self.ack_queue: list[Held] = []
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
        self.bucket = TokenBucket(worker.rate_limit, self.loop.time()) if worker.rate_limit else None
        self.pump_timer: asyncio.TimerHandle | None = None
        self.breaker = worker.circuit_breaker
        self.failures = 0
        """Handler failures in a row (for the circuit breaker)."""
        self.breaker_evt = asyncio.Event()
        """Set when the breaker lets jobs in again (half-open)."""
        self.source: asyncio.Task[Any] | None = None
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

    def on_stop(self, hurry: bool) -> None:
        """``Worker.stop()`` (on the loop): stop gracefully; ``hurry``: skip what is left of the
        grace too (the worker counts the calls)."""
        if hurry:
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
        self.source = self.spawn(self.push() if self.mode == "push" else self.poll())
        background = [self.spawn(self.acker())]
        if self.w.auto_extend:
            background.append(self.spawn(self.extender()))
        if self.draining:
            background.append(self.spawn(self.monitor()))
        try:
            await _wait_any([self.stop_evt, self.drained], timeout_s)
        finally:
            timed_out = not (self.stop_evt.is_set() or self.drained.is_set())
            await self.shutdown(background)
        if self.fatal is not None:
            raise self.fatal
        if timed_out:
            raise TimeoutError(f"drain of {self.queue!r} did not finish within {timeout_s} s ({self.stats})")
        return self.stats

    async def shutdown(self, background: list[asyncio.Task[Any]]) -> None:
        source = self.source
        assert source is not None
        self.stop_evt.set()
        self.breaker_evt.set()
        if self.pump_timer is not None:
            self.pump_timer.cancel()
            self.pump_timer = None
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
        source = self.source  # the breaker may have restarted it meanwhile
        assert source is not None
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

    def give_back(self, e: Held) -> None:
        """Count a job handed back at shutdown and forget it."""
        e.released = True
        if e in self.waiting:
            self.waiting.remove(e)
        self.stats.released += 1
        self.forget(e)

    async def release(self, entries: list[Held]) -> None:
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

    def forget(self, e: Held) -> None:
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
        e = Held(job, conn, self.loop.time() + self.lease_ms / 2000)
        self.held[job.seq] = e
        if self.stop_evt.is_set() or self.stats.breaker == "open":
            if conn is None:  # claimed after the stop, or while the breaker is open: hand it back
                self.spawn(self.release([e]))
            return  # pushed after the stop: parked, released when the stream closes
        self.waiting.append(e)
        self.notify()
        self.pump()

    def pump(self) -> None:
        while self.waiting and self.running < self.w.concurrency and not self.stop_evt.is_set():
            if self.stats.breaker == "open" or (self.stats.breaker == "half_open" and self.running):
                return  # open: nothing starts; half-open: one probe at a time
            if self.bucket is not None:
                wait_s = self.bucket.take(self.loop.time())
                if wait_s > 0:  # over the rate limit: start the next job when a token is due
                    if self.pump_timer is None:
                        self.pump_timer = self.loop.call_later(wait_s, self.timed_pump)
                    return
            e = self.waiting.popleft()
            e.state = "running"
            self.running += 1
            self.spawn(self.process(e))

    # -- the circuit breaker --------------------------------------------------------------------

    def judge(self, e: Held) -> None:
        """Tell the breaker how ``e``'s handler ended: a success, a failure, or neither (a
        :class:`Retry` without ``failure`` or a :class:`Permanent`: the handler's choice or the
        job's own fault)."""
        fut = e.future
        if fut is None or fut.cancelled():
            return
        exc = fut.exception()
        if exc is None:
            self.handler_succeeded()
        elif self.is_failure(exc):
            self.handler_failed()

    def is_failure(self, exc: BaseException) -> bool:
        """Whether a handler's exception is a failure (counted in ``failed`` with the
        breaker's): anything but a :class:`Retry` — unless ``failure=True`` — or a permanent
        failure (the job's own fault, counted in ``failed`` but not by the breaker)."""
        if isinstance(exc, Retry):
            return exc.failure
        return not isinstance(exc, (Permanent, *self.w.permanent))

    def handler_succeeded(self) -> None:
        self.failures = 0
        if self.stats.breaker == "half_open":
            self.stats.breaker = "closed"
            log.info("worker %s: the probe job succeeded; circuit breaker closed", self.node)
            self.pump()

    def handler_failed(self) -> None:
        breaker = self.breaker
        if breaker is None:
            return
        self.failures += 1
        state = self.stats.breaker
        if state == "half_open" or (state == "closed" and self.failures >= breaker.threshold):
            self.stats.breaker = "open"
            self.stats.breaker_trips += 1
            self.breaker_evt.clear()
            log.warning(
                "worker %s: circuit breaker open after %d failure(s) in a row; taking no jobs for %.1f s",
                self.node,
                self.failures,
                breaker.cooldown_s,
            )
            self.failures = 0
            self.spawn(self.cool_down(breaker))

    async def cool_down(self, breaker: CircuitBreaker) -> None:
        """The breaker is open for ``cooldown_s`` from now: hand back the jobs not started. In
        push mode close the /work stream too, once the acks of finished jobs are out (else it
        would push a replacement for every job settled meanwhile, each burning a delivery):
        jobs still running lose their leases with it (released by the server; their results
        are discarded). Then let one probe job in (half-open) — claimed, in either mode; the
        stream reopens once the breaker closes."""
        until = self.loop.time() + breaker.cooldown_s
        await self.release([e for e in list(self.waiting) if e.conn is None])
        source = self.source
        if self.mode == "push" and source is not None and not source.done():
            flush_until = min(until, self.loop.time() + ACK_FLUSH_S)
            while (self.ack_queue or self.settling) and not self.stop_evt.is_set():
                left = flush_until - self.loop.time()
                if left <= 0:
                    break
                self.idle_evt.clear()
                await _wait_event(self.idle_evt, left)
            if self.stop_evt.is_set():
                return
            for e in [e for e in self.held.values() if e.conn is not None and e.state == "running"]:
                self.lose(e, "the circuit breaker closed its /work stream")
            self.closing_stream = True  # the server releases what the stream pushed and we hold
            source.cancel()
            await asyncio.gather(source, return_exceptions=True)
            self.closing_stream = False
        await self.sleep(max(0.0, until - self.loop.time()))
        if self.stop_evt.is_set():
            return
        self.stats.breaker = "half_open"
        log.info("worker %s: circuit breaker half-open; one probe job", self.node)
        self.breaker_evt.set()
        if self.mode == "push":
            self.spawn(self.probe())
        self.notify()
        self.pump()

    async def probe(self) -> None:
        """Push mode, half-open: claim one job at a time until the breaker closes (then the
        /work stream reopens) or opens again (a new cool-down follows)."""
        delay = POLL_MIN_S
        while self.stats.breaker == "half_open" and not self.stop_evt.is_set():
            if self.waiting or self.running:  # a probe is on its way
                self.slot_evt.clear()
                await _wait_any([self.slot_evt, self.stop_evt], POLL_MAX_S)
                continue
            jobs = await self.claim(1)
            for job in jobs:
                self.accept(job, None)
            if not jobs:
                await self.sleep(delay)
                delay = min(POLL_MAX_S, delay * 2)
        if self.stats.breaker == "closed" and not self.stop_evt.is_set():
            self.source = self.spawn(self.push())

    def timed_pump(self) -> None:
        self.pump_timer = None
        self.pump()

    def lose(self, e: Held, why: str) -> None:
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

    async def process(self, e: Held) -> None:
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
            if not (e.lost or e.released):
                self.judge(e)  # the breaker hears of the outcome before another job may start
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
            if exc.failure:
                self.stats.failed += 1
                log.info(
                    "worker %s: %s #%d failed on delivery %d: %s; retry in %d ms",
                    self.node,
                    self.queue,
                    job.seq,
                    job.deliveries,
                    exc,
                    delay,
                )
        elif isinstance(exc, (Permanent, *self.w.permanent)):
            self.stats.failed += 1
            reason = (
                str(getattr(exc, "reason", exc))
                if isinstance(exc, Permanent)
                else f"{type(exc).__name__}: {exc}"
            )
            log.warning(
                "worker %s: %s #%d failed for good on delivery %d: %s",
                self.node,
                self.queue,
                job.seq,
                job.deliveries,
                reason,
            )
            if self.dead_letter is not None:
                await self.move_to_dead_letter(e, reason)
                return
            log.warning(
                "worker %s: queue %s has no dead_letter topic: the job is nacked", self.node, self.queue
            )
            delay = self.w.backoff.delay_ms(job.deliveries)
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

    async def move_to_dead_letter(self, e: Held, reason: str) -> None:
        """A permanent failure: the job goes to the dead-letter topic now (``dead_letter``). If
        the server refuses the move (no dead-letter topic any more, the topic full or gone, the
        record too large with the reason), the job is nacked like any failure instead."""
        job = e.job

        async def move() -> DeadLetterResult | TopicsError:
            try:
                return await self.client.dead_letter(self.queue, self.node, [job], reason=reason[:1024])
            except TopicsError as err:
                if retryable(err):
                    raise  # call() waits and tries again
                return err

        self.settling += 1
        try:
            result = await self.call(move, "dead-letter move", persistent=True)
        finally:
            self.settling -= 1
        if isinstance(result, TopicsError):
            if isinstance(result, NoDeadLetter):
                self.dead_letter = None
            log.warning(
                "worker %s: the dead-letter move of %s #%d was refused (%s); nacked",
                self.node,
                self.queue,
                job.seq,
                result,
            )
            await self.nack(e, self.w.backoff.delay_ms(job.deliveries))
            return
        if result is None or job.seq in result.skipped:
            self.stats.lost += 1
        else:
            self.stats.dead_lettered += 1
        self.forget(e)

    async def nack(self, e: Held, delay_ms: int) -> None:
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
            if self.stats.breaker == "open":
                await _wait_any([self.breaker_evt, self.stop_evt], None)
                continue
            free = self.free_slots()
            if self.stats.breaker == "half_open":
                free = min(free, 1 - len(self.waiting) - self.running)  # the probe only
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
        if (
            self.assisting
            or self.stop_evt.is_set()
            or self.free_slots() <= 0
            or self.stats.breaker != "closed"
        ):
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
            accept = functools.partial(self.accept, conn=conn)
            try:
                async with self.open_stream() as rsp:
                    failures = 0
                    await consume_work_stream(rsp, parser, self.queue, self.node, accept)
            except Fallback:
                log.info("worker %s: the server has no /work stream; polling claim instead", self.node)
                self.mode = "poll"
                await self.poll()
                return
            except TopicsError as err:  # not cured by reconnecting
                self.fail(err)
                return
            except (httpx.TransportError, Reconnect) as exc:
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

    def open_stream(self) -> contextlib.AbstractAsyncContextManager[httpx.Response]:
        """The next /work connection, with the client's sender: see :func:`open_work_stream`."""
        params: dict[str, Any] = {"node": self.node, "max": self.w.concurrency, "lease_ms": self.lease_ms}
        return open_work_stream(self.client.sender, self.queue, params, may_fall_back=self.w.mode == "auto")

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
