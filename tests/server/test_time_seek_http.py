"""Seek by time over HTTP (issue 25): ``from_ts`` on a diff, a watch topic entry and a
WebSocket ``subscribe``; the diff response's ``from_seq`` says where the read started.

The edges and the storage (hot and cold chunks, deletes, cap/TTL, restarts) are the model
property test's (``tests/engine/test_cold_properties.py``, ``diff_from_time``); here the wire:
the fields, their exclusivity, the tombstone below the earliest record, the long-poll above the
head, and the watch's resolved start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from topics_engine import ManualClock
from websockets.asyncio.client import ClientConnection, connect

from .conftest import assert_error
from .test_watch_stream import Srv, expect, seqs_of, serving, until_caught_up


@pytest.fixture
async def srv(clock: ManualClock) -> AsyncIterator[Srv]:
    async with serving(clock) as s:
        yield s


async def _write_at(client: httpx.AsyncClient, clock: ManualClock, topic: str, *times: int) -> None:
    """One record per time, written when the clock reads it (``data`` = that time)."""
    for ts in times:
        if ts > clock.now_ms():
            clock.set(ts)
        r = await client.post(f"/v0/topics/{topic}", json={"records": [{"data": ts}]})
        assert r.status_code in (200, 201), r.text


async def test_a_diff_from_a_time_starts_at_the_first_record_at_or_after_it(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    t0 = clock.now_ms()
    await _write_at(client, clock, "s", t0, t0 + 10, t0 + 10, t0 + 20, t0 + 30)
    r = (await client.post("/v0/topics/s/diff", json={"from_ts": t0 + 10})).json()
    assert [rec["$seq"] for rec in r["records"]] == [2, 3, 4, 5]
    assert r["from_seq"] == 1 and r["tombstone"] is None
    r = (await client.post("/v0/topics/s/diff", json={"from_ts": t0 + 11, "limit": 1})).json()
    assert [rec["$ts"] for rec in r["records"]] == [t0 + 20]
    assert (r["from_seq"], r["next_from_seq"]) == (3, 4)  # continue by seq from here
    # a plain diff echoes its own cursor
    r = (await client.post("/v0/topics/s/diff", json={"from_seq": 2})).json()
    assert r["from_seq"] == 2 and [rec["$seq"] for rec in r["records"]] == [3, 4, 5]


async def test_a_time_below_the_earliest_record_reads_from_it_with_the_usual_tombstone(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    t0 = clock.now_ms()
    await client.put("/v0/topics/c", json={"cap_records": 3})
    await _write_at(client, clock, "c", t0, t0 + 1, t0 + 2, t0 + 3, t0 + 4)  # seqs 1-2 evicted
    for from_ts in (0, t0, t0 + 2):  # at or below the earliest retained record's $ts
        r = (await client.post("/v0/topics/c/diff", json={"from_ts": from_ts})).json()
        assert r["from_seq"] == 0 and [rec["$seq"] for rec in r["records"]] == [3, 4, 5]
        assert (r["tombstone"]["reason"], r["tombstone"]["gap_from"], r["tombstone"]["gap_to"]) == (
            "cap",
            1,
            2,
        )
    r = (await client.post("/v0/topics/c/diff", json={"from_ts": t0 + 3})).json()
    assert r["from_seq"] == 3 and r["tombstone"] is None  # nothing at or after it was lost


async def test_a_deleted_record_is_stepped_over(client: httpx.AsyncClient, clock: ManualClock) -> None:
    t0 = clock.now_ms()
    await _write_at(client, clock, "d", t0, t0 + 5, t0 + 6, t0 + 9)
    assert (await client.post("/v0/topics/d/delete", json={"before_seq": 3})).status_code == 200
    r = (await client.post("/v0/topics/d/diff", json={"from_ts": t0 + 1})).json()
    # the first record at or after t0 + 1 is seq 2, deleted: the seek lands on seq 3, the
    # earliest live record, which reads "from the earliest"
    assert r["from_seq"] == 0 and [rec["$seq"] for rec in r["records"]] == [3, 4]
    assert r["tombstone"] is None  # deletes are no loss


async def test_a_time_above_the_newest_record_starts_at_the_head_and_long_polls_like_a_tail(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    t0 = clock.now_ms()
    await _write_at(client, clock, "h", t0, t0 + 1)
    r = (await client.post("/v0/topics/h/diff", json={"from_ts": t0 + 2})).json()
    assert r["records"] == [] and r["from_seq"] == 2 and r["caught_up"] is True
    poll = asyncio.create_task(
        client.post("/v0/topics/h/diff", json={"from_ts": t0 + 60_000, "wait_ms": 10_000})
    )
    await asyncio.sleep(0.05)
    assert not poll.done()
    await client.post("/v0/topics/h", json={"records": [{"data": "new"}]})
    r = (await asyncio.wait_for(poll, 5)).json()
    assert [rec["data"] for rec in r["records"]] == ["new"]
    assert r["from_seq"] == 2  # where the call started, not where its wake-up read did


async def test_from_ts_with_from_seq_is_invalid_and_a_missing_topic_404(client: httpx.AsyncClient) -> None:
    await client.put("/v0/topics/x", json={})
    error = assert_error(
        await client.post("/v0/topics/x/diff", json={"from_ts": 1, "from_seq": 0}), 400, "invalid_request"
    )
    assert error["detail"]["field"] == "from_seq" and "from_ts" in error["message"]
    assert_error(await client.post("/v0/topics/x/diff", json={"from_ts": -1}), 400, "invalid_request")
    assert_error(await client.post("/v0/topics/x/diff", json={"from_ts": "1"}), 400, "invalid_request")
    assert_error(await client.post("/v0/topics/nope/diff", json={"from_ts": 1}), 404, "topic_not_found")


# -- watch and WebSocket -------------------------------------------------------------------------


async def test_a_watch_entry_from_a_time(srv: Srv) -> None:
    t0 = srv.clock.now_ms()
    for step in range(4):
        srv.clock.set(t0 + 10 * step)
        await srv.append("w", {"data": step})
    body = await srv.watch({"topics": {"w": {"from_ts": t0 + 15}}})
    assert body["topics"]["w"]["from_seq"] == 2  # resolved when the session is made
    wid = body["wid"]
    stream = await srv.open(wid)
    frames = await until_caught_up(stream, {"w"})
    assert seqs_of(frames) == [3, 4]
    await srv.append("w", {"data": "live"})
    data, _ = await expect(stream, "record")
    assert [r["data"] for r in data["records"]] == ["live"]
    stream.close()
    for bad in ({"from_ts": 1, "from_seq": 3}, {"from_ts": 1, "tail": True}):
        r = await srv.http.post("/v0/watch", json={"topics": {"w": bad}})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", r.text


async def test_a_websocket_subscribe_from_a_time(srv: Srv) -> None:
    t0 = srv.clock.now_ms()
    for step in range(3):
        srv.clock.set(t0 + 10 * step)
        await srv.append("ws", {"data": step})
    async with connect(f"ws://127.0.0.1:{srv.port}/v0/ws") as ws:
        await ws.send(
            orjson.dumps({"op": "subscribe", "request_id": "a", "topic": "ws", "from_ts": t0 + 10}).decode()
        )
        reply = orjson.loads(await ws.recv())
        assert reply["op"] == "subscribed" and reply["topics"]["ws"]["from_seq"] == 1, reply
        frame = orjson.loads(await ws.recv())
        assert [r["$seq"] for r in frame["records"]] == [2, 3], frame
        await ws.send(
            orjson.dumps(
                {"op": "subscribe", "request_id": "b", "topic": "ws", "from_ts": 1, "tail": True}
            ).decode()
        )
        error = await _next_op(ws, "error")
        assert (error["op"], error["code"], error["detail"]["field"]) == ("error", "invalid_request", "tail")
        many = {"op": "subscribe", "request_id": "c", "topics": {"ws": {"from_ts": t0 + 20}}}
        await ws.send(orjson.dumps(many).decode())
        reply = await _next_op(ws, "subscribed")
        assert reply["request_id"] == "c" and reply["topics"]["ws"]["from_seq"] == 2, reply


async def _next_op(ws: ClientConnection, op: str) -> dict[str, Any]:
    """The next message of ``op`` (``caught_up`` and the like before it are skipped)."""
    while True:
        message: dict[str, Any] = orjson.loads(await asyncio.wait_for(ws.recv(), 5))
        if message["op"] == op:
            return message
