"""The per-process server context handlers receive: the engine, its store, and the process
lifecycle (recovering -> ready -> shutting down)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from topics_engine import Engine
from topics_engine.store import Store

VERSION = "0.1.0"
log = logging.getLogger("topics.server")


@dataclass
class ServerContext:
    engine: Engine
    store: Store | None = None
    started: float = field(default_factory=time.monotonic)
    ready: bool = False
    replay_progress: float = 0.0
    shutting_down: bool = False
    _recovery: asyncio.Task[None] | None = None

    @property
    def uptime_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    async def start(self) -> None:
        """Lock the data directory and start recovery in the background; without a store the
        (in-memory) engine is ready at once."""
        if self.store is None:
            self.ready = True
            return
        self.store.lock()
        self._recovery = asyncio.create_task(self._recover(self.store))

    async def _recover(self, store: Store) -> None:
        started = time.monotonic()
        for progress in store.recover(self.engine):
            self.replay_progress = progress
            await asyncio.sleep(0)
        store.open(self.engine, asyncio.get_running_loop())
        self.replay_progress = 1.0
        self.ready = True
        log.info("ready: WAL replay took %.0f ms", (time.monotonic() - started) * 1000)

    async def wait_ready(self) -> None:
        if self._recovery is not None:
            await self._recovery

    async def stop(self) -> None:
        self.shutting_down = True
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()
        if self.store is not None:
            self.store.close()
