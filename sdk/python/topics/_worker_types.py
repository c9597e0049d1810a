"""The Worker's value types: the :class:`Backoff` policy, the :class:`Retry` a handler raises,
the :class:`WorkerStats` a run returns, and the ``Handler`` / ``Mode`` aliases.

Plain values with no I/O, below the worker loop (:mod:`topics._session`) and the public
:class:`topics.Worker` (:mod:`topics.worker`), which both use them. Their public home is
``topics`` / ``topics.worker`` (re-exported there; their examples run with ``topics.worker``'s).

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
import inspect
import random
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from .models import Job

Handler = Callable[[Job], Any]
"""``handler(job)``: a plain function (run in a thread) or a coroutine function (a task)."""
Mode = Literal["auto", "push", "poll"]


def is_async_handler(handler: Any) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one (what a wrapper of a
    handler must be too, so the Worker runs it as a task rather than in its thread pool)."""
    call = getattr(type(handler), "__call__", None)  # noqa: B004 - looking for an async __call__
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


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
    (``None``: the worker's backoff policy decides). It is not counted as a failure — unless
    ``failure=True``: the handler did fail and knows when to try again (an HTTP call answered
    ``503`` with a ``Retry-After``), so the job is counted in ``failed``, by the circuit breaker
    and logged (INFO, ``reason`` without a traceback), and still nacked after ``delay_ms``.

    >>> err = Retry(delay_ms=250)
    >>> (err.delay_ms, str(err), err.failure)
    (250, 'retry in 250 ms', False)
    >>> str(Retry(30_000, reason="http 503", failure=True))
    'http 503'
    """

    def __init__(
        self, delay_ms: int | None = None, *, reason: str | None = None, failure: bool = False
    ) -> None:
        if delay_ms is not None and delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        default = "retry with backoff" if delay_ms is None else f"retry in {delay_ms} ms"
        super().__init__(reason or default)
        self.delay_ms = delay_ms
        self.failure = failure


class TokenBucket:
    """A token bucket: ``rate`` tokens a second, holding at most ``max(1, rate)`` (one second's
    worth, so a worker idle for a while may start that many jobs at once, then ``rate`` a
    second).

    >>> bucket = TokenBucket(2.0, now=0.0)
    >>> [bucket.take(0.0), bucket.take(0.0), bucket.take(0.0)]
    [0.0, 0.0, 0.5]
    >>> bucket.take(0.5)
    0.0
    """

    def __init__(self, rate: float, now: float) -> None:
        if rate <= 0:
            raise ValueError("rate must be > 0")
        self.rate = rate
        self.capacity = max(1.0, rate)
        self.tokens = self.capacity
        self.at = now

    def take(self, now: float) -> float:
        """0.0 after taking a token, else the seconds until one is there (nothing taken)."""
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


@dataclass(frozen=True, slots=True)
class CircuitBreaker:
    """When a worker's handler keeps failing (a downstream service is down), stop taking jobs
    for a while instead of burning through deliveries: after ``threshold`` consecutive handler
    failures the breaker *opens* — the worker starts no job, hands back the jobs it holds and
    takes none for ``cooldown_s``; then it is *half-open* — one probe job runs; its success
    *closes* the breaker, its failure opens it again. :class:`Retry` (unless ``failure=True``)
    and :class:`Permanent` (a job's own fault) are not failures here.

    >>> CircuitBreaker(threshold=5, cooldown_s=10)
    CircuitBreaker(threshold=5, cooldown_s=10)
    """

    threshold: int = 10
    cooldown_s: float = 30.0

    def __post_init__(self) -> None:
        if self.threshold < 1:
            raise ValueError("threshold must be >= 1")
        if self.cooldown_s < 0:
            raise ValueError("cooldown_s must be >= 0")


class Permanent(Exception):  # noqa: N818 - the name the issue fixes: `raise topics.Permanent(...)`
    """Raise from a handler when its job can never succeed: it goes to the queue's dead-letter
    topic now, whatever its delivery count, with ``reason`` as its ``$dead_letter_reason``. A
    queue without a ``dead_letter`` topic nacks it like any other failure (and the worker logs
    why). Counted in ``failed`` and ``dead_lettered``.

    >>> str(Permanent("not a PNG")), Permanent(ValueError("bad header")).reason
    ('not a PNG', 'bad header')
    """

    def __init__(self, reason: object = "permanent failure") -> None:
        super().__init__(str(reason))
        self.reason = str(reason)


@dataclass(slots=True)
class WorkerStats:
    """What one ``run()`` / ``drain()`` did. Each job handed to the worker ends in exactly one
    of ``processed``, ``retried``, ``dead_lettered``, ``lost`` or ``released``; ``failed``
    counts handler exceptions (not a :class:`Retry`, unless ``failure=True``) alongside them.

    - ``processed``: the handler returned and the ack was accepted;
    - ``failed``: the handler raised an exception other than :class:`Retry`, or a
      ``Retry(failure=True)``;
    - ``retried``: nacked for another delivery (after an exception or a ``Retry``);
    - ``dead_lettered``: moved to the queue's ``dead_letter`` topic — at once after a
      :class:`Permanent` failure, or nacked on its last delivery (the server moves it at its
      next claim);
    - ``lost``: the lease was gone before the job was settled (lease expired and taken, stream
      dropped, ack/nack skipped): its result was discarded;
    - ``released``: handed back unprocessed at shutdown or when the circuit breaker opens
      (nack without delay, or the ``/work`` stream's release on close).

    >>> stats = WorkerStats(processed=2, failed=1, retried=1)
    >>> (stats.processed, stats.failed, stats.retried, stats.lost, stats.breaker)
    (2, 1, 1, 0, 'closed')
    """

    processed: int = 0
    failed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    lost: int = 0
    released: int = 0
    breaker: str = field(default="closed", repr=False)
    """The circuit breaker's state: ``closed``, ``open`` or ``half_open`` (``closed`` without one;
    left out of the repr, which shows the job counts)."""
    breaker_trips: int = field(default=0, repr=False)
    """How many times the breaker opened."""


T = TypeVar("T")


def blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop (the blocking ``run()``/``drain()`` of the Worker and
    the Relay); inside a running loop that would deadlock, so it is refused."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("run()/drain() block; inside a running event loop use run_async()/drain_async()")
