"""Shared helpers for the storage and fault tests: a durable engine on a :class:`DataDirectory`, restarts,
and the in-process app over a store (httpx ASGI transport: no lifespan, so the helper runs the
context's start/ready/stop itself)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.storage.fs import FileSystem
from topics_server.asgi import create_app
from topics_server.context import ServerContext
from topics_server.settings import load_settings

from ..engine.conftest import record_bytes

T0 = 1_700_000_000_000


@dataclass
class Node:
    """One running "process": an engine recovered from ``data_dir`` and its open store."""

    engine: Engine
    store: DataDirectory

    def close(self) -> None:
        self.store.close()


async def open_node(
    data_dir: Path,
    clock: ManualClock,
    fs: FileSystem | None = None,
    limits: Limits | None = None,
    **store_kw: Any,
) -> Node:
    engine = Engine(clock, limits or Limits())
    store = DataDirectory(data_dir, fs=fs or FileSystem(), **store_kw)
    store.lock()
    for _ in store.recover(engine):
        pass
    store.open(engine, asyncio.get_running_loop())
    return Node(engine, store)


def crash(node: Node) -> None:
    """Stop as ``kill -9`` leaves the files once every frame reached the disk: segment work
    finished, the WAL closed without a ``CLEAN_STOP`` frame or a final checkpoint, the lock
    released (as the kernel releases a killed process's). Flush first to lose nothing."""
    store = node.store
    assert store.wal is not None and store.sealer is not None
    store.sealer.close()
    store.wal.close()
    assert store._lock_fd is not None
    store.fs.close(store._lock_fd)
    store._lock_fd = None


async def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` on the event loop until it holds (``AssertionError`` after ``timeout``
    seconds): for what another thread brings about, such as the WAL turning read-only."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.001)


async def flush(node: Node) -> None:
    """Wait until every frame submitted so far is durable."""
    assert node.store.wal is not None
    await node.store.wal.run_task(lambda: None)


def diff_bytes(engine: Engine, topic: str, from_seq: int = 0, **kw: Any) -> list[bytes]:
    """Every record a reader gets paging from ``from_seq`` (raw wire bytes)."""
    out: list[bytes] = []
    cursor = from_seq
    for _ in range(100_000):
        page = engine.diff(topic, from_seq=cursor, limit=1000, touch=False, **kw)
        out.extend(record_bytes(page))
        if page.caught_up:
            return out
        cursor = page.next_from_seq
    raise AssertionError("reader never caught up")


def diff_seqs(engine: Engine, topic: str, from_seq: int = 0) -> list[int]:
    return [orjson.loads(b)["$seq"] for b in diff_bytes(engine, topic, from_seq)]


def diff_data(engine: Engine, topic: str) -> list[Any]:
    return [orjson.loads(b)["data"] for b in diff_bytes(engine, topic)]


@asynccontextmanager
async def app_client(
    data_dir: Path, clock: ManualClock, fs: FileSystem | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, ServerContext]]:
    settings = load_settings({"TOPICS_DATA_DIR": str(data_dir)})
    engine = Engine(clock, settings.limits)
    store = DataDirectory(data_dir, fs=fs or FileSystem())
    app, ctx = create_app(settings, engine, store)
    await ctx.start()
    await ctx.wait_ready()
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://topics.test"
        ) as client:
            yield client, ctx
    finally:
        await ctx.stop()


MODES = ["wal", "checkpoint"]
"""Restart modes: ``wal`` — a clean close, recovery replays the WAL; ``checkpoint`` — a
checkpoint first, recovery loads the snapshot and segments."""


class Harness:
    """A durable engine restarted in one of :data:`MODES` (or a mode chosen per restart)."""

    def __init__(self, data_dir: Path, mode: str) -> None:
        self.data_dir = data_dir
        self.mode = mode
        self.clock = ManualClock(T0)
        self.node: Node | None = None

    async def start(self) -> Engine:
        self.node = await open_node(self.data_dir, self.clock)
        return self.node.engine

    @property
    def engine(self) -> Engine:
        assert self.node is not None
        return self.node.engine

    async def restart(self, mode: str | None = None) -> Engine:
        assert self.node is not None
        await flush(self.node)
        if (mode or self.mode) == "checkpoint":
            await self.node.store.checkpoint()
        self.node.close()
        return await self.start()

    def close(self) -> None:
        if self.node is not None:
            self.node.close()
