"""Cold records: sealed chunks leave memory, and every use of records reads them back from their
segment files — through the bounded cache, and without blocking the event loop when asked
(``storage.coldstore``, ``topics_engine.coldreads``).

The engine suite runs over ``wal-cold`` too (every read path exercised cold); these tests pin
what that mode cannot show by itself: that records really left memory, that a strict read loads
off the calling thread, and that recovery reads indexes, not records."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from topics_engine import Engine, Limits, ManualClock, Queues
from topics_engine.coldreads import (
    ColdChunkLost,
    ColdRead,
    examine_cold,
    read_strictly,
    read_without_blocking,
)
from topics_engine.datadir.directory import DataDirectory
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.recordlog import MERGE_MAX_BYTES
from topics_engine.storage import coldstore
from topics_engine.storage.fs import FileSystem

from .conftest import T0, read_all, recs

TINY = SegmentPolicy(max_events=8, max_bytes=4 << 10, max_age_ms=60_000)


class DiskOnly(FileSystem):
    """A page cache that never holds a segment's bytes: every cold read is a disk read."""

    def pread_cached(self, path: Path, offset: int, length: int, into: bytearray) -> memoryview | None:
        return None


class Node:
    def __init__(
        self,
        path: Path,
        clock: ManualClock,
        cache_bytes: int = 64 << 10,
        fs: FileSystem | None = None,
        policy: SegmentPolicy = TINY,
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine = Engine(clock, Limits())
        self.datadir = DataDirectory(
            path, fs, segment_policy=policy, cache_bytes=cache_bytes, inline_segments=True
        )
        self.datadir.lock()
        for _ in self.datadir.recover(self.engine):
            pass
        self.datadir.open(self.engine, self.loop)

    def checkpoint(self) -> None:
        self.loop.run_until_complete(self.datadir.checkpoint())

    def close(self) -> None:
        self.checkpoint()
        self.datadir.close()
        self.loop.close()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path / "data", ManualClock(T0))
    yield n
    n.datadir.close()
    n.loop.close()


def _fill(engine: Engine, n: int, topic: str = "t") -> None:
    for i in range(n):
        engine.append(topic, [{"data": {"i": i, "pad": "x" * 100}, "tag": f"k{i % 5}"}])


def test_sealed_records_leave_memory_and_read_back(node: Node) -> None:
    _fill(node.engine, 400)
    topic = node.engine.get("t")
    hot_records, hot_bytes = topic.log.resident()
    assert hot_records < 16  # only the unsealed tail
    chunks = topic.log._chunks
    assert topic.log.cold_chunks == sum(not ch.is_hot for ch in chunks) > 0
    assert topic.count == 400 and topic.bytes > 400 * 100
    got, _ = read_all(node.engine, "t", limit=50)
    assert [r["data"]["i"] for r in got] == list(range(400))
    cold = node.datadir.cold
    assert cold.loads > 0
    assert cold.cache.bytes <= cold.cache.capacity
    node.engine.put_topic("t", {"cap_records": 10})  # evicts cold chunks from the front
    assert topic.log.cold_chunks == sum(not ch.is_hot for ch in chunks) > 0


def test_a_strict_read_loads_off_the_calling_thread(tmp_path: Path) -> None:
    node = Node(tmp_path / "data", ManualClock(T0), fs=DiskOnly())
    try:
        _fill(node.engine, 200)
        engine, cold = node.engine, node.datadir.cold
        cold.cache = type(cold.cache)(0)  # nothing cached: every sealed chunk is on disk only
        with pytest.raises(ColdRead):
            read_strictly(lambda: engine.diff("t", from_seq=0, limit=100))
        blocking = cold.blocking_loads
        result = node.loop.run_until_complete(
            read_without_blocking(lambda: engine.diff("t", from_seq=0, limit=100))
        )
        assert [r["data"]["i"] for r in recs(result)] == list(range(100))
        assert cold.blocking_loads == blocking  # loaded on a reader thread, pinned, read again
        assert cold.loads > 0 and cold.page_cache_loads == 0
    finally:
        node.close()


def test_a_strict_read_takes_what_the_page_cache_holds_at_once(node: Node) -> None:
    _fill(node.engine, 200)
    engine, cold = node.engine, node.datadir.cold
    cold.cache = type(cold.cache)(0)
    result = read_strictly(lambda: engine.diff("t", from_seq=0, limit=100))  # no ColdRead
    assert [r["data"]["i"] for r in recs(result)] == list(range(100))
    assert cold.page_cache_loads > 0 and cold.blocking_loads == 0


