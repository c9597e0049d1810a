"""§1 topics: PUT create/update, state, listing with opaque cursors, delete (+ recreated)."""

from __future__ import annotations

import base64

import orjson
import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import InvalidRequest, TopicExistsIncompatible, TopicNotEmpty, TopicNotFound
from topics_engine.results import TopicPage, TopicSummary

from .conftest import T0, data, raises_topics, read_all, recs, seqs

# -- PUT ---------------------------------------------------------------------------------------


def test_put_creates_then_identical_is_noop(engine: Engine) -> None:
    r = engine.put_topic("jobs", {"ttl_ms": 60000, "durable": True, "priority": 10})
    assert r.created is True and r.topic == "jobs"
    wire = r.config.to_wire()
    assert wire["durability"] == "fsync" and wire["durable"] is True
    assert wire["priority"] == 10
    # config echoes the full object, queue fields included
    assert {"lease_ms", "claim_jitter_ms", "max_deliveries", "dead_letter", "leases_durable"} <= set(wire)
    again = engine.put_topic("jobs", {"ttl_ms": 60000, "durable": True, "priority": 10})
    assert again.created is False
    assert again.config == r.config
    assert engine.topic_count == 1


def test_put_changed_config_updates(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 10})
    r = engine.put_topic("t", {"cap_records": 20, "durability": "ephemeral"})
    assert r.created is False
    state = engine.topic_state("t")
    assert state.config.cap_records == 20
    assert state.config.durability == "ephemeral"


def test_put_changes_apply_forward_records_kept(engine: Engine) -> None:
    engine.append("t", data(5))
    engine.put_topic("t", {"durability": "fsync", "priority": 1})
    assert seqs(engine.diff("t")) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(("old", "new"), [("log", "queue"), ("queue", "log")])
def test_put_type_change_is_409_and_changes_nothing(engine: Engine, old: str, new: str) -> None:
    engine.put_topic("t", {"type": old, "cap_records": 5})
    with raises_topics(TopicExistsIncompatible, "topic_exists_incompatible"):
        engine.put_topic("t", {"type": new, "cap_records": 9})
    state = engine.topic_state("t")
    assert state.type == old and state.config.cap_records == 5


def test_put_clamps_are_echoed(engine: Engine) -> None:
    cfg = engine.put_topic(
        "q", {"type": "queue", "priority": 99999, "lease_ms": 5, "claim_jitter_ms": 99999}
    ).config
    assert (cfg.priority, cfg.lease_ms, cfg.claim_jitter_ms) == (1000, 100, 5000)


BAD_NAMES = ["", "-x", ".x", "..", "../x", "a b", "a/b", "x" * 256, "é", "a*", "a\\b", "a\x00"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_put_bad_name_is_400(engine: Engine, name: str) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.put_topic(name, {})
    assert engine.topic_count == 0


@pytest.mark.parametrize("name", ["a", "A", "0", "render-queue:tenantA", "a._:-", "x" * 255])
def test_put_good_names(engine: Engine, name: str) -> None:
    assert engine.put_topic(name, {}).created


def test_names_are_case_sensitive(engine: Engine) -> None:
    engine.put_topic("Jobs", {})
    assert engine.put_topic("jobs", {}).created
    assert engine.topic_count == 2


def test_put_bad_field_creates_nothing(engine: Engine) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.put_topic("t", {"cap_records": -1})
    assert engine.topic_count == 0


def test_put_bad_field_on_existing_topic_changes_nothing(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 5})
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.put_topic("t", {"cap_records": 1, "ttl_ms": -1})
    assert engine.topic_state("t").config.cap_records == 5


def test_put_dead_letter_self_is_400(engine: Engine) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.put_topic("jobs", {"type": "queue", "dead_letter": "jobs"})


# -- state ---------------------------------------------------------------------------------------


def test_state_of_fresh_topic(engine: Engine) -> None:
    engine.put_topic("t", {})
    s = engine.topic_state("t", touch=False)
    assert s.head_seq == 0 and s.earliest_seq == 1 and s.next_seq == 1
    assert s.count == 0 and s.bytes == 0
    assert s.type == "log"
    assert s.last_write_ts is None and s.last_read_ts is None
    assert s.effective_priority == 0


def test_state_after_writes(engine: Engine, clock: ManualClock) -> None:
    engine.append("t", data(3))
    clock.advance(7)
    s = engine.topic_state("t")
    assert (s.head_seq, s.earliest_seq, s.next_seq, s.count) == (3, 1, 4, 3)
    assert s.bytes > 0
    assert s.last_write_ts == T0
    assert s.last_read_ts == T0 + 7


def test_state_never_autocreates(engine: Engine) -> None:
    with raises_topics(TopicNotFound, "topic_not_found"):
        engine.topic_state("nope")
    assert engine.topic_count == 0


