"""Seqs after a crash (docs/DECISIONS.md, "Seqs are never reused"). A topic acked before
durability resumes above every seq it may have handed out, so after a crash its head jumps over a
reserved range — and that range costs nothing: no memory per skipped seq, and a diff crosses it in
O(1) (it never eats the scan bound). ``fsync`` topics, whose acks all follow an fsync, resume at
their exact replayed head."""

from __future__ import annotations

from pathlib import Path

from topics_engine import ManualClock
from topics_engine.datadir.walpersistence import RESERVE_MIN

from ..engine.conftest import seqs
from .harness import T0, Node, flush, open_node


def crash(node: Node) -> None:
    """Stop like a kill -9 after the last group commit: the WAL ends without CLEAN_STOP."""
    assert node.store.wal is not None and node.store.sealer is not None
    node.store.sealer.close()
    node.store.wal.close()
    assert node.store._lock_fd is not None
    node.store.fs.close(node.store._lock_fd)
    node.store._lock_fd = None


async def test_a_crash_skips_the_reserved_range_at_no_cost(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("d", {"durability": "disk"}).wait
    node.engine.append("d", [{"data": i} for i in range(3)])
    await flush(node)
    crash(node)

    node = await open_node(tmp_path, clock)
    try:
        e = node.engine
        topic = e.topic("d")
        assert topic is not None
        # resumed above the reservation, which a quiet topic keeps small
        assert 3 < topic.head_seq <= 3 + RESERVE_MIN
        assert len(topic.log._chunks) == 1  # the skipped range holds nothing
        r = e.append("d", [{"data": "after"}])
        assert r.first_seq == topic.head_seq == e.topic_state("d").head_seq
        page = e.diff("d", from_seq=0, limit=10)
        assert seqs(page) == [1, 2, 3, r.first_seq] and page.caught_up
        across = e.diff("d", from_seq=3, limit=10)
        assert seqs(across) == [r.first_seq] and across.scanned == 1  # the gap was not scanned
        assert e.diff("d", from_seq=4, limit=10).scanned == 1
    finally:
        node.close()


async def test_a_busy_topic_reserves_what_it_writes_in_a_tenth_of_a_second(tmp_path: Path) -> None:
    node = await open_node(tmp_path, ManualClock(T0))
    try:
        await node.engine.put_topic("busy", {"durability": "disk"}).wait
        for _ in range(40):
            node.engine.append("busy", [{"data": 0}] * 1000)
        topic = node.engine.topic("busy")
        assert topic is not None
        assert node.store.persistence is not None
        ahead = node.store.persistence.reservation(topic).submitted - topic.reserved_seq
        assert RESERVE_MIN < ahead <= 1 << 16  # grew with the rate, within the bound
    finally:
        node.close()


async def test_fsync_topics_resume_at_their_exact_head(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("f", {"durability": "fsync"}).wait
    for i in range(3):
        await node.engine.append("f", [{"data": i}]).wait
    crash(node)
    node = await open_node(tmp_path, clock)
    try:
        assert node.engine.topic_state("f").head_seq == 3
        assert node.engine.append("f", [{"data": 3}]).first_seq == 4
    finally:
        node.close()


async def test_many_topics_after_a_crash_cost_no_memory_per_skipped_seq(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    for i in range(200):
        node.engine.append(f"t{i}", [{"data": i}])
    await flush(node)
    crash(node)
    node = await open_node(tmp_path, clock)
    try:
        for i in range(200):
            topic = node.engine.topic(f"t{i}")
            assert topic is not None and 1 < topic.head_seq <= 1 + RESERVE_MIN
            assert len(topic.log._chunks) == 1 and topic.log._chunks[0].count == 1
    finally:
        node.close()
