"""Named consumers over HTTP (an extension, issue 25): PUT / GET / list / commit / DELETE under
/v0/topics/{topic}/consumers, a diff and a watch entry reading after a consumer's cursor, the
cascade of a topic delete, the cap, the metrics, and the errors in the contract's envelope
(``409`` — not ``400`` — for a schema-valid cursor the topic's state refuses: ruling 23)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from topics_engine import ManualClock

from .conftest import assert_error

Json = dict[str, Any]
MakeClient = Callable[..., httpx.AsyncClient]
FIELDS = ["consumer", "topic", "cursor", "head_seq", "lag", "committed_at_ms"]


async def append(client: httpx.AsyncClient, topic: str, n: int) -> None:
    r = await client.post(f"/v0/topics/{topic}", json={"records": [{"data": i} for i in range(n)]})
    assert r.status_code in (200, 201), r.text


async def seqs(client: httpx.AsyncClient, topic: str, body: Json) -> list[int]:
    r = await client.post(f"/v0/topics/{topic}/diff", json=body)
    assert r.status_code == 200, r.text
    return [rec["$seq"] for rec in r.json()["records"]]


async def test_create_get_commit_list_delete(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await append(client, "orders", 10)
    r = await client.put("/v0/topics/orders/consumers/billing")  # no body: nothing read yet
    assert r.status_code == 201, r.text
    body = r.json()
    assert list(body) == [
        "consumer",
        "topic",
        "created",
        "cursor",
        "head_seq",
        "lag",
        "committed_at_ms",
        "performance",
    ]
    assert {k: body[k] for k in FIELDS} == {
        "consumer": "billing",
        "topic": "orders",
        "cursor": 0,
        "head_seq": 10,
        "lag": 10,
        "committed_at_ms": clock.now_ms(),
    }
    again = await client.put("/v0/topics/orders/consumers/billing", json={"from_seq": 7})
    assert again.status_code == 200 and again.json()["created"] is False and again.json()["cursor"] == 0

    clock.advance(100)
    r = await client.post("/v0/topics/orders/consumers/billing/commit", json={"seq": 6})
    assert r.status_code == 200, r.text
    assert list(r.json()) == [*FIELDS, "performance"]
    assert r.json()["cursor"] == 6 and r.json()["lag"] == 4 and r.json()["committed_at_ms"] == clock.now_ms()
    r = await client.get("/v0/topics/orders/consumers/billing")
    assert r.status_code == 200 and r.json()["cursor"] == 6, r.text
    assert list(r.json()) == [*FIELDS, "performance"]

    await client.put("/v0/topics/orders/consumers/audit", json={"from_seq": 10})
    await client.put("/v0/topics/orders/consumers/search", json={"from_seq": 2})
    page = (await client.get("/v0/topics/orders/consumers", params={"page_size": 2})).json()
    assert [(c["consumer"], c["lag"]) for c in page["consumers"]] == [("audit", 0), ("billing", 4)]
    rest = (await client.get("/v0/topics/orders/consumers", params={"cursor": page["next_cursor"]})).json()
    assert [c["consumer"] for c in rest["consumers"]] == ["search"] and "next_cursor" not in rest
    assert [
        c["consumer"] for c in (await client.get("/v0/topics/orders/consumers?prefix=se")).json()["consumers"]
    ] == ["search"]

    r = await client.delete("/v0/topics/orders/consumers/billing")
    assert r.status_code == 200 and r.json()["deleted"] is True, r.text
    assert list(r.json()) == ["consumer", "topic", "deleted", "performance"]
    r = await client.delete("/v0/topics/orders/consumers/billing")
    assert r.status_code == 200 and r.json()["deleted"] is False
    assert_error(await client.get("/v0/topics/orders/consumers/billing"), 404, "consumer_not_found")


async def test_from_seq_from_ts_and_force(client: httpx.AsyncClient, clock: ManualClock) -> None:
    t0 = clock.now_ms()
    await append(client, "t", 3)  # 1..3 at t0
    clock.advance(1000)
    await append(client, "t", 3)  # 4..6 at t0 + 1000
    r = await client.put("/v0/topics/t/consumers/ts", json={"from_ts": t0 + 500})
    assert r.status_code == 201 and r.json()["cursor"] == 3, r.text
    r = await client.put("/v0/topics/t/consumers/ts", json={"from_seq": 1, "force": True})
    assert r.status_code == 200 and r.json()["cursor"] == 1 and r.json()["created"] is False, r.text
    r = await client.put("/v0/topics/t/consumers/ts", json={"force": True})
    assert r.json()["cursor"] == 0
    error = assert_error(
        await client.put("/v0/topics/t/consumers/ts", json={"from_seq": 1, "from_ts": 1}),
        400,
        "invalid_request",
    )
    assert error["detail"] == {"field": "from_ts"}
    error = assert_error(
        await client.put("/v0/topics/t/consumers/far", json={"from_seq": 7}), 409, "cursor_beyond_head"
    )
    assert error["detail"] == {"topic": "t", "consumer": "far", "field": "from_seq", "seq": 7, "head_seq": 6}
    assert_error(await client.get("/v0/topics/t/consumers/far"), 404, "consumer_not_found")


async def test_commits_are_monotonic_and_bounded_by_the_head(client: httpx.AsyncClient) -> None:
    await append(client, "t", 5)
    await client.put("/v0/topics/t/consumers/c", json={"from_seq": 3})
    error = assert_error(
        await client.post("/v0/topics/t/consumers/c/commit", json={"seq": 2}), 409, "cursor_behind"
    )
    assert error["detail"] == {
        "topic": "t",
        "consumer": "c",
        "field": "seq",
        "cursor": 3,
        "seq": 2,
        "head_seq": 5,
    }
    for body in ({"seq": 6}, {"seq": 2**64 - 1, "force": True}):
        error = assert_error(
            await client.post("/v0/topics/t/consumers/c/commit", json=body), 409, "cursor_beyond_head"
        )
        assert error["detail"]["cursor"] == 3 and error["detail"]["head_seq"] == 5, error
    r = await client.post("/v0/topics/t/consumers/c/commit", json={"seq": 1, "force": True})
    assert r.status_code == 200 and r.json()["cursor"] == 1, r.text
    assert_error(await client.post("/v0/topics/t/consumers/c/commit", json={}), 400, "invalid_request")
    assert_error(
        await client.post("/v0/topics/t/consumers/c/commit", json={"seq": -1}), 400, "invalid_request"
    )


async def test_missing_topics_consumers_and_bad_names(client: httpx.AsyncClient) -> None:
    for method, path, body in [
        ("PUT", "/v0/topics/nope/consumers/c", {}),
        ("GET", "/v0/topics/nope/consumers/c", None),
        ("GET", "/v0/topics/nope/consumers", None),
        ("POST", "/v0/topics/nope/consumers/c/commit", {"seq": 0}),
        ("DELETE", "/v0/topics/nope/consumers/c", None),
        ("POST", "/v0/topics/nope/diff", {"consumer": "c"}),
    ]:
        assert_error(await client.request(method, path, json=body), 404, "topic_not_found")
    await append(client, "t", 1)
    error = assert_error(
        await client.post("/v0/topics/t/consumers/ghost/commit", json={"seq": 1}), 404, "consumer_not_found"
    )
    assert error["detail"] == {"topic": "t", "consumer": "ghost"}
    assert "PUT /v0/topics/t/consumers/ghost" in error["message"]
    for bad in ("-x", "a%20b", "x" * 256):
        assert_error(await client.get(f"/v0/topics/t/consumers/{bad}"), 400, "invalid_request")
    assert_error(await client.post("/v0/topics/t/diff", json={"consumer": "-x"}), 400, "invalid_request")


async def test_a_diff_reads_after_the_committed_cursor(client: httpx.AsyncClient) -> None:
    await append(client, "t", 6)
    await client.put("/v0/topics/t/consumers/c", json={"from_seq": 2})
    assert await seqs(client, "t", {"consumer": "c", "limit": 2}) == [3, 4]
    assert await seqs(client, "t", {"consumer": "c"}) == [3, 4, 5, 6]  # the read committed nothing
    await client.post("/v0/topics/t/consumers/c/commit", json={"seq": 5})
    assert await seqs(client, "t", {"consumer": "c"}) == [6]
    error = assert_error(
        await client.post("/v0/topics/t/diff", json={"consumer": "c", "from_seq": 1}), 400, "invalid_request"
    )
    assert error["detail"] == {"field": "from_seq"}
    error = assert_error(
        await client.post("/v0/topics/t/diff", json={"consumer": "ghost"}), 409, "no_such_consumer"
    )
    assert error["detail"] == {"topic": "t", "consumer": "ghost"}


async def test_a_diff_long_polls_from_the_consumer_cursor(client: httpx.AsyncClient) -> None:
    await append(client, "t", 2)
    await client.put("/v0/topics/t/consumers/c", json={"from_seq": 2})
    r = await client.post("/v0/topics/t/diff", json={"consumer": "c", "wait_ms": 1})
    assert r.status_code == 200 and r.json()["records"] == [] and r.json()["caught_up"] is True


async def test_a_watch_entry_starts_after_the_consumer(client: httpx.AsyncClient) -> None:
    await append(client, "a", 5)
    await append(client, "b", 2)
    await client.put("/v0/topics/a/consumers/c", json={"from_seq": 4})
    r = await client.post("/v0/watch", json={"topics": {"a": {"consumer": "c"}, "b": {"tail": True}}})
    assert r.status_code == 200, r.text
    assert r.json()["topics"] == {
        "a": {"from_seq": 4, "head_seq": 5, "earliest_seq": 1},
        "b": {"from_seq": 2, "head_seq": 2, "earliest_seq": 1},
    }
    for entry, field in (
        ({"consumer": "c", "from_seq": 1}, "from_seq"),
        ({"consumer": "c", "tail": True}, "tail"),
    ):
        error = assert_error(
            await client.post("/v0/watch", json={"topics": {"a": entry}}), 400, "invalid_request"
        )
        assert error["detail"] == {"field": f"topics.a.{field}"}, error
    assert_error(
        await client.post("/v0/watch", json={"topics": {"a": {"consumer": "ghost"}}}),
        409,
        "no_such_consumer",
    )


async def test_a_topic_delete_takes_its_consumers(client: httpx.AsyncClient) -> None:
    await append(client, "t", 3)
    await client.put("/v0/topics/t/consumers/c", json={"from_seq": 3})
    r = await client.delete("/v0/topics/t")
    assert r.status_code == 200 and r.json()["deleted"] is True
    await append(client, "t", 1)  # recreated
    assert (await client.get("/v0/topics/t/consumers")).json()["consumers"] == []
    assert_error(await client.get("/v0/topics/t/consumers/c"), 404, "consumer_not_found")


async def test_the_consumer_cap(make_client: MakeClient) -> None:
    async with make_client({"TOPICS_MAX_CONSUMERS": "1"}) as client:
        await append(client, "t", 1)
        assert (await client.put("/v0/topics/t/consumers/a")).status_code == 201
        r = await client.put("/v0/topics/t/consumers/b")
        error = assert_error(r, 429, "throttled")
        assert error["detail"] == {"limit": "max_consumers", "max": 1}
        assert r.headers["retry-after"] == "1"
        assert (await client.put("/v0/topics/t/consumers/a", json={"force": True})).status_code == 200


async def test_metrics_show_each_consumers_lag(client: httpx.AsyncClient) -> None:
    await append(client, "t", 10)
    await client.put("/v0/topics/t/consumers/slow", json={"from_seq": 2})
    await client.put("/v0/topics/t/consumers/fast", json={"from_seq": 10})
    metrics = (await client.get("/v0/metrics", headers={"Accept": "application/json"})).json()["metrics"]
    lags = {s["labels"]["consumer"]: s["value"] for s in metrics["topics_topic_consumer_lag"]["samples"]}
    assert lags == {"fast": 0, "slow": 8}
    assert all(s["labels"]["topic"] == "t" for s in metrics["topics_topic_consumer_lag"]["samples"])
    assert metrics["topics_consumers"]["samples"][0]["value"] == 2
    assert metrics["topics_topic_consumer_metrics_truncated"]["samples"][0]["value"] == 0
    text = (await client.get("/v0/metrics")).text
    assert 'topics_topic_consumer_lag{consumer="slow",topic="t"} 8.0' in text
