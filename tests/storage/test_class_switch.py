"""A topic's durability class switched in place (``PUT /v0/topics/NAME {"durability": ...}``)
and its records (docs/DECISIONS.md, "Switching a topic's class").

- ephemeral → a durable class: the records the topic holds become durable with the switch —
  the ``PUT`` answers once a checkpoint has sealed them — and bounded in memory like any other
  durable records (sealed: cold);
- a durable class → ephemeral: the records written under the durable class stay durable (the
  next checkpoint seals them, their deletes are logged), those written as ephemeral are
  resident-only;
- between durable classes nothing moves: every one is logged and sealed alike.

Each case ends with a ``kill -9`` (``harness.crash``: no final checkpoint, no ``CLEAN_STOP``)
and a recovery from the same directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.datadir.sealing import SegmentPolicy

from ..fault.faulty_fs import FaultyFileSystem
from .harness import T0, Node, crash, diff_data, flush, open_node

SEAL_AT = 20
"""``TOPICS_SEGMENT_MAX_EVENTS`` here: a durable topic's write reaching it seals."""

DURABLE = ["memory", "disk", "fsync"]


async def _node(path: Path, clock: ManualClock) -> Node:
    return await open_node(path, clock, segment_policy=SegmentPolicy(max_events=SEAL_AT))


async def _write(e: Engine, topic: str, values: range, per_write: int = 3) -> None:
    """Write ``values`` in small writes (several chunks), waiting for each ack."""
    items = list(values)
    for at in range(0, len(items), per_write):
        result = e.append(topic, [{"data": v} for v in items[at : at + per_write]])
        if result.wait is not None:
            await result.wait


async def _put(e: Engine, topic: str, fields: dict[str, Any]) -> None:
    put = e.put_topic(topic, fields)
    if put.wait is not None:
        await put.wait


def _resident(e: Engine, topic: str) -> int:
    """Records of ``topic`` whose batches are in memory (hot chunks)."""
    return e.get(topic).log.resident()[0]


@pytest.mark.parametrize("checkpoint_first", [False, True], ids=["no-checkpoint", "checkpoint"])
@pytest.mark.parametrize("target", DURABLE)
async def test_ephemeral_records_are_durable_once_the_switch_to_a_durable_class_answers(
    tmp_path: Path, target: str, checkpoint_first: bool
) -> None:
    clock = ManualClock(T0)
    node = await _node(tmp_path, clock)
    e = node.engine
    await _put(e, "t", {"durability": "ephemeral"})
    await _write(e, "t", range(12))
    if checkpoint_first:  # a checkpoint while ephemeral seals none of them
        await node.store.checkpoint()
    await _put(e, "t", {"durability": target})
    assert _resident(e, "t") == 0  # sealed and cold: memory holds no record of them
    crash(node)

    node = await _node(tmp_path, clock)
    assert diff_data(node.engine, "t") == list(range(12))
    assert node.engine.get("t").config.durability.value == target
    node.close()


async def test_after_the_switch_old_and_new_records_are_sealed_alike(tmp_path: Path) -> None:
    """Records written as ephemeral and records written after the switch go cold at the
    seals the segment limits make due, and survive a crash together."""
    clock = ManualClock(T0)
    node = await _node(tmp_path, clock)
    e = node.engine
    await _put(e, "t", {"durability": "ephemeral"})
    await _write(e, "t", range(30))
    await node.store.checkpoint()
    await _put(e, "t", {"durability": "disk"})
    await _write(e, "t", range(30, 30 + SEAL_AT))  # reaches the segment limit: sealed
    await flush(node)
    await node.store.checkpoint()
    assert _resident(e, "t") == 0
    crash(node)

    node = await _node(tmp_path, clock)
    assert diff_data(node.engine, "t") == list(range(30 + SEAL_AT))
    node.close()


@pytest.mark.parametrize("source", DURABLE)
async def test_records_written_under_a_durable_class_stay_durable_after_a_switch_to_ephemeral(
    tmp_path: Path, source: str
) -> None:
    """The unsealed ones are sealed by the next checkpoint (before it trims their WAL frames);
    the records written as ephemeral stay resident-only and are gone after the restart."""
    clock = ManualClock(T0)
    node = await _node(tmp_path, clock)
    e = node.engine
    await _put(e, "t", {"durability": source})
    await _write(e, "t", range(10))  # below the segment limit: unsealed
    await _put(e, "t", {"durability": "ephemeral"})
    await _write(e, "t", range(10, 16))
    await node.store.checkpoint()
    assert _resident(e, "t") == 6  # the ephemeral ones only
    assert diff_data(e, "t") == list(range(16))
    crash(node)

    node = await _node(tmp_path, clock)
    assert diff_data(node.engine, "t") == list(range(10))
    node.close()


