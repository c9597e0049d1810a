"""Injected time. Every engine rule that depends on time (TTL, idempotency windows,
recency, leases, coalescing windows) reads a :class:`Clock`; nothing else in the engine calls
``time``.

``now_ms`` is wall-clock milliseconds since the Unix epoch (the contract's ``$ts``, TTLs,
schedules, timestamps reported as such). ``steady_ms`` never steps: it measures elapsed time
(lease deadlines, nack and write delays, watch session idleness, heartbeats, checkpoint
intervals). It reads the wall clock's value at the clock's creation (the process start) plus the
monotonic time elapsed since, so without a wall step the two agree; a wall step (NTP, an
operator, a resumed VM) moves ``now_ms`` alone. :meth:`Clock.wall_of` turns a steady instant into
the wall instant it stands for now — what is reported (a lease's ``deadline``) and persisted (a
durable lease, a delayed job), so a restart, whose steady clock starts again at the wall clock,
reads persisted instants as they were meant (docs/DECISIONS.md, "Clock steps").
``call_later`` runs a callback once ``delay_ms`` have passed on the steady clock: on the event
loop for the system clock, when a test advances a :class:`ManualClock` past it; it returns a
:class:`Timer` whose ``cancel`` stops it (a no-op once it ran). :func:`sleep` waits on the clock.

The system clock's timers run on the event loop's monotonic clock, not on ``now_ms``: a wall
clock stepped forward (NTP, a resumed VM) does not bring them earlier. A timer that waits for a
wall-clock instant far off caps its delay and looks again (the schedules' pump:
``MAX_SLEEP_MS``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None:
        """Do not run the callback (nothing happens if it already ran)."""


class Clock(Protocol):
    def now_ms(self) -> int:
        """Current wall-clock time in integer milliseconds since the epoch."""
        ...

    def steady_ms(self) -> int:
        """Current time on a clock that never steps, in integer milliseconds (equal to
        ``now_ms`` when the clock was created; apart by the sum of the wall steps since)."""
        ...

    def wall_of(self, steady_ms: int) -> int:
        """The wall-clock instant the steady instant ``steady_ms`` stands for now."""
        ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` (on the engine's thread) after ``delay_ms`` (steady)."""
        ...


class SystemClock:
    """The real clock; timers run on the running asyncio loop (its monotonic clock)."""

    def __init__(self) -> None:
        self._anchor_ns = _wall_minus_monotonic_ns()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def steady_ms(self) -> int:
        return (time.monotonic_ns() + self._anchor_ns) // 1_000_000

    def wall_of(self, steady_ms: int) -> int:
        # how far the wall clock stepped since the start, rounded: 0 until it steps (not
        # now_ms() - steady_ms(): two millisecond floors read apart may differ by 1 at any time)
        return steady_ms + round((_wall_minus_monotonic_ns() - self._anchor_ns) / 1_000_000)

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000, callback)


def _wall_minus_monotonic_ns() -> int:
    """The wall clock minus the monotonic clock, from readings close together: a wall reading
    between two monotonic ones less than 50 µs apart (a thread preempted between them would
    make the difference off by the pause), the best of 10 tries otherwise."""
    best: tuple[int, int] | None = None
    for _ in range(10):
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, wall - (before + after) // 2)
        if after - before < 50_000:
            break
    assert best is not None
    return best[1]


class _ManualTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock tests move by hand; it never moves by itself. Timers fire during
    :meth:`advance`/:meth:`set`, in due order, with the clock showing their due time.
    :meth:`step_wall` steps the wall clock alone (the steady clock and timers do not move)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._wall_step = 0
        self._timers: list[tuple[int, int, Callable[[], None], _ManualTimer]] = []
        self._order = itertools.count()

    def now_ms(self) -> int:
        return self._now + self._wall_step

    def steady_ms(self) -> int:
        return self._now

    def wall_of(self, steady_ms: int) -> int:
        return steady_ms + self._wall_step

    def step_wall(self, ms: int) -> None:
        """Step the wall clock by ``ms`` (either way), as NTP or an operator would."""
        self._wall_step += ms

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer()
        heapq.heappush(self._timers, (self._now + max(0, delay_ms), next(self._order), callback, timer))
        return timer

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock never goes backwards")
        self.set(self._now + ms)

    def set(self, now_ms: int) -> None:
        """Move the steady clock to ``now_ms`` (the wall clock moves with it)."""
        if now_ms < self._now:
            raise ValueError("a clock never goes backwards")
        while self._timers and self._timers[0][0] <= now_ms:
            due, _, callback, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = due
            callback()
        self._now = now_ms


async def sleep(clock: Clock, delay_ms: int) -> None:
    """Wait ``delay_ms`` on ``clock`` (a :class:`ManualClock` wakes the sleeper when a test
    advances it); cancelling the sleeper cancels its timer."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not done.done():
            done.set_result(None)

    timer = clock.call_later(delay_ms, wake)
    try:
        await done
    finally:
        timer.cancel()
