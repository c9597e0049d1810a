"""Delete flags of sealed records: a checkpoint flips each deleted record's flag once, and a
segment is dropped only when every record in it is gone."""

from __future__ import annotations

import asyncio
from pathlib import Path

from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir.sealing import take_hot
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.segments import SegmentStore, decode_segment, read_segment_index

from ..fault.faulty_fs import FaultyFileSystem
from .harness import T0, crash, diff_seqs, flush, open_node


async def test_two_deletes_of_one_sealed_record_flip_it_once(tmp_path: Path) -> None:
    """Two ``fsync`` deletes planned before either is applied both name the record; the
    checkpoint must not count it twice, or the segment looks wholly deleted and is dropped
    with its live record."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    await e.put_topic("t", {"durability": "fsync"}).wait
    await e.append("t", [{"data": 0}, {"data": 1}]).wait
    await flush(node)
    await node.store.checkpoint()  # records 1 and 2 in one sealed segment
    first = e.delete_records("t", before_seq=2)
    second = e.delete_records("t", before_seq=2)  # planned before the first is applied
    assert first.deleted == second.deleted == 1
    await first.wait
    await second.wait
    await flush(node)
    await node.store.checkpoint()
    crash(node)

    node = await open_node(tmp_path, clock)
    try:
        assert diff_seqs(node.engine, "t") == [2]
    finally:
        node.close()


async def test_a_checkpoint_between_two_deletes_of_one_sealed_record(tmp_path: Path) -> None:
    """Two ``fsync`` deletes of one sealed record planned before either is applied, in two
    fsync groups, with a checkpoint cut between their applies: the first checkpoint flips the
    record, the second delete (which removed nothing) must not hand it to the next one, and the
    segment must not count the flag twice — or the segment looks wholly deleted and is dropped
    with its other, live record (lost at the next start)."""
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    e = node.engine
    await e.put_topic("t", {"durability": "fsync"}).wait
    await e.append("t", [{"data": 0}, {"data": 1}]).wait
    await flush(node)
    await node.store.checkpoint()  # records 1 and 2 in one sealed segment

    fs.hold_syncs()
    first = e.delete_records("t", before_seq=2)
    assert await asyncio.to_thread(fs.sync_blocked.wait, 5.0), "the WAL never reached a sync"
    second = e.delete_records("t", before_seq=2)  # planned before the first is applied
    assert first.deleted == second.deleted == 1
    await asyncio.sleep(0)  # the second frame is written while the first group's sync is held
    fs.allow_syncs(1)  # the first group only: the first delete applies, the second does not
    await first.wait
    assert second.wait is not None and not second.wait.done()
    checkpoint = asyncio.ensure_future(node.store.checkpoint())
    await asyncio.sleep(0)  # its cut is taken: it flips record 1 (the first delete's report)
    fs.release_syncs()
    await second.wait
    await checkpoint
    await flush(node)
    await node.store.checkpoint()  # the second delete's report, if any, reaches this one
    crash(node)

    node = await open_node(tmp_path, clock)
    try:
        assert diff_seqs(node.engine, "t") == [2]
    finally:
        node.close()


def test_a_segment_counts_each_flag_once(tmp_path: Path) -> None:
    """``SegmentStore.flip_deleted`` is idempotent per record, whatever its caller reports: a
    flag already set (in this call, an earlier one, or on disk when the segment was loaded) is
    not counted again, so the segment stays while any record in it is live."""
    engine = Engine(ManualClock(T0), Limits())
    engine.append("t", [{"data": 0}, {"data": 1}, {"data": 2}])
    batches, flags = take_hot(engine._topics["t"])
    store = SegmentStore(FileSystem(), tmp_path)
    segment = store.seal(1, batches, flags)
    store.flip_deleted(1, [1, 1])
    store.flip_deleted(1, [1])
    assert segment.deleted == 1
    assert store.live_segments(1, 1) == [segment]

    loaded = decode_segment(segment.path.read_bytes())
    assert loaded.dead == b"\x01\x00\x00"
    again = SegmentStore(FileSystem(), tmp_path)
    again.add(1, read_segment_index(FileSystem(), segment.path).segment)
    again.flip_deleted(1, [1, 2])
    assert [s.deleted for s in again.live_segments(1, 1)] == [2]
