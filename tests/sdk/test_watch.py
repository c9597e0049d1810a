"""``client.watch``: typed events, tail, tombstones, deletion, and resuming exactly where it was —
after the stream is taken over (``Last-Event-ID``) and across a ``kill -9`` of the server (the
session is gone: re-created from the watch's own cursors)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest
import topics
from topics.watch import SSEEvent, WatchOptions, WatchState

from tests.server.processes import ServerProcess


def seqs_until(watch: topics.Watch, topic: str, last: int, timeout_s: float = 30.0) -> list[int]:
    """Every record seq of ``topic`` the watch hands out until ``last`` (fails on a gap event)."""
    got: list[int] = []
    deadline = time.monotonic() + timeout_s
    for event in watch:
        assert time.monotonic() < deadline, f"timed out at {got[-1:]}"
        assert not isinstance(event, topics.Tombstone), event
        if isinstance(event, topics.Records) and event.topic == topic:
            got.extend(r.seq for r in event.records)
            if got and got[-1] >= last:
                return got
    raise AssertionError("the watch ended")


def test_events_in_order_until_the_topic_is_deleted(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t, other = name("w"), name("w2")
    client.append_many(t, [{"data": i, "tag": f"k{i}"} for i in range(3)])
    client.append(other, "x")
    with client.watch({t: 0, other: "tail"}, include_meta=True) as watch:
        events = iter(watch)
        first = next(events)
        assert isinstance(first, topics.Records) and first.topic == t
        assert [(r.seq, r.data, r.tag) for r in first.records] == [(1, 0, "k0"), (2, 1, "k1"), (3, 2, "k2")]
        caught = [next(events), next(events)]
        assert {(e.topic, e.head_seq) for e in caught if isinstance(e, topics.CaughtUp)} == {
            (t, 3),
            (other, 1),
        }
        client.append(other, "y")
        new = next(events)
        assert isinstance(new, topics.Records) and [r.data for r in new.records] == ["y"]
        client.delete_topic(t)
        client.delete_topic(other)
        rest = list(events)  # ends: every watched topic is gone
    deleted = [e.topic for e in rest if isinstance(e, topics.TopicDeleted)]
    assert sorted(deleted) == sorted([t, other])


def test_tail_starts_when_watch_returns(client: topics.Client, name: Callable[[str], str]) -> None:
    t = name("tail")
    client.append_many(t, [{"data": i} for i in range(5)])
    with client.watch([t]) as watch:
        client.append(t, "after")
        got = next(e for e in watch if isinstance(e, topics.Records))
    assert [r.data for r in got.records] == ["after"]


def test_a_watch_from_a_time_starts_there_and_resumes_by_seq(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t = name("since")
    client.append(t, "old")
    time.sleep(0.003)  # a later $ts
    client.append_many(t, [{"data": "new"}, {"data": "newer"}])
    start = [r.ts for r in client.read(t)][1]
    with client.watch({t: datetime.fromtimestamp(start / 1000, tz=UTC)}) as watch:
        got = next(e for e in watch if isinstance(e, topics.Records))
        assert [r.data for r in got.records] == ["new", "newer"]
        assert watch.cursors == {t: 3}


def test_a_gap_is_a_tombstone_event(client: topics.Client, name: Callable[[str], str]) -> None:
    t = name("gap")
    client.create_topic(t, cap_records=5)
    client.append_many(t, [{"data": i} for i in range(8)])
    with client.watch({t: 0}) as watch:
        events = iter(watch)
        tomb = next(events)
        records = next(events)
    assert isinstance(tomb, topics.Tombstone)
    assert (tomb.gap_from, tomb.gap_to, tomb.reason) == (1, 3, "from_seq_too_old")
    assert isinstance(records, topics.Records) and [r.seq for r in records.records] == [4, 5, 6, 7, 8]


def test_resumes_after_the_stream_is_taken_over(client: topics.Client, name: Callable[[str], str]) -> None:
    t = name("steal")
    client.append_many(t, [{"data": i} for i in range(100)])
    with client.watch({t: 0}, heartbeat_ms=1000) as watch:
        assert seqs_until(watch, t, 100) == list(range(1, 101))
        url = client.settings.url + watch._state.stream_url  # type: ignore[operator]
        # a second GET takes the session over: this watch gets "superseded" and reconnects
        # with Last-Event-ID, which rewinds the session to what it had handed out
        with httpx.stream("GET", url, headers={"accept": "text/event-stream"}, timeout=5) as thief:
            assert thief.status_code == 200
            client.append_many(t, [{"data": i} for i in range(100, 150)])
            next(thief.iter_lines())
        client.append_many(t, [{"data": i} for i in range(150, 200)])
        assert seqs_until(watch, t, 200) == list(range(101, 201))


def test_resumes_across_a_server_kill(
    make_server: Callable[..., ServerProcess], name: Callable[[str], str]
) -> None:
    server = make_server()
    t = name("crash")
    with topics.Client(server.url, retries=8) as client:
        client.create_topic(t, durability="fsync")
        client.append_many(t, [{"data": i} for i in range(50)])
        with client.watch({t: 0}, heartbeat_ms=1000) as watch:
            assert seqs_until(watch, t, 50) == list(range(1, 51))
            server.kill()
            server.start()  # same port and data: the session is gone, the records are not
            writer = threading.Timer(0.5, lambda: client.append_many(t, [{"data": i} for i in range(50, 80)]))
            writer.start()
            assert seqs_until(watch, t, 80) == list(range(51, 81))
            writer.join()


async def test_async_watch(aclient: topics.AsyncClient, name: Callable[[str], str]) -> None:
    t = name("aw")
    await aclient.append_many(t, [{"data": i} for i in range(3)])
    async with aclient.watch([t]) as watch:
        await aclient.append(t, "new")
        async for event in watch:
            if isinstance(event, topics.Records):
                assert [(r.seq, r.data) for r in event.records] == [(4, "new")]
                break
        assert watch.cursors == {t: 4}


def test_watch_state_frames_and_failures() -> None:
    """No I/O: what each frame does to the cursors, and which failures a watch outlives."""
    state = WatchState(WatchOptions.of({"t": 1}, None, False, True, 15_000, "eventual", None))
    frame = b'{"topic":"t","records":[{"$seq":1,"$ts":1},{"$seq":2,"$ts":2,"data":"b"}],"head_seq":5}'
    [records] = state.handle(SSEEvent("record", frame.decode(), "id-1"))
    assert isinstance(records, topics.Records) and [r.seq for r in records.records] == [2]
    assert (records.head_seq, state.cursors, state.last_event_id) == (5, {"t": 2}, "id-1")
    tomb = '{"topic":"t","gap_from":3,"gap_to":4,"reason":"cap","missed_estimate":2}'
    assert [type(e) for e in state.handle(SSEEvent("tombstone", tomb, None))] == [topics.Tombstone]
    assert state.cursors == {"t": 4}
    assert state.handle(SSEEvent("tombstone", "not json", None)) == ()  # a control frame: logged, skipped
    with pytest.raises(topics.TopicsError) as bad:  # records are never skipped without a Tombstone
        state.handle(SSEEvent("record", '{"topic":"t","records":"?"}', None))
    assert bad.value.code == "bad_response"
    assert state.failed(topics.NotReady(503, "not_ready", "replaying")) > 0  # waiting cures it
    with pytest.raises(topics.Unauthorized):
        state.failed(topics.Unauthorized(401, "unauthorized", "no key"))