def test_deletes_by_seq_and_evictions_of_cold_records_read_nothing(node: Node) -> None:
    engine, cold = node.engine, node.datadir.cold
    _fill(engine, 300)
    cold.cache = type(cold.cache)(0)
    loads = cold.loads
    assert engine.delete_records("t", before_seq=11).deleted == 10
    assert engine.delete_records("t", match=["tag", "Eq", "absent"]).deleted == 0  # summaries
    engine.put_topic("t", {"cap_records": 100})
    topic = engine.get("t")
    assert topic.count == 100
    assert cold.loads == loads  # counting, sizing, eviction and tag summaries use resident data
    got, _ = read_all(engine, "t")
    assert [r["data"]["i"] for r in got] == list(range(200, 300))


def test_a_tag_delete_reads_only_the_cold_chunks_that_may_match(node: Node) -> None:
    engine, cold = node.engine, node.datadir.cold
    for b in range(25):  # chunks of 8 records; tag "rare" in the first chunk only
        engine.append(
            "t", [{"data": i, "tag": "rare" if i < 4 else f"k{i % 5}"} for i in range(b * 8, b * 8 + 8)]
        )
    topic = engine.get("t")
    assert len(topic.tags._seqs) <= 5  # the tag index holds only the unsealed tail's tags
    cold.cache = type(cold.cache)(0)
    loads = cold.loads
    assert engine.delete_records("t", match=["tag", "Eq", "rare"]).deleted == 4
    assert cold.loads - loads == 1  # the one chunk whose summary lists "rare"
    assert engine.delete_records("t", match=["tag", "Glob", "k*"]).deleted == 196
    assert topic.count == 0


def test_sealing_joins_small_writes_into_big_cold_chunks(tmp_path: Path) -> None:
    """Writes too big for the append-time merge (3 records of ~2 KB) are sealed as chunks of up
    to MERGE_MAX_BYTES: the cold index then costs per 64 KiB, not per write. Deletes made before
    the seal, ``$ts`` lookups and recovery see the same records as before."""
    clock = ManualClock(T0)
    node = Node(tmp_path / "data", clock, policy=SegmentPolicy())
    engine = node.engine
    for w in range(200):
        clock.advance(1)  # a $ts run per write
        engine.append(
            "t", [{"data": {"i": 3 * w + j, "pad": "x" * 2000}, "tag": f"k{w % 7}"} for j in range(3)]
        )
    assert engine.delete_records("t", match=["tag", "Eq", "k3"]).deleted == 3 * 29
    engine.put_topic("t", {"cap_records": 580})  # 20 records evicted from the front
    before, _ = read_all(engine, "t", limit=100)
    from_ts = [r["$seq"] for r in recs(engine.diff("t", from_ts=T0 + 150, limit=1))]
    topic = engine.get("t")
    writes = len(topic.log._chunks)
    node.checkpoint()
    chunks = topic.log._chunks
    assert all(not ch.is_hot for ch in chunks)
    assert len(chunks) <= 21 < writes  # ~1.2 MB in chunks of up to 64 KiB, not one per write
    assert all(ch.ends[-1] < MERGE_MAX_BYTES for ch in chunks)
    assert read_all(engine, "t", limit=100)[0] == before
    assert [r["$seq"] for r in recs(engine.diff("t", from_ts=T0 + 150, limit=1))] == from_ts
    engine.put_topic("t", {"ttl_ms": 60_000})
    clock.advance(60_000 - 100)  # records with $ts below T0 + 100 expire (by their $ts runs)
    expected = [r for r in before if r["$ts"] >= T0 + 100]
    assert read_all(engine, "t", limit=100)[0] == expected
    node.close()
    again = Node(tmp_path / "data", clock, policy=SegmentPolicy())
    try:
        assert read_all(again.engine, "t", limit=100)[0] == expected
        assert len(again.engine.get("t").log._chunks) <= 21
    finally:
        again.close()


