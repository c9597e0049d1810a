"""§2–§5 over HTTP: append, diff (incl. long-poll and tombstones), delete records."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Callable

import httpx
import orjson
from topics_engine import Limits, ManualClock

from .conftest import assert_error


async def test_append_assigns_contiguous_seqs_and_201_on_create(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/v0/topics/w", json={"records": [{"data": {"a": 1}}, {"data": None}, {"data": "x"}]}
    )
    assert r.status_code == 201
    body = r.json()
    assert body["topic"] == "w"
    assert (body["first_seq"], body["last_seq"], body["seqs"], body["head_seq"], body["count"]) == (
        1,
        3,
        [1, 2, 3],
        3,
        3,
    )
    assert body["created"] is True and body["deduped"] is False
    assert {"server_total_ms", "wal_append_ms", "fsync_ms"} <= set(body["performance"])
    r = await client.post("/v0/topics/w", json={"records": [{"data": 4}]}, params={"return_seqs": "false"})
    assert r.status_code == 200
    assert "seqs" not in r.json() and r.json()["first_seq"] == r.json()["last_seq"] == 4


async def test_records_round_trip_with_metadata(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await client.post(
        "/v0/topics/m",
        json={
            "node": "batch-node",
            "records": [
                {"data": {"type": "resize"}, "tag": "tenant42:job-1", "node": "n1", "meta": {"trace": "abc"}},
                {"data": [1, 2.5, True, None]},
            ],
        },
    )
    r = await client.post("/v0/topics/m/diff", json={"from_seq": 0, "include_tags": True})
    records = r.json()["records"]
    assert records[0] == {
        "$seq": 1,
        "$ts": clock.now_ms(),
        "$node": "n1",
        "$tag": "tenant42:job-1",
        "data": {"type": "resize"},
        "meta": {"trace": "abc"},
    }
    assert records[1] == {
        "$seq": 2,
        "$ts": clock.now_ms(),
        "$node": "batch-node",
        "data": [1, 2.5, True, None],
    }
    r = await client.post("/v0/topics/m/diff", json={"include_meta": False})
    assert all("meta" not in rec and "$tag" not in rec for rec in r.json()["records"])


async def test_idempotency_key_body_wins_over_header(client: httpx.AsyncClient, clock: ManualClock) -> None:
    first = await client.post(
        "/v0/topics/i", json={"records": [{"data": 1}, {"data": 2}], "idempotency_key": "k1"}
    )
    again = await client.post(
        "/v0/topics/i",
        json={"records": [{"data": 9}], "idempotency_key": "k1"},
        headers={"Idempotency-Key": "other"},
    )
    assert again.status_code == 200
    assert again.json()["deduped"] is True and again.json()["seqs"] == first.json()["seqs"] == [1, 2]
    via_header = await client.post(
        "/v0/topics/i", json={"records": [{"data": 3}]}, headers={"Idempotency-Key": "h"}
    )
    assert via_header.json()["seqs"] == [3]
    repeat = await client.post(
        "/v0/topics/i", json={"records": [{"data": 3}]}, headers={"Idempotency-Key": "h"}
    )
    assert repeat.json()["deduped"] is True and repeat.json()["seqs"] == [3]
    clock.advance(120_000)
    fresh = await client.post("/v0/topics/i", json={"records": [{"data": 1}], "idempotency_key": "k1"})
    assert fresh.json()["deduped"] is False and fresh.json()["seqs"] == [4]


async def test_create_flag_and_inline_config(client: httpx.AsyncClient) -> None:
    assert_error(
        await client.post("/v0/topics/nc", json={"records": [{"data": 1}], "create": False}),
        404,
        "topic_not_found",
    )
    await client.put("/v0/topics/locked", json={"auto_create": False})
    r = await client.post("/v0/topics/locked", json={"records": [{"data": 1}]})
    assert r.status_code == 200  # exists: auto_create only governs lazy creation
    r = await client.post("/v0/topics/cfg", json={"records": [{"data": 1}], "config": {"cap_records": 7}})
    assert r.status_code == 201
    state = (await client.get("/v0/topics/cfg")).json()
    assert state["config"]["cap_records"] == 7
    r = await client.post("/v0/topics/cfg", json={"records": [{"data": 1}], "config": {"cap_records": 99}})
    assert (await client.get("/v0/topics/cfg")).json()["config"]["cap_records"] == 7  # ignored: exists
    r = await client.post(
        "/v0/topics/nope", json={"records": [{"data": 1}], "config": {"auto_create": False}}
    )
    assert_error(r, 404, "topic_not_found")


async def test_batching_limits(make_client: Callable[..., httpx.AsyncClient]) -> None:
    limits = Limits(
        max_batch_records=3, max_record_bytes=64, max_meta_bytes=32, max_tag_bytes=4, max_node_bytes=4
    )
    async with make_client(limits=limits) as c:
        r = await c.post("/v0/topics/l", json={"records": [{"data": i} for i in range(4)]})
        assert assert_error(r, 400, "batch_too_large")["detail"]["max_records"] == 3
        assert_error(
            await c.post("/v0/topics/l", json={"records": [{"data": "x" * 100}]}), 400, "record_too_large"
        )
        assert_error(
            await c.post("/v0/topics/l", json={"records": [{"data": 1, "meta": {"k": "v" * 40}}]}),
            400,
            "record_too_large",
        )
        assert_error(
            await c.post("/v0/topics/l", json={"records": [{"data": 1, "tag": "toolong"}]}),
            400,
            "invalid_request",
        )
        assert_error(
            await c.post("/v0/topics/l", json={"records": [{"data": 1}], "node": "toolong"}),
            400,
            "invalid_request",
        )
        assert (await c.get("/v0/topics/l")).status_code == 404  # nothing was created by rejected writes


async def test_malformed_writes(client: httpx.AsyncClient) -> None:
    assert_error(await client.post("/v0/topics/x", json={"records": []}), 400, "invalid_request")
    assert_error(
        await client.post("/v0/topics/x", json={"records": [{"tag": "no-data"}]}), 400, "invalid_request"
    )
    assert_error(
        await client.post("/v0/topics/x", json={"records": [{"data": 1, "meta": [1]}]}),
        400,
        "invalid_request",
    )
    assert_error(await client.post("/v0/topics/x", json={}), 400, "invalid_request")
    assert_error(await client.post("/v0/topics/x"), 400, "invalid_request")
    assert_error(
        await client.post("/v0/topics/x", content=b"[1,", headers={"content-type": "application/json"}),
        400,
        "invalid_request",
    )
    assert_error(
        await client.post("/v0/topics/x", content=b'{"records":[{"data":1}]}'), 415, "unsupported_media_type"
    )
    assert_error(
        await client.post(
            "/v0/topics/x", content=b'{"records":[{"data":1}]}', headers={"content-type": "text/plain"}
        ),
        415,
        "unsupported_media_type",
    )
    assert_error(
        await client.post(
            "/v0/topics/x",
            content=b'{"records":[{"data":1}]}',
            headers={"content-type": "application/json; charset=latin-1"},
        ),
        415,
        "unsupported_media_type",
    )
    ok = await client.post(
        "/v0/topics/x",
        content=b'{"records":[{"data":1}]}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert ok.status_code == 201


async def test_body_limit_is_413_before_parsing(make_client: Callable[..., httpx.AsyncClient]) -> None:
    async with make_client(env={"TOPICS_MAX_BODY_BYTES": "1024"}) as c:
        big = b'{"records":[{"data":"' + b"x" * 2000 + b'"}]}'
        r = await c.post("/v0/topics/b", content=big, headers={"content-type": "application/json"})
        assert_error(r, 413, "payload_too_large")
        garbage = b"\xff" * 4096  # not JSON at all: still a 413, so it was never parsed
        assert_error(
            await c.post("/v0/topics/b", content=garbage, headers={"content-type": "application/json"}),
            413,
            "payload_too_large",
        )
        bomb = gzip.compress(big)
        assert len(bomb) < 1024
        r = await c.post(
            "/v0/topics/b",
            content=bomb,
            headers={"content-type": "application/json", "content-encoding": "gzip"},
        )
        assert_error(r, 413, "payload_too_large")


async def test_gzip_request_body(client: httpx.AsyncClient) -> None:
    payload = gzip.compress(orjson.dumps({"records": [{"data": "zipped"}]}))
    r = await client.post(
        "/v0/topics/g",
        content=payload,
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert r.status_code == 201
    diff = await client.post("/v0/topics/g/diff", json={})
    assert diff.json()["records"][0]["data"] == "zipped"


async def test_discard_reject_is_422_and_all_or_nothing(client: httpx.AsyncClient) -> None:
    await client.put("/v0/topics/full", json={"cap_records": 3, "discard": "reject"})
    await client.post("/v0/topics/full", json={"records": [{"data": 1}, {"data": 2}]})
    assert_error(
        await client.post("/v0/topics/full", json={"records": [{"data": 3}, {"data": 4}]}), 422, "topic_full"
    )
    state = (await client.get("/v0/topics/full")).json()
    assert (state["head_seq"], state["count"]) == (2, 2)


async def test_diff_paging_cursor_and_lag(client: httpx.AsyncClient) -> None:
    await client.post("/v0/topics/p", json={"records": [{"data": i} for i in range(10)]})
    r = (await client.post("/v0/topics/p/diff", json={"from_seq": 0, "limit": 4})).json()
    assert [rec["$seq"] for rec in r["records"]] == [1, 2, 3, 4]
    assert (r["next_from_seq"], r["head_seq"], r["earliest_seq"], r["caught_up"], r["lag"]) == (
        4,
        10,
        1,
        False,
        6,
    )
    assert r["tombstone"] is None and r["performance"]["records_scanned"] == 4
    r = (await client.post("/v0/topics/p/diff", json={"from_seq": 4, "limit": 5000})).json()
    assert [rec["$seq"] for rec in r["records"]] == list(range(5, 11))
    assert r["caught_up"] is True and r["lag"] == 0 and r["next_from_seq"] == 10
    assert_error(await client.post("/v0/topics/absent/diff", json={}), 404, "topic_not_found")
    assert_error(await client.post("/v0/topics/p/diff", json={"from_seq": "1"}), 400, "invalid_request")


async def test_diff_node_filter_advances_cursor(client: httpx.AsyncClient) -> None:
    await client.post(
        "/v0/topics/n",
        json={"records": [{"data": 1, "node": "a"}, {"data": 2, "node": "b"}, {"data": 3, "node": "a"}]},
    )
    r = (await client.post("/v0/topics/n/diff", json={"node": "a"})).json()
    assert [rec["$seq"] for rec in r["records"]] == [2]
    assert r["next_from_seq"] == 3 and r["caught_up"] is True
    r = (await client.post("/v0/topics/n/diff", json={"node": ["a", "b"]})).json()
    assert r["records"] == [] and r["next_from_seq"] == 3
    await client.put("/v0/topics/n", json={"dedupe_node": False})
    r = (await client.post("/v0/topics/n/diff", json={"node": "a"})).json()
    assert len(r["records"]) == 3


async def test_cap_eviction_tombstone_and_silent_deleted_gap(client: httpx.AsyncClient) -> None:
    await client.put("/v0/topics/c", json={"cap_records": 5})
    await client.post("/v0/topics/c", json={"records": [{"data": i} for i in range(8)]})
    r = (await client.post("/v0/topics/c/diff", json={"from_seq": 1})).json()
    assert r["tombstone"] == {
        "gap_from": 2,
        "gap_to": 3,
        "reason": "cap",
        "missed_estimate": 2,
        "earliest_seq": 4,
        "head_seq": 8,
    }
    assert [rec["$seq"] for rec in r["records"]] == [4, 5, 6, 7, 8]
    await client.post("/v0/topics/c/delete", json={"before_seq": 6})
    r = (await client.post("/v0/topics/c/diff", json={"from_seq": 3})).json()
    assert r["tombstone"] is None  # only deleted records lie between cursor and earliest
    assert [rec["$seq"] for rec in r["records"]] == [6, 7, 8]


async def test_ttl_expiry_is_a_ttl_tombstone(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await client.put("/v0/topics/t", json={"ttl_ms": 1000})
    await client.post("/v0/topics/t", json={"records": [{"data": 1}, {"data": 2}]})
    clock.advance(600)
    await client.post("/v0/topics/t", json={"records": [{"data": 3}]})
    clock.advance(500)
    r = (await client.post("/v0/topics/t/diff", json={"from_seq": 0})).json()
    # reading "from earliest" still learns that history was lost
    assert [rec["$seq"] for rec in r["records"]] == [3]
    assert (r["tombstone"]["reason"], r["tombstone"]["gap_from"], r["tombstone"]["gap_to"]) == ("ttl", 1, 2)
    r = (await client.post("/v0/topics/t/diff", json={"from_seq": 1})).json()
    assert r["tombstone"]["reason"] == "ttl" and r["tombstone"]["gap_from"] == 2


async def test_recreated_topic_yields_recreated_tombstone(client: httpx.AsyncClient) -> None:
    await client.post("/v0/topics/r", json={"records": [{"data": i} for i in range(5)]})
    await client.delete("/v0/topics/r")
    await client.post("/v0/topics/r", json={"records": [{"data": "new"}]})
    r = (await client.post("/v0/topics/r/diff", json={"from_seq": 3})).json()
    assert r["tombstone"]["reason"] == "recreated"
    assert [rec["data"] for rec in r["records"]] == ["new"]


async def test_a_recreated_topic_read_from_the_last_seq_of_the_seq_space(client: httpx.AsyncClient) -> None:
    """A cursor at 2^64 - 1 on a recreated topic: the tombstone stays within the seq space
    (once a 500 — the fuzzer's find — when its gap started one past it)."""
    await client.post("/v0/topics/top", json={"records": [{"data": 1}]})
    await client.delete("/v0/topics/top")
    await client.post("/v0/topics/top", json={"records": [{"data": "new"}]})
    r = await client.post("/v0/topics/top/diff", json={"from_seq": 2**64 - 1})
    assert r.status_code == 200, r.text
    tomb = r.json()["tombstone"]
    assert tomb["reason"] == "recreated" and tomb["gap_from"] == tomb["gap_to"] == 2**64 - 1
    assert [rec["data"] for rec in r.json()["records"]] == ["new"]


async def test_long_poll_is_woken_by_an_append(client: httpx.AsyncClient) -> None:
    await client.put("/v0/topics/lp", json={})
    poll = asyncio.create_task(client.post("/v0/topics/lp/diff", json={"from_seq": 0, "wait_ms": 10_000}))
    await asyncio.sleep(0.05)
    assert not poll.done()
    await client.post("/v0/topics/lp", json={"records": [{"data": "wake"}]})
    r = (await asyncio.wait_for(poll, 5)).json()
    assert [rec["data"] for rec in r["records"]] == ["wake"]


async def test_long_poll_times_out_empty(make_client: Callable[..., httpx.AsyncClient]) -> None:
    async with make_client(limits=Limits(max_wait_ms=30)) as c:
        await c.put("/v0/topics/idle", json={})
        r = (await c.post("/v0/topics/idle/diff", json={"wait_ms": 999_999})).json()
        assert r["records"] == [] and r["caught_up"] is True


async def test_delete_records_by_seq_and_tag(client: httpx.AsyncClient) -> None:
    await client.post(
        "/v0/topics/del",
        json={
            "records": [
                {"data": 1, "tag": "msg-1"},
                {"data": 2, "tag": "chat-42:a"},
                {"data": 3, "tag": "chat-42:b"},
                {"data": 4},
                {"data": 5, "tag": "msg-1"},
            ]
        },
    )
    r = (await client.post("/v0/topics/del/delete", json={"match": ["tag", "Glob", "chat-42:*"]})).json()
    assert r["deleted"] == 2 and r["count"] == 3
    r = (await client.post("/v0/topics/del/delete", json={"match": "msg-1", "before_seq": 5})).json()
    assert r["deleted"] == 1 and r["earliest_seq"] == 4 and r["head_seq"] == 5
    seqs = [rec["$seq"] for rec in (await client.post("/v0/topics/del/diff", json={})).json()["records"]]
    assert seqs == [4, 5]
    for bad in (
        {},
        {"match": ["tag", "Regex", "x"]},
        {"match": ["tag", "Glob", "no-star"]},
        {"match": ["tag", "Glob", "a*b*"]},
        {"match": ["node", "Eq", "x"]},
        {"before_seq": -1},
    ):
        assert_error(await client.post("/v0/topics/del/delete", json=bad), 400, "invalid_request")
    assert_error(
        await client.post("/v0/topics/absent/delete", json={"before_seq": 1}), 404, "topic_not_found"
    )


async def test_a_batch_node_over_its_limit_is_400_even_when_every_record_names_its_own(
    client: httpx.AsyncClient,
) -> None:
    """The served schema says AppendRequest.node has maxLength TOPICS_MAX_NODE_BYTES: the batch
    node is checked once, under its own name, whether or not a record uses it."""
    body = {"records": [{"data": 1, "node": "x"}], "node": "n" * 129}
    error = assert_error(await client.post("/v0/topics/t", json=body), 400, "invalid_request")
    assert error["detail"] == {"field": "node", "max_length": 128}
