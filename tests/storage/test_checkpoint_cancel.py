"""A checkpoint whose caller is cancelled after its cut — what a shutdown does to the periodic
checkpoint task (``ServerContext.stop``) before it writes the final one — still seals what its
cut took: the cut marks those records sealed, so a later snapshot covers their WAL frames and
nothing else would write them (``DataDirectory.checkpoint``)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from topics_engine import ManualClock

from .harness import T0, diff_data, open_node


async def test_a_checkpoint_cancelled_after_its_cut_loses_nothing_at_the_final_one(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    await e.put_topic("d", {"durability": "disk"}).wait
    await e.put_topic("f", {"durability": "fsync"}).wait
    e.append("d", [{"data": i} for i in range(5)])
    await e.append("f", [{"data": i} for i in range(5)]).wait
    periodic = asyncio.create_task(node.store.checkpoint())
    await asyncio.sleep(0)  # its cut is taken; it awaits the WAL
    periodic.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await periodic
    await node.store.checkpoint(final=True)  # the shutdown's: the WAL is trimmed after it
    node.close()

    node = await open_node(tmp_path, clock)
    assert diff_data(node.engine, "d") == list(range(5))
    assert diff_data(node.engine, "f") == list(range(5))
    node.close()
