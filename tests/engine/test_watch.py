"""§7 watch at the engine level (``topics_engine.watch``): options, sessions, subscriptions.

Covers, over both journals (the ``engine`` fixture):

- :meth:`WatchOptions.resolve` — defaults, clamps and checks (``0`` means the default);
- :meth:`Watches.create` / :meth:`Watches.subscribe` — starting cursors, unknown topics,
  ``lenient``, the topic bound, resume ``cursor`` s, all-or-nothing membership;
- :class:`Subscription` reading — wake-ups, batches bounded by ``limit`` / ``max_bytes``,
  ``caught-up`` per backlog → live transition, node filtering, tombstones, deleted
  topics, ``rewind`` (docs/DECISIONS.md, "Watch ids");
- :class:`WatchSession` resume tokens and the session registry — wids, TTL GC,
  takeover (docs/DECISIONS.md, "Takeover");
- ``consistency: "strong"``: on the WAL a ``disk`` topic's records reach a strong
  reader only once their group commit is fsynced (driven deterministically by ``settle``);
- :class:`SharedReads` — one scan per (topic version, cursor, options).

No sleeps: time is the fixture's :class:`ManualClock`; the WAL's completions run only inside
``settle``.
"""

from __future__ import annotations

import base64
import re
import zlib
from typing import Any

import orjson
import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import InvalidRequest, NotFound, TopicNotFound
from topics_engine.persistence import InMemory
from topics_engine.results import Tombstone
from topics_engine.topic import MAX_BATCH_BYTES, ZERO_MAX_BYTES
from topics_engine.watch import (
    DEFAULT_LIMIT,
    DEFAULT_MAX_BYTES,
    MAX_INLINE_CURSORS,
    SESSION_TTL_MS,
    CaughtUpEvent,
    RecordsEvent,
    SharedReads,
    Step,
    Subscription,
    TombstoneEvent,
    TopicDeletedEvent,
    TopicStart,
    Watches,
    WatchOptions,
    WatchSession,
    decode_cursors,
    encode_cursors,
)

from .conftest import data, raises_topics, record_bytes, settle

MAX_LIMIT = 1000
WID = re.compile(r"^wid_[A-Za-z0-9_-]{22,}$")
BASE64URL = re.compile(r"^[A-Za-z0-9_-]*$")


# -- helpers ---------------------------------------------------------------------------------------


