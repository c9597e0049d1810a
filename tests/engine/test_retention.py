"""§0.10 caps/TTL and the §3.3 tombstone rules (evict_floor vs earliest_seq)."""

from __future__ import annotations

from topics_engine import Engine, ManualClock
from topics_engine.errors import TopicFull
from topics_engine.topic import Topic

from .conftest import data, fields, raises_topics, read_all, recs, seqs


def _topic(engine: Engine, name: str) -> Topic:
    return engine._topics[name]  # white-box: evict_floor is deliberately not on the wire


def _sizes(engine: Engine, name: str) -> list[int]:
    """Each live record's retained size (records.py: its wire length plus a separator)."""
    topic = _topic(engine, name)
    return [r.size for seq in topic.live_seqs() if (r := topic.record(seq)) is not None]


# -- cap_records -------------------------------------------------------------------------------


def test_cap_records_discard_old_evicts_oldest_with_cap_tombstone(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 3})
    engine.append("t", data(10))
    s = engine.topic_state("t")
    assert (s.count, s.earliest_seq, s.head_seq) == (3, 8, 10)
    page = engine.diff("t", from_seq=2)
    ts = page.tombstone
    assert ts is not None
    assert fields(ts) == {
        "gap_from": 3,
        "gap_to": 7,
        "reason": "cap",
        "missed_estimate": 5,
        "earliest_seq": 8,
        "head_seq": 10,
    }
    assert seqs(page) == [8, 9, 10]  # records resume at earliest_seq
    assert page.caught_up


def test_tombstone_is_emitted_once_then_reading_continues(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 5})
    engine.append("t", data(20))
    got, pages = read_all(engine, "t", from_seq=1, limit=2)
    assert [p.tombstone is not None for p in pages] == [True, False, False]
    assert [r["$seq"] for r in got] == [16, 17, 18, 19, 20]


def test_cursor_at_evict_floor_minus_one_gets_no_tombstone(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2})
    engine.append("t", data(5))  # 1..3 evicted, evict_floor = 4
    assert engine.diff("t", from_seq=3).tombstone is None
    assert engine.diff("t", from_seq=2).tombstone is not None


def test_from_seq_zero_reads_from_earliest_and_learns_of_the_loss(engine: Engine) -> None:
    """Reading "from earliest" still learns that history was lost to cap/TTL."""
    engine.put_topic("t", {"cap_records": 2})
    engine.append("t", data(5))
    page = engine.diff("t", from_seq=0)
    assert page.tombstone is not None
    assert fields(page.tombstone) == {
        "gap_from": 1,
        "gap_to": 3,
        "reason": "cap",
        "missed_estimate": 3,
        "earliest_seq": 4,
        "head_seq": 5,
    }
    assert seqs(page) == [4, 5]


def test_from_seq_zero_over_a_deleted_prefix_is_silent(engine: Engine) -> None:
    engine.append("t", data(5))
    engine.delete_records("t", before_seq=4)
    page = engine.diff("t", from_seq=0)
    assert page.tombstone is None and seqs(page) == [4, 5]


def test_from_seq_zero_learns_of_ttl_loss(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"ttl_ms": 100})
    engine.append("t", data(3))
    clock.advance(101)
    engine.append("t", data(1))
    page = engine.diff("t", from_seq=0)
    assert page.tombstone is not None and page.tombstone.reason == "ttl"
    assert (page.tombstone.gap_from, page.tombstone.gap_to) == (1, 3)
    assert seqs(page) == [4]


def test_cap_discard_old_inline_on_batch_larger_than_cap(engine: Engine) -> None:
    r = engine.append("t", data(6), config={"cap_records": 4})
    assert (r.first_seq, r.last_seq, r.created) == (1, 6, True)
    assert seqs(engine.diff("t")) == [3, 4, 5, 6]


