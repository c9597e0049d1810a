"""Named consumers at engine level (an extension, issue 25): cursors the server keeps, and their lag.

The behaviour suite runs over every persistence (the ``engine`` fixture: in memory, the WAL,
the WAL with every record cold); the durable tests at the end restart an engine over a
:class:`DataDirectory` — WAL replay, or a checkpoint's snapshot — and check that a committed
cursor comes back exactly, that consumers go with their topic, and that an unknown ``CONSUMER``
frame kind is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.consumers import Consumers, ConsumerState
from topics_engine.errors import (
    ConsumerNotFound,
    CursorBehind,
    CursorBeyondHead,
    InvalidRequest,
    NoSuchConsumer,
    Throttled,
    TopicNotFound,
)
from topics_engine.storage import formats
from topics_engine.storage.formats import ConsumerPayload
from topics_engine.storage.frames import FrameType
from topics_engine.storage.versions import UnsupportedFormat

from ..storage.harness import MODES, Harness, flush, open_node
from .conftest import data, raises_topics, read_all, seqs, settle


@pytest.fixture
def consumers(engine: Engine) -> Consumers:
    return Consumers(engine)


def state(c: Consumers, topic: str, name: str) -> tuple[int, int, int]:
    """``(cursor, head_seq, lag)`` of a consumer."""
    s = c.state(topic, name)
    return s.cursor, s.head_seq, s.lag


# -- creating --------------------------------------------------------------------------------------


def test_a_new_consumer_has_read_nothing(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(5))
    put = consumers.put("t", "c1")
    settle(engine)
    assert put.created
    assert put.state == ConsumerState("c1", "t", 0, 5, engine.clock.now_ms())
    assert put.state.lag == 5
    # a consumer of an empty topic starts before its first record too
    engine.put_topic("empty", {})
    consumers.put("empty", "c")
    assert state(consumers, "empty", "c") == (0, 0, 0)


def test_nothing_read_yet_is_just_before_the_first_live_record(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(10))
    engine.delete_records("t", before_seq=4)
    settle(engine)
    consumers.put("t", "late")
    assert state(consumers, "t", "late") == (3, 10, 7)
    assert seqs(engine.diff("t", from_seq=consumers.cursor("t", "late"))) == list(range(4, 11))


def test_from_seq_and_from_ts_place_the_cursor(
    engine: Engine, consumers: Consumers, clock: ManualClock
) -> None:
    t0 = clock.now_ms()
    for i in range(4):
        engine.append("t", data(3, 3 * i))  # seqs 3i+1 .. 3i+3 at t0 + 1000 i
        clock.advance(1000)
    settle(engine)
    consumers.put("t", "seq", from_seq=7)
    assert state(consumers, "t", "seq") == (7, 12, 5)
    consumers.put("t", "ts", from_ts=t0 + 2000)  # the third write's records, seqs 7..9, and on
    assert consumers.cursor("t", "ts") == 6
    consumers.put("t", "between", from_ts=t0 + 1500)  # none stamped at 1500: from the 3rd write
    assert consumers.cursor("t", "between") == 6
    consumers.put("t", "old", from_ts=0)
    assert consumers.cursor("t", "old") == 0
    consumers.put("t", "future", from_ts=t0 + 10_000)  # nothing that recent: from the head
    assert state(consumers, "t", "future") == (12, 12, 0)
    engine.delete_records("t", before_seq=8)  # seqs 1-7: the third write's first record gone
    settle(engine)
    consumers.put("t", "deleted", from_ts=t0 + 2000)
    # seq 8 is the oldest live record: the cursor before it (a real one, not the diff's 0)
    assert consumers.cursor("t", "deleted") == 7
    assert seqs(engine.diff("t", from_seq=0)) == [8, 9, 10, 11, 12]  # deletes leave no tombstone
    consumers.put("t", "later", from_ts=t0 + 3000)
    assert consumers.cursor("t", "later") == 9


def test_from_ts_crosses_many_chunks(engine: Engine, consumers: Consumers, clock: ManualClock) -> None:
    t0 = clock.now_ms()
    for i in range(200):  # 200 single-record writes (chunks merge in tiers), one ms apart
        engine.append("t", [{"data": i}])
        clock.advance(1)
    settle(engine)
    for k in (0, 1, 15, 16, 17, 100, 199):
        consumers.put("t", f"c{k}", from_ts=t0 + k)
        assert consumers.cursor("t", f"c{k}") == k, k
    consumers.put("t", "late", from_ts=t0 + 200)
    assert consumers.cursor("t", "late") == 200


def test_a_cursor_above_the_head_is_refused(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(3))
    settle(engine)
    with raises_topics(CursorBeyondHead, "cursor_beyond_head") as caught:
        consumers.put("t", "c", from_seq=4)
    assert caught[0].detail == {"topic": "t", "consumer": "c", "field": "from_seq", "seq": 4, "head_seq": 3}
    assert consumers.count == 0
    with raises_topics(ConsumerNotFound, "consumer_not_found"):
        consumers.state("t", "c")


def test_from_seq_and_from_ts_exclude_each_other(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(3))
    with raises_topics(InvalidRequest, "invalid_request"):
        consumers.put("t", "c", from_seq=1, from_ts=1)


def test_a_consumer_from_a_time_is_not_charged_with_what_was_evicted_before_it(
    engine: Engine, consumers: Consumers, clock: ManualClock
) -> None:
    """A cap evicted records older than ``from_ts``: the consumer starts before the first
    record at or after it, and its reads report no loss (review of issue 25: it stored the
    diff's 0, and every read from it met the cap's tombstone)."""
    engine.put_topic("capped", {"cap_records": 3})
    engine.append("capped", data(3))
    clock.advance(1000)
    when = clock.now_ms()
    engine.append("capped", data(3, 3))  # evicts seqs 1-3, all stamped before `when`
    settle(engine)
    consumers.put("capped", "c", from_ts=when)
    assert state(consumers, "capped", "c") == (3, 6, 3)
    page = engine.diff("capped", from_seq=consumers.cursor("capped", "c"))
    assert page.tombstone is None and seqs(page) == [4, 5, 6]


def test_a_put_leaves_an_existing_consumer_alone_unless_forced(
    engine: Engine, consumers: Consumers, clock: ManualClock
) -> None:
    engine.append("t", data(10))
    settle(engine)
    consumers.put("t", "c", from_seq=2)
    created_at = clock.now_ms()
    clock.advance(50)
    again = consumers.put("t", "c", from_seq=8)
    assert not again.created  # answered once its creation is durable (a pending frame's too)
    assert again.state == ConsumerState("c", "t", 2, 10, created_at)
    moved = consumers.put("t", "c", from_seq=8, force=True)
    settle(engine)
    assert not moved.created
    assert moved.state == ConsumerState("c", "t", 8, 10, clock.now_ms())
    reset = consumers.put("t", "c", force=True)  # forced with no position: nothing read yet
    assert reset.state.cursor == 0
    assert consumers.count == 1


def test_a_missing_topic_is_topic_not_found(engine: Engine, consumers: Consumers) -> None:
    for call in (
        lambda: consumers.put("nope", "c"),
        lambda: consumers.state("nope", "c"),
        lambda: consumers.commit("nope", "c", 1),
        lambda: consumers.delete("nope", "c"),
        lambda: consumers.page("nope"),
    ):
        with raises_topics(TopicNotFound, "topic_not_found"):
            call()


def test_names_follow_the_topic_name_rule(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(1))
    for bad in ("", "-x", "a b", "x" * 256, "é"):
        with raises_topics(InvalidRequest, "invalid_request") as caught:
            consumers.put("t", bad)
        assert caught[0].detail == {"field": "consumer", "value": bad}
    consumers.put("t", "A.b_c:d-" + "x" * 247)


# -- committing ------------------------------------------------------------------------------------


def test_commits_move_the_cursor_forward(engine: Engine, consumers: Consumers, clock: ManualClock) -> None:
    engine.append("t", data(10))
    settle(engine)
    consumers.put("t", "c")
    clock.advance(10)
    done = consumers.commit("t", "c", 4)
    settle(engine)
    assert done.state == ConsumerState("c", "t", 4, 10, clock.now_ms())
    assert done.state.lag == 6
    clock.advance(10)
    same = consumers.commit("t", "c", 4)  # idempotent: renews committed_at_ms only
    assert same.state == ConsumerState("c", "t", 4, 10, clock.now_ms())
    consumers.commit("t", "c", 10)
    assert state(consumers, "t", "c") == (10, 10, 0)
    engine.append("t", data(2))
    settle(engine)
    assert state(consumers, "t", "c") == (10, 12, 2)
    assert seqs(engine.diff("t", from_seq=consumers.cursor("t", "c"))) == [11, 12]


def test_a_commit_behind_the_cursor_needs_force(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(10))
    settle(engine)
    consumers.put("t", "c", from_seq=6)
    with raises_topics(CursorBehind, "cursor_behind") as caught:
        consumers.commit("t", "c", 5)
    assert caught[0].detail == {
        "topic": "t",
        "consumer": "c",
        "field": "seq",
        "cursor": 6,
        "seq": 5,
        "head_seq": 10,
    }
    assert consumers.cursor("t", "c") == 6
    assert consumers.commit("t", "c", 2, force=True).state.cursor == 2


def test_a_commit_above_the_head_is_refused_even_with_force(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(3))
    settle(engine)
    consumers.put("t", "c", from_seq=1)
    for force in (False, True):
        with raises_topics(CursorBeyondHead, "cursor_beyond_head") as caught:
            consumers.commit("t", "c", 4, force=force)
        assert caught[0].detail == {
            "topic": "t",
            "consumer": "c",
            "field": "seq",
            "seq": 4,
            "head_seq": 3,
            "cursor": 1,
        }
    assert consumers.cursor("t", "c") == 1


def test_a_commit_of_a_missing_consumer_says_how_to_create_it(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(3))
    with raises_topics(ConsumerNotFound, "consumer_not_found") as caught:
        consumers.commit("t", "ghost", 1)
    assert caught[0].detail == {"topic": "t", "consumer": "ghost"}
    assert "PUT /v0/topics/t/consumers/ghost" in caught[0].message


def test_a_consumer_reads_past_lost_records_with_a_tombstone(engine: Engine, consumers: Consumers) -> None:
    engine.put_topic("capped", {"cap_records": 5})
    engine.append("capped", data(5))
    settle(engine)
    consumers.put("capped", "slow")
    engine.append("capped", data(5, 5))  # the first five evicted before the consumer read them
    settle(engine)
    page = engine.diff("capped", from_seq=consumers.cursor("capped", "slow"))
    assert page.tombstone is not None and page.tombstone.reason == "cap"
    assert seqs(page) == [6, 7, 8, 9, 10]


# -- listing and deleting --------------------------------------------------------------------------


def test_pages_list_a_topics_consumers_by_name(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(4))
    engine.append("other", data(1))
    settle(engine)
    names = ["b", "a", "a.2", "c:x", "a.1"]
    for i, name in enumerate(names):
        consumers.put("t", name, from_seq=i)
    consumers.put("other", "zz")
    first = consumers.page("t", page_size=2)
    assert [s.consumer for s in first.consumers] == ["a", "a.1"]
    assert first.next_cursor is not None
    rest = consumers.page("t", page_size=10, cursor=first.next_cursor)
    assert [(s.consumer, s.cursor, s.lag) for s in rest.consumers] == [
        ("a.2", 2, 2),
        ("b", 0, 4),
        ("c:x", 3, 1),
    ]
    assert rest.next_cursor is None
    assert [s.consumer for s in consumers.page("t", prefix="a.").consumers] == ["a.1", "a.2"]
    assert consumers.page("t", prefix="zz").consumers == []
    assert consumers.count == 6


def test_delete_is_idempotent(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(2))
    consumers.put("t", "c")
    gone = consumers.delete("t", "c")
    settle(engine)
    assert gone.deleted
    assert not consumers.delete("t", "c").deleted
    assert consumers.count == 0
    with raises_topics(ConsumerNotFound, "consumer_not_found"):
        consumers.state("t", "c")


def test_consumers_go_with_their_topic(engine: Engine, consumers: Consumers) -> None:
    engine.append("t", data(4))
    engine.append("u", data(1))
    consumers.put("t", "a", from_seq=3)
    consumers.put("t", "b")
    consumers.put("u", "a")
    assert consumers.count == 3
    engine.delete_topic("t")
    settle(engine)
    assert consumers.count == 1
    engine.append("t", data(2))  # recreated: starts with no consumer
    settle(engine)
    assert consumers.page("t").consumers == []
    with raises_topics(NoSuchConsumer, "no_such_consumer") as caught:
        consumers.cursor("t", "a")  # a read on its behalf: the topic is there, the consumer not
    assert caught[0].detail == {"topic": "t", "consumer": "a"}
    assert consumers.cursor("u", "a") == 0


def test_the_cap_counts_every_topics_consumers(engine: Engine) -> None:
    consumers = Consumers(engine, max_consumers=2)
    engine.append("t", data(1))
    engine.append("u", data(1))
    consumers.put("t", "a")
    consumers.put("u", "a")
    with raises_topics(Throttled, "throttled") as caught:
        consumers.put("t", "b")
    assert caught[0].detail == {"limit": "max_consumers", "max": 2}
    assert "TOPICS_MAX_CONSUMERS" in caught[0].message
    consumers.put("t", "a", force=True)  # not a new consumer: no room needed
    consumers.commit("t", "a", 1)
    consumers.delete("u", "a")
    consumers.put("t", "b")
    assert consumers.count == 2


def test_a_reader_resumes_from_the_commit(engine: Engine, consumers: Consumers) -> None:
    """What a consumer loop does: read from the committed cursor, commit what it handled."""
    engine.append("t", data(25))
    settle(engine)
    consumers.put("t", "worker")
    got: list[int] = []
    for _ in range(3):
        page = engine.diff("t", from_seq=consumers.cursor("t", "worker"), limit=10)
        got.extend(seqs(page))
        consumers.commit("t", "worker", page.next_from_seq)
    assert got == list(range(1, 26))
    assert state(consumers, "t", "worker") == (25, 25, 0)
    assert read_all(engine, "t", from_seq=consumers.cursor("t", "worker"))[0] == []


# -- durability ------------------------------------------------------------------------------------


@pytest.fixture(params=MODES)
async def h(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    harness = Harness(tmp_path / "data", request.param)
    await harness.start()
    yield harness
    harness.close()


def snapshot(engine: Engine) -> dict[str, list[tuple[str, int, int]]]:
    return {t.name: [(c.name, c.cursor, c.committed_at_ms) for c in t.consumers] for t in engine.topics()}


@pytest.mark.parametrize("durability", ["fsync", "disk", "memory", "ephemeral"])
async def test_consumers_survive_a_restart(h: Harness, durability: str) -> None:
    e = h.engine
    e.put_topic("t", {"durability": durability})
    e.append("t", data(10))
    c = Consumers(e)
    await flush(h.node)  # type: ignore[arg-type]
    c.put("t", "fresh")
    c.put("t", "moved", from_seq=2)
    h.clock.advance(5)
    c.commit("t", "moved", 7)
    c.put("t", "rewound", from_seq=9)
    c.commit("t", "rewound", 3, force=True)
    c.put("t", "gone")
    c.delete("t", "gone")
    before = snapshot(e)
    e = await h.restart()
    assert snapshot(e) == before
    assert Consumers(e).count == 3
    assert Consumers(e).state("t", "moved").cursor == 7


async def test_commits_after_a_checkpoint_replay_over_the_snapshot(h: Harness) -> None:
    e = h.engine
    e.append("t", data(10))
    c = Consumers(e)
    c.put("t", "c", from_seq=1)
    e = await h.restart("checkpoint")
    c = Consumers(e)
    c.commit("t", "c", 5)
    c.commit("t", "c", 2, force=True)  # the last frame wins: a rewind replays as a rewind
    c.put("t", "new")
    e = await h.restart("wal")
    assert snapshot(e) == {"t": [("c", 2, h.clock.now_ms()), ("new", 0, h.clock.now_ms())]}


async def test_a_deleted_topics_consumers_stay_gone(h: Harness) -> None:
    e = h.engine
    e.append("t", data(3))
    e.append("keep", data(3))
    c = Consumers(e)
    c.put("t", "a", from_seq=2)
    c.put("keep", "a", from_seq=1)
    e.delete_topic("t")
    e.append("t", data(1))  # recreated
    Consumers(e).put("t", "b")
    e = await h.restart()
    assert snapshot(e) == {"keep": [("a", 1, h.clock.now_ms())], "t": [("b", 0, h.clock.now_ms())]}
    assert Consumers(e).count == 2


async def test_an_unknown_consumer_frame_kind_is_refused(tmp_path: Path) -> None:
    clock = ManualClock()
    node = await open_node(tmp_path / "data", clock)
    node.engine.append("t", data(1))
    assert node.store.wal is not None
    payload = formats.encode_consumer_set(ConsumerPayload(1, "c", 1, 0))
    node.store.wal.submit(FrameType.CONSUMER, bytes((9,)) + payload[1:])
    await flush(node)
    node.close()
    with pytest.raises(UnsupportedFormat, match="CONSUMER frame kind 9"):
        await open_node(tmp_path / "data", clock)


def test_consumer_frames_round_trip() -> None:
    p = ConsumerPayload(7, "ünï:consumer", 2**64 - 1, -5)
    raw = formats.encode_consumer_set(p)
    assert formats.consumer_frame_kind(raw) == formats.CONSUMER_SET
    assert formats.decode_consumer(raw) == p
    raw = formats.encode_consumer_delete(7, "c")
    assert formats.consumer_frame_kind(raw) == formats.CONSUMER_DELETE
    assert formats.decode_consumer(raw) == ConsumerPayload(7, "c", 0, 0)
