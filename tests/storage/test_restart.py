"""Restart: what a reader sees after a restart equals what it saw before (§0.10, §3.3, §5).

Every test runs in two restart modes:

- ``wal``        — clean close without a checkpoint: recovery replays the whole WAL;
- ``checkpoint`` — ``DataDirectory.checkpoint()`` first: recovery loads the snapshot + segments (and
  whatever WAL tail follows).

"Observations" are compared byte for byte: the records of full reads in several shapes, reads
from every cursor (records, ``next_from_seq`` and tombstone), and the topic state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import Engine, ManualClock

from ..engine.conftest import fields, record_bytes
from .harness import T0, Harness, app_client, diff_bytes, diff_data, diff_seqs


def read_at(engine: Engine, topic: str, cursor: int, **kw: Any) -> tuple[list[bytes], int, Any]:
    page = engine.diff(topic, from_seq=cursor, limit=1000, touch=False, **kw)
    tomb = fields(page.tombstone) if page.tombstone else None
    return record_bytes(page), page.next_from_seq, tomb


def observe(engine: Engine, topic: str) -> dict[str, Any]:
    state = engine.topic_state(topic, touch=False)
    head = state.head_seq
    return {
        "state": state,
        "plain": diff_bytes(engine, topic),
        "tags": diff_bytes(engine, topic, include_tags=True),
        "no_meta": diff_bytes(engine, topic, include_meta=False),
        "not_n1": diff_bytes(engine, topic, node="n1", include_tags=True),
        "cursors": {c: read_at(engine, topic, c, include_tags=True) for c in range(head + 2)},
    }


def observe_all(engine: Engine) -> dict[str, Any]:
    names = [t.topic for t in engine.list_topics(page_size=1000).topics]
    return {name: observe(engine, name) for name in names}


def assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert after.keys() == before.keys()
    for name in before:
        for key in before[name]:
            assert after[name][key] == before[name][key], f"{name}: {key} differs after restart"


RECORDS = [
    {"data": {"k": "v", "n": 1}, "tag": "a:1", "node": "n1", "meta": {"trace": "x"}},
    {"data": "héllo wörld ✓ 𝄞", "tag": "ünï:2"},
    {"data": None},
    {"data": [1, 2.5, True, None, {"deep": ["x"]}], "node": "n2", "meta": {}},
    {"data": 12345678901234567890, "tag": ""},
    {"data": "", "node": ""},
]


# -- topics, configs, records --------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["memory", "disk", "fsync"])
async def test_restart_preserves_records_byte_for_byte(h: Harness, durability: str) -> None:
    e = h.engine
    await e.put_topic("t", {"durability": durability}).wait
    for i in range(5):
        result = e.append("t", RECORDS, node="batch-node" if i % 2 else None)
        if result.wait is not None:
            await result.wait
        h.clock.advance(7)
    before = observe_all(e)
    e = await h.restart()
    assert_same(before, observe_all(e))
    # and the topic goes on where it was
    result = e.append("t", [{"data": "next"}])
    assert result.first_seq == before["t"]["state"].head_seq + 1


async def test_restart_preserves_every_config_field(h: Harness) -> None:
    e = h.engine
    full = {
        "type": "queue",
        "ttl_ms": 3_600_000,
        "cap_records": 1000,
        "cap_bytes": 10_000_000,
        "discard": "reject",
        "durability": "fsync",
        "priority": 7,
        "auto_priority": False,
        "auto_create": False,
        "idempotency_window_ms": 5000,
        "dedupe_node": False,
        "lease_ms": 1234,
        "claim_jitter_ms": 50,
        "max_deliveries": 3,
        "dead_letter": "dlq",
        "leases_durable": True,
        "max_in_flight": 5,
    }
    await e.put_topic("q", full).wait
    await e.put_topic("updated", {"cap_records": 10}).wait
    await e.put_topic("updated", {"priority": -3, "durability": "memory", "ttl_ms": 99_000}).wait
    for cls in ("ephemeral", "memory", "disk", "fsync"):
        await e.put_topic(f"c-{cls}", {"durability": cls}).wait
    await e.put_topic("alias", {"durable": True}).wait
    before = {t.name: e.topic_state(t.name, touch=False).config.to_wire() for t in e.topics()}
    assert before["q"] == {**full, "durable": True}
    e = await h.restart()
    after = {t.name: e.topic_state(t.name, touch=False).config.to_wire() for t in e.topics()}
    assert after == before
    assert after["updated"]["cap_records"] == 10 and after["updated"]["priority"] == -3
    assert after["alias"]["durability"] == "fsync"


async def test_topic_ids_are_not_reused_across_restarts(h: Harness) -> None:
    e = h.engine
    await e.put_topic("a", {}).wait
    e.append("a", [{"data": "a1"}])
    await e.delete_topic("a").wait
    await e.put_topic("b", {}).wait
    e.append("b", [{"data": "b1"}])
    e = await h.restart()
    await e.put_topic("c", {}).wait
    e.append("c", [{"data": "c1"}])
    e.append("b", [{"data": "b2"}])
    e = await h.restart()
    assert [t.name for t in e.topics()] == ["b", "c"]
    assert diff_data(e, "b") == ["b1", "b2"]
    assert diff_data(e, "c") == ["c1"]
    e = await h.restart()
    assert diff_data(e, "c") == ["c1"]


async def test_a_deleted_topic_stays_deleted(h: Harness) -> None:
    e = h.engine
    e.append("gone", [{"data": 1}])
    await e.delete_topic("gone").wait
    e = await h.restart()
    assert e.topic_count == 0


# -- deletes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["memory", "disk", "fsync"])
async def test_restart_preserves_deletes_by_tag_and_before_seq(h: Harness, durability: str) -> None:
    e = h.engine
    await e.put_topic("t", {"durability": durability}).wait
    tags = ["x:1", "y:1", "x:2", None, "x:1", "z", "y:2", "x:3", None, "x:1"]
    result = e.append("t", [{"data": i, "tag": tag} for i, tag in enumerate(tags)])
    if result.wait is not None:
        await result.wait
    for kwargs in (
        {"match": "x:1"},
        {"before_seq": 3},
        {"match": ["tag", "Glob", "y:*"]},
        {"before_seq": 9, "match": ["tag", "Glob", "x:*"]},
    ):
        deleted = e.delete_records("t", **kwargs)
        if deleted.wait is not None:
            await deleted.wait
    before = observe_all(e)
    assert [orjson.loads(b)["data"] for b in before["t"]["plain"]] == [3, 5, 8]
    # a cursor inside the deleted prefix gets no tombstone, just the survivors
    assert before["t"]["cursors"][1][2] is None
    e = await h.restart()
    assert_same(before, observe_all(e))
    assert e.topic_state("t", touch=False).count == 3


async def test_reader_catches_up_after_restart_when_the_newest_record_was_deleted(h: Harness) -> None:
    e = h.engine
    e.append("t", [{"data": 1}, {"data": 2}, {"data": 3, "tag": "drop"}])
    e.delete_records("t", match="drop")
    e = await h.restart()
    page = e.diff("t", from_seq=0, touch=False)
    assert [orjson.loads(b)["data"] for b in record_bytes(page)] == [1, 2]
    assert page.head_seq == 3
    assert page.next_from_seq == 3 and page.caught_up, "reader is stuck below head_seq"
    assert e.append("t", [{"data": 4}]).first_seq == 4
    assert diff_data(e, "t") == [1, 2, 4]


# -- caps, TTL, tombstones ---------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["memory", "disk", "fsync"])
async def test_cap_evictions_still_yield_a_cap_tombstone_after_restart(h: Harness, durability: str) -> None:
    e = h.engine
    await e.put_topic("c", {"cap_records": 5, "durability": durability}).wait
    for i in range(12):
        result = e.append("c", [{"data": i}])
        if result.wait is not None:
            await result.wait
    await e.put_topic("b", {"cap_bytes": 200, "durability": durability}).wait
    for i in range(30):
        result = e.append("b", [{"data": "x" * (i % 9)}])
        if result.wait is not None:
            await result.wait
    before = observe_all(e)
    stale = before["c"]["cursors"][2][2]
    assert stale is not None and stale["reason"] == "cap"
    assert (stale["gap_from"], stale["gap_to"], stale["missed_estimate"]) == (3, 7, 5)
    e = await h.restart()
    after = observe_all(e)
    assert after["c"]["cursors"][2][2] == stale, "stale cursor lost its cap tombstone across restart"
    assert_same(before, after)


async def test_tightened_cap_and_its_tombstone_survive_restart(h: Harness) -> None:
    e = h.engine
    e.append("t", [{"data": i} for i in range(20)])
    await e.put_topic("t", {"cap_records": 4}).wait
    e.delete_records("t", before_seq=18)
    before = observe_all(e)
    assert [orjson.loads(b)["data"] for b in before["t"]["plain"]] == [17, 18, 19]
    e = await h.restart()
    assert_same(before, observe_all(e))


async def test_ttl_expiry_and_its_tombstone_survive_restart(h: Harness) -> None:
    e = h.engine
    await e.put_topic("t", {"ttl_ms": 1000}).wait
    for i in range(6):
        e.append("t", [{"data": i}])
        h.clock.advance(300)
    e.diff("t", touch=False)  # expire now: records 0..2 are older than 1 s
    before = observe_all(e)
    assert [orjson.loads(b)["data"] for b in before["t"]["plain"]] == [3, 4, 5]
    assert before["t"]["cursors"][1][2]["reason"] == "ttl"
    e = await h.restart()
    assert_same(before, observe_all(e))


async def test_relaxed_ttl_before_restart_keeps_the_records(h: Harness) -> None:
    """Records kept alive by a TTL that was lifted before they expired must not expire at
    restart because replay re-applies the old TTL at the restart's clock."""
    e = h.engine
    await e.put_topic("t", {"ttl_ms": 1000}).wait
    e.append("t", [{"data": i} for i in range(3)])
    h.clock.advance(500)
    await e.put_topic("t", {"ttl_ms": 0}).wait  # no TTL any more: records kept for good
    h.clock.advance(10_000)
    assert diff_data(e, "t") == [0, 1, 2]
    before = observe_all(e)
    e = await h.restart()
    assert diff_data(e, "t") == [0, 1, 2]
    assert_same(before, observe_all(e))