class Waker:
    """A stream's wake callback that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


class Owner:
    """Stands for a stream owning a session."""


@pytest.fixture
def watches(engine: Engine) -> Watches:
    return Watches(engine)


def opts(**kw: Any) -> WatchOptions:
    return WatchOptions.resolve(MAX_LIMIT, **kw)


def decoded(event: RecordsEvent) -> list[dict[str, Any]]:
    """The record objects of a ``record`` event (its parts may or may not carry separators)."""
    parts = [bytes(p) for p in event.parts if bytes(p) != b","]
    out: list[dict[str, Any]] = orjson.loads(b"[" + b",".join(parts) + b"]")
    assert len(out) == event.count
    return out


def seqs_of(events: list[Any]) -> list[int]:
    return [r["$seq"] for ev in events if isinstance(ev, RecordsEvent) for r in decoded(ev)]


def kinds(events: list[Any]) -> list[str]:
    names = {
        RecordsEvent: "records",
        TombstoneEvent: "tombstone",
        CaughtUpEvent: "caught-up",
        TopicDeletedEvent: "topic-deleted",
    }
    return [names[type(ev)] for ev in events]


def step(sub: Subscription) -> Step:
    """Read the next dirty topic and commit it (the frames 'went out')."""
    s = sub.next_step()
    assert s is not None, "nothing was dirty"
    sub.commit(s)
    return s


def drain(sub: Subscription, max_steps: int = 1000) -> list[Any]:
    """Every event until nothing is dirty, committing each step."""
    events: list[Any] = []
    for _ in range(max_steps):
        s = sub.next_step()
        if s is None:
            return events
        events.extend(s.events)
        sub.commit(s)
    raise AssertionError("the subscription never settled")


def attached(
    watches: Watches, topics: dict[str, TopicStart], options: WatchOptions | None = None
) -> tuple[WatchSession, Waker]:
    session = watches.create(topics, options or opts())
    wake = Waker()
    watches.open(session, Owner(), wake)
    return session, wake


def is_wal(engine: Engine) -> bool:
    return not isinstance(engine.persistence, InMemory)


# -- WatchOptions.resolve --------------------------------------------------------------------------


def test_resolve_defaults() -> None:
    got = WatchOptions.resolve(MAX_LIMIT)
    assert got == WatchOptions(
        nodes=None,
        limit=256,
        max_bytes=256 << 10,
        heartbeat_ms=15_000,
        include_meta=True,
        include_tags=False,
        include_data=True,
        strong=False,
    )
    assert (DEFAULT_LIMIT, DEFAULT_MAX_BYTES, ZERO_MAX_BYTES, MAX_BATCH_BYTES) == (
        256,
        262_144,
        1 << 20,
        8 << 20,
    )
    assert WatchOptions() == got  # the dataclass defaults are the contract's


@pytest.mark.parametrize(
    ("asked", "got"),
    [(None, 256), (0, 256), (-5, 256), (1, 1), (999, 999), (1000, 1000), (5000, 1000), (1e30, 1000)],
)
def test_resolve_limit_defaults_and_clamps(asked: Any, got: int) -> None:
    assert WatchOptions.resolve(MAX_LIMIT, limit=asked).limit == got


def test_resolve_default_limit_is_clamped_to_max_limit() -> None:
    assert WatchOptions.resolve(100).limit == 100
    assert WatchOptions.resolve(100, limit=0).limit == 100


@pytest.mark.parametrize(
    ("asked", "got"),
    [
        (None, 256 << 10),
        (0, 1 << 20),
        (-1, 1 << 20),
        (1, 1),
        (5 << 20, 5 << 20),
        (8 << 20, 8 << 20),
        ((8 << 20) + 1, 8 << 20),
        (10**12, 8 << 20),
    ],
)
def test_resolve_max_batch_bytes(asked: Any, got: int) -> None:
    assert WatchOptions.resolve(MAX_LIMIT, max_batch_bytes=asked).max_bytes == got


@pytest.mark.parametrize(
    ("asked", "got"),
    [
        (None, 15_000),
        (0, 1_000),
        (-7, 1_000),
        (999, 1_000),
        (1_000, 1_000),
        (30_000, 30_000),
        (60_000, 60_000),
        (60_001, 60_000),
        (10**9, 60_000),
    ],
)
def test_resolve_heartbeat_is_clamped(asked: Any, got: int) -> None:
    assert WatchOptions.resolve(MAX_LIMIT, heartbeat_ms=asked).heartbeat_ms == got


def test_resolve_include_flags() -> None:
    got = opts(include_meta=False, include_tags=True, include_data=False)
    assert (got.include_meta, got.include_tags, got.include_data) == (False, True, False)
    got = opts(include_meta=True, include_tags=False, include_data=True)
    assert (got.include_meta, got.include_tags, got.include_data) == (True, False, True)


@pytest.mark.parametrize(("asked", "strong"), [(None, False), ("eventual", False), ("strong", True)])
def test_resolve_consistency(asked: Any, strong: bool) -> None:
    assert opts(consistency=asked).strong is strong


@pytest.mark.parametrize("asked", ["STRONG", "", "linearizable", 1, True, ["strong"]])
def test_resolve_bad_consistency_is_400(asked: Any) -> None:
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        opts(consistency=asked)
    assert caught[0].detail == {"field": "consistency"}


@pytest.mark.parametrize("field", ["limit", "max_batch_bytes", "heartbeat_ms"])
@pytest.mark.parametrize("value", ["10", 1.5, True, [1]])
def test_resolve_non_integer_is_400(field: str, value: Any) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        opts(**{field: value})


@pytest.mark.parametrize(
    ("node", "nodes"),
    [(None, None), ("a", frozenset({"a"})), (["a", "b"], frozenset({"a", "b"})), ([], None)],
)
def test_resolve_node(node: Any, nodes: frozenset[str] | None) -> None:
    assert opts(node=node).nodes == nodes


@pytest.mark.parametrize("node", [5, ["a", 1], {"a": 1}])
def test_resolve_bad_node_is_400(node: Any) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        opts(node=node)


def test_read_options_carry_the_watch_options() -> None:
    o = opts(node="n", limit=7, max_batch_bytes=99, include_meta=False, include_tags=True, include_data=False)
    r = o.read_options(upto=42, max_scan=1234)
    assert (r.limit, r.nodes, r.max_bytes, r.max_scan, r.upto) == (7, frozenset({"n"}), 99, 1234, 42)
    assert (r.include_meta, r.include_tags, r.include_data) == (False, True, False)


# -- Watches.create / subscribe ---------------------------------------------------------------------


def test_create_positions_from_seq_and_tail(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(5))
    engine.append("b", data(3))
    engine.append("c", data(4))
    session = watches.create(
        {"a": TopicStart(2), "b": TopicStart(tail=True), "c": TopicStart(1, tail=True)}, opts()
    )
    assert session.sub.cursors() == {"a": 2, "b": 3, "c": 4}  # tail ignores from_seq
    assert {n: p.from_seq for n, p in session.sub.positions.items()} == {"a": 2, "b": 3, "c": 4}
    assert TopicStart().from_seq == 0 and TopicStart().tail is False
    assert len(watches) == 1 and watches.session(session.wid) is session


def test_create_unknown_topic_is_404_and_creates_nothing(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(1))
    with raises_topics(TopicNotFound, "topic_not_found"):
        watches.create({"a": TopicStart(), "nope": TopicStart()}, opts())
    assert len(watches) == 0
    assert engine.topic("nope") is None  # watching never auto-creates
    assert engine.hub.listener_count() == 0


def test_create_lenient_drops_unknown_topics(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(2))
    session = watches.create({"a": TopicStart(), "nope": TopicStart(5)}, opts(), lenient=True)
    assert session.sub.cursors() == {"a": 0}
    assert engine.topic("nope") is None


def test_create_bad_topic_name_is_400_even_lenient(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(1))
    for lenient in (False, True):
        with raises_topics(InvalidRequest, "invalid_request"):
            watches.create({"a": TopicStart(), "bad name!": TopicStart()}, opts(), lenient=lenient)
    assert len(watches) == 0


def test_create_at_most_max_topics(engine: Engine) -> None:
    watches = Watches(engine, max_topics=2)
    for name in ("a", "b", "c"):
        engine.append(name, data(1))
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        watches.create({n: TopicStart() for n in ("a", "b", "c")}, opts())
    assert caught[0].detail == {"field": "topics", "max": 2}
    # the bound counts what was asked for, before lenient drops anything
    with raises_topics(InvalidRequest, "invalid_request"):
        watches.create({n: TopicStart() for n in ("a", "b", "zz")}, opts(), lenient=True)
    assert len(watches) == 0
    assert watches.create({n: TopicStart() for n in ("a", "b")}, opts()).sub.cursors() == {"a": 0, "b": 0}


def test_create_needs_a_topic(watches: Watches) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        watches.create({}, opts())


@pytest.mark.parametrize("cursor", ["!!!", "not base64 at all", "~", "a=", "", "eyJhIjoxfQ\n"])
def test_create_cursor_outside_the_stream_id_alphabet_is_400(
    engine: Engine, watches: Watches, cursor: str
) -> None:
    engine.append("a", data(1))
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        watches.create({"a": TopicStart()}, opts(), cursor=cursor)
    assert caught[0].detail == {"field": "cursor"}
    assert len(watches) == 0


@pytest.mark.parametrize(
    "cursor",
    [
        "0",
        encode_cursors({"a": -1}),
        base64.urlsafe_b64encode(b"[1,2]").decode().rstrip("="),
        base64.urlsafe_b64encode(b'{"a":"1"}').decode().rstrip("="),
        "~" + "A" * 12,
    ],
)
def test_create_cursor_naming_no_position_is_404(engine: Engine, watches: Watches, cursor: str) -> None:
    """A stream id is opaque, like a wid: it names a position or not (docs/DECISIONS.md,
    "Opaque ids exist or not")."""
    engine.append("a", data(1))
    with raises_topics(NotFound, "not_found") as caught:
        watches.create({"a": TopicStart()}, opts(), cursor=cursor)
    assert caught[0].detail == {"field": "cursor"}
    assert len(watches) == 0


def test_create_cursor_overrides_named_topics_only(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(9))
    engine.append("b", data(9))
    cursor = encode_cursors({"a": 4, "zzz": 7})
    session = watches.create({"a": TopicStart(1), "b": TopicStart(tail=True)}, opts(), cursor=cursor)
    assert session.sub.cursors() == {"a": 4, "b": 9}  # zzz is not watched: not added
    assert engine.topic("zzz") is None


def test_subscribe_into_is_all_or_nothing(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(1))
    engine.append("b", data(1))
    session, _ = attached(watches, {"a": TopicStart()})
    sub = session.sub
    with raises_topics(TopicNotFound, "topic_not_found"):
        watches.subscribe({"b": TopicStart(), "nope": TopicStart()}, opts())
    assert list(sub.positions) == ["a"]
    assert engine.hub.listener_count("b") == 0


def test_adding_to_an_attached_subscription_follows_and_wakes(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(1))
    engine.append("b", data(2))
    session, wake = attached(watches, {"a": TopicStart()})
    drain(session.sub)
    before = wake.calls
    topic_b = engine.topic("b")
    assert topic_b is not None
    session.sub.add("b", topic_b, 0)
    assert wake.calls == before + 1
    assert engine.hub.listener_count("b") == 1
    assert seqs_of(drain(session.sub)) == [1, 2]


# -- subscriptions: wake-ups and batches ------------------------------------------------------------


def test_nothing_is_read_before_attach(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(3))
    session = watches.create({"a": TopicStart()}, opts())
    assert session.sub.next_step() is None
    engine.append("a", data(1))  # not followed yet: no listener
    assert engine.hub.listener_count("a") == 0
    assert session.sub.next_step() is None


def test_attach_marks_every_topic_dirty_and_wakes(engine: Engine, watches: Watches) -> None:
    for name in ("a", "b", "c"):
        engine.append(name, data(1))
    session = watches.create({n: TopicStart() for n in ("a", "b", "c")}, opts())
    wake = Waker()
    session.sub.attach(wake)
    assert wake.calls == 1
    assert list(session.sub.dirty) == ["a", "b", "c"]
    assert [engine.hub.listener_count(n) for n in ("a", "b", "c")] == [1, 1, 1]
    order = [step(session.sub).position.name for _ in range(3)]
    assert order == ["a", "b", "c"] and session.sub.next_step() is None


def test_empty_topic_announces_caught_up(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {})
    session, _ = attached(watches, {"t": TopicStart()})
    s = step(session.sub)
    assert s.events == [CaughtUpEvent("t", 0, 0)]
    assert s.live and not s.more and not s.ended


def test_batches_bounded_by_limit(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(10))
    session, _ = attached(watches, {"t": TopicStart()}, opts(limit=4))
    sub = session.sub
    s1 = step(sub)
    assert kinds(s1.events) == ["records"] and s1.more and not s1.live
    ev = s1.events[0]
    assert (ev.from_seq, ev.to_seq, ev.head_seq, ev.count, ev.cursor) == (0, 4, 10, 4, 4)
    assert [r["data"] for r in decoded(ev)] == [0, 1, 2, 3]
    assert sub.cursors() == {"t": 4} and "t" in sub.dirty  # more: still dirty
    s2 = step(sub)
    assert seqs_of(s2.events) == [5, 6, 7, 8] and s2.events[0].from_seq == 4
    s3 = step(sub)
    assert kinds(s3.events) == ["records", "caught-up"]
    assert seqs_of(s3.events) == [9, 10]
    assert s3.events[1] == CaughtUpEvent("t", 10, 10)
    assert s3.live and not s3.more
    assert sub.cursors() == {"t": 10} and sub.next_step() is None


def test_batches_bounded_by_max_bytes(engine: Engine, watches: Watches) -> None:
    engine.append("t", [{"data": "x" * 100} for _ in range(6)])
    sizes = [len(r) + 1 for r in record_bytes(engine.diff("t"))]  # each record plus its separator
    session, _ = attached(watches, {"t": TopicStart()}, opts(max_batch_bytes=sizes[0] + sizes[1]))
    got = [seqs_of(step(session.sub).events) for _ in range(3)]
    assert got == [[1, 2], [3, 4], [5, 6]]
    assert session.sub.cursors() == {"t": 6}


def test_max_bytes_always_delivers_one_record(engine: Engine, watches: Watches) -> None:
    engine.append("t", [{"data": "y" * 5000}, {"data": "z" * 5000}])
    session, _ = attached(watches, {"t": TopicStart()}, opts(max_batch_bytes=1))
    assert [seqs_of(step(session.sub).events) for _ in range(2)] == [[1], [2]]


def test_commit_advances_the_cursor(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(3))
    session, _ = attached(watches, {"t": TopicStart()})
    sub = session.sub
    s = sub.next_step()
    assert s is not None and s.cursor == 3
    assert sub.cursors() == {"t": 0}  # not committed yet: the frames have not gone out
    sub.commit(s)
    assert sub.cursors() == {"t": 3}


def test_append_wakes_through_the_hub(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(1))
    engine.append("other", data(1))
    session, wake = attached(watches, {"t": TopicStart()})
    drain(session.sub)
    calls = wake.calls
    engine.append("other", data(1))  # not watched
    assert wake.calls == calls and session.sub.next_step() is None
    engine.append("t", data(2, start=10))
    assert wake.calls == calls + 1
    assert list(session.sub.dirty) == ["t"]
    s = step(session.sub)
    assert [r["data"] for ev in s.events if isinstance(ev, RecordsEvent) for r in decoded(ev)] == [10, 11]


def test_detach_stops_wakeups(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(1))
    session, wake = attached(watches, {"t": TopicStart()})
    session.sub.detach()
    assert engine.hub.listener_count("t") == 0 and not session.sub.attached
    calls = wake.calls
    engine.append("t", data(1))
    assert wake.calls == calls


def test_caught_up_once_per_backlog_to_live_transition(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(3))
    session, _ = attached(watches, {"t": TopicStart()}, opts(limit=2))
    sub = session.sub
    assert kinds(drain(sub)) == ["records", "records", "caught-up"]
    # a wake-up with nothing new: no event at all, no second caught-up
    engine.hub.notify("t")
    s = step(sub)
    assert s.events == [] and s.live
    # live and a record arrives: delivered, still live, no caught-up
    engine.append("t", data(1))
    assert kinds(drain(sub)) == ["records"]
    # a backlog (more than one batch) and the reader catches up again: announced again
    engine.append("t", data(5))
    events = drain(sub)
    assert kinds(events) == ["records", "records", "records", "caught-up"]
    assert events[-1] == CaughtUpEvent("t", 9, 9)
    assert seqs_of(events) == [5, 6, 7, 8, 9]


def test_backlogged_topics_are_read_in_turn(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(4))
    engine.append("b", data(4))
    session, _ = attached(watches, {"a": TopicStart(), "b": TopicStart()}, opts(limit=2))
    order = [step(session.sub).position.name for _ in range(4)]
    assert order == ["a", "b", "a", "b"]
    assert session.sub.next_step() is None


def test_node_filter_skips_own_records_but_advances(engine: Engine, watches: Watches) -> None:
    engine.append("t", [{"data": 1}])
    engine.append("t", [{"data": 2}], node="me")
    engine.append("t", [{"data": 3}], node="other")
    engine.append("t", [{"data": 4}], node="me")  # the last one is our own
    session, _ = attached(watches, {"t": TopicStart()}, opts(node="me"))
    events = drain(session.sub)
    assert [r["data"] for ev in events if isinstance(ev, RecordsEvent) for r in decoded(ev)] == [1, 3]
    assert session.sub.cursors() == {"t": 4}  # past the skipped trailing record
    assert events[-1] == CaughtUpEvent("t", 4, 4)
    # a batch of only our own records: nothing delivered, the cursor still moves
    engine.append("t", data(2), node="me")
    s = step(session.sub)
    assert s.events == [] and s.cursor == 6 and session.sub.cursors() == {"t": 6}


def test_node_filter_needs_dedupe_node(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"dedupe_node": False})
    engine.append("t", [{"data": 1}], node="me")
    engine.append("t", [{"data": 2}], node="other")
    session, _ = attached(watches, {"t": TopicStart()}, opts(node="me"))
    assert seqs_of(drain(session.sub)) == [1, 2]


def test_include_flags_shape_the_records(engine: Engine, watches: Watches) -> None:
    engine.append("t", [{"data": {"k": 1}, "tag": "x:1", "meta": {"m": 1}}])
    full, _ = attached(watches, {"t": TopicStart()}, opts(include_tags=True))
    (rec,) = [r for ev in drain(full.sub) if isinstance(ev, RecordsEvent) for r in decoded(ev)]
    assert rec["$tag"] == "x:1" and rec["data"] == {"k": 1} and rec["meta"] == {"m": 1}
    bare, _ = attached(watches, {"t": TopicStart()}, opts(include_data=False, include_meta=False))
    (rec,) = [r for ev in drain(bare.sub) if isinstance(ev, RecordsEvent) for r in decoded(ev)]
    assert rec["$seq"] == 1 and "data" not in rec and "$tag" not in rec and "meta" not in rec


# -- tombstones (docs/DECISIONS.md, "Tombstones") ---------------------------------------------------


def test_first_read_after_attach_gets_from_seq_too_old(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"cap_records": 3})
    engine.append("t", data(5))  # 1, 2 evicted; earliest 3
    session, _ = attached(watches, {"t": TopicStart(0)})
    s = step(session.sub)
    assert kinds(s.events) == ["tombstone", "records", "caught-up"]
    stone = s.events[0]
    assert stone.topic == "t" and stone.cursor == 2  # the cursor moves to gap_to
    assert stone.tombstone == Tombstone(
        gap_from=1,  # c + 1
        gap_to=2,  # earliest - 1
        reason="from_seq_too_old",
        missed_estimate=2,
        earliest_seq=3,
        head_seq=5,
    )
    records = s.events[1]
    assert (records.from_seq, records.to_seq) == (2, 5)
    assert seqs_of(s.events) == [3, 4, 5]
    assert session.sub.cursors() == {"t": 5}


def test_loss_met_while_streaming_is_cap(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"cap_records": 3})
    engine.append("t", data(3))
    session, _ = attached(watches, {"t": TopicStart()})
    first = drain(session.sub)
    assert "tombstone" not in kinds(first) and session.sub.cursors() == {"t": 3}
    engine.append("t", data(5))  # 4..8; 3..5 lost to the cap, earliest 6
    events = drain(session.sub)
    assert kinds(events) == ["tombstone", "records"]
    stone = events[0].tombstone
    assert (stone.gap_from, stone.gap_to, stone.reason, stone.earliest_seq) == (4, 5, "cap", 6)
    assert seqs_of(events) == [6, 7, 8]


def test_reconnect_makes_the_next_tombstone_fresh_again(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"cap_records": 2})
    engine.append("t", data(2))
    session, _ = attached(watches, {"t": TopicStart()})
    owner = Owner()
    watches.open(session, owner, Waker())
    drain(session.sub)
    watches.close(session, owner)
    engine.append("t", data(4))  # 3..6; 3, 4 lost while nobody streamed
    watches.open(session, Owner(), Waker())
    events = drain(session.sub)
    assert kinds(events) == ["tombstone", "records", "caught-up"]
    assert events[0].tombstone.reason == "from_seq_too_old"
    assert (events[0].tombstone.gap_from, events[0].tombstone.gap_to) == (3, 4)


def test_ttl_loss_while_streaming(engine: Engine, watches: Watches, clock: ManualClock) -> None:
    engine.put_topic("t", {"ttl_ms": 100})
    engine.append("t", data(1))
    session, _ = attached(watches, {"t": TopicStart()})
    drain(session.sub)
    engine.append("t", data(2))  # 2, 3
    clock.advance(101)  # they expire before the reader got to them
    engine.append("t", data(1))  # 4
    events = drain(session.sub)
    assert kinds(events) == ["tombstone", "records"]
    stone = events[0].tombstone
    assert (stone.gap_from, stone.gap_to, stone.reason) == (2, 3, "ttl")
    assert seqs_of(events) == [4]


def test_deleted_records_give_no_tombstone(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(6))
    engine.delete_records("t", before_seq=4)
    session, _ = attached(watches, {"t": TopicStart(0)})
    events = drain(session.sub)
    assert kinds(events) == ["records", "caught-up"]
    assert seqs_of(events) == [4, 5, 6]
    # unread records deleted while streaming: skipped silently too
    engine.append("t", data(3))  # 7, 8, 9
    engine.delete_records("t", before_seq=9)
    events = drain(session.sub)
    assert kinds(events) == ["records"] and seqs_of(events) == [9]


# -- deleted topics -----------------------------------------------------------------------------------


def test_deleted_topic_ends_its_position(engine: Engine, watches: Watches) -> None:
    engine.append("gone", data(3))
    engine.append("kept", data(1))
    session, wake = attached(watches, {"gone": TopicStart(), "kept": TopicStart()})
    sub = session.sub
    drain(sub)
    calls = wake.calls
    engine.delete_topic("gone")
    assert wake.calls == calls + 1 and list(sub.dirty) == ["gone"]
    s = sub.next_step()
    assert s is not None
    assert s.events == [TopicDeletedEvent("gone", 3, 3)] and s.events[0].reason == "deleted"
    assert s.ended and not s.more
    assert "gone" in sub.positions  # until the frame went out
    sub.commit(s)
    assert sub.cursors() == {"kept": 1}
    assert engine.hub.listener_count("gone") == 0
    assert sub.next_step() is None
    engine.append("kept", data(1))  # the rest goes on
    assert seqs_of(drain(sub)) == [2]


def test_recreated_topic_is_not_followed(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(2))
    session, wake = attached(watches, {"t": TopicStart()})
    drain(session.sub)
    engine.delete_topic("t")
    engine.append("t", data(5))  # a new incarnation under the same name
    events = drain(session.sub)
    assert events == [TopicDeletedEvent("t", 2, 2)]
    calls = wake.calls
    engine.append("t", data(1))
    assert wake.calls == calls and session.sub.next_step() is None
    assert session.sub.cursors() == {}


# -- rewind (docs/DECISIONS.md, "Watch ids") ------------------------------------------------------------


def test_rewind_moves_back_only(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(10))
    session, _ = attached(watches, {"t": TopicStart()})
    sub = session.sub
    drain(sub)
    sub.rewind({"t": 20})  # forward: ignored
    assert sub.cursors() == {"t": 10} and sub.next_step() is None
    sub.rewind({"t": 10})  # same place: nothing to do
    assert sub.next_step() is None
    sub.rewind({"t": -1})  # nonsense: ignored
    assert sub.cursors() == {"t": 10} and sub.next_step() is None
    sub.rewind({"t": 6})
    assert sub.cursors() == {"t": 6}
    events = drain(sub)
    assert seqs_of(events) == [7, 8, 9, 10]
    assert kinds(events)[-1] == "caught-up"  # live again after the replay


def test_rewind_partial_map_rewinds_only_named_topics(engine: Engine, watches: Watches) -> None:
    for name in ("a", "b", "c"):
        engine.append(name, data(5))
    session, _ = attached(watches, {n: TopicStart() for n in ("a", "b", "c")})
    sub = session.sub
    drain(sub)
    sub.rewind({"b": 2, "unknown": 0})
    assert sub.cursors() == {"a": 5, "b": 2, "c": 5}
    assert list(sub.dirty) == ["b"]
    assert "unknown" not in sub.positions


# -- resume tokens (docs/DECISIONS.md, "Watch ids") -------------------------------------------------------


def test_event_id_inline_is_unpadded_base64url_json(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(5))
    engine.append("b.c:d-e", data(2))
    session = watches.create({"a": TopicStart(1), "b.c:d-e": TopicStart(tail=True)}, opts())
    token = session.event_id()
    assert "=" not in token and BASE64URL.match(token)
    padded = token + "=" * (-len(token) % 4)
    assert orjson.loads(base64.urlsafe_b64decode(padded)) == {"a": 1, "b.c:d-e": 2}
    assert decode_cursors(token) == {"a": 1, "b.c:d-e": 2} == session.resolve(token)


def test_event_id_override_leaves_the_cursors_alone(engine: Engine, watches: Watches) -> None:
    engine.append("a", data(5))
    engine.append("b", data(5))
    session = watches.create({"a": TopicStart(), "b": TopicStart()}, opts())
    assert decode_cursors(session.event_id(("a", 4))) == {"a": 4, "b": 0}
    assert session.sub.cursors() == {"a": 0, "b": 0}


@pytest.mark.parametrize("cursors", [{}, {"a": 1}, {"a": 0, "b": 2**63}, {"é-ü": 12345}])
def test_encode_decode_round_trip_without_padding(cursors: dict[str, int]) -> None:
    token = encode_cursors(cursors)
    assert "=" not in token and BASE64URL.match(token)
    assert decode_cursors(token) == cursors


@pytest.mark.parametrize(
    "value",
    [
        b'{"a":-1}',
        b'{"a":1.0}',
        b'{"a":true}',
        b'{"a":"1"}',
        b'{"a":null}',
        b'{"a":[1]}',
        b"[1]",
        b"1",
        b"null",
    ],
)
def test_decode_cursors_rejects_non_cursor_maps(value: bytes) -> None:
    token = base64.urlsafe_b64encode(value).rstrip(b"=").decode()
    assert decode_cursors(token) is None


@pytest.mark.parametrize("token", ["", "%%%", "a", "ab cd", "é", "eyJh"])
def test_decode_cursors_rejects_garbage(token: str) -> None:
    assert decode_cursors(token) is None


def test_encode_cursors_of_a_negative_cursor_does_not_decode() -> None:
    assert decode_cursors(encode_cursors({"a": -5})) is None


def test_many_topics_get_opaque_self_contained_tokens(engine: Engine, watches: Watches) -> None:
    names = [f"t{i:03d}" for i in range(MAX_INLINE_CURSORS + 1)]
    for name in names:
        engine.put_topic(name, {})
    inline = watches.create({n: TopicStart() for n in names[:MAX_INLINE_CURSORS]}, opts())
    assert decode_cursors(inline.event_id()) == {n: 0 for n in names[:MAX_INLINE_CURSORS]}
    session = watches.create({n: TopicStart() for n in names}, opts())
    first = session.event_id()
    second = session.event_id(("t000", 7))
    assert first.startswith("~") and second.startswith("~") and first != second
    assert "=" not in first
    assert session.resolve(first) == {n: 0 for n in names}
    assert session.resolve(second) == {**{n: 0 for n in names}, "t000": 7}
    # self-contained: another session (or none: after a restart) resolves it too
    assert decode_cursors(second) == session.resolve(second)
    assert session.resolve("~") is None
    assert session.resolve("~AAAA") is None
    assert session.resolve("garbage!") is None


def test_a_deflated_token_cannot_inflate_past_the_bound() -> None:
    bomb = b'{"a":' + b" " * (8 << 20) + b"1}"
    token = "~" + base64.urlsafe_b64encode(zlib.compress(bomb, 9)).rstrip(b"=").decode()
    assert len(token) < 20_000
    assert decode_cursors(token) is None


# -- sessions ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("wid", ["", "wid_" + "!" * 22, "wid/x", "a" * 257, "wid_abc\n"])
def test_a_segment_that_cannot_be_a_wid_is_400(watches: Watches, wid: str) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        watches.session(wid)


@pytest.mark.parametrize(
    "wid", ["wid_" + "A" * 22, "wid_doesnotexist", "wid_", "WID_" + "a" * 22, "nope", "a" * 256]
)
def test_a_wid_naming_no_session_is_404(watches: Watches, wid: str) -> None:
    """docs/DECISIONS.md, "Opaque ids exist or not": an opaque id names a live session or not,
    whatever its shape (the reference's conformance probe: GET /v0/watch/wid_doesnotexist is
    404)."""
    with raises_topics(NotFound, "not_found"):
        watches.session(wid)


def test_wids_are_unguessable_and_distinct(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(1))
    one = watches.create({"t": TopicStart()}, opts())
    two = watches.create({"t": TopicStart()}, opts())
    assert WID.match(one.wid) and WID.match(two.wid)
    assert one.wid != two.wid and len(watches) == 2
    assert watches.session(one.wid) is one and watches.session(two.wid) is two
    assert one.ttl_ms == SESSION_TTL_MS == 300_000


def test_idle_session_is_collected_after_its_ttl(engine: Engine, clock: ManualClock) -> None:
    watches = Watches(engine, session_ttl_ms=1000)
    engine.append("t", data(1))
    old = watches.create({"t": TopicStart()}, opts())
    clock.advance(999)
    new = watches.create({"t": TopicStart()}, opts())  # collects: old is 999 ms idle, kept
    assert len(watches) == 2
    clock.advance(1)
    watches.session(new.wid)  # collects on stream open: old is 1000 ms idle
    assert len(watches) == 1
    with raises_topics(NotFound, "not_found"):
        watches.session(old.wid)


def test_access_keeps_a_session_alive(engine: Engine, clock: ManualClock) -> None:
    watches = Watches(engine, session_ttl_ms=1000)
    engine.append("t", data(1))
    session = watches.create({"t": TopicStart()}, opts())
    for _ in range(5):
        clock.advance(999)
        assert watches.session(session.wid) is session
    assert watches.collect() == 0


def test_collect_counts_what_it_reclaims(engine: Engine, clock: ManualClock) -> None:
    watches = Watches(engine, session_ttl_ms=1000)
    engine.append("t", data(1))
    for _ in range(3):
        watches.create({"t": TopicStart()}, opts())
    clock.advance(1000)
    assert watches.collect() == 3 and len(watches) == 0


def test_owned_session_is_never_collected(engine: Engine, clock: ManualClock) -> None:
    watches = Watches(engine, session_ttl_ms=1000)
    engine.append("t", data(1))
    session = watches.create({"t": TopicStart()}, opts())
    owner = Owner()
    assert watches.open(session, owner, Waker()) is None
    clock.advance(50_000)
    watches.create({"t": TopicStart()}, opts())
    assert watches.collect() == 0
    assert watches.session(session.wid) is session and session.owner is owner
    assert engine.hub.listener_count("t") == 1


def test_closed_session_is_collected_a_ttl_after_close(engine: Engine, clock: ManualClock) -> None:
    watches = Watches(engine, session_ttl_ms=1000)
    engine.append("t", data(1))
    session = watches.create({"t": TopicStart()}, opts())
    owner = Owner()
    watches.open(session, owner, Waker())
    clock.advance(5000)
    watches.close(session, owner)
    assert session.owner is None and not session.sub.attached
    assert engine.hub.listener_count("t") == 0
    clock.advance(999)
    assert watches.collect() == 0 and watches.session(session.wid) is session
    clock.advance(1000)  # 1000 ms since that last access
    assert watches.collect() == 1
    with raises_topics(NotFound, "not_found"):
        watches.session(session.wid)


def test_open_takes_over_and_returns_the_previous_owner(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"cap_records": 2})
    engine.append("t", data(4))
    session = watches.create({"t": TopicStart()}, opts())
    first, second = Owner(), Owner()
    wake1, wake2 = Waker(), Waker()
    assert watches.open(session, first, wake1) is None
    assert kinds(drain(session.sub)) == ["tombstone", "records", "caught-up"]
    assert watches.open(session, second, wake2) is first  # takeover: the older stream is returned
    assert session.owner is second and wake2.calls == 1
    assert engine.hub.listener_count("t") == 1  # followed once, not twice
    # the new stream reads afresh: caught-up announced again
    assert kinds(drain(session.sub)) == ["caught-up"]
    engine.append("t", data(1))
    assert wake2.calls == 2 and wake1.calls == 1  # only the current stream is woken
    # the superseded stream ending must not detach its successor
    watches.close(session, first)
    assert session.owner is second and session.sub.attached
    assert engine.hub.listener_count("t") == 1
    assert watches.open(session, first, Waker()) is second


# -- consistency: strong (docs/DECISIONS.md, "Strong watches") -------------------------------------------


def test_strong_reads_only_fsynced_disk_records(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"durability": "disk"})
    settle(engine)
    strong, strong_wake = attached(watches, {"t": TopicStart()}, opts(consistency="strong"))
    eventual, _ = attached(watches, {"t": TopicStart()}, opts())
    assert engine.strong_watchers(engine.topic("t")) == 1
    drain(strong.sub)
    drain(eventual.sub)
    engine.append("t", data(3))
    assert seqs_of(drain(eventual.sub)) == [1, 2, 3]  # eventual: as soon as it is in the WAL buffer
    if is_wal(engine):
        s = strong.sub.next_step()
        assert s is not None and s.events == [] and s.cursor == 0  # not fsynced yet
        strong.sub.commit(s)
        assert engine.strong_head(engine.topic("t")) == 0
        calls = strong_wake.calls
        settle(engine)  # the group commit is fsynced
        assert strong_wake.calls > calls and "t" in strong.sub.dirty
    assert engine.strong_head(engine.topic("t")) == 3
    events = drain(strong.sub)
    assert seqs_of(events) == [1, 2, 3]
    assert strong.sub.cursors() == {"t": 3}


def test_strong_watcher_barriers_records_written_before_it(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(2))  # lazily created disk topic, written before anyone watched strongly
    session, wake = attached(watches, {"t": TopicStart()}, opts(consistency="strong"))
    if is_wal(engine):
        events = drain(session.sub)
        assert seqs_of(events) == []
        calls = wake.calls
        settle(engine)
        assert wake.calls > calls
    events = drain(session.sub)
    assert seqs_of(events) == [1, 2]
    assert session.sub.cursors() == {"t": 2}


def test_strong_watcher_count_follows_attach_and_detach(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(1))
    topic = engine.topic("t")
    assert topic is not None
    session = watches.create({"t": TopicStart()}, opts(consistency="strong"))
    assert engine.strong_watchers(topic) == 0  # not streaming yet
    owner = Owner()
    watches.open(session, owner, Waker())
    assert engine.strong_watchers(topic) == 1
    watches.open(session, Owner(), Waker())  # takeover: still one watcher
    assert engine.strong_watchers(topic) == 1
    watches.close(session, session.owner)
    assert engine.strong_watchers(topic) == 0
    eventual = watches.create({"t": TopicStart()}, opts())
    watches.open(eventual, Owner(), Waker())
    assert engine.strong_watchers(topic) == 0


def test_strong_on_fsync_topic_reads_what_is_visible(engine: Engine, watches: Watches) -> None:
    engine.put_topic("t", {"durability": "fsync"})
    settle(engine)
    session, _ = attached(watches, {"t": TopicStart()}, opts(consistency="strong"))
    drain(session.sub)
    engine.append("t", data(2))
    settle(engine)  # fsync class: visible (to everyone) once durable
    assert seqs_of(drain(session.sub)) == [1, 2]


# -- SharedReads --------------------------------------------------------------------------------------------


def test_equal_readers_share_one_read(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(5))
    one, _ = attached(watches, {"t": TopicStart()})
    two, _ = attached(watches, {"t": TopicStart()})
    hits = watches.reads.hits
    e1 = step(one.sub).events
    assert watches.reads.hits == hits
    e2 = step(two.sub).events
    assert watches.reads.hits == hits + 1
    r1, r2 = e1[0], e2[0]
    assert isinstance(r1, RecordsEvent) and isinstance(r2, RecordsEvent)
    assert r1.share_key == r2.share_key
    assert decoded(r1) == decoded(r2)


def test_shared_reads_returns_the_same_diff(engine: Engine) -> None:
    engine.append("t", data(3))
    topic = engine.topic("t")
    assert topic is not None
    reads = SharedReads()
    o = opts()
    d1, k1 = reads.read(topic, 0, o, topic.head_seq, 1000)
    d2, k2 = reads.read(topic, 0, o, topic.head_seq, 1000)
    assert d1 is d2 and k1 == k2 and reads.hits == 1
    # a different cursor, options or bound is a different read
    assert reads.read(topic, 1, o, topic.head_seq, 1000)[0] is not d1
    assert reads.read(topic, 0, opts(limit=2), topic.head_seq, 1000)[0] is not d1
    assert reads.read(topic, 0, o, 2, 1000)[0] is not d1
    assert reads.hits == 1


def test_new_version_misses(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(2))
    one, _ = attached(watches, {"t": TopicStart()})
    two, _ = attached(watches, {"t": TopicStart()})
    r1 = step(one.sub).events[0]
    engine.append("t", data(1))  # version bump
    hits = watches.reads.hits
    r2 = step(two.sub).events[0]
    assert watches.reads.hits == hits
    assert isinstance(r1, RecordsEvent) and isinstance(r2, RecordsEvent)
    assert r1.share_key != r2.share_key
    assert [r["$seq"] for r in decoded(r2)] == [1, 2, 3]


def test_change_at_the_same_head_misses(engine: Engine, watches: Watches) -> None:
    """A delete moves no watermark a reader keys on but the cursor's view: the version does."""
    engine.append("t", data(4))
    one, _ = attached(watches, {"t": TopicStart()})
    two, _ = attached(watches, {"t": TopicStart()})
    assert seqs_of(step(one.sub).events) == [1, 2, 3, 4]
    engine.delete_records("t", before_seq=3)  # head stays 4
    hits = watches.reads.hits
    assert seqs_of(step(two.sub).events) == [3, 4]
    assert watches.reads.hits == hits


