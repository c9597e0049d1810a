"""A stop while the data directory is still being recovered: the recovery thread ends at its
next progress point and is finished before the directory is unlocked, so no other server can
open the directory while this one still works on it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from topics_engine import Engine, Limits, SystemClock
from topics_engine.datadir import DataDirectory
from topics_server.app import build
from topics_server.settings import load_settings


def _fill(path: Path, writes: int) -> None:
    """A data directory whose WAL holds ``writes`` appends and no snapshot of them."""
    engine = Engine(SystemClock(), Limits())
    loop = asyncio.new_event_loop()
    store = DataDirectory(path)
    store.lock()
    for _ in store.recover(engine):
        pass
    store.open(engine, loop)
    for i in range(writes):
        engine.append("t", [{"data": i}])
    loop.run_until_complete(store.wal.run_task(lambda: None))  # type: ignore[union-attr]
    store.close()
    loop.close()


async def test_a_stop_during_recovery_waits_for_the_recovery_thread(tmp_path: Path) -> None:
    data = tmp_path / "data"
    await asyncio.to_thread(_fill, data, 5000)
    app, ctx = build(load_settings({"TOPICS_DATA_DIR": str(data), "TOPICS_THROTTLE": "false"}))
    await ctx.start()
    await asyncio.sleep(0)  # recovery has started on its thread
    await ctx.stop()
    work = ctx._recovery_work
    assert work is not None and work.done()
    again = DataDirectory(data)  # unlocked, and recoverable from the same files
    again.lock()
    engine = Engine(SystemClock(), Limits())
    for _ in again.recover(engine):
        pass
    assert engine.topic_state("t").head_seq == 5000
    again.close()
