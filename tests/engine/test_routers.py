"""§6 routers at engine level: durable, asynchronous forwarding from a source topic into a dest.

The pump is driven by hand — ``Routers(engine, autorun=False)`` and :meth:`Routers.drain` — on a
:class:`ManualClock`, so forwarding, backoff retries and hop caps are deterministic. The sync tests
run over both persistences (the ``engine`` fixture); the durable tests at the end restart an
engine over a :class:`DataDirectory` (WAL replay only, and after a checkpoint) and check the
derived copies come back byte for byte (docs/DECISIONS.md, "Derived copies").
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.errors import (
    InvalidRequest,
    RouterCycle,
    RouterNotFound,
    TopicExistsIncompatible,
    TopicNotFound,
)
from topics_engine.results import Diff
from topics_engine.routers import HOP_CAP, RETRY_MS, STAMP, Routers
from topics_engine.topic import Topic

from .conftest import T0, data, raises_topics, read_all, record_bytes, recs, settle


@pytest.fixture
def routers(engine: Engine) -> Routers:
    return Routers(engine, autorun=False)


def dest_recs(engine: Engine, topic: str, from_seq: int = 0) -> list[dict[str, Any]]:
    """Every record of ``topic`` after ``from_seq`` (tags included), paging until caught up."""
    out, _ = read_all(engine, topic, from_seq, include_tags=True, touch=False)
    return out


def datas(engine: Engine, topic: str) -> list[Any]:
    return [r["data"] for r in dest_recs(engine, topic)]


def stamp(record: dict[str, Any]) -> dict[str, Any] | None:
    meta = record.get("meta")
    return meta.get(STAMP) if isinstance(meta, dict) else None


def hops(record: dict[str, Any]) -> int:
    """A copy's hop count (0 for a record nobody forwarded)."""
    s = stamp(record)
    return 0 if s is None else int(s["hops"])


def topic_of(engine: Engine, name: str) -> Topic:
    t = engine.topic(name)
    assert t is not None, name
    return t


# -- forwarding ----------------------------------------------------------------------------------


def test_forwarding_is_off_the_write_path_and_preserves_fields(
    engine: Engine, routers: Routers, clock: ManualClock
) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    engine.append("b", [{"data": "direct"}])  # dest has its own history: copies get fresh seqs
    clock.advance(7)
    engine.append(
        "a",
        [
            {"data": {"k": 1}, "tag": "t:1", "meta": {"trace": "x"}},
            {"data": [1, 2]},
            {"data": "three", "tag": "t:3"},
        ],
        node="n1",
    )
    assert len(dest_recs(engine, "b")) == 1  # async: nothing copied until the pump runs
    clock.advance(5)
    assert routers.drain() == 3
    source = dest_recs(engine, "a")
    copies = dest_recs(engine, "b")[1:]
    assert [c["$seq"] for c in copies] == [2, 3, 4]  # dest's own seqs, not the source's 1..3
    assert all(s["$ts"] == T0 + 7 for s in source)
    assert all(c["$ts"] == T0 + 12 for c in copies)  # a fresh $ts: when the copy was appended
    for original, copy in zip(source, copies, strict=True):
        strip = {k: v for k, v in original.items() if k not in ("$seq", "$ts")}
        assert {k: v for k, v in copy.items() if k not in ("$seq", "$ts")} == strip
    assert copies[0] == {
        "$seq": 2,
        "$ts": T0 + 12,
        "$node": "n1",
        "$tag": "t:1",
        "data": {"k": 1},
        "meta": {"trace": "x"},  # an at_least_once router off any cycle leaves meta untouched
    }
    assert "$tag" not in copies[1] and "meta" not in copies[1]
    assert routers.get("a->b").forwarded_total == 3 and routers.forwarded_total == 3
    assert datas(engine, "a") == [{"k": 1}, [1, 2], "three"]  # the source is untouched
    assert routers.drain() == 0  # nothing left