def test_records_deleted_and_evicted_while_their_segment_is_written_stay_gone(tmp_path: Path) -> None:
    """Between a seal's export and its chunks going cold (the segment thread writes the joined
    batches meanwhile), deletes and a front eviction change the hot chunks: the joined cold
    chunk keeps both, and its tags leave the tag index."""
    clock = ManualClock(T0)
    loop = asyncio.new_event_loop()
    engine = Engine(clock, Limits())
    store = DataDirectory(tmp_path / "data", FileSystem(), segment_policy=SegmentPolicy())
    store.lock()
    for _ in store.recover(engine):
        pass
    store.open(engine, loop)
    try:
        for w in range(60):
            clock.advance(1)
            engine.append(
                "t", [{"data": {"i": 3 * w + j, "pad": "x" * 2000}, "tag": f"k{w % 7}"} for j in range(3)]
            )
        topic = engine.get("t")
        assert store.sealer is not None
        sealing = store.sealer.seal(topic)
        assert sealing is not None
        assert engine.delete_records("t", match=["tag", "Eq", "k3"]).deleted == 3 * 9
        engine.put_topic("t", {"cap_records": 130})  # whole chunks and part of one evicted
        expected = read_all(engine, "t", limit=100)[0]
        assert len(expected) == 130
        loop.run_until_complete(sealing)
        loop.run_until_complete(asyncio.sleep(0))  # the release runs on the loop
        chunks = topic.log._chunks
        assert chunks and all(not ch.is_hot for ch in chunks)
        assert len(chunks) < 60 / 3
        assert topic.count == 130 and read_all(engine, "t", limit=100)[0] == expected
        assert not topic.tags._seqs or all(not seqs for seqs in topic.tags._seqs.values())
        assert engine.delete_records("t", match=["tag", "Eq", "k4"]).deleted == len(
            [r for r in expected if r["data"]["i"] // 3 % 7 == 4]
        )
    finally:
        store.close()
        loop.close()


def test_recovery_reads_segment_indexes_not_records(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    first = Node(tmp_path / "data", clock)
    _fill(first.engine, 500)
    first.engine.delete_records("t", match=["tag", "Eq", "k2"])
    first.close()
    again = Node(tmp_path / "data", clock)
    try:
        topic = again.engine.get("t")
        assert topic.count == 400
        assert again.datadir.cold.loads == 0  # nothing but indexes was read
        assert topic.log.resident()[0] == 0
        got, _ = read_all(again.engine, "t", limit=64)
        assert [r["data"]["i"] for r in got] == [i for i in range(500) if i % 5 != 2]
        assert again.engine.delete_records("t", match=["tag", "Eq", "k3"]).deleted == 100
    finally:
        again.close()


def test_cold_jobs_are_claimed(node: Node) -> None:
    engine = node.engine
    engine.put_topic("q", {"type": "queue"})
    for i in range(100):
        engine.append("q", [{"data": i}])
    node.datadir.cold.cache = type(node.datadir.cold.cache)(0)
    queues = Queues(engine)
    claimed = queues.claim("q", "n1", 40)
    assert [j.record.data_json for j in claimed.jobs] == [str(i).encode() for i in range(40)]


def test_a_topic_created_during_a_checkpoint_keeps_its_segments(node: Node) -> None:
    """A topic created (and sealed) between a checkpoint's cut and its file work is not the
    checkpoint's to drop: its chunks are cold in those segments."""
    _fill(node.engine, 20, "a")

    async def write_meanwhile() -> None:
        await asyncio.sleep(0)  # the checkpoint has cut and waits for the WAL
        _fill(node.engine, 40, "b")

    async def both() -> None:
        await asyncio.gather(node.datadir.checkpoint(), write_meanwhile())

    node.loop.run_until_complete(both())
    node.datadir.cold.cache = type(node.datadir.cold.cache)(0)
    got, _ = read_all(node.engine, "b")
    assert [r["data"]["i"] for r in got] == list(range(40))


def test_a_lost_segment_file_fails_the_read_instead_of_retrying_forever(tmp_path: Path) -> None:
    node = Node(tmp_path / "data", ManualClock(T0), fs=DiskOnly())
    try:
        _fill(node.engine, 40)
        cold = node.datadir.cold
        cold.cache = type(cold.cache)(0)
        for path in (tmp_path / "data" / "segments").glob("*/*.seg"):
            path.unlink()
        engine = node.engine

        async def read() -> object:
            return await asyncio.wait_for(read_without_blocking(lambda: engine.diff("t", limit=10)), 5)

        with pytest.raises(ColdChunkLost):
            node.loop.run_until_complete(read())
    finally:
        node.datadir.close()
        node.loop.close()


def test_a_tag_delete_finds_hot_records_older_than_a_chunk_gone_cold(node: Node) -> None:
    """Records an ephemeral topic wrote before it switched to disk stay in the tag index until
    a seal takes them with the disk ones (the switch's own checkpoint does not run here: the
    event loop never does), and leave it with their chunks' range: a tag delete finds them all."""
    engine = node.engine
    engine.put_topic("t", {"durability": "ephemeral"})
    for i in range(5):
        engine.append("t", [{"data": i, "tag": "k"}])
    node.checkpoint()
    engine.put_topic("t", {"durability": "disk"})
    for i in range(20):
        engine.append("t", [{"data": 100 + i, "tag": "k"}])
    assert engine.delete_records("t", match=["tag", "Eq", "k"]).deleted == 25
    assert engine.get("t").count == 0


def test_a_tag_delete_keeps_the_chunks_it_found_cached_while_it_loads_the_rest(tmp_path: Path) -> None:
    """Loading the missing chunks of a group can evict the ones that were cached (a small
    cache): they are pinned with the group, so none is taken for lost."""
    node = Node(tmp_path / "data", ManualClock(T0), cache_bytes=0, fs=DiskOnly())
    try:
        engine, cold = node.engine, node.datadir.cold
        for b in range(4):  # chunks of 8 records, every one tagged "k"
            engine.append(
                "t", [{"data": {"i": i, "pad": "x" * 200}, "tag": "k"} for i in range(b * 8, b * 8 + 8)]
            )
        node.checkpoint()
        plan = engine.plan_records_delete("t", match=["tag", "Eq", "k"])
        assert len(plan.cold) == 4
        first = plan.cold[0][1]
        cold.cache = type(cold.cache)(3000)  # room for about one chunk
        cold.cache.put(first.key, cold.batch(first), 2000)  # the first chunk cached, the others not
        node.loop.run_until_complete(examine_cold(plan))
        assert len(plan.seqs()) == 32
    finally:
        node.close()


def test_a_churning_cache_gives_freed_pages_back_at_most_once_a_second(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches leaving a full cache are freed; once a quarter of its capacity has left since
    the last trim, one ``heap.trim`` runs on a reader thread — and not again within a second.
    A cache everything fits in frees nothing and never trims; batches too big for the cache
    count as let go."""
    trims_run: list[str] = []
    monkeypatch.setattr(coldstore.heap, "trim", lambda: trims_run.append(threading.current_thread().name))
    now = [1000.0]
    engine, cold = node.engine, node.datadir.cold
    cold.monotonic = lambda: now[0]
    _fill(engine, 400)

    def ran() -> None:
        assert cold._trim is not None
        cold._trim.result(timeout=30)

    cold.cache = type(cold.cache)(64 << 20)
    for _ in range(3):
        read_all(engine, "t", limit=50)
        now[0] += 10.0
    assert cold.loads > 0 and cold.cache.stats.freed_bytes == 0 and cold.trims == 0

    cold.cache = type(cold.cache)(8 << 10)  # a few chunks: every read pass churns it
    read_all(engine, "t", limit=50)
    assert cold.cache.stats.freed_bytes >= cold.cache.capacity  # it churned
    assert cold.trims == 1  # the clock stood still: once
    ran()
    assert trims_run and trims_run[0].startswith("topics-reads")
    now[0] += 1.0
    read_all(engine, "t", limit=50)
    assert cold.trims == 2
    ran()

    cold.cache = type(cold.cache)(0)  # nothing is cached: every batch read is let go
    cold._let_go_at_trim = 0
    now[0] += 1.0
    read_all(engine, "t", limit=50)
    assert cold.cache.stats.freed_bytes == 0 and cold.trims == 3
    ran()
    assert len(trims_run) == 3


def test_free_pages_decay_a_while_after_the_last_trim(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever freed them, free heap pages go back once no trim ran for ``DECAY_S``: the data
    directory's periodic call queues one then, on a reader thread, and not before."""
    trims_run: list[str] = []
    monkeypatch.setattr(coldstore.heap, "trim", lambda: trims_run.append(threading.current_thread().name))
    now = [1000.0]
    cold = node.datadir.cold
    cold.monotonic = lambda: now[0]
    node.datadir.decay_heap()  # none ran yet
    assert cold.trims == 1 and cold._trim is not None
    cold._trim.result(timeout=30)
    for step in (1.0, 5.0, coldstore.DECAY_S - 0.5):
        now[0] = 1000.0 + step
        node.datadir.decay_heap()
        assert cold.trims == 1
    now[0] = 1000.0 + coldstore.DECAY_S
    node.datadir.decay_heap()
    assert cold.trims == 2
    cold._trim.result(timeout=30)
    assert len(trims_run) == 2 and all(name.startswith("topics-reads") for name in trims_run)