async def test_relaxed_cap_before_restart_keeps_the_records(h: Harness) -> None:
    e = h.engine
    await e.put_topic("t", {"cap_records": 3}).wait
    e.append("t", [{"data": i} for i in range(3)])
    await e.put_topic("t", {"cap_records": 0}).wait
    e.append("t", [{"data": i} for i in range(3, 6)])
    before = observe_all(e)
    assert len(before["t"]["plain"]) == 6
    e = await h.restart()
    assert_same(before, observe_all(e))


# -- idempotency ---------------------------------------------------------------------------------


@pytest.mark.parametrize("durability", ["memory", "disk", "fsync"])
async def test_idempotency_dedupes_across_restart_within_the_window(h: Harness, durability: str) -> None:
    e = h.engine
    await e.put_topic("t", {"durability": durability, "idempotency_window_ms": 60_000}).wait
    first = e.append("t", [{"data": 1}, {"data": 2}], idempotency_key="k1")
    if first.wait is not None:
        await first.wait
    h.clock.advance(10_000)
    e.append("t", [{"data": 3}], idempotency_key="k2")
    e = await h.restart()
    h.clock.advance(40_000)  # k1 is 50 s old: inside the window
    again = e.append("t", [{"data": 1}, {"data": 2}], idempotency_key="k1")
    assert again.deduped and (again.first_seq, again.last_seq) == (1, 2)
    assert diff_data(e, "t") == [1, 2, 3]
    h.clock.advance(15_000)  # k1 is 65 s old: expired; k2 (55 s) still inside
    assert e.append("t", [{"data": 3}], idempotency_key="k2").deduped
    fresh = e.append("t", [{"data": 1}], idempotency_key="k1")
    assert not fresh.deduped and fresh.first_seq == 4


