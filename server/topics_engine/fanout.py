"""Who is waiting for which topic, and the wake-ups changes send them (on the engine's loop).

Two kinds of waiters, woken by :meth:`Hub.notify` whenever a topic's readable state moves —
records became visible (or, for ``strong`` readers, durable), or the topic was deleted:

- one-shot: a long-polling diff parks a future with :meth:`Hub.wait`;
- standing: a watch stream or WebSocket subscription registers a :class:`Listener` with
  :meth:`Hub.listen` and is told the topic's name each time; it then reads from its own cursor
  out of the topic's record store (the topic is the shared buffer: nothing is copied per
  listener, and a writer never waits for a listener).

A listener's ``topic_changed`` must be cheap and must not call back into the engine: it marks
the topic and wakes its stream. Engine code runs on the loop thread, so there is no locking.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol


class Listener(Protocol):
    def topic_changed(self, name: str) -> None:
        """``name`` has new readable records, or went away."""


class Hub:
    def __init__(self) -> None:
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._listeners: dict[str, dict[Listener, None]] = {}

    def notify(self, name: str) -> None:
        for fut in self._waiters.pop(name, ()):
            if not fut.done():
                fut.set_result(None)
        listeners = self._listeners.get(name)
        if listeners:
            for listener in list(listeners):
                listener.topic_changed(name)

    def listen(self, name: str, listener: Listener) -> None:
        self._listeners.setdefault(name, {})[listener] = None

    def unlisten(self, name: str, listener: Listener) -> None:
        listeners = self._listeners.get(name)
        if listeners is not None:
            listeners.pop(listener, None)
            if not listeners:
                del self._listeners[name]

    def listener_count(self, name: str | None = None) -> int:
        if name is not None:
            return len(self._listeners.get(name, ()))
        return sum(map(len, self._listeners.values()))

    async def wait(self, name: str, timeout_s: float) -> bool:
        """Wait for the next notification on ``name``; False on timeout."""
        if timeout_s <= 0:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.setdefault(name, [])
        waiters.append(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            current = self._waiters.get(name)
            if current is not None:
                with contextlib.suppress(ValueError):
                    current.remove(fut)
                if not current:
                    del self._waiters[name]