def test_tightened_cap_via_put_evicts(engine: Engine) -> None:
    engine.append("t", data(10))
    engine.put_topic("t", {"cap_records": 4})
    s = engine.topic_state("t")
    assert (s.count, s.earliest_seq) == (4, 7)
    ts = engine.diff("t", from_seq=1).tombstone
    assert ts is not None and (ts.reason, ts.gap_from, ts.gap_to, ts.missed_estimate) == ("cap", 2, 6, 5)


def test_loosened_cap_keeps_more(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2})
    engine.append("t", data(3))
    engine.put_topic("t", {"cap_records": 0})  # 0 = unbounded
    engine.append("t", data(5))
    assert engine.topic_state("t").count == 7


def test_discard_reject_never_evicts(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2, "discard": "reject"})
    engine.append("t", data(2))
    with raises_topics(TopicFull, "topic_full") as caught:
        engine.append("t", data(1))
    assert caught[0].detail is not None and caught[0].detail["cap_records"] == 2
    assert seqs(engine.diff("t")) == [1, 2]
    assert _topic(engine, "t").evict_floor == 1


def test_discard_reject_room_freed_by_delete(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2, "discard": "reject"})
    engine.append("t", data(2))
    engine.delete_records("t", before_seq=2)
    assert engine.append("t", data(1)).first_seq == 3
    assert engine.diff("t", from_seq=0).tombstone is None


def test_discard_reject_room_freed_by_ttl(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"cap_records": 2, "discard": "reject", "ttl_ms": 1000})
    engine.append("t", data(2))
    clock.advance(1001)
    assert engine.append("t", data(2)).first_seq == 3
    ts = engine.diff("t", from_seq=1).tombstone
    assert ts is not None and ts.reason == "ttl"


def test_switching_reject_to_old_applies_cap(engine: Engine) -> None:
    engine.put_topic("t", {"discard": "reject"})
    engine.append("t", data(5))
    engine.put_topic("t", {"cap_records": 3})  # reject: tightened cap refuses writes, keeps records
    with raises_topics(TopicFull, "topic_full"):
        engine.append("t", data(1))
    engine.put_topic("t", {"discard": "old"})
    assert engine.topic_state("t").count == 3


# -- cap_bytes ---------------------------------------------------------------------------------


def test_cap_bytes_discard_old(engine: Engine) -> None:
    engine.append("probe", data(1))
    size = _sizes(engine, "probe")[0]  # every record below has the same encoded size
    engine.put_topic("t", {"cap_bytes": size * 3 + size // 2})
    engine.append("t", data(6))
    s = engine.topic_state("t")
    assert s.count == 3 and s.bytes == 3 * size <= s.config.cap_bytes
    ts = engine.diff("t", from_seq=1).tombstone
    assert ts is not None and (ts.reason, ts.gap_to, ts.missed_estimate) == ("cap", 3, 2)


def test_cap_bytes_counts_data_meta_and_framing(engine: Engine) -> None:
    engine.append("t", [{"data": "x", "meta": {"m": 1}, "tag": "tag", "node": "n"}])
    size = _sizes(engine, "t")[0]
    assert size > len(b'"x"') + len(b'{"m":1}')
    assert engine.topic_state("t").bytes == size


def test_cap_bytes_reject(engine: Engine) -> None:
    engine.append("probe", data(1))
    size = _sizes(engine, "probe")[0]
    engine.put_topic("t", {"cap_bytes": size * 2, "discard": "reject"})
    engine.append("t", data(2))
    with raises_topics(TopicFull, "topic_full") as caught:
        engine.append("t", data(1))
    assert caught[0].detail is not None and caught[0].detail["cap_bytes"] == size * 2
    assert engine.topic_state("t").count == 2


def test_whichever_cap_is_hit_first(engine: Engine) -> None:
    engine.append("probe", data(1))
    size = _sizes(engine, "probe")[0]
    engine.put_topic("a", {"cap_records": 2, "cap_bytes": size * 10})
    engine.put_topic("b", {"cap_records": 10, "cap_bytes": size * 2})
    for name in ("a", "b"):
        engine.append(name, data(5))
        assert engine.topic_state(name).count == 2


def test_oversized_newest_record_is_kept_under_discard_old(engine: Engine) -> None:
    """Documented decision (topic.py): the record just acknowledged is never evicted."""
    engine.put_topic("t", {"cap_bytes": 10})
    engine.append("t", data(2))
    engine.append("t", [{"data": "x" * 100}])
    s = engine.topic_state("t")
    assert (s.count, s.earliest_seq, s.head_seq) == (1, 3, 3)
    assert [r["data"] for r in recs(engine.diff("t"))] == ["x" * 100]


# -- ttl ---------------------------------------------------------------------------------------


def test_ttl_expiry_is_a_read_time_filter(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"ttl_ms": 1000})
    engine.append("t", data(2))
    clock.advance(500)
    engine.append("t", data(2, start=2))
    clock.advance(499)  # first batch is 999 ms old
    assert seqs(engine.diff("t")) == [1, 2, 3, 4]
    clock.advance(2)  # first batch 1001 ms old, second 501 ms
    assert seqs(engine.diff("t")) == [3, 4]
    s = engine.topic_state("t")
    assert (s.count, s.earliest_seq, s.head_seq) == (2, 3, 4)
    clock.advance(10_000)
    s = engine.topic_state("t")
    assert (s.count, s.earliest_seq, s.bytes) == (0, 5, 0)


def test_ttl_tombstone(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"ttl_ms": 100})
    engine.append("t", data(3))
    clock.advance(200)
    engine.append("t", data(2))
    page = engine.diff("t", from_seq=1)
    assert page.tombstone is not None
    assert fields(page.tombstone) == {
        "gap_from": 2,
        "gap_to": 3,
        "reason": "ttl",
        "missed_estimate": 2,
        "earliest_seq": 4,
        "head_seq": 5,
    }
    assert seqs(page) == [4, 5]