def test_state_bytes_counts_each_records_wire_object(engine: Engine) -> None:
    """records.py: a record's size is its wire object's length plus one separator byte."""
    engine.append("t", [{"data": {"a": 1}, "tag": "x", "node": "n", "meta": {"k": "v"}}, {"data": None}])
    wire = [
        b'{"$seq":1,"$ts":%d,"$node":"n","$tag":"x","data":{"a":1},"meta":{"k":"v"}}' % T0,
        b'{"$seq":2,"$ts":%d,"data":null}' % T0,
    ]
    assert engine.topic_state("t").bytes == sum(len(w) + 1 for w in wire)
    assert engine.diff("t", include_tags=True).records_json() == b",".join(wire)


def test_effective_priority_manual_wins(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"priority": -7})
    assert engine.topic_state("t").effective_priority == -7


def test_effective_priority_auto_decays_with_read_recency(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {})
    assert engine.topic_state("t", touch=False).effective_priority == 0  # never read
    engine.diff("t")  # a read bumps recency
    assert engine.topic_state("t", touch=False).effective_priority == 1000
    clock.advance(60_000)
    hot = engine.topic_state("t", touch=False).effective_priority
    clock.advance(600_000)
    cold = engine.topic_state("t", touch=False).effective_priority
    assert 0 <= cold < hot < 1000
    # state with touch (the default) makes it hot again
    assert engine.topic_state("t").effective_priority == 1000


def test_auto_priority_off_is_zero(engine: Engine) -> None:
    engine.put_topic("t", {"auto_priority": False})
    engine.diff("t")
    assert engine.topic_state("t").effective_priority == 0


def test_touch_false_does_not_bump_recency(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {})
    engine.topic_state("t", touch=False)
    engine.diff("t", touch=False)
    assert engine.topic_state("t", touch=False).last_read_ts is None


# -- list ----------------------------------------------------------------------------------------


def _names(page: list[TopicSummary]) -> list[str]:
    return [t.topic for t in page]


def _page(page: TopicPage) -> tuple[list[TopicSummary], str | None]:
    return page.topics, page.next_cursor


def test_list_is_name_ordered_with_summaries(engine: Engine) -> None:
    for name in ["b", "a", "c"]:
        engine.put_topic(name, {"durable": name == "a"})
    engine.append("b", data(2))
    page, cursor = _page(engine.list_topics())
    assert _names(page) == ["a", "b", "c"] and cursor is None
    b = page[1]
    assert (b.head_seq, b.earliest_seq, b.count) == (2, 1, 2)
    assert page[0].durable is True and page[1].durable is False
    assert page[0].durability == "fsync" and page[1].durability == "disk"


def test_list_paginates_with_prefix_and_cursor(engine: Engine) -> None:
    names = [f"tenant1:{i:02d}" for i in range(7)] + ["tenant0:x", "tenant2:y", "tenant1"]
    for n in names:
        engine.put_topic(n, {})
    seen: list[object] = []
    cursor = None
    pages = 0
    while True:
        page, cursor = _page(engine.list_topics(prefix="tenant1:", page_size=3, cursor=cursor))
        pages += 1
        assert len(page) <= 3
        seen += _names(page)
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor
    assert seen == sorted(n for n in names if n.startswith("tenant1:"))
    assert pages == 3


def test_list_exact_page_boundary_has_no_cursor(engine: Engine) -> None:
    for n in ["a1", "a2", "b1"]:
        engine.put_topic(n, {})
    page, cursor = _page(engine.list_topics(prefix="a", page_size=2))
    assert _names(page) == ["a1", "a2"]
    assert cursor is None  # next_cursor present only when more pages exist


def test_list_page_size_clamped(engine: Engine) -> None:
    for i in range(1005):
        engine.put_topic(f"t{i:04d}", {})
    page, cursor = _page(engine.list_topics(page_size=5000))
    assert len(page) == 1000 and cursor is not None
    rest, cursor2 = _page(engine.list_topics(page_size=5000, cursor=cursor))
    assert len(rest) == 5 and cursor2 is None
    default_page, _ = _page(engine.list_topics())
    assert len(default_page) == 100
    zero_page, _ = _page(engine.list_topics(page_size=0))  # 0 means the default
    assert len(zero_page) == 100


def test_list_cursor_survives_deletion_of_its_anchor(engine: Engine) -> None:
    for n in "abcde":
        engine.put_topic(n, {})
    page, cursor = _page(engine.list_topics(page_size=2))
    assert _names(page) == ["a", "b"]
    engine.delete_topic("b")
    engine.put_topic("bb", {})
    page, _ = _page(engine.list_topics(page_size=10, cursor=cursor))
    assert _names(page) == ["bb", "c", "d", "e"]


