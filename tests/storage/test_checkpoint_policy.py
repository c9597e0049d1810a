"""When a checkpoint is due (``DataDirectory.checkpoint_due``): every
``checkpoint_wal_bytes`` of WAL, every ``checkpoint_interval_ms`` once a sixteenth of that was
written, and every ten intervals once anything was — the unsealed tail (in memory, and replayed
by a restart) is bounded in bytes and in time, a quiet server does not seal a tiny segment per
topic every interval, and deleted data is still reclaimed."""

from __future__ import annotations

from pathlib import Path

from topics_engine import ManualClock
from topics_engine.datadir.directory import QUIET_INTERVALS

from .harness import T0, diff_data, flush, open_node

WAL_BYTES = 16_000
INTERVAL_MS = 1000


async def test_a_checkpoint_is_due_by_bytes_or_by_time_once_enough_was_written(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(
        tmp_path / "data", clock, checkpoint_wal_bytes=WAL_BYTES, checkpoint_interval_ms=INTERVAL_MS
    )
    store, engine = node.store, node.engine
    try:
        await store.checkpoint()
        now = clock.now_ms
        assert not store.checkpoint_due(now())
        engine.append("t", [{"data": "x" * 100}])  # well under a sixteenth (1000 bytes)
        await flush(node)
        clock.advance(QUIET_INTERVALS * INTERVAL_MS - 1)
        assert not store.checkpoint_due(now())  # a small tail waits ...
        clock.advance(1)
        assert store.checkpoint_due(now())  # ... but not for ever (deleted data is reclaimed)
        engine.append("t", [{"data": "x" * 1000}])
        await flush(node)
        assert not store.checkpoint_due(clock.now_ms() - 10 * INTERVAL_MS)  # not yet its time
        assert store.checkpoint_due(now())  # enough, and the interval passed
        await store.checkpoint()
        assert not store.checkpoint_due(now())
        engine.append("t", [{"data": "x" * WAL_BYTES}])  # the byte bound: at once
        await flush(node)
        assert store.checkpoint_due(now())
    finally:
        node.close()


async def test_a_checkpoint_over_frames_not_yet_durable_replays_none_twice(tmp_path: Path) -> None:
    """A checkpoint cut while a topic's seq reservation (or lazy creation) frame is still
    waiting for its fsync: that frame's effect is already in the state, so the snapshot claims
    every frame — replaying the later config changes over it again would re-apply
    ``cap_records: 3`` after ``40`` and evict what the topic kept."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path / "data", clock)
    engine = node.engine
    engine.append("t", [{"data": i} for i in range(10)])  # lazily created: frames not durable yet
    engine.put_topic("t", {"cap_records": 3})
    engine.put_topic("t", {"cap_records": 40})
    engine.append("t", [{"data": i} for i in range(10, 20)])
    await node.store.checkpoint()
    node.close()
    node = await open_node(tmp_path / "data", clock)
    try:
        assert diff_data(node.engine, "t") == list(range(7, 20))
    finally:
        node.close()