def test_everything_expired_tombstone_and_caught_up(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"ttl_ms": 100})
    engine.append("t", data(4))
    clock.advance(101)
    page = engine.diff("t", from_seq=1)
    ts = page.tombstone
    assert ts is not None and (ts.gap_from, ts.gap_to, ts.reason, ts.earliest_seq) == (2, 4, "ttl", 5)
    assert recs(page) == [] and page.next_from_seq == 4 and page.caught_up


def test_tightened_ttl_via_put(engine: Engine, clock: ManualClock) -> None:
    engine.append("t", data(2))
    clock.advance(5000)
    engine.append("t", data(1))
    engine.put_topic("t", {"ttl_ms": 1000})
    assert seqs(engine.diff("t")) == [3]


def test_mixed_reason(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"cap_records": 3, "ttl_ms": 1000})
    engine.append("t", data(5))  # 1,2 evicted by cap
    clock.advance(1001)  # 3,4,5 expire
    engine.append("t", data(2))
    ts = engine.diff("t", from_seq=1).tombstone
    assert ts is not None
    assert (ts.reason, ts.gap_from, ts.gap_to, ts.missed_estimate) == ("mixed", 2, 5, 4)
    # a reader that only missed the TTL losses hears "ttl"
    later = engine.diff("t", from_seq=2).tombstone
    assert later is not None and (later.reason, later.missed_estimate) == ("ttl", 3)


def test_cap_after_ttl_reason(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"cap_records": 2, "ttl_ms": 1000})
    engine.append("t", data(2))
    clock.advance(1001)  # 1,2 expire
    engine.append("t", data(4))  # 3,4 evicted by cap
    assert engine.diff("t", from_seq=3).tombstone.reason == "cap"  # type: ignore[union-attr]
    assert engine.diff("t", from_seq=1).tombstone.reason == "mixed"  # type: ignore[union-attr]


# -- evict_floor vs deletes --------------------------------------------------------------------


def test_purely_deleted_gap_is_silent(engine: Engine) -> None:
    engine.append("t", data(10))
    engine.delete_records("t", before_seq=6)
    assert engine.topic_state("t").earliest_seq == 6
    page = engine.diff("t", from_seq=2)
    assert page.tombstone is None
    assert seqs(page) == [6, 7, 8, 9, 10]
    assert _topic(engine, "t").evict_floor == 1


