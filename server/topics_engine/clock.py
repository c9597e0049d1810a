"""Injected time. Every engine rule that depends on time (TTL, idempotency windows,
recency, leases) reads a :class:`Clock`; nothing else in the engine calls ``time``.

``now_ms`` is wall-clock milliseconds since the Unix epoch (the contract's ``$ts``).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Current wall-clock time in integer milliseconds since the epoch."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock tests move by hand; it never moves by itself."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock never goes backwards")
        self._now += ms

    def set(self, now_ms: int) -> None:
        if now_ms < self._now:
            raise ValueError("a clock never goes backwards")
        self._now = now_ms
