"""What a recovery itself must hand on, so that the next checkpoint or stop keeps the state.

- A WAL ``DELETE`` frame replayed for a record in a sealed segment (a delete by seq or tag, a queue
  ack, a dead-letter move) must reach the segment's delete flag at the next checkpoint, as the
  live path's deletes do: that checkpoint trims the frame, and the flag is then the only witness.
- The heads a crash recovery raises above the replayed records (docs/DECISIONS.md, "Seqs are
  never reused") must stay raised whatever ends the next run — a crash, a checkpoint, or a clean
  stop without a final checkpoint.
- A reader still at a cursor of a deleted topic learns that the topic was recreated also after
  a crash raised the new topic's head past that cursor: the skipped range is kept
  (``Topic.skipped``, snapshot version 2) across every later restart.

Each case stops the first run either as ``kill -9`` does (``crash``) or cleanly without a final
checkpoint (``clean_stop``: the WAL ends with ``CLEAN_STOP``), so both replay paths are covered.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import NotReady
from topics_engine.queues import Claimed
from topics_engine.storage.fs import FileSystem

from ..engine.queue_helpers import queues_for
from .harness import T0, Node, crash, diff_seqs, flush, open_node

STOPS = ["crash", "clean_stop"]


async def stop(node: Node, how: str) -> None:
    """End a run after every frame is durable: as ``kill -9`` does, or cleanly without a final
    checkpoint."""
    await flush(node)
    if how == "crash":
        crash(node)
    else:
        node.close()


async def checkpoint(node: Node) -> None:
    await flush(node)
    await node.store.checkpoint()


async def claim_all(engine: Engine, node: str, name: str = "q") -> list[int]:
    claimed = queues_for(engine).claim(name, node, 100)
    assert isinstance(claimed, Claimed)
    if claimed.wait is not None:
        await claimed.wait
    return [job.seq for job in claimed.jobs]


@pytest.mark.parametrize("durability", ["disk", "fsync"])
@pytest.mark.parametrize("how", STOPS)
async def test_a_replayed_delete_of_a_sealed_record_survives_the_next_checkpoint(
    tmp_path: Path, how: str, durability: str
) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    await e.put_topic("t", {"durability": durability}).wait
    first = e.append("t", [{"data": i, "tag": "odd" if i % 2 else "even"} for i in range(6)])
    await flush(node)
    await checkpoint(node)  # records 1..6 are in a sealed segment now
    done = e.delete_records("t", match="odd")  # seqs 2, 4, 6: a WAL DELETE frame
    assert done.deleted == 3
    if done.wait is not None:
        await done.wait
    done = e.delete_records("t", before_seq=first.first_seq + 1)  # seq 1
    if done.wait is not None:
        await done.wait
    live = diff_seqs(e, "t")
    assert live == [3, 5]
    await stop(node, how)

    node = await open_node(tmp_path, clock)  # replays the DELETE frames
    assert diff_seqs(node.engine, "t") == live
    await checkpoint(node)  # flips the flags, then trims the frames
    await stop(node, "crash")

    node = await open_node(tmp_path, clock)
    try:
        assert diff_seqs(node.engine, "t") == live
        assert node.engine.topic_state("t").count == 2
    finally:
        node.close()


@pytest.mark.parametrize("durability", ["disk", "fsync"])
@pytest.mark.parametrize("how", STOPS)
async def test_a_replayed_ack_of_a_sealed_job_survives_the_next_checkpoint(
    tmp_path: Path, how: str, durability: str
) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    await e.put_topic("q", {"type": "queue", "durability": durability}).wait
    e.append("q", [{"data": i} for i in range(3)])
    await flush(node)
    await checkpoint(node)  # jobs 1..3 are in a sealed segment now
    assert await claim_all(e, "w1") == [1, 2, 3]
    acked = queues_for(e).ack("q", "w1", [1, 3])  # a WAL DELETE frame
    if acked.wait is not None:
        await acked.wait
    assert acked.done == [1, 3]
    await stop(node, how)

    node = await open_node(tmp_path, clock)  # replays the ack's DELETE frame
    assert diff_seqs(node.engine, "q") == [2]
    await checkpoint(node)
    await stop(node, "crash")

    node = await open_node(tmp_path, clock)
    try:
        assert diff_seqs(node.engine, "q") == [2]
        assert await claim_all(node.engine, "w2") == [2]  # the acked jobs never come back
    finally:
        node.close()


@pytest.mark.parametrize("durability", ["disk", "memory", "ephemeral"])
async def test_heads_raised_by_a_crash_survive_a_clean_stop_without_a_checkpoint(
    tmp_path: Path, durability: str
) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("d", {"durability": durability}).wait
    node.engine.append("d", [{"data": i} for i in range(3)])
    await stop(node, "crash")

    node = await open_node(tmp_path, clock)
    raised = node.engine.topic_state("d").head_seq
    assert raised > 3  # resumed above the seq reservation
    await stop(node, "clean_stop")  # no final checkpoint: the WAL ends with CLEAN_STOP

    node = await open_node(tmp_path, clock)
    try:
        assert node.engine.topic_state("d").head_seq == raised
        assert node.engine.append("d", [{"data": "next"}]).first_seq == raised + 1
    finally:
        node.close()


async def test_a_second_crash_keeps_the_raised_heads_and_adds_nothing(tmp_path: Path) -> None:
    """A recovery that records its raised heads makes a crash right after it a no-op: the next
    recovery finds nothing more to raise."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("d", {"durability": "disk"}).wait
    node.engine.append("d", [{"data": i} for i in range(3)])
    await stop(node, "crash")
    node = await open_node(tmp_path, clock)
    raised = node.engine.topic_state("d").head_seq
    await stop(node, "crash")
    node = await open_node(tmp_path, clock)
    try:
        assert node.engine.topic_state("d").head_seq == raised
        assert diff_seqs(node.engine, "d") == [1, 2, 3]
    finally:
        node.close()