def test_deleted_then_evicted_gap_covers_both(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 5})
    engine.append("t", data(5))
    engine.delete_records("t", before_seq=4)  # 1..3 deleted (silent)
    engine.append("t", data(5))  # 6..10: 4,5 evicted by cap
    t = _topic(engine, "t")
    assert t.evict_floor == 6 and t.earliest_seq == 6
    ts = engine.diff("t", from_seq=1).tombstone
    assert ts is not None
    assert (ts.gap_from, ts.gap_to, ts.reason) == (2, 5, "cap")
    assert 2 <= ts.missed_estimate <= ts.gap_to - ts.gap_from + 1


def test_cursor_between_evict_floor_and_earliest_is_silent(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 8})
    engine.append("t", data(10))  # 1,2 evicted: evict_floor 3
    engine.delete_records("t", before_seq=7)  # 3..6 deleted: earliest 7
    t = _topic(engine, "t")
    assert (t.evict_floor, t.earliest_seq) == (3, 7)
    for cursor in (2, 3, 4, 5, 6):
        assert engine.diff("t", from_seq=cursor).tombstone is None, cursor
    ts = engine.diff("t", from_seq=1).tombstone
    assert ts is not None and (ts.gap_from, ts.gap_to, ts.reason, ts.missed_estimate) == (2, 6, "cap", 1)


def test_evict_floor_never_passes_earliest(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"cap_records": 3, "ttl_ms": 50})
    for i in range(30):
        engine.append("t", data(i % 4 + 1))
        if i % 3 == 0:
            engine.delete_records("t", match=None, before_seq=engine.topic_state("t").head_seq - 1)
        clock.advance(20)
        t = _topic(engine, "t")
        engine.topic_state("t")
        assert t.evict_floor <= t.earliest_seq


def test_missed_estimate_is_approximate_but_bounded(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2})
    engine.append("t", [{"data": i, "tag": "odd" if i % 2 else "even"} for i in range(10)])
    engine.put_topic("t", {"cap_records": 0})
    engine.append("t", [{"data": i, "tag": "odd" if i % 2 else "even"} for i in range(10)])
    engine.delete_records("t", match="odd")
    engine.put_topic("t", {"cap_records": 1})
    # live before the squeeze: 9, 11, 13, 15, 17, 19 (the "odd"-tagged even seqs were deleted)
    t = _topic(engine, "t")
    assert (t.evict_floor, t.earliest_seq) == (18, 19)  # 18 was deleted, not evicted
    ts = engine.diff("t", from_seq=12).tombstone
    assert ts is not None and ts.reason == "cap"
    assert (ts.gap_from, ts.gap_to) == (13, 18)
    truly_missed = 3  # 13, 15, 17 were evicted; 14, 16, 18 were deleted
    assert truly_missed <= ts.missed_estimate <= ts.gap_to - ts.gap_from + 1


def test_ttl_boundary_follows_older_than(engine: Engine, clock: ManualClock) -> None:
    """§0.10: records *older than* ttl_ms expire — one exactly ttl_ms old is still delivered."""
    engine.put_topic("t", {"ttl_ms": 100})
    engine.append("t", data(1))
    clock.advance(100)
    assert seqs(engine.diff("t")) == [1]
    clock.advance(1)
    assert seqs(engine.diff("t")) == []


def test_raising_ttl_does_not_resurrect_expired_records(engine: Engine, clock: ManualClock) -> None:
    """A record already past the old TTL stays expired when a PUT lengthens the TTL."""
    engine.put_topic("t", {"ttl_ms": 100})
    engine.append("t", data(1))
    clock.advance(150)
    engine.put_topic("t", {"ttl_ms": 1000})
    assert seqs(engine.diff("t")) == []
    assert engine.diff("t", from_seq=0).earliest_seq == 2
