"""The elastic throttle (docs/DECISIONS.md, "The elastic throttle"): under CPU pressure,
low-priority data-plane work waits or is refused, so high-priority topics keep their latency and
the probes keep answering.

**The pressure signal** is measured, not guessed: every :data:`TICK_MS` the monitor task
(:func:`monitor`) notes how late its own timer fired — the event loop's lag, the time a request
waits behind the work already queued on the one loop that serves everything — and the WAL's
queue depth. ``pressure = max(lag / LAG_BUDGET_MS, depth / DEPTH_BUDGET)``, smoothed (EWMA); 1.0
means "at the budget". The monitor only sees a stall once it is over, so admission also looks at
the stall in progress: when the monitor's timer is :data:`STALL_MS` overdue, the loop is busy
right now and background work (priority < 1) waits at once, inside the burst that causes it.

**Admission** keeps a priority cutoff: ``None`` (off) while the pressure is low. When it reaches
1.0 the cutoff becomes 1 (the default priority 0 and negative manual priorities are background
work) and rises by :data:`CUTOFF_STEP` every tick the pressure stays at or above 1, up to the
ceiling; below :data:`RELEASE_PRESSURE` it falls by the same step, and under 1 it turns off. A
throttled operation on a topic whose effective priority (the config's ``priority``: manual, or
auto-derived from read recency) is below the cutoff — or not above a request already waiting —
is parked. Parked requests are admitted highest priority first, at most ``allowance`` per tick:
4 after a pressured tick, growing while the ticks stay calm, so a released backlog cannot
recreate the stall it waited out. One still parked after :data:`PARK_MS` is refused — ``429
throttled`` with ``Retry-After`` and ``detail.retry_after_ms`` (jittered, so refused clients do
not return together) — unless it is a ``disable_backpressure`` write, which waits as long as it
takes. The time parked is the response's ``performance.throttle_wait_ms``. Memory is bounded: at
most :data:`MAX_PARKED` requests wait, ``disable_backpressure`` ones included (a refusal or a
client that went away drops its entry), beyond that a throttled request is refused at once.

**The ceiling** (:meth:`Throttle.ceiling`): the cutoff never stands above :data:`TOP_MARGIN`
under the highest priority among the work competing now, nor under 1. Competing is every
priority that admission or a stream's pacing looked at (parked or not) in this
:data:`DEMAND_TICKS` window or the one before. Lower-priority work waits so that
higher-priority work keeps its latency; holding the most important work in flight protects
nothing above it and only adds the pause to that work's own latency — a topic 1 000 watchers
read, the only work there is, paced because the fan-out kept the pressure up while the cutoff
climbed past its priority. So the top work is never held, nor work within the margin under it
(auto-priority moves by the millisecond: 1000 for a topic read this instant, 999 some 90 ms
later, and the readers of one topic must not hold each other); work further below is held as
before, and background work always can be (so the probes get their loop back when background
work alone loads it). Within a tick the ceiling only rises; it falls when a window closes, in
:meth:`Throttle.observe`, which re-applies it: ``cutoff <= ceiling()`` at every admission.

**Streams** (:class:`StreamPacer`): a watch or ``/work`` stream whose topics are all below the
cutoff is paced (it pauses :meth:`Throttle.retry_after_ms` between deliveries) and told so once
per episode with the advisory ``event: error`` frame ``{"code":429,...}``; it stays open.

Cost when there is no pressure: :meth:`Throttle.engaged` per request — two attribute tests and
one clock read.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from topics_engine.clock import Clock, Timer, sleep
from topics_engine.errors import Throttled

from .sse import error_event
from .streams import StreamLoop

if TYPE_CHECKING:
    from topics_engine import Engine
    from topics_engine.topic import Topic

TICK_MS = 10
"""How often the monitor samples the loop lag and the WAL queue depth."""
LAG_BUDGET_MS = 10.0
"""Loop lag (ms) at which the pressure is 1.0. A request waits about one to two loop stalls, so
the budget sits well under the 50 ms a probe must answer in (``bench/overload_bench.py``)."""
STALL_MS = 5.0
"""The monitor's timer this overdue means the loop is stalled now: background work waits."""
DEPTH_BUDGET = 200_000
"""WAL frames queued (written or not, not yet durable) at which the pressure is 1.0."""
SMOOTHING = 0.3
"""Weight of a new sample in the pressure's moving average."""
RELEASE_PRESSURE = 0.8
"""Below this the cutoff falls (between it and 1.0 it holds: hysteresis)."""
CUTOFF_STEP = 50
"""How far the priority cutoff moves per tick."""
TOP_MARGIN = 50
"""Work within this of the highest priority competing is never held: the cutoff stops this far
under it (one :data:`CUTOFF_STEP`: the cutoff's own resolution). Auto-priority changes by the
millisecond, so the readers of one topic must not hold each other."""
DEMAND_TICKS = 100
"""The window (ticks) of the competing work: a priority admission or pacing looked at stays
competing until the end of the window after the one it was seen in (1 to 2 s)."""
PARK_MS = 100
"""Longest a throttled request waits for admission before its 429."""
MAX_PARKED = 10_000
"""Parked requests at most; beyond, a throttled request is refused at once — a
``disable_backpressure`` write too (bounded memory)."""
MIN_ALLOWANCE, MAX_ALLOWANCE = 4, 1024
"""Parked requests admitted per tick: the least (after a pressured tick) and the most."""