class NoSnapshots(FileSystem):
    """A disk that refuses to write segments and snapshots (as a full one would)."""

    def write_atomic(self, path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device", str(path))


async def test_heads_a_crash_raised_that_cannot_be_recorded_leave_the_wal_read_only(tmp_path: Path) -> None:
    """If recovery cannot record the raised heads, nothing may be written that a clean stop
    could later take back: the WAL opens read-only (reads work, writes get 503
    ``wal_read_only``), no ``CLEAN_STOP`` is written, and the next start raises them again."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("d", {"durability": "disk"}).wait
    node.engine.append("d", [{"data": i} for i in range(3)])
    await stop(node, "crash")

    node = await open_node(tmp_path, clock, fs=NoSnapshots())
    raised = node.engine.topic_state("d").head_seq
    assert raised > 3 and node.store.recovery_failed is not None
    assert diff_seqs(node.engine, "d") == [1, 2, 3]
    with pytest.raises(NotReady) as refused:
        node.engine.append("d", [{"data": "refused"}])
    assert refused.value.detail == {"wal_read_only": True}
    node.close()  # a clean stop, which writes no CLEAN_STOP on a read-only WAL

    node = await open_node(tmp_path, clock)
    try:
        assert node.engine.topic_state("d").head_seq == raised
        assert diff_seqs(node.engine, "d") == [1, 2, 3]
        assert node.engine.append("d", [{"data": "next"}]).first_seq == raised + 1
    finally:
        node.close()


async def test_a_reader_of_the_old_topic_learns_of_a_recreation_after_a_crash(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    e.append("r", [{"data": i} for i in range(10)])
    await e.delete_topic("r").wait
    e.append("r", [{"data": "new"}])  # seq 1 of the new topic
    before = e.diff("r", from_seq=5, limit=10)  # a reader of the old topic, at cursor 5
    assert before.tombstone is not None and before.tombstone.reason == "recreated"
    assert diff_seqs(e, "r") == [1]
    await stop(node, "crash")

    node = await open_node(tmp_path, clock)
    try:
        e = node.engine
        assert e.topic_state("r").head_seq > 10  # raised past every cursor of the old topic
        page = e.diff("r", from_seq=5, limit=10)
        assert page.tombstone is not None and page.tombstone.reason == "recreated"
        assert page.count == 1  # record 1 of the new topic
    finally:
        node.close()


@pytest.mark.parametrize("how", STOPS)
async def test_the_recreation_stays_known_across_later_restarts(tmp_path: Path, how: str) -> None:
    """The skipped range the first recovery recorded (in the checkpoint of the raised heads)
    survives whatever ends the next runs, and a second raise adds to it."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    e.append("r", [{"data": i} for i in range(10)])
    await e.delete_topic("r").wait
    e.append("r", [{"data": "new"}])
    await stop(node, "crash")
    node = await open_node(tmp_path, clock)
    raised = node.engine.topic_state("r").head_seq
    node.engine.append("r", [{"data": "newer"}])
    await stop(node, how)

    node = await open_node(tmp_path, clock)
    try:
        e = node.engine
        assert e.topic_state("r").head_seq >= raised + 1
        page = e.diff("r", from_seq=5, limit=10)
        assert page.tombstone is not None and page.tombstone.reason == "recreated"
        assert page.count == 2  # both records of the new topic
        current = e.diff("r", from_seq=raised, limit=10)  # a reader of the new topic
        assert current.tombstone is None and current.count == 1
    finally:
        node.close()