def test_forwarding_keeps_source_order_across_many_steps(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    for i in range(0, 2500, 250):
        engine.append("a", data(250, start=i))
    assert routers.drain() == 2500  # more than one FORWARD_BATCH: several steps, one order
    assert datas(engine, "b") == list(range(2500))
    assert routers.state("a->b").cursor == 2500


def test_preserve_node_false_clears_node(engine: Engine, routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b", "preserve_node": False})
    engine.append("a", [{"data": 1, "tag": "x", "meta": {"m": 1}}], node="n1")
    routers.drain()
    (copy,) = dest_recs(engine, "b")
    assert "$node" not in copy
    assert copy["$tag"] == "x" and copy["meta"] == {"m": 1} and copy["data"] == 1


def test_preserve_tag_false_clears_tag(engine: Engine, routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b", "preserve_tag": False})
    engine.append("a", [{"data": 1, "tag": "x"}], node="n1")
    routers.drain()
    (copy,) = dest_recs(engine, "b")
    assert "$tag" not in copy
    assert copy["$node"] == "n1"
    assert engine.delete_records("b", match=["tag", "Eq", "x"]).deleted == 0  # not tag-addressable


def test_filter_eq_and_glob_apply_at_forward_time(engine: Engine, routers: Routers) -> None:
    routers.put("eq", {"source": "a", "dest": "only-x", "filter": ["tag", "Eq", "x"]})
    routers.put("glob", {"source": "a", "dest": "pub", "filter": ["tag", "Glob", "public:*"]})
    engine.append(
        "a",
        [
            {"data": 1, "tag": "x"},
            {"data": 2, "tag": "public:1"},
            {"data": 3},
            {"data": 4, "tag": "xx"},
            {"data": 5, "tag": "public:2"},
            {"data": 6, "tag": "x"},
        ],
    )
    assert routers.drain() == 4
    assert datas(engine, "only-x") == [1, 6]
    assert datas(engine, "pub") == [2, 5]
    # filtered-out records are examined too: the cursor reaches the source head
    assert routers.state("eq").cursor == routers.state("glob").cursor == 6
    assert routers.get("eq").forwarded_total == 2


def test_a_step_that_filters_everything_out_still_advances(engine: Engine, routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b", "filter": "keep"})  # a bare tag string is Eq
    engine.append("a", [{"data": 1, "tag": "drop"}, {"data": 2}])
    assert routers.drain() == 0
    assert routers.state("r").cursor == 2 and routers.state("r").lag == 0
    assert dest_recs(engine, "b") == []


def test_changing_the_filter_keeps_the_cursor(engine: Engine, routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b", "filter": ["tag", "Eq", "x"]})
    engine.append("a", [{"data": 1, "tag": "x"}, {"data": 2, "tag": "y"}])
    routers.drain()
    engine.append("a", [{"data": 3, "tag": "x"}, {"data": 4, "tag": "y"}])  # not forwarded yet
    r = routers.put("r", {"source": "a", "dest": "b", "filter": ["tag", "Eq", "y"]})
    assert r.created is False and r.router.config.filter == ["tag", "Eq", "y"]
    assert routers.state("r").cursor == 2  # same source and dest: progress kept
    routers.drain()
    # 2 (y, examined under the old filter) is not re-forwarded; 3..4 use the new filter
    assert datas(engine, "b") == [1, 4]
    routers.put("r", {"source": "a", "dest": "b"})  # filter removed: everything from now on
    engine.append("a", [{"data": 5, "tag": "x"}, {"data": 6}])
    routers.drain()
    assert datas(engine, "b") == [1, 4, 5, 6]


# -- PUT semantics (docs/DECISIONS.md, "Router PUT") ---------------------------------------------


def test_put_creates_then_identical_is_a_no_op_then_changes(engine: Engine, routers: Routers) -> None:
    first = routers.put("a->b", {"source": "a", "dest": "b"})
    assert first.created is True
    router = first.router
    assert (router.name, router.config.source, router.config.dest, router.cursor) == ("a->b", "a", "b", 0)
    assert router.config.to_wire() == {
        "source": "a",
        "dest": "b",
        "preserve_node": True,
        "preserve_tag": True,
        "filter": None,
        "allow_cycle": False,
        "guarantee": "at_least_once",
    }
    engine.append("a", data(2))
    routers.drain()
    same = routers.put("a->b", {"source": "a", "dest": "b", "preserve_node": True, "create_dest": False})
    assert same.created is False and same.router is router and same.wait is None  # nothing logged
    assert router.cursor == 2 and router.forwarded_total == 2
    changed = routers.put("a->b", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    assert changed.created is False and changed.router is router
    assert router.config.guarantee == "exactly_once"
    assert router.cursor == 2 and router.forwarded_total == 2  # not moved: progress kept
    assert routers.count == 1


def test_changing_source_restarts_at_the_new_source_head(engine: Engine, routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b"})
    engine.append("a", data(2))
    engine.append("c", data(3, start=100))  # history of the new source: never backfilled
    routers.drain()
    r = routers.put("r", {"source": "c", "dest": "b"})
    assert r.created is False
    assert routers.state("r").cursor == 3 and routers.state("r").lag == 0
    engine.append("a", data(1, start=50))  # the old source no longer forwards
    engine.append("c", data(1, start=103))
    routers.drain()
    assert datas(engine, "b") == [0, 1, 103]
    assert engine.hub.listener_count("a") == 0


def test_changing_dest_restarts_at_the_source_head(engine: Engine, routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b"})
    engine.append("a", data(2))
    routers.drain()
    engine.append("a", data(1, start=2))  # appended, not examined yet
    routers.put("r", {"source": "a", "dest": "c"})
    assert routers.state("r").cursor == 3  # restarted at the head: record 2 is skipped
    routers.drain()
    assert datas(engine, "c") == []
    engine.append("a", data(1, start=3))
    routers.drain()
    assert datas(engine, "b") == [0, 1]  # copies already made stay where they are
    assert datas(engine, "c") == [3]


def test_put_auto_creates_source_and_dest(engine: Engine, routers: Routers) -> None:
    assert engine.topic("s") is None and engine.topic("d") is None
    routers.put("s->d", {"source": "s", "dest": "d"})
    engine.put_topic("ref", {})
    for name in ("s", "d"):
        assert topic_of(engine, name).config == topic_of(engine, "ref").config  # the default config
        assert engine.topic_state(name, touch=False).count == 0


def test_create_dest_false_requires_an_existing_dest(engine: Engine, routers: Routers) -> None:
    with raises_topics(TopicNotFound, "topic_not_found") as caught:
        routers.put("s->d", {"source": "s", "dest": "d", "create_dest": False})
    assert caught[0].detail == {"topic": "d"}
    assert routers.count == 0 and engine.topic("d") is None
    assert engine.topic("s") is None  # nothing was created by the failed PUT
    engine.put_topic("d", {"cap_records": 10})
    r = routers.put("s->d", {"source": "s", "dest": "d", "create_dest": False})
    assert r.created is True
    assert topic_of(engine, "d").config.cap_records == 10  # an existing dest keeps its config


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"source": "a", "dest": "a"}, "dest"),
        ({"dest": "b"}, "source"),
        ({"source": "a"}, "dest"),
        ({"source": 1, "dest": "b"}, "source"),
        ({"source": "-bad", "dest": "b"}, "source"),
        ({"source": "a", "dest": "b", "filter": ["tag", "Foo", "x"]}, "filter"),
        ({"source": "a", "dest": "b", "filter": ["tag", "Glob", "no-star"]}, "filter"),
        ({"source": "a", "dest": "b", "filter": ["data", "Eq", "x"]}, "filter"),
        ({"source": "a", "dest": "b", "filter": 7}, "filter"),
        ({"source": "a", "dest": "b", "preserve_node": "yes"}, "preserve_node"),
        ({"source": "a", "dest": "b", "allow_cycle": 1}, "allow_cycle"),
        ({"source": "a", "dest": "b", "create_dest": None}, "create_dest"),
        ({"source": "a", "dest": "b", "guarantee": "at_most_once"}, "guarantee"),
    ],
)
def test_put_rejects_bad_fields(engine: Engine, routers: Routers, body: dict[str, Any], field: str) -> None:
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        routers.put("r", body)
    assert caught[0].detail is not None and caught[0].detail["field"] == field
    assert routers.count == 0
    assert engine.topic_count == 0  # validation happens before anything is created


@pytest.mark.parametrize("name", ["a b", ">x", "-x", "", "x" * 256, "a/b", "é"])
def test_put_rejects_bad_router_names(routers: Routers, name: str) -> None:
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        routers.put(name, {"source": "a", "dest": "b"})
    assert caught[0].detail == {"field": "router", "value": name}
    assert routers.count == 0


def test_router_names_allow_the_arrow_convention(routers: Routers) -> None:
    for name in ["orders->audit", "a>b", "x.y:z_1-2", "9" * 255]:
        assert routers.put(name, {"source": "src", "dest": "dst"}).created is True
    assert routers.count == 4


# -- cycles and fan-in ------------------------------------------------------------------------


def test_direct_cycle_is_rejected(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    with raises_topics(RouterCycle, "router_cycle") as caught:
        routers.put("b->a", {"source": "b", "dest": "a"})
    assert caught[0].detail == {"cycle": ["b", "a", "b"]}
    assert routers.count == 1
    with pytest.raises(RouterNotFound):
        routers.get("b->a")


def test_indirect_cycle_is_rejected(routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    routers.put("b->c", {"source": "b", "dest": "c"})
    with raises_topics(RouterCycle, "router_cycle") as caught:
        routers.put("c->a", {"source": "c", "dest": "a"})
    assert caught[0].detail == {"cycle": ["c", "a", "b", "c"]}
    assert [r.name for r in routers.all()] == ["a->b", "b->c"]


def test_moving_a_router_into_a_cycle_is_rejected_and_keeps_the_old_route(routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    routers.put("r", {"source": "b", "dest": "c"})
    with raises_topics(RouterCycle, "router_cycle") as caught:
        routers.put("r", {"source": "b", "dest": "a"})
    assert caught[0].detail == {"cycle": ["b", "a", "b"]}
    assert routers.get("r").config.dest == "c"
    # re-PUTting a router over its own route is not a cycle with itself
    assert routers.put("r", {"source": "b", "dest": "c", "preserve_tag": False}).created is False
    # and once the closing edge is gone, the route is fine
    routers.delete("a->b")
    assert routers.put("r", {"source": "b", "dest": "a"}).router.config.dest == "a"


def test_allow_cycle_stops_a_record_after_eight_hops(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    routers.put("b->a", {"source": "b", "dest": "a", "allow_cycle": True})
    assert routers.get("a->b").on_cycle and routers.get("b->a").on_cycle
    engine.append("a", [{"data": "ping", "meta": {"keep": True}}], node="n1")
    routers.drain()
    a, b = dest_recs(engine, "a"), dest_recs(engine, "b")
    assert len(a) == 5 and len(b) == 4
    hops_a = [hops(r) for r in a]
    hops_b = [hops(r) for r in b]
    assert hops_a == [0, 2, 4, 6, HOP_CAP]
    assert hops_b == [1, 3, 5, 7]
    assert all(r["data"] == "ping" and r["$node"] == "n1" and r["meta"]["keep"] is True for r in a + b)
    assert stamp(b[0]) == {"router": "a->b", "source": "a", "seq": 1, "hops": 1}
    assert stamp(a[1]) == {"router": "b->a", "source": "b", "seq": 1, "hops": 2}
    assert routers.drain() == 0  # the loop has stopped for good


def test_three_topic_cycle_respects_the_hop_cap(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    routers.put("b->c", {"source": "b", "dest": "c"})
    routers.put("c->a", {"source": "c", "dest": "a", "allow_cycle": True})
    engine.append("a", data(1))
    routers.drain()
    counts = {t: len(dest_recs(engine, t)) for t in "abc"}
    assert sum(counts.values()) == HOP_CAP + 1  # the original plus 8 hops
    assert counts == {"a": 3, "b": 3, "c": 3}


def test_routers_off_the_cycle_do_not_stamp(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    routers.put("b->a", {"source": "b", "dest": "a", "allow_cycle": True})
    routers.put("a->z", {"source": "a", "dest": "z"})  # leaves the cycle
    assert not routers.get("a->z").on_cycle
    engine.append("a", [{"data": 1}])
    routers.drain()
    z = dest_recs(engine, "z")
    # a->z copies meta verbatim: the original has no stamp, the cycle's copies keep b->a's
    assert [(stamp(r) or {}).get("router") for r in z] == [None, "b->a", "b->a", "b->a", "b->a"]
    assert [hops(r) for r in z] == [hops(r) for r in dest_recs(engine, "a")] == [0, 2, 4, 6, 8]
    routers.delete("b->a")  # the cycle is gone: no more stamps on a->b
    assert not routers.get("a->b").on_cycle
    engine.append("a", [{"data": 2}])
    routers.drain()
    assert stamp(dest_recs(engine, "b")[-1]) is None


def test_fan_in_from_a_second_source_is_rejected(routers: Routers) -> None:
    routers.put("a->c", {"source": "a", "dest": "c"})
    with raises_topics(TopicExistsIncompatible, "topic_exists_incompatible") as caught:
        routers.put("b->c", {"source": "b", "dest": "c"})
    assert caught[0].detail == {"reason": "router_dest_fan_in", "dest": "c", "router": "a->c"}
    assert routers.count == 1
    # moving an existing router onto a derived dest is fan-in too
    routers.put("b->d", {"source": "b", "dest": "d"})
    with raises_topics(TopicExistsIncompatible, "topic_exists_incompatible") as caught:
        routers.put("b->d", {"source": "b", "dest": "c"})
    assert (caught[0].detail or {}).get("reason") == "router_dest_fan_in"
    assert routers.get("b->d").config.dest == "d"


def test_two_routers_from_the_same_source_may_share_a_dest(engine: Engine, routers: Routers) -> None:
    routers.put("a->c", {"source": "a", "dest": "c", "filter": ["tag", "Eq", "x"]})
    assert routers.put("a->c.2", {"source": "a", "dest": "c", "filter": ["tag", "Eq", "y"]}).created
    engine.append("a", [{"data": 1, "tag": "x"}, {"data": 2, "tag": "y"}, {"data": 3}])
    routers.drain()
    assert sorted(datas(engine, "c")) == [1, 2]
    assert routers.page(dest="c").routers == [routers.get("a->c"), routers.get("a->c.2")]


# -- deletes -----------------------------------------------------------------------------------


def test_delete_topic_cascades_to_its_routers(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    routers.put("b->c", {"source": "b", "dest": "c"})
    routers.put("x->y", {"source": "x", "dest": "y"})
    result = routers.delete_topic("b")
    assert result.deleted is True
    assert result.routers_removed == ["a->b", "b->c"]  # as dest and as source
    assert [r.name for r in routers.all()] == ["x->y"]
    assert engine.hub.listener_count("a") == 0 and engine.hub.listener_count("b") == 0
    engine.append("a", data(1))
    assert routers.drain() == 0
    assert engine.topic("b") is None  # not resurrected by forwarding
    again = routers.delete_topic("b")
    assert again.deleted is False and again.routers_removed == []
    untouched = routers.delete_topic("z")  # a topic no router names
    assert untouched.routers_removed == []


def test_delete_topic_if_empty_refusal_keeps_routers(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    engine.append("a", data(1))
    with pytest.raises(Exception, match="still holds"):
        routers.delete_topic("a", if_empty=True)
    assert routers.count == 1
    assert routers.drain() == 1


def test_delete_router_is_idempotent_and_stops_forwarding_at_once(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b"})
    engine.append("a", data(2))
    routers.drain()
    engine.append("a", data(2, start=2))  # pending when the router goes
    first = routers.delete("a->b")
    assert (first.name, first.deleted) == ("a->b", True)
    assert routers.drain() == 0
    assert datas(engine, "b") == [0, 1]  # copies already made stay
    second = routers.delete("a->b")
    assert (second.deleted, second.wait) == (False, None)
    with raises_topics(RouterNotFound, "router_not_found") as caught:
        routers.state("a->b")
    assert caught[0].detail == {"router": "a->b"}
    with raises_topics(InvalidRequest, "invalid_request"):
        routers.delete("bad name")


# -- list --------------------------------------------------------------------------------------


def test_list_filters_and_pages(routers: Routers) -> None:
    routers.put("o->audit", {"source": "orders", "dest": "audit"})
    routers.put("o->mirror", {"source": "orders", "dest": "mirror"})
    routers.put("o->mirror.2", {"source": "orders", "dest": "mirror"})
    routers.put("p->audit2", {"source": "payments", "dest": "audit2"})
    routers.put("zz", {"source": "zsrc", "dest": "zdst"})

    def names(page: Any) -> list[str]:
        return [r.name for r in page.routers]

    everything = routers.page()
    assert names(everything) == ["o->audit", "o->mirror", "o->mirror.2", "p->audit2", "zz"]
    assert everything.next_cursor is None
    assert names(routers.page(prefix="o->")) == ["o->audit", "o->mirror", "o->mirror.2"]
    assert names(routers.page(prefix="nope")) == []
    assert names(routers.page(source="orders")) == ["o->audit", "o->mirror", "o->mirror.2"]
    assert names(routers.page(dest="mirror")) == ["o->mirror", "o->mirror.2"]
    assert names(routers.page(source="payments", dest="audit")) == []

    first = routers.page(page_size=2)
    assert names(first) == ["o->audit", "o->mirror"] and first.next_cursor is not None
    second = routers.page(page_size=2, cursor=first.next_cursor)
    assert names(second) == ["o->mirror.2", "p->audit2"] and second.next_cursor is not None
    last = routers.page(page_size=2, cursor=second.next_cursor)
    assert names(last) == ["zz"] and last.next_cursor is None

    exact = routers.page(source="orders", page_size=3)  # a full last page: no next cursor
    assert len(exact.routers) == 3 and exact.next_cursor is None
    filtered = routers.page(source="orders", page_size=1)
    assert names(filtered) == ["o->audit"]
    rest = routers.page(source="orders", page_size=5, cursor=filtered.next_cursor)
    assert names(rest) == ["o->mirror", "o->mirror.2"] and rest.next_cursor is None
    assert len(routers.page(page_size=0).routers) == 5  # 0: the default page size


@pytest.mark.parametrize("cursor", ["%%%not-base64", "bm90IGpzb24=", "eyJ4IjogMX0=", "r"])
def test_list_takes_a_cursor_not_issued_as_a_name_to_start_after(routers: Routers, cursor: str) -> None:
    routers.put("r", {"source": "a", "dest": "b"})
    routers.put("s", {"source": "a", "dest": "c"})
    assert [r.name for r in routers.page(cursor=cursor).routers] == [n for n in ("r", "s") if n > cursor]


def test_list_rejects_an_empty_cursor(routers: Routers) -> None:
    routers.put("r", {"source": "a", "dest": "b"})
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        routers.page(cursor="")
    assert caught[0].detail == {"field": "cursor"}


# -- state -------------------------------------------------------------------------------------


def test_state_reports_cursor_and_lag(engine: Engine, routers: Routers) -> None:
    engine.append("a", data(3))  # before the router: never forwarded
    routers.put("r", {"source": "a", "dest": "b"})
    assert (routers.state("r").cursor, routers.state("r").lag) == (3, 0)
    engine.append("a", data(4))
    state = routers.state("r")
    assert (state.cursor, state.lag, state.source_head_seq) == (3, 4, 7)
    routers.drain()
    state = routers.state("r")
    assert (state.cursor, state.lag, state.source_head_seq) == (7, 0, 7)
    assert state.router.forwarded_total == 4
    with raises_topics(RouterNotFound, "router_not_found"):
        routers.state("absent")


# -- backpressure ------------------------------------------------------------------------------


def test_full_reject_dest_holds_the_cursor_and_retries_with_backoff(
    engine: Engine, routers: Routers, clock: ManualClock
) -> None:
    engine.put_topic("d", {"cap_records": 3, "discard": "reject"})
    engine.append("d", data(3, start=-3))  # full
    routers.put("s->d", {"source": "s", "dest": "d"})
    engine.append("s", data(5))
    assert routers.drain() == 0
    router = routers.get("s->d")
    assert router.cursor == 0 and routers.state("s->d").lag == 5  # nothing lost, nothing skipped
    assert router.blocked and router.last_error == "topic_full" and router.retry_ms == RETRY_MS[0]
    engine.append("s", data(1, start=5))  # a blocked router is not pumped by new appends
    assert routers.drain() == 0 and router.cursor == 0
    # still full at every retry: the delay doubles up to the ceiling
    delays = []
    for _ in range(10):
        clock.advance(router.retry_ms)
        assert routers.drain() == 0
        delays.append(router.retry_ms)
    assert delays[:3] == [2 * RETRY_MS[0], 4 * RETRY_MS[0], 8 * RETRY_MS[0]]
    assert delays[-1] == RETRY_MS[1] and max(delays) == RETRY_MS[1]
    assert router.cursor == 0


def test_backpressure_drains_a_backlog_larger_than_the_dest_cap_without_loss(
    engine: Engine, routers: Routers, clock: ManualClock
) -> None:
    engine.put_topic("d", {"cap_records": 3, "discard": "reject"})
    routers.put("s->d", {"source": "s", "dest": "d"})
    engine.append("d", data(3, start=-3))  # full before anything is forwarded
    engine.append("s", data(8))
    assert routers.drain() == 0
    router = routers.get("s->d")
    assert router.cursor == 0 and router.blocked
    clock.advance(RETRY_MS[0] - 1)
    assert routers.drain() == 0  # the retry is not due yet
    received: list[Any] = []
    for _ in range(20):  # a consumer empties dest; the router refills it after each retry
        received.extend(r["data"] for r in dest_recs(engine, "d") if r["data"] >= 0)
        engine.delete_records("d", before_seq=topic_of(engine, "d").head_seq + 1)
        if router.cursor == 8:
            break
        clock.advance(RETRY_MS[1])
        routers.drain()
        assert topic_of(engine, "d").count <= 3
        assert router.cursor == router.forwarded_total  # copied in order: cursor == last copied
    assert received == list(range(8))  # in order, no loss, no duplicates
    assert router.forwarded_total == 8 and routers.state("s->d").lag == 0
    assert not router.blocked


# -- source trim -------------------------------------------------------------------------------


def test_source_eviction_before_forwarding_leaves_a_source_trim_tombstone(
    engine: Engine, routers: Routers
) -> None:
    engine.put_topic("s", {"cap_records": 3, "discard": "old"})
    routers.put("s->d", {"source": "s", "dest": "d"})
    engine.append("s", data(1, start=-1))
    routers.drain()  # d: one copy (seq 1)
    engine.append("s", data(10))  # 11 records in all, cap 3: 0..6 are evicted unforwarded
    routers.drain()
    router = routers.get("s->d")
    assert router.cursor == 11 and router.forwarded_total == 4 and router.source_trimmed == 7
    assert routers.state("s->d").lag == 0
    records, pages = read_all(engine, "d", 0)
    assert [r["data"] for r in records] == [-1, 7, 8, 9]
    stones = [p.tombstone for p in pages if p.tombstone is not None]
    assert len(stones) == 1
    stone = stones[0]
    assert (stone.reason, stone.gap_from, stone.gap_to, stone.missed_estimate) == ("source_trim", 2, 2, 7)
    assert [r["$seq"] for r in records] == [1, 3, 4, 5]  # dest seq 2 is the marker
    # a reader already past the copy before the marker gets the tombstone first
    page = engine.diff("d", from_seq=1, touch=False)
    assert page.tombstone is not None and page.tombstone.reason == "source_trim"
    assert [r["data"] for r in recs(page)] == [7, 8, 9]
    # and one past the marker reads on without it
    page = engine.diff("d", from_seq=2, touch=False)
    assert page.tombstone is None and [r["data"] for r in recs(page)] == [7, 8, 9]


def test_source_trim_marker_as_the_first_dest_seq_is_reported_from_zero(
    engine: Engine, routers: Routers
) -> None:
    engine.put_topic("s", {"cap_records": 3, "discard": "old"})
    routers.put("s->d", {"source": "s", "dest": "d"})
    engine.append("s", data(10))
    routers.drain()
    page = engine.diff("d", from_seq=0, touch=False)
    assert page.tombstone is not None and page.tombstone.reason == "source_trim"
    assert [r["data"] for r in recs(page)] == [7, 8, 9]


# -- exactly_once ------------------------------------------------------------------------------


def test_exactly_once_stamps_the_idempotency_key(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    engine.append("a", data(1, start=-1))  # seq 1
    engine.append("a", [{"data": 1, "meta": {"trace": "t"}}, {"data": 2}])
    routers.drain()
    copies = dest_recs(engine, "b")
    assert [stamp(c) for c in copies] == [
        {"router": "a->b", "source": "a", "seq": seq, "hops": 1} for seq in (1, 2, 3)
    ]
    assert copies[1]["meta"] == {"trace": "t", STAMP: stamp(copies[1])}  # merged into the meta


def test_start_skips_copies_exactly_once_dest_already_holds(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    engine.append("a", data(3))
    routers.drain()
    router = routers.get("a->b")
    router.cursor = 1  # as after a crash that lost the cursor's progress but not the copies
    engine.append("a", data(1, start=3))
    routers.start()
    assert router.cursor == 3  # moved past the newest key found in dest
    assert routers.drain() == 1
    assert datas(engine, "b") == [0, 1, 2, 3]  # nothing appended twice
    assert [(stamp(c) or {}).get("seq") for c in dest_recs(engine, "b")] == [1, 2, 3, 4]


def test_start_with_at_least_once_may_duplicate(engine: Engine, routers: Routers) -> None:
    """The contrast: at_least_once has no key, so a lost cursor re-forwards."""
    routers.put("a->b", {"source": "a", "dest": "b"})
    engine.append("a", data(3))
    routers.drain()
    routers.get("a->b").cursor = 1
    routers.start()
    assert routers.drain() == 2
    assert datas(engine, "b") == [0, 1, 2, 1, 2]


def test_exactly_once_needs_the_key_to_be_retained(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    engine.append("a", data(2))
    routers.drain()
    engine.delete_records("b", before_seq=100)  # the evidence is gone
    routers.get("a->b").cursor = 0
    routers.start()
    assert routers.drain() == 2
    assert datas(engine, "b") == [0, 1]


def test_start_ignores_keys_of_other_routers(engine: Engine, routers: Routers) -> None:
    routers.put("a->b", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    engine.append("a", data(2))
    routers.drain()
    routers.put("a->b.2", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    routers.get("a->b.2").cursor = 0
    routers.start()
    assert routers.get("a->b.2").cursor == 0  # a->b's keys are not a->b.2's
    assert routers.drain() == 2


# -- fsync dest (sync engine fixture: settle drives the WAL) -----------------------------------


def test_fsync_dest_copies_are_visible_once_durable(engine: Engine, routers: Routers) -> None:
    engine.put_topic("d", {"durability": "fsync"})
    settle(engine)
    routers.put("s->d", {"source": "s", "dest": "d"})
    engine.append("s", data(3))
    assert routers.drain() == 3
    settle(engine)
    assert datas(engine, "d") == [0, 1, 2]
    assert routers.state("s->d").cursor == 3


# -- durability: restart (docs/DECISIONS.md, "Derived copies") ---------------------------------


class Node:
    """A durable engine and its routers over a data directory, restartable."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = ManualClock(T0)
        self.engine: Engine
        self.routers: Routers
        self.store: DataDirectory | None = None

    async def open(self) -> Node:
        self.engine = Engine(self.clock, Limits())
        self.routers = Routers(self.engine, autorun=False)
        self.store = DataDirectory(self.path)
        self.store.lock()
        for _ in self.store.recover(self.engine, self.routers):
            pass
        self.store.open(self.engine, asyncio.get_running_loop())
        return self

    async def flush(self) -> None:
        assert self.store is not None and self.store.wal is not None
        await self.store.wal.run_task(lambda: None)

    async def restart(self, mode: str) -> None:
        assert self.store is not None
        await self.flush()
        if mode == "checkpoint":
            await self.store.checkpoint()
        self.close()
        await self.open()

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = await Node(tmp_path / "data").open()
    yield n
    n.close()


def all_bytes(engine: Engine, topic: str, from_seq: int = 0) -> list[bytes]:
    out: list[bytes] = []
    cursor = from_seq
    for _ in range(1000):
        page: Diff = engine.diff(topic, from_seq=cursor, limit=1000, include_tags=True, touch=False)
        out.extend(record_bytes(page))
        if page.caught_up:
            return out
        cursor = page.next_from_seq
    raise AssertionError("reader never caught up")


def progress(routers: Routers) -> dict[str, tuple[int, int, Any]]:
    return {r.name: (r.cursor, r.forwarded_total, r.config) for r in routers.all()}


MODES = ["wal", "checkpoint"]


@pytest.mark.parametrize("mode", MODES)
async def test_restart_rederives_identical_copies(node: Node, mode: str) -> None:
    e, rs = node.engine, node.routers
    rs.put("a->b", {"source": "a", "dest": "b"})
    rs.put("a->x", {"source": "a", "dest": "x", "filter": ["tag", "Glob", "x:*"], "preserve_node": False})
    rs.put("a->eo", {"source": "a", "dest": "eo", "guarantee": "exactly_once"})
    e.append("a", [{"data": {"i": 0}, "tag": "x:0", "meta": {"m": 0}}, {"data": 1}], node="n1")
    node.clock.advance(3)
    rs.drain()
    e.append("b", [{"data": "direct"}])  # dest's own write between two steps
    e.append("a", [{"data": 2, "tag": "y"}, {"data": 3, "tag": "x:3"}])
    node.clock.advance(3)
    rs.drain()
    e.append("a", [{"data": 4, "tag": "y"}])  # filtered out by a->x: only its cursor moves
    rs.drain()
    before = {t: all_bytes(e, t) for t in ("a", "b", "x", "eo")}
    assert len(before["b"]) == 6 and len(before["x"]) == 2 and len(before["eo"]) == 5
    state = progress(rs)
    assert state["a->x"][:2] == (5, 2) and state["a->b"][:2] == (5, 5)

    await node.restart(mode)
    e, rs = node.engine, node.routers
    assert progress(rs) == state
    assert {t: all_bytes(e, t) for t in before} == before  # same seqs, $ts, fields: byte for byte
    assert rs.get("a->b").id != rs.get("a->x").id

    # forwarding carries on after the restart from the recovered cursors
    rs.start()
    assert rs.drain() == 0
    e.append("a", [{"data": 5, "tag": "x:5"}])
    assert rs.drain() == 3
    assert [orjson.loads(b)["$seq"] for b in all_bytes(e, "b")] == [1, 2, 3, 4, 5, 6, 7]
    assert orjson.loads(all_bytes(e, "x")[-1])["data"] == 5
    assert rs.get("a->b").forwarded_total == 6


async def test_copies_are_derived_not_logged(node: Node) -> None:
    """One source append is one logged copy of the record whatever the fan-out."""
    rs = node.routers
    for i in range(3):
        rs.put(f"a->d{i}", {"source": "a", "dest": f"d{i}"})
    needle = "needle-4f0c2a"
    node.engine.append("a", [{"data": needle}])
    assert rs.drain() == 3
    await node.flush()
    assert node.store is not None
    logged = b"".join(p.read_bytes() for p in sorted(node.store.wal_dir.iterdir()))
    assert logged.count(needle.encode()) == 1
    await node.restart("wal")
    assert [orjson.loads(all_bytes(node.engine, f"d{i}")[0])["data"] for i in range(3)] == [needle] * 3


@pytest.mark.parametrize("mode", MODES)
async def test_restart_keeps_reconfiguration_and_deletes(node: Node, mode: str) -> None:
    e, rs = node.engine, node.routers
    rs.put("a->b", {"source": "a", "dest": "b"})
    rs.put("gone", {"source": "a", "dest": "g"})
    rs.put("p->q", {"source": "p", "dest": "q"})
    e.append("a", data(2))
    rs.drain()
    rs.put("a->b", {"source": "a", "dest": "b", "preserve_tag": False, "filter": ["tag", "Eq", "k"]})
    rs.delete("gone")
    removed = rs.delete_topic("q").routers_removed
    assert removed == ["p->q"]
    await node.restart(mode)
    rs = node.routers
    assert [r.name for r in rs.all()] == ["a->b"]
    router = rs.get("a->b")
    assert router.config.preserve_tag is False and router.config.filter == ["tag", "Eq", "k"]
    assert router.cursor == 2 and router.forwarded_total == 2
    assert router.match is not None and router.match.matches("k") and not router.match.matches("j")
    node.engine.append("a", [{"data": "k", "tag": "k"}, {"data": "j", "tag": "j"}])
    rs.start()
    rs.drain()
    last = orjson.loads(all_bytes(node.engine, "b")[-1])
    assert last["data"] == "k" and "$tag" not in last
    # a new router after the restart does not reuse an id
    assert rs.put("new", {"source": "n", "dest": "m"}).router.id > router.id


@pytest.mark.parametrize("mode", MODES)
async def test_restart_keeps_the_source_trim_marker(node: Node, mode: str) -> None:
    e, rs = node.engine, node.routers
    e.put_topic("s", {"cap_records": 2})
    rs.put("s->d", {"source": "s", "dest": "d"})
    e.append("s", data(1, start=-1))
    rs.drain()
    e.append("s", data(6))
    rs.drain()
    before = all_bytes(e, "d")
    stone = e.diff("d", from_seq=1, touch=False).tombstone
    assert stone is not None and stone.reason == "source_trim"
    router = rs.get("s->d")
    assert (router.cursor, router.forwarded_total, router.source_trimmed) == (7, 3, 4)
    await node.restart(mode)
    e = node.engine
    router = node.routers.get("s->d")
    assert (router.cursor, router.forwarded_total, router.source_trimmed) == (7, 3, 4)
    assert all_bytes(e, "d") == before
    after = e.diff("d", from_seq=1, touch=False)
    assert after.tombstone == stone
    assert [r["data"] for r in recs(after)] == [4, 5]


@pytest.mark.parametrize("mode", MODES)
async def test_fsync_dest_copies_become_visible_when_durable_and_survive(node: Node, mode: str) -> None:
    e, rs = node.engine, node.routers
    e.put_topic("d", {"durability": "fsync"})
    await node.flush()
    rs.put("s->d", {"source": "s", "dest": "d"})
    e.append("s", [{"data": 0, "tag": "t"}, {"data": 1}])
    assert rs.drain() == 2
    assert e.diff("d", touch=False).count == 0  # planned, not yet durable
    await node.flush()
    before = all_bytes(e, "d")
    assert [orjson.loads(b)["data"] for b in before] == [0, 1]
    await node.restart(mode)
    assert all_bytes(node.engine, "d") == before
    assert node.routers.get("s->d").cursor == 2


@pytest.mark.parametrize("mode", MODES)
async def test_restart_then_start_moves_an_exactly_once_cursor_past_existing_copies(
    node: Node, mode: str
) -> None:
    e, rs = node.engine, node.routers
    rs.put("a->b", {"source": "a", "dest": "b", "guarantee": "exactly_once"})
    e.append("a", data(3))
    rs.drain()
    await node.restart(mode)
    rs = node.routers
    rs.get("a->b").cursor = 0  # simulate progress lost while the copies survived
    rs.start()
    assert rs.get("a->b").cursor == 3
    assert rs.drain() == 0
    assert datas(node.engine, "b") == [0, 1, 2]


def test_replay_of_frames_a_snapshot_already_reflects_keeps_every_index(clock: ManualClock) -> None:
    """A snapshot's LSN can stay below frames it already reflects (an ``fsync`` append still
    waiting when it was cut), so replay re-runs them on top: ``PUT a`` (id 1), ``DELETE`` 1,
    ``PUT a`` (id 2) over a snapshot holding ``a`` as id 2 ends as it started."""
    source = Routers(Engine(clock, Limits()), autorun=False)
    first = source.put("a", {"source": "s", "dest": "x"}).router.payload()
    source.delete("a")
    second = source.put("a", {"source": "s", "dest": "y"}).router.payload()
    source.put("b", {"source": "s", "dest": "x"})
    engine = Engine(clock, Limits())
    for name in ("s", "x", "y"):
        engine.put_topic(name, {})
    replayed = Routers(engine, autorun=False)
    for image in source.images():
        replayed.apply_put(image)

    def state() -> list[tuple[str, int]]:
        assert sorted(replayed._by_id) == sorted(r.id for r in replayed._by_name.values())
        assert replayed._names == sorted(replayed._by_name)
        return [(r.name, r.id) for r in replayed.all()]

    replayed.apply_put(first)
    assert state() == [("a", 1), ("b", 3)]
    replayed.apply_delete(first.id)
    assert state() == [("b", 3)]
    replayed.apply_delete(first.id)  # an id no longer present: nothing
    replayed.apply_put(second)
    replayed.finish_replay()
    assert state() == [("a", 2), ("b", 3)] and replayed.next_id == 4
    assert replayed.get("a").config == source.get("a").config
    assert replayed.naming("y") == [replayed.get("a")]