# -- delete + recreate ---------------------------------------------------------------------------


async def test_recreated_tombstone_when_delete_and_recreate_precede_restart(h: Harness) -> None:
    e = h.engine
    e.append("r", [{"data": i} for i in range(5)])
    await e.delete_topic("r").wait
    e.append("r", [{"data": "new"}])
    before = observe_all(e)
    e = await h.restart()
    assert_same(before, observe_all(e))
    tomb = read_at(e, "r", 5)[2]
    assert tomb is not None and tomb["reason"] == "recreated"
    assert diff_data(e, "r") == ["new"]


async def test_recreated_tombstone_when_the_topic_is_recreated_after_restart(h: Harness) -> None:
    e = h.engine
    e.append("r", [{"data": i} for i in range(5)])
    await e.delete_topic("r").wait
    e = await h.restart()
    assert e.topic_count == 0
    e.append("r", [{"data": "new"}])
    records, _, tomb = read_at(e, "r", 5)
    assert tomb is not None and tomb["reason"] == "recreated", tomb
    assert [orjson.loads(b)["data"] for b in records] == ["new"]
    e = await h.restart()
    assert read_at(e, "r", 5)[2] == tomb


# -- durability classes --------------------------------------------------------------------------


async def test_ephemeral_config_survives_records_do_not_and_seqs_are_never_reused(h: Harness) -> None:
    e = h.engine
    await e.put_topic("eph", {"durability": "ephemeral", "cap_records": 50_000, "priority": 4}).wait
    handed_out = 0
    for n in (10, 3000, 5000, 1):  # crosses several seq-reservation blocks, one batch > a block
        handed_out = e.append("eph", [{"data": i} for i in range(n)]).last_seq
    config = e.topic_state("eph", touch=False).config
    e = await h.restart()
    state = e.topic_state("eph", touch=False)
    assert state.config == config
    assert state.count == 0 and diff_bytes(e, "eph") == []
    assert state.head_seq >= handed_out
    nxt = e.append("eph", [{"data": "after"}])
    assert nxt.first_seq > handed_out
    assert diff_data(e, "eph") == ["after"]
    e = await h.restart()
    assert e.topic_state("eph", touch=False).head_seq >= nxt.first_seq


