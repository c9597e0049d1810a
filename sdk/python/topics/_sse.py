"""Server-sent events (``text/event-stream``): the line grammar and the reconnect timing.

Shared by the watch stream (:mod:`topics.watch`) and the Worker's ``/work`` stream. A leaf
module: it imports nothing from the SDK, and does no I/O — a caller feeds it lines (without their
newline) and sleeps the delays it computes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

RETRY_DEFAULT_MS = 2000
"""The reconnect delay until the server sends a ``retry:`` field."""
RETRY_MAX_MS = 30_000
"""The longest reconnect delay, however many reconnects failed in a row."""
WATCHDOG_SLACK_S = 5.0
"""Added to twice the heartbeat: a stream silent for longer is dead."""


@dataclass(slots=True)
class SSEEvent:
    """One dispatched server-sent event (comments and ``retry:`` are not events)."""

    event: str
    data: str
    id: str | None


@dataclass(slots=True)
class SSEParser:
    """The text/event-stream grammar, a line at a time (lines without their newline).

    ``retry_ms`` is the last ``retry:`` the stream sent (``None`` until it sends one); it survives
    the events, so a reconnect can read it after the stream ended.

    >>> parser = SSEParser()
    >>> [parser.feed(line) for line in ["retry: 500", "event: job", "data: 1", "id: a"]]
    [None, None, None, None]
    >>> parser.feed(""), parser.retry_ms
    (SSEEvent(event='job', data='1', id='a'), 500)
    """

    retry_ms: int | None = None
    _event: str = ""
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def feed(self, line: str) -> SSEEvent | None:
        """The event ``line`` completes (an empty line ends one), else ``None``."""
        if not line:
            if not self._data and not self._event:
                return None
            event = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data, self._id = "", [], None
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None


def reconnect_delay_s(retry_ms: int, doublings: int) -> float:
    """Seconds before reconnecting a stream: the server's ``retry:`` delay doubled ``doublings``
    times (at most 4, and at most :data:`RETRY_MAX_MS`), with ±20 % jitter."""
    delay = min(RETRY_MAX_MS, retry_ms * (2 ** min(doublings, 4)))
    return float(delay * random.uniform(0.8, 1.2) / 1000)