def test_different_options_do_not_share(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(2))
    one, _ = attached(watches, {"t": TopicStart()})
    two, _ = attached(watches, {"t": TopicStart()}, opts(include_tags=True))
    hits = watches.reads.hits
    r1, r2 = step(one.sub).events[0], step(two.sub).events[0]
    assert watches.reads.hits == hits
    assert r1.share_key != r2.share_key


def test_shared_reads_are_bounded(engine: Engine) -> None:
    engine.append("t", data(5))
    topic = engine.topic("t")
    assert topic is not None
    reads = SharedReads(capacity=2)
    o = opts()
    first, _ = reads.read(topic, 0, o, topic.head_seq, 1000)
    reads.read(topic, 1, o, topic.head_seq, 1000)
    reads.read(topic, 2, o, topic.head_seq, 1000)
    assert len(reads._reads) == 2
    again, _ = reads.read(topic, 0, o, topic.head_seq, 1000)
    assert again is not first and reads.hits == 0  # the oldest went first


def test_shared_reads_are_bounded_in_record_bytes(engine: Engine) -> None:
    """A kept read holds its records' batches alive (cold ones too): past ``max_bytes`` the
    oldest go, whatever the count."""
    engine.append("t", [{"data": "x" * 100} for _ in range(5)])
    topic = engine.topic("t")
    assert topic is not None
    reads = SharedReads(capacity=100, max_bytes=250)
    o = opts()
    for cursor in range(4):
        reads.read(topic, cursor, o, topic.head_seq, 1000)
    assert len(reads._reads) == 1  # every read holds >= 2 records of ~130 bytes
    reads.read(topic, 3, o, topic.head_seq, 1000)
    assert reads.hits == 1


# -- known bugs ---------------------------------------------------------------------------------------------


def test_recreated_tombstone_does_not_redeliver(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(10))
    engine.delete_topic("t")
    engine.append("t", data(3))  # new incarnation: seqs 1..3
    # e.g. a client re-creating its session from an old cursor after a 404
    session, _ = attached(watches, {"t": TopicStart(8)})
    events = drain(session.sub)
    assert seqs_of(events) == [1, 2, 3]
    assert session.sub.cursors() == {"t": 3}
    engine.append("t", data(1))  # seq 4
    events = drain(session.sub)
    assert kinds(events) == ["records"] and seqs_of(events) == [4]


def test_resubscribing_a_topic_does_not_leak_strong_watchers(engine: Engine, watches: Watches) -> None:
    engine.append("t", data(1))
    topic = engine.topic("t")
    assert topic is not None
    strong = opts(consistency="strong")
    sub = watches.subscribe({"t": TopicStart()}, strong)
    sub.attach(Waker())
    sub.add("t", topic, topic.head_seq)  # watched again: the old position is unfollowed
    sub.detach()
    assert engine.strong_watchers(topic) == 0
