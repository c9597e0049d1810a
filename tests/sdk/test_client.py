"""Every ``topics.Client`` / ``topics.AsyncClient`` method against a real server, both ways.

Each test takes ``sdk``: the same calls through the blocking client or the asyncio one
(``await sdk.call("append", ...)``; iterators come back as lists).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import topics

from tests.server.processes import ServerProcess


class Calls:
    """One client, called uniformly: awaits coroutines, drains (async) iterators."""

    def __init__(self, client: topics.Client | topics.AsyncClient) -> None:
        self.client = client

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self.client, method)(*args, **kwargs)
        if inspect.isawaitable(result):
            return await result
        if hasattr(result, "__aiter__"):
            return [x async for x in result]
        if isinstance(result, Iterator):
            return list(result)
        return result


@pytest.fixture(params=["sync", "async"])
async def sdk(request: pytest.FixtureRequest, server: ServerProcess) -> AsyncIterator[Calls]:
    if request.param == "sync":
        with topics.Client(server.url, retries=1) as c:
            yield Calls(c)
    else:
        async with topics.AsyncClient(server.url, retries=1) as ac:
            yield Calls(ac)


async def test_topic_lifecycle(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("life")
    info = await sdk.call("create_topic", t, durability="fsync", cap_records=100)
    assert (info.topic, info.created, info.config.durability, info.config.cap_records) == (
        t,
        True,
        "fsync",
        100,
    )
    again = await sdk.call("create_topic", t, cap_records=200)  # a partial PUT keeps the rest
    assert (again.created, again.config.durability, again.config.cap_records) == (False, "fsync", 200)
    state = await sdk.call("topic", t)
    assert (state.head_seq, state.earliest_seq, state.next_seq, state.count, state.queue) == (
        0,
        1,
        1,
        0,
        None,
    )
    await sdk.call("append", t, 1)
    with pytest.raises(topics.TopicNotEmpty) as err:
        await sdk.call("delete_topic", t, if_empty=True)
    assert err.value.status == 409
    gone = await sdk.call("delete_topic", t)
    assert (gone.topic, gone.deleted, gone.routers_removed) == (t, True, [])
    assert (await sdk.call("delete_topic", t)).deleted is False
    with pytest.raises(topics.TopicNotFound):
        await sdk.call("topic", t)


async def test_list_topics_follows_cursors(sdk: Calls, name: Callable[[str], str]) -> None:
    prefix = name("ls") + "."
    for i in range(5):
        await sdk.call("create_topic", f"{prefix}{i}")
    listed = await sdk.call("list_topics", prefix, page_size=2)
    assert [s.topic for s in listed] == [f"{prefix}{i}" for i in range(5)]
    assert all(s.type == "log" and s.count == 0 for s in listed)


async def test_append_read_fields_and_idempotency(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("rw")
    first = await sdk.call("append", t, {"a": [1, None, "é"]}, tag="x:1", node="n1", meta={"trace": "z"})
    assert (first.seqs, first.created, first.deduped) == ([1], True, False)
    keyed = await sdk.call("append", t, "two", idempotency_key="k-2")
    dup = await sdk.call("append", t, "two", idempotency_key="k-2")
    assert dup.deduped and dup.seqs == keyed.seqs == [2]
    await sdk.call("append", t, None, tag="y:3")
    records = await sdk.call("read", t)
    assert [(r.seq, r.data, r.tag, r.node, r.meta) for r in records] == [
        (1, {"a": [1, None, "é"]}, "x:1", "n1", {"trace": "z"}),
        (2, "two", None, None, None),
        (3, None, "y:3", None, None),
    ]
    assert all(isinstance(r.ts, int) and r.ts > 1_700_000_000_000 for r in records)
    assert [r.seq for r in await sdk.call("read", t, 1, to_seq=2)] == [2]
    assert [r.seq for r in await sdk.call("read", t, node="n1")] == [2, 3]
    bare = await sdk.call("read", t, include_meta=False, include_tags=False)
    assert (bare[0].meta, bare[0].tag) == (None, None)
    with pytest.raises(topics.TopicNotFound):
        await sdk.call("append", name("absent"), 1, create=False)


async def test_read_raw_keeps_data_and_meta_as_the_servers_json_text(
    sdk: Calls, name: Callable[[str], str]
) -> None:
    t = name("raw")
    await sdk.call("append", t, {"a": [1, None, "é"], "f": 2.5}, tag="x", node="n", meta={"k": 1})
    await sdk.call("append", t, "s")
    records = await sdk.call("read_raw", t)
    assert [(r.seq, bytes(r.data), r.tag, r.node, bytes(r.meta)) for r in records] == [
        (1, '{"a":[1,null,"é"],"f":2.5}'.encode(), "x", "n", b'{"k":1}'),
        (2, b'"s"', None, None, b""),
    ]
    decoded = await sdk.call("read", t)
    assert [r.ts for r in records] == [r.ts for r in decoded]
    assert [r.seq for r in await sdk.call("read_raw", t, 1, include_meta=False)] == [2]


async def test_read_pages_by_cursor(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("pages")
    await sdk.call("append_many", t, [{"data": i} for i in range(2500)])
    await sdk.call("delete_records", t, before_seq=1001)  # a silent deleted prefix
    records = await sdk.call("read", t, page_size=300)
    assert [r.data for r in records] == list(range(1000, 2500))


def test_read_position_is_the_last_record_handed_out(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t = name("pos")
    client.append_many(t, [{"data": i} for i in range(5)])
    reader = client.read(t, page_size=3)
    assert (next(reader).seq, reader.position) == (1, 1)  # mid-page: not the page's end (3)
    assert [r.seq for r in client.read(t, reader.position)] == [2, 3, 4, 5]
    assert [r.seq for r in reader] == [2, 3, 4, 5] and reader.position == 5


async def test_read_from_a_time(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("since")
    for i in range(4):
        await sdk.call("append", t, i)
        await asyncio.sleep(0.003)  # distinct $ts
    stamps = [r.ts for r in await sdk.call("read", t)]
    assert len(set(stamps)) == 4
    assert [r.data for r in await sdk.call("read", t, from_ts=stamps[2])] == [2, 3]
    when = datetime.fromtimestamp(stamps[1] / 1000, tz=UTC)
    assert [r.data for r in await sdk.call("read", t, from_ts=when)] == [1, 2, 3]
    assert await sdk.call("read", t, from_ts=stamps[3] + 1) == []
    assert [r.data for r in await sdk.call("read", t, from_ts=stamps[1], to_seq=3)] == [1, 2]
    with pytest.raises(ValueError, match="from_ts replaces from_seq"):
        await sdk.call("read", t, 2, from_ts=stamps[0])


def test_a_read_from_a_time_resumes_by_seq(client: topics.Client, name: Callable[[str], str]) -> None:
    t = name("since-pos")
    first = client.append(t, "old")
    time.sleep(0.003)
    client.append_many(t, [{"data": i} for i in range(5)])
    start = next(iter(client.read(t, 1))).ts
    reader = client.read(t, from_ts=start, page_size=2)
    assert reader.position == 0  # nothing fetched yet
    assert next(reader).seq == first.last_seq + 1
    assert reader.position == first.last_seq + 1
    assert [r.seq for r in client.read(t, reader.position)] == list(range(3, 7))


async def test_read_across_a_cap_tombstone_both_ways(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("capped")
    await sdk.call("create_topic", t, cap_records=5)
    await sdk.call("append_many", t, [{"data": i} for i in range(8)])
    with pytest.raises(topics.DataLoss) as err:  # a resumed read: records 2..3 were owed to it
        await sdk.call("read", t, 1)
    assert (err.value.topic, err.value.gap_from, err.value.gap_to, err.value.reason) == (t, 2, 3, "cap")
    assert err.value.missed_estimate == 2
    reader = sdk.client.read(t, 1, on_gap="skip")
    records = [r async for r in reader] if isinstance(reader, topics.AsyncReadIterator) else list(reader)
    assert [r.seq for r in records] == [4, 5, 6, 7, 8]
    assert [(g.gap_from, g.gap_to, g.reason) for g in reader.gaps] == [(2, 3, "cap")]
    assert (reader.missed, reader.position, reader.trimmed) == (2, 8, None)


async def test_read_from_the_start_of_a_capped_topic_is_no_loss(
    sdk: Calls, name: Callable[[str], str]
) -> None:
    t = name("capped_start")
    await sdk.call("create_topic", t, cap_records=5)
    await sdk.call("append_many", t, [{"data": i} for i in range(8)])
    assert [r.seq for r in await sdk.call("read", t)] == [4, 5, 6, 7, 8]  # no DataLoss
    assert [r.seq for r in await sdk.call("read", t, from_ts=0)] == [4, 5, 6, 7, 8]
    assert [r.seq for r in await sdk.call("read_raw", t)] == [4, 5, 6, 7, 8]
    for kwargs in ({}, {"from_ts": 0}):
        reader = sdk.client.read(t, **kwargs)  # type: ignore[arg-type]
        records = [r async for r in reader] if isinstance(reader, topics.AsyncReadIterator) else list(reader)
        assert len(records) == 5
        assert (reader.gaps, reader.missed) == ([], 0)
        assert reader.trimmed is not None
        assert (reader.trimmed.gap_from, reader.trimmed.gap_to, reader.trimmed.reason) == (1, 3, "cap")


async def test_read_after_recreate_follows_the_cursor_back(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("recreated")
    await sdk.call("append_many", t, [{"data": i} for i in range(5)])
    await sdk.call("delete_topic", t)
    await sdk.call("append", t, "new")
    with pytest.raises(topics.DataLoss) as err:
        await sdk.call("read", t, 3)
    assert err.value.reason == "recreated"
    reader = sdk.client.read(t, 3, on_gap="skip")
    records = [r async for r in reader] if isinstance(reader, topics.AsyncReadIterator) else list(reader)
    assert [r.data for r in records] == ["new"]


async def test_delete_records(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("del")
    await sdk.call(
        "append_many", t, [{"data": i, "tag": f"{'chat' if i % 2 else 'user'}:{i}"} for i in range(1, 11)]
    )
    assert await sdk.call("delete_records", t, tag="chat:*") == 5
    assert await sdk.call("delete_records", t, tag="user:2") == 1
    assert await sdk.call("delete_records", t, before_seq=7) == 2
    assert [r.data for r in await sdk.call("read", t)] == [8, 10]
    with pytest.raises(ValueError):
        await sdk.call("delete_records", t)


async def test_queue_claim_ack_nack_extend(sdk: Calls, name: Callable[[str], str]) -> None:
    q = name("q")
    await sdk.call("create_topic", q, type="queue", lease_ms=30_000)
    await sdk.call(
        "append_many", q, [{"data": {"job": i}, "tag": f"j{i}", "meta": {"m": i}} for i in range(4)]
    )
    jobs = await sdk.call("claim", q, "w1", max=3, lease_ms=10_000)
    assert [(j.seq, j.data, j.tag, j.meta, j.deliveries) for j in jobs] == [
        (1, {"job": 0}, "j0", {"m": 0}, 1),
        (2, {"job": 1}, "j1", {"m": 1}, 1),
        (3, {"job": 2}, "j2", {"m": 2}, 1),
    ]
    assert all(j.lease_id.startswith("lease_") and j.deadline > j.ts for j in jobs)
    extended = await sdk.call("extend", q, "w1", jobs[:1])  # the queue's lease_ms by default
    assert extended.extended == 1 and extended.deadlines[1] > jobs[0].deadline
    nacked = await sdk.call("nack", q, "w1", [jobs[1].seq], delay_ms=0)  # a bare seq: no fence
    assert (nacked.nacked, nacked.skipped) == (1, [])
    acked = await sdk.call("ack", q, "w1", [jobs[0], jobs[2], 99])
    assert (acked.acked, acked.skipped, acked.in_flight) == (2, [99], 0)
    again = await sdk.call("claim", q, "w2", max=5)
    assert sorted(j.seq for j in again) == [2, 4] and {j.seq: j.deliveries for j in again}[2] == 2
    stale = await sdk.call("ack", q, "w1", [jobs[1]])  # w1's lease on seq 2 was superseded
    assert (stale.acked, stale.skipped) == (0, [2])
    state = await sdk.call("topic", q)
    assert state.type == "queue" and (state.queue.ready, state.queue.in_flight) == (0, 2)
    assert (await sdk.call("ack", q, "w2", [])).in_flight == 2  # nothing to ack: counters only
    with pytest.raises(topics.NotAQueue):
        await _claim_on_log(sdk, name("log"))


async def _claim_on_log(sdk: Calls, t: str) -> None:
    await sdk.call("append", t, 1)
    await sdk.call("claim", t, "w")


async def test_dead_letter_and_redrive(sdk: Calls, name: Callable[[str], str]) -> None:
    q, dlq, other = name("rq"), name("rq.dlq"), name("rq.other")
    await sdk.call("create_topic", q, type="queue", max_deliveries=1, dead_letter=dlq)
    await sdk.call("create_topic", other, type="queue")
    await sdk.call("append_many", q, [{"data": i, "tag": f"t{i}", "meta": {"keep": i}} for i in range(4)])
    for _ in range(2):  # deliver once, release, and the next claim dead-letters them
        jobs = await sdk.call("claim", q, "w", max=10)
        if jobs:
            await sdk.call("nack", q, "w", jobs)
    dead = await sdk.call("read", dlq)
    assert [r.data for r in dead] == [0, 1, 2, 3] and dead[0].meta["$dead_letter_from"] == q
    assert await sdk.call("redrive", dlq, dry_run=True) == 4
    only_odd = await sdk.call("redrive", dlq, filter=lambda r: r.data % 2 == 1)
    assert only_odd == 2  # 1 by its tag (0 stays in place), 3 likewise
    assert [r.data for r in await sdk.call("read", dlq)] == [0, 2]
    assert await sdk.call("redrive", dlq, to=other, limit=1) == 1
    assert await sdk.call("redrive", dlq) == 1
    assert await sdk.call("read", dlq) == []
    back = await sdk.call("read", q)
    assert sorted(r.data for r in back) == [1, 2, 3] and all(r.meta == {"keep": r.data} for r in back)
    assert [r.data for r in await sdk.call("read", other)] == [0]


async def test_redrive_deletes_by_the_exact_tag_even_one_ending_in_a_star(
    sdk: Calls, name: Callable[[str], str]
) -> None:
    """A moved record behind one left in place is deleted by its tag; a tag ending in ``*`` is
    that tag, not a prefix that would also delete the record left in place (a lost job)."""
    q, dlq = name("sq"), name("sq.dlq")
    await sdk.call("create_topic", q, type="queue", max_deliveries=1, dead_letter=dlq)
    await sdk.call("append_many", q, [{"data": 0, "tag": "ab"}, {"data": 1, "tag": "a*"}])
    for _ in range(2):  # deliver once, release, and the next claim dead-letters them
        jobs = await sdk.call("claim", q, "w", max=10)
        if jobs:
            await sdk.call("nack", q, "w", jobs)
    assert [r.tag for r in await sdk.call("read", dlq)] == ["ab", "a*"]
    assert await sdk.call("redrive", dlq, filter=lambda r: r.data == 1) == 1
    assert [r.data for r in await sdk.call("read", dlq)] == [0]  # left in place, not deleted
    assert [r.data for r in await sdk.call("read", q)] == [1]


async def test_routers(sdk: Calls, name: Callable[[str], str]) -> None:
    src, dest = name("src"), name("dest")
    r = f"{src}->{dest}"
    info = await sdk.call("put_router", r, src, dest, filter=["tag", "Glob", "pub:*"])
    assert (info.created, info.source, info.dest, info.filter, info.guarantee) == (
        True,
        src,
        dest,
        ["tag", "Glob", "pub:*"],
        "at_least_once",
    )
    assert [x.router for x in await sdk.call("list_routers", source=src)] == [r]
    state = await sdk.call("router", r)
    assert state.dest == dest and state.forwarded_total == 0 and state.lag == 0
    assert await sdk.call("delete_router", r) is True
    assert await sdk.call("delete_router", r) is False
    with pytest.raises(topics.RouterNotFound):
        await sdk.call("router", r)


async def test_schedules(sdk: Calls, name: Callable[[str], str]) -> None:
    """put/get/list/delete, a run on the server's clock (waited for, never timed), the cascade
    of a topic delete, and the typed errors."""
    t, s = name("sched-t"), name("sched")
    records = [{"data": {"job": 1}, "tag": "tick", "meta": {"via": "schedule"}}]
    info = await sdk.call("put_schedule", s, t, records, every_ms=100, missed="once", node="cron-1")
    assert (info.created, info.topic, info.every_ms, info.cron, info.missed, info.node) == (
        True,
        t,
        100,
        None,
        "once",
        "cron-1",
    )
    assert info.records == records and info.runs_total == 0 and info.last_error is None
    again = await sdk.call("put_schedule", s, t, records, every_ms=100, missed="once", node="cron-1")
    assert again.created is False
    assert [x.schedule for x in await sdk.call("list_schedules", topic=t)] == [s]
    state = await sdk.call("schedule", s)
    for _ in range(400):  # until the server's clock reaches the first due time
        if state.runs_total:
            break
        await asyncio.sleep(0.05)
        state = await sdk.call("schedule", s)
    assert state.runs_total >= 1 and state.last_run_ms is not None
    assert state.next_run_ms is not None and state.next_run_ms > state.last_run_ms
    first = (await sdk.call("read", t, to_seq=1))[0]
    assert (first.data, first.tag, first.node, first.meta) == (
        {"job": 1},
        "tick",
        "cron-1",
        {"via": "schedule"},
    )
    deleted = await sdk.call("delete_topic", t)
    assert deleted.schedules_removed == [s]
    with pytest.raises(topics.ScheduleNotFound):
        await sdk.call("schedule", s)
    daily = await sdk.call("put_schedule", s, t, [{"data": 1}], cron="@daily")
    assert daily.created and daily.cron == "@daily" and daily.next_run_ms is not None
    assert await sdk.call("delete_schedule", s) is True
    assert await sdk.call("delete_schedule", s) is False
    with pytest.raises(topics.InvalidRequest) as invalid:
        await sdk.call("put_schedule", s, t, [{"data": 1}], cron="61 * * * *")
    assert invalid.value.detail == {"field": "cron", "value": "61 * * * *"}
    assert "minute" in invalid.value.message


async def test_probes(sdk: Calls) -> None:
    health = await sdk.call("health")
    assert health.status == "ok" and health.version and health.uptime_ms >= 0
    ready = await sdk.call("ready")
    assert ready.status == "ready" and ready.wal_replay_complete is True


async def test_whoami_in_dev_mode_grants_everything(sdk: Calls) -> None:
    me = await sdk.call("whoami")
    assert me == topics.Identity("dev", None, None, ["admin", "delete", "read", "write"], [])
    assert me.may("admin") and me.allows("any.name")


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_whoami_names_the_key(make_server: Callable[..., ServerProcess], flavour: str) -> None:
    server = make_server({"TOPICS_API_KEYS": "root-secret,dash-secret:r+w:tenant42.|shared."})
    clients: list[topics.Client | topics.AsyncClient]
    if flavour == "sync":
        clients = [topics.Client(server.url, api_key=k, retries=0) for k in ("dash-secret", "nope")]
    else:
        clients = [topics.AsyncClient(server.url, api_key=k, retries=0) for k in ("dash-secret", "nope")]
    dash, stranger = Calls(clients[0]), Calls(clients[1])
    try:
        me = await dash.call("whoami")
        assert me == topics.Identity("keys", 2, "key #2", ["read", "write"], ["tenant42.", "shared."])
        assert me.may("write") and not me.may("admin")
        assert me.allows("tenant42.orders") and not me.allows("tenant43.orders")
        with pytest.raises(topics.Unauthorized):
            await stranger.call("whoami")
    finally:
        for c in clients:
            closed = c.close()
            if inspect.isawaitable(closed):
                await closed


async def test_typed_errors(sdk: Calls, name: Callable[[str], str]) -> None:
    t = name("err")
    await sdk.call("create_topic", t)
    with pytest.raises(topics.TopicExistsIncompatible) as incompatible:
        await sdk.call("create_topic", t, type="queue")
    assert incompatible.value.code == "topic_exists_incompatible" and incompatible.value.status == 409
    with pytest.raises(topics.InvalidRequest) as invalid:
        await sdk.call("create_topic", t, no_such_field=1)
    assert invalid.value.message
    with pytest.raises(topics.RecordTooLarge):
        await sdk.call("append", t, 1, meta={"big": "x" * 17_000})
    full = name("full")
    await sdk.call("create_topic", full, cap_records=1, discard="reject")
    await sdk.call("append", full, 1)
    with pytest.raises(topics.TopicFull):
        await sdk.call("append", full, 2)


def test_append_many_splits_within_the_servers_limits(make_server: Callable[..., ServerProcess]) -> None:
    server = make_server({"TOPICS_MAX_BATCH_RECORDS": "100"})
    records = [{"data": {"i": i}, "tag": f"t{i % 7}"} for i in range(1050)]
    with topics.Client(server.url) as client:
        result = client.append_many("bulk", records, idempotency_key="load-1")
        assert result.seqs == list(range(1, 1051)) and (result.first_seq, result.last_seq) == (1, 1050)
        assert (result.count, result.deduped) == (1050, False)
        again = client.append_many("bulk", records, idempotency_key="load-1")  # a re-run: no duplicates
        assert again.deduped and again.seqs == result.seqs
        assert client.topic("bulk").count == 1050
        assert [r.data["i"] for r in client.read("bulk")] == list(range(1050))
        with pytest.raises(topics.RecordTooLarge) as err:
            client.append_many("bulk", [{"data": 1}] * 150 + [{"data": 2, "meta": {"x": "y" * 17_000}}])
        assert err.value.detail["index"] == 150  # the caller's index, not the chunk's
        with pytest.raises(topics.InvalidRequest) as bad:
            client.append_many("bulk", [{"data": 1}] * 250 + [{"data": 2, "tag": "t" * 300}])
        assert bad.value.detail["field"] == "records[250].tag"  # likewise


# -- delayed jobs (an extension: docs/DECISIONS.md, "Delayed jobs") ------------------------------


def test_append_with_a_delay_holds_the_job_back(client: topics.Client, name: Callable[[str], str]) -> None:
    q = name("delayed")
    client.create_topic(q, type="queue")
    seq = client.append(q, {"n": 1}, delay_ms=60_000).first_seq
    many = client.append_many(
        q, [{"data": 2}, {"data": 3, "delay_ms": 0}, {"data": 4, "delay_ms": 120_000}], delay_ms=30_000
    )
    records = list(client.read(q))
    assert [(r.seq, r.delay_ms) for r in records] == [
        (seq, 60_000),
        (many.first_seq, 30_000),
        (many.first_seq + 1, 0),
        (many.first_seq + 2, 120_000),
    ]
    state = client.topic(q).queue
    assert state is not None and (state.ready, state.delayed) == (1, 3)
    [job] = client.claim(q, "w", max=10)
    assert (job.seq, job.data, job.delay_ms) == (many.first_seq + 1, 3, 0)


def test_a_delay_on_a_log_is_refused(client: topics.Client, name: Callable[[str], str]) -> None:
    t = name("log")
    with pytest.raises(topics.NotAQueue) as err:
        client.append(t, 1, delay_ms=5)
    assert err.value.detail["field"] == "delay_ms"
    with pytest.raises(topics.TopicNotFound):
        client.topic(t)


async def test_nan_and_infinity_are_refused_not_sent_as_null(sdk: Calls, name: Callable[[str], str]) -> None:
    """orjson would write them as null; the server refuses them in JSON text: so does the SDK."""
    t = name("nan")
    await sdk.call("create_topic", t)
    with pytest.raises(ValueError, match=r"^records\[0\]\.data\.price is not a JSON number"):
        await sdk.call("append", t, {"price": float("nan")})
    records = [{"data": i} for i in range(3)] + [{"data": [1.5, float("-inf")]}]
    with pytest.raises(ValueError, match=r"^records\[3\]\.data\[1\] is not a JSON number"):
        await sdk.call("append_many", t, records)
    await sdk.call("append", t, {"price": None})  # a real null is fine
    assert [r.data for r in await sdk.call("read", t)] == [{"price": None}]