NOTHING = -(1 << 30)
"""Below every priority: no work seen."""

Parking = asyncio.Future[float | None]
"""A parked request's wait: resolves to the milliseconds parked once admitted, or ``None`` if
refused."""


@dataclass(order=True)
class _Parked:
    rank: tuple[int, int]
    """``(-priority, arrival)``: highest priority first, then first come."""
    priority: int = field(compare=False)
    since: float = field(compare=False)
    future: Parking = field(compare=False)
    timer: Timer | None = field(compare=False, default=None)


class Throttle:
    """The pressure, the priority cutoff and the parked requests of one server."""

    def __init__(self, clock: Clock, enabled: bool = True) -> None:
        self.clock = clock
        self.enabled = enabled
        self.pressure = 0.0
        self.cutoff: int | None = None
        """Requests on topics with a lower effective priority wait; ``None``: off. At most
        :meth:`ceiling`."""
        self.monitored = False
        """A monitor task feeds the signal (then a stall in progress counts too)."""
        self.last_tick = time.perf_counter()
        self.allowance = MIN_ALLOWANCE
        self.parked = 0
        """Requests waiting now (the heap may also hold entries already refused)."""
        self.refused = 0
        """Requests refused (429) since the process started (``topics_throttle_refused_total``)."""
        self._heap: list[_Parked] = []
        self._arrivals = itertools.count()
        self._competing = NOTHING
        """The highest priority admission or pacing looked at in this window."""
        self._competed = NOTHING
        """... and in the window before it."""
        self._window_ticks = 0

    # -- the signal ------------------------------------------------------------------------------

    def observe(self, lag_ms: float, wal_depth: int = 0) -> None:
        """One sample: move the pressure, then the cutoff, then admit what it now lets in."""
        self.last_tick = time.perf_counter()
        if not self.enabled:
            return
        self._next_window()
        sample = max(lag_ms / LAG_BUDGET_MS, wal_depth / DEPTH_BUDGET)
        self.pressure += (sample - self.pressure) * SMOOTHING
        if self.pressure >= 1.0:
            self.cutoff = 1 if self.cutoff is None else self.cutoff + CUTOFF_STEP
            self.allowance = MIN_ALLOWANCE
        elif self.pressure < RELEASE_PRESSURE:
            if self.cutoff is not None:
                self.cutoff -= CUTOFF_STEP
                if self.cutoff < 1:
                    self.cutoff = None
            self.allowance = min(MAX_ALLOWANCE, self.allowance * 2)
        if self.cutoff is not None:
            self.cutoff = min(self.cutoff, self.ceiling())
        self._release(self.allowance)

    def _next_window(self) -> None:
        self._window_ticks += 1
        if self._window_ticks >= DEMAND_TICKS:
            self._window_ticks = 0
            self._competed, self._competing = self._competing, NOTHING

    def _compete(self, priority: int) -> None:
        """Work of ``priority`` asks to run now: it counts as competing."""
        if priority > self._competing:
            self._competing = priority

    def ceiling(self) -> int:
        """The highest the cutoff may stand now: :data:`TOP_MARGIN` under the highest priority
        competing, and at least 1 (background work can always be held)."""
        return max(1, max(self._competing, self._competed) - TOP_MARGIN)

    @property
    def active(self) -> bool:
        """The cutoff is on (streams below it are paced)."""
        return self.cutoff is not None

    def stalled(self) -> bool:
        """The loop is stalled right now: the monitor's timer is :data:`STALL_MS` overdue."""
        return (
            self.enabled
            and self.monitored
            and (time.perf_counter() - self.last_tick) * 1000 > TICK_MS + STALL_MS
        )

    def engaged(self) -> bool:
        """Whether admission must look at a request at all (else it runs: the common case)."""
        return self.cutoff is not None or self.parked > 0 or self.stalled()

    def retry_after_ms(self) -> int:
        """When a refused client should try again: longer the harder the pressure."""
        return _clamp_retry(500 * self.pressure)

    # -- admission -------------------------------------------------------------------------------

    def admits(self, priority: int) -> bool:
        """Whether the cutoff lets work of ``priority`` run (a stall in progress counts as a
        cutoff of 1); the work counts as competing."""
        self._compete(priority)
        return self._admits(priority)

    def _admits(self, priority: int) -> bool:
        cutoff = self.cutoff
        if cutoff is None and self.stalled():
            cutoff = 1
        return cutoff is None or priority >= cutoff

    def admit(self, priority: int, patient: bool = False) -> Parking | None:
        """``None`` if a request on a topic of ``priority`` may run now — the cutoff lets it in
        and nothing of the same or a higher priority waits; else its :data:`Parking`, refused
        after :data:`PARK_MS` (never, if ``patient``: a ``disable_backpressure`` write). The
        request counts as competing, parked or not."""
        self._compete(priority)
        if self._admits(priority) and not (self.parked and self._top_priority() >= priority):
            return None
        if self.parked >= MAX_PARKED:
            raise self.refusal()
        future: Parking = asyncio.get_running_loop().create_future()
        parked = _Parked((-priority, next(self._arrivals)), priority, time.perf_counter(), future)
        if not patient:
            parked.timer = self.clock.call_later(PARK_MS, lambda: self._expire(parked))
        future.add_done_callback(lambda f: self._cancelled(parked) if f.cancelled() else None)
        heapq.heappush(self._heap, parked)
        self.parked += 1
        return future

    def refusal(self) -> Throttled:
        """The 429 of a request the throttle turns away."""
        retry = _clamp_retry(self.retry_after_ms() * random.uniform(0.8, 1.2))
        self.refused += 1
        return Throttled(
            f"the server is under CPU pressure and this topic's priority is below the current "
            f"cutoff ({self.cutoff or 1}); retry after {retry} ms, raise the topic's priority, or "
            'send "disable_backpressure": true to wait instead',
            {"retry_after_ms": retry, "cutoff": self.cutoff or 1},
        )

    def _top_priority(self) -> int:
        heap = self._heap
        while heap and heap[0].future.done():
            heapq.heappop(heap)
        return heap[0].priority if heap else NOTHING

    def _cancelled(self, parked: _Parked) -> None:
        """The waiter went away (its client disconnected): it no longer waits."""
        if parked.timer is not None:
            parked.timer.cancel()
        self.parked -= 1
        self._compact()

    def _expire(self, parked: _Parked) -> None:
        if not parked.future.done():
            self.parked -= 1
            parked.future.set_result(None)
            self._compact()

    def _compact(self) -> None:
        """Drop refused entries once they are most of the heap (they hold nothing but the
        entry itself; this bounds the heap to twice what waits)."""
        heap = self._heap
        if len(heap) > 64 and len(heap) > 2 * self.parked:
            self._heap = [p for p in heap if not p.future.done()]
            heapq.heapify(self._heap)

    def _release(self, limit: int) -> None:
        """Admit the parked requests the cutoff lets in, highest priority first: all of those at
        or above the :meth:`ceiling` (the top work, never held longer than till this tick), then
        up to ``limit`` more."""
        heap = self._heap
        top_band = self.ceiling() if self.cutoff is not None else -NOTHING  # off: all by the limit
        admitted = 0
        while heap:
            top = heap[0]
            if top.future.done():
                heapq.heappop(heap)
                continue
            if not self._admits(top.priority) or (admitted >= limit and top.priority < top_band):
                break
            heapq.heappop(heap)
            if top.timer is not None:
                top.timer.cancel()
            self.parked -= 1
            if top.priority < top_band:
                admitted += 1
            top.future.set_result((time.perf_counter() - top.since) * 1000)

    # -- streams ---------------------------------------------------------------------------------

    def stream_pause_ms(self, priorities: list[int]) -> int:
        """How long a stream over topics of these priorities pauses between deliveries now
        (0: not throttled — some topic is at or above the cutoff). The stream competes with the
        highest of them."""
        if self.cutoff is None or not priorities:
            return 0
        top = max(priorities)
        self._compete(top)
        return 0 if top >= self.cutoff else self.retry_after_ms()


