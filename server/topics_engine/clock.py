"""Injected time. Every engine rule that depends on time (TTL, idempotency windows,
recency, leases, coalescing windows) reads a :class:`Clock`; nothing else in the engine calls
``time``.

``now_ms`` is wall-clock milliseconds since the Unix epoch (the contract's ``$ts``).
``call_later`` runs a callback once ``delay_ms`` have passed on this clock: on the event loop
for the system clock, when a test advances a :class:`ManualClock` past it; it returns a
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

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` (on the engine's thread) after ``delay_ms``."""
        ...


class SystemClock:
    """The real clock; timers run on the running asyncio loop."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000, callback)


class _ManualTimer:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock tests move by hand; it never moves by itself. Timers fire during
    :meth:`advance`/:meth:`set`, in due order, with the clock showing their due time."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._timers: list[tuple[int, int, Callable[[], None], _ManualTimer]] = []
        self._order = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer()
        heapq.heappush(self._timers, (self._now + max(0, delay_ms), next(self._order), callback, timer))
        return timer

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock never goes backwards")
        self.set(self._now + ms)

    def set(self, now_ms: int) -> None:
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
