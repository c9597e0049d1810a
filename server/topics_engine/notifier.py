"""Append notifications for long-polling readers (``wait_ms``) on the engine's event loop.

A waiter is an ``asyncio.Future`` parked under a topic name; an append (or the topic's
deletion) resolves every future parked on that name. Engine code runs on the loop thread, so no
locking is needed.
"""

from __future__ import annotations

import asyncio
import contextlib


class Notifier:
    def __init__(self) -> None:
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    def notify(self, name: str) -> None:
        for fut in self._waiters.pop(name, ()):
            if not fut.done():
                fut.set_result(None)

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