def priorities_of(clock: Clock, topics: Iterable[Topic | None]) -> list[int]:
    """The effective priorities (the config's ``priority``: manual, or auto-derived from read
    recency) the throttle ranks work on ``topics`` by, now; a topic that does not exist (yet: a
    write creating it) ranks as the default 0. The one reading of a topic's priority for
    admission and pacing."""
    now = clock.now_ms()
    return [0 if topic is None else topic.priority(now) for topic in topics]


def priority_of(engine: Engine, name: str) -> int:
    """:func:`priorities_of` the topic named ``name`` (a request's ``{topic}``)."""
    return priorities_of(engine.clock, [engine.topic(name)])[0]


class StreamPacer:
    """Paces one stream under CPU pressure: when every topic it serves is below the cutoff it
    pauses :meth:`Throttle.retry_after_ms` before each delivery, and says so once per episode
    with the advisory ``event: error`` frame ``{"code": 429, "error", "retry_after_ms"[,
    "topics"]}`` (the stream stays open)."""

    def __init__(self, throttle: Throttle, clock: Clock, what: str) -> None:
        self.throttle, self.clock, self.what = throttle, clock, what
        self.advised = False
        """The advisory frame of the current episode went out."""

    def calm(self) -> None:
        """No pressure now: the next episode gets its own advisory."""
        self.advised = False

    async def pace(self, loop: StreamLoop, priorities: list[int], topics: list[str] | None = None) -> None:
        pause = self.throttle.stream_pause_ms(priorities)
        if not pause:
            return
        if not self.advised:
            self.advised = True
            named = {} if topics is None else {"topics": topics}
            await loop.send(error_event(429, self.what, retry_after_ms=pause, **named))
        await sleep(self.clock, pause)


def _clamp_retry(ms: float) -> int:
    return max(100, min(5000, int(ms)))


async def monitor(throttle: Throttle, wal_depth: Callable[[], int]) -> None:
    """Sample the event loop's lag every :data:`TICK_MS` (how late this task's own timer
    fires, on the monotonic clock) with the WAL's queue depth, forever."""
    interval = TICK_MS / 1000
    throttle.monitored = True
    try:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(interval)
            lag_ms = max(0.0, (time.perf_counter() - start - interval) * 1000)
            throttle.observe(lag_ms, wal_depth())
    finally:
        throttle.monitored = False