async def test_memory_class_records_survive_a_clean_restart_like_disk(h: Harness) -> None:
    e = h.engine
    await e.put_topic("m", {"durability": "memory"}).wait
    await e.put_topic("d", {"durability": "disk"}).wait
    for name in ("m", "d"):
        e.append(name, RECORDS)
        e.delete_records(name, match=["tag", "Glob", "a:*"])
    before = observe_all(e)
    assert before["m"]["plain"] == before["d"]["plain"]
    e = await h.restart()
    assert_same(before, observe_all(e))


async def test_durability_class_changes_survive_restart(h: Harness) -> None:
    e = h.engine
    await e.put_topic("t", {"durability": "disk"}).wait
    e.append("t", [{"data": "disk"}])
    await e.put_topic("t", {"durability": "fsync"}).wait
    await e.append("t", [{"data": "fsync"}]).wait
    await e.put_topic("t", {"durability": "memory"}).wait
    e.append("t", [{"data": "memory"}])
    before = observe_all(e)
    e = await h.restart()
    assert_same(before, observe_all(e))


async def test_many_restarts_accumulate_nothing_twice(h: Harness) -> None:
    e = h.engine
    expected: list[Any] = []
    for round_ in range(4):
        for i in range(3):
            e.append("t", [{"data": [round_, i]}])
            expected.append([round_, i])
        e = await h.restart()
        assert diff_data(e, "t") == expected
        assert diff_seqs(e, "t") == list(range(1, len(expected) + 1))


# -- over HTTP -----------------------------------------------------------------------------------


async def _http_observe(client: httpx.AsyncClient, topics: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in topics:
        state = (await client.get("/v0/topics/" + name)).json()
        state.pop("performance")
        reads = []
        for cursor in range(state["head_seq"] + 2):
            r = await client.post(f"/v0/topics/{name}/diff", json={"from_seq": cursor, "include_tags": True})
            body = r.json()
            body.pop("performance")
            reads.append(body)
        out[name] = {"state": state, "reads": reads}
    return out


async def test_http_restart_serves_identical_diffs(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    async with app_client(tmp_path, clock) as (client, _):
        await client.put("/v0/topics/f", json={"durability": "fsync", "cap_records": 8})
        await client.put("/v0/topics/d", json={"durability": "disk"})
        for i in range(4):
            await client.post("/v0/topics/f", json={"records": RECORDS[: i + 1]})
            await client.post("/v0/topics/d", json={"records": RECORDS, "node": "bn"})
        await client.post("/v0/topics/d/delete", json={"match": ["tag", "Glob", "a:*"]})
        # GET touches last_read_ts; observe twice so both observations start from the same reads
        await _http_observe(client, ["d", "f"])
        before = await _http_observe(client, ["d", "f"])
    async with app_client(tmp_path, clock) as (client, ctx):
        assert (await client.get("/v0/ready")).status_code == 200
        after = await _http_observe(client, ["d", "f"])
    assert after == before