@pytest.mark.parametrize(
    "cursor",
    [
        "!!!not-base64!!!",
        "abc",  # bad padding
        base64.b64encode(b"not json").decode(),
        base64.b64encode(orjson.dumps({"x": 1})).decode(),
        base64.b64encode(orjson.dumps({"after": 5})).decode(),
        base64.b64encode(orjson.dumps(["after"])).decode(),
        base64.b64encode(b"\xff\xfe").decode(),
    ],
)
def test_a_cursor_not_issued_is_a_name_to_start_after(engine: Engine, cursor: str) -> None:
    """docs/DECISIONS.md, "List cursors": every non-empty cursor has a meaning."""
    for name in ("0a", "Zz", "aa", "zz", "b"):
        engine.put_topic(name, {})
    page, _ = _page(engine.list_topics(cursor=cursor))
    assert _names(page) == sorted(n for n in ("0a", "Zz", "aa", "b", "zz") if n > cursor)


def test_list_empty_cursor_is_400(engine: Engine) -> None:
    engine.put_topic("a", {})
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.list_topics(cursor="")


def test_list_does_not_touch_by_default(engine: Engine) -> None:
    engine.put_topic("a", {})
    engine.list_topics()
    assert engine.topic_state("a", touch=False).last_read_ts is None
    engine.list_topics(touch=True)
    assert engine.topic_state("a", touch=False).last_read_ts is not None


# -- delete ----------------------------------------------------------------------------------------


def test_delete_is_idempotent(engine: Engine) -> None:
    engine.append("t", data(3))
    assert engine.delete_topic("t").deleted is True
    assert engine.delete_topic("t").deleted is False
    assert engine.delete_topic("never").deleted is False
    with raises_topics(TopicNotFound, "topic_not_found"):
        engine.topic_state("t")
    with raises_topics(TopicNotFound, "topic_not_found"):
        engine.diff("t")
    assert _page(engine.list_topics()) == ([], None)


def test_delete_bad_name_is_400(engine: Engine) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.delete_topic("no spaces")


def test_delete_if_empty(engine: Engine) -> None:
    engine.append("full", data(2))
    with raises_topics(TopicNotEmpty, "topic_not_empty") as caught:
        engine.delete_topic("full", if_empty=True)
    assert caught[0].detail == {"topic": "full", "count": 2}
    assert engine.topic_state("full").count == 2  # untouched
    engine.put_topic("empty", {})
    assert engine.delete_topic("empty", if_empty=True).deleted is True
    assert engine.delete_topic("empty", if_empty=True).deleted is False


def test_delete_if_empty_counts_only_live_records(engine: Engine, clock: ManualClock) -> None:
    engine.append("d", data(2))
    engine.delete_records("d", before_seq=10)
    assert engine.delete_topic("d", if_empty=True).deleted is True
    engine.put_topic("ttl", {"ttl_ms": 100})
    engine.append("ttl", data(2))
    clock.advance(101)
    assert engine.delete_topic("ttl", if_empty=True).deleted is True


def test_delete_drops_records_tags_and_dedupe_state(engine: Engine) -> None:
    engine.append("t", [{"data": 1, "tag": "x"}], idempotency_key="k")
    engine.delete_topic("t")
    r = engine.append("t", [{"data": 2}], idempotency_key="k")
    assert (r.created, r.deduped, r.first_seq) == (True, False, 1)  # seq restarts
    assert engine.delete_records("t", match="x").deleted == 0


def test_recreated_tombstone_for_stale_cursor(engine: Engine) -> None:
    engine.append("t", data(10))
    engine.delete_topic("t")
    engine.append("t", data(3, start=100))  # lazily recreated, seq restarts at 1
    assert engine.topic_state("t").head_seq == 3
    page = engine.diff("t", from_seq=8)  # a consumer from the old incarnation
    ts = page.tombstone
    assert ts is not None and ts.reason == "recreated"
    assert ts.head_seq == 3 and ts.earliest_seq == 1
    # the stale consumer is moved onto the new incarnation and sees all of it
    assert [r["data"] for r in recs(page)] == [100, 101, 102]
    assert page.next_from_seq == 3 and page.caught_up
    # a fresh (from_seq=0) or up-to-date consumer of the new incarnation sees no tombstone
    assert engine.diff("t", from_seq=0).tombstone is None
    assert engine.diff("t", from_seq=3).tombstone is None


def test_recreated_tombstone_via_put_on_empty_new_incarnation(engine: Engine) -> None:
    engine.append("t", data(4))
    engine.delete_topic("t")
    engine.put_topic("t", {})
    page = engine.diff("t", from_seq=4)
    assert page.tombstone is not None and page.tombstone.reason == "recreated"
    assert recs(page) == [] and page.caught_up and page.next_from_seq == 0


def test_never_deleted_topic_has_no_recreated_tombstone(engine: Engine) -> None:
    engine.append("t", data(2))
    page = engine.diff("t", from_seq=50)
    assert page.tombstone is None
    assert recs(page) == []


def test_recreated_topic_reads_cleanly_from_zero(engine: Engine) -> None:
    engine.append("t", data(5))
    engine.delete_topic("t")
    engine.append("t", data(2))
    got, pages = read_all(engine, "t")
    assert [r["$seq"] for r in got] == [1, 2]
    assert all(p.tombstone is None for p in pages)