async def test_a_delete_on_an_ephemeral_topic_of_a_record_written_durably_survives(tmp_path: Path) -> None:
    """Records that stay durable after the switch to ephemeral are deleted durably too: a
    sealed one's segment flag is flipped, an unsealed one's WAL frame outlives it."""
    clock = ManualClock(T0)
    node = await _node(tmp_path, clock)
    e = node.engine
    await _put(e, "t", {"durability": "disk"})

    def tagged(values: range) -> list[dict[str, Any]]:
        return [{"data": v, "tag": "even" if v % 2 == 0 else "odd"} for v in values]

    e.append("t", tagged(range(SEAL_AT)))  # sealed
    e.append("t", tagged(range(SEAL_AT, SEAL_AT + 4)))  # unsealed
    await flush(node)
    await _put(e, "t", {"durability": "ephemeral"})
    e.delete_records("t", match="even")
    await flush(node)
    await node.store.checkpoint()
    crash(node)

    node = await _node(tmp_path, clock)
    assert diff_data(node.engine, "t") == list(range(1, SEAL_AT + 4, 2))
    node.close()


@pytest.mark.parametrize(("source", "target"), [("memory", "disk"), ("disk", "memory"), ("disk", "fsync")])
async def test_a_switch_between_durable_classes_seals_as_before(
    tmp_path: Path, source: str, target: str
) -> None:
    clock = ManualClock(T0)
    node = await _node(tmp_path, clock)
    e = node.engine
    await _put(e, "t", {"durability": source})
    await _write(e, "t", range(10))
    await _put(e, "t", {"durability": target})
    await _write(e, "t", range(10, 25))
    await flush(node)
    await node.store.checkpoint()
    assert _resident(e, "t") == 0
    crash(node)

    node = await _node(tmp_path, clock)
    assert diff_data(node.engine, "t") == list(range(25))
    node.close()


async def test_an_fsync_write_pending_at_the_switch_to_ephemeral_stays_durable(tmp_path: Path) -> None:
    """A write acknowledged as ``fsync`` after its topic turned ephemeral (it awaited its fsync
    across the switch) is a logged record: it outlives the restarts and checkpoints that follow,
    also when a snapshot cut below its frame leaves the replay to learn that it was logged."""
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs, segment_policy=SegmentPolicy(max_events=SEAL_AT))
    e = node.engine
    await _put(e, "t", {"durability": "fsync"})
    await _write(e, "t", range(3))
    fs.hold_syncs()
    pending = e.append("t", [{"data": "pending"}]).wait
    switched = e.put_topic("t", {"durability": "ephemeral"}).wait
    checkpoint = asyncio.create_task(node.store.checkpoint())
    await asyncio.sleep(0)  # its cut: below the pending write's frame, the topic ephemeral
    fs.release_syncs()
    assert pending is not None and switched is not None
    await pending
    await switched
    await checkpoint
    assert diff_data(e, "t") == [0, 1, 2, "pending"]
    crash(node)

    for _ in range(2):  # recovery replays the write; a checkpoint then trims its frame
        node = await _node(tmp_path, clock)
        assert diff_data(node.engine, "t") == [0, 1, 2, "pending"]
        await node.store.checkpoint()
        crash(node)


@pytest.mark.parametrize("to", ["memory", "disk", "ephemeral"])
async def test_a_write_after_a_switch_applies_after_an_fsync_write_still_waiting(
    tmp_path: Path, to: str
) -> None:
    """An ``fsync`` write waits for its sync before it is visible; the topic switches class and
    a write of the new class lands meanwhile. The later write (higher seqs) applies after the
    waiting one, never before it — else the log, which skips seqs at or below its head, would
    drop the acknowledged fsync write until a restart replayed it."""
    node = await _node(tmp_path, ManualClock(T0))
    e = node.engine
    await e.put_topic("f", {"durability": "fsync"}).wait
    waiting = e.append("f", [{"data": "fsync"}])
    switched = e.put_topic("f", {"durability": to})
    later = e.append("f", [{"data": to}])
    for wait in (waiting.wait, switched.wait, later.wait):
        if wait is not None:
            await wait
    assert diff_data(e, "f") == ["fsync", to]
    await flush(node)
    crash(node)
    node = await _node(tmp_path, ManualClock(T0))
    assert diff_data(node.engine, "f") == (["fsync"] if to == "ephemeral" else ["fsync", to])
    node.close()
