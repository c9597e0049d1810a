"""When a schedule is due: a cron expression (``cron.Cron``) or a fixed interval
(:class:`Every`), behind one protocol.

Due times are epoch milliseconds. ``next_after(t)`` is the first due time strictly after ``t``,
``latest_at_or_before(t)`` the last one at or before ``t``; either is ``None`` when there is none
(a cron expression no day matches, an interval before its first due time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Timing(Protocol):
    def next_after(self, t_ms: int) -> int | None: ...

    def latest_at_or_before(self, t_ms: int) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Every:
    """Every ``every_ms`` from ``since_ms`` (when the interval was put): due times are
    ``since_ms + n * every_ms`` for ``n >= 1`` — the first one interval after the ``PUT``."""

    every_ms: int
    since_ms: int

    def next_after(self, t_ms: int) -> int:
        if t_ms < self.since_ms:
            return self.since_ms + self.every_ms
        return self.since_ms + ((t_ms - self.since_ms) // self.every_ms + 1) * self.every_ms

    def latest_at_or_before(self, t_ms: int) -> int | None:
        if t_ms < self.since_ms + self.every_ms:
            return None
        return self.since_ms + (t_ms - self.since_ms) // self.every_ms * self.every_ms
