"""§1 over HTTP: PUT / GET / list / DELETE topics."""

from __future__ import annotations

import httpx
from topics_engine import ManualClock

from ..contract import CONFIG_DEFAULTS
from .conftest import assert_error


async def test_put_creates_then_is_idempotent_then_updates(client: httpx.AsyncClient) -> None:
    r = await client.put("/v0/topics/jobs", json={})
    assert r.status_code == 201
    body = r.json()
    assert body["topic"] == "jobs" and body["created"] is True
    assert body["config"] == CONFIG_DEFAULTS
    assert "server_total_ms" in body["performance"]

    r = await client.put("/v0/topics/jobs", json={})
    assert r.status_code == 200 and r.json()["created"] is False

    r = await client.put("/v0/topics/jobs", json={"ttl_ms": 60000, "durable": True, "priority": 5000})
    assert r.status_code == 200
    config = r.json()["config"]
    assert config["ttl_ms"] == 60000
    assert config["durable"] is True and config["durability"] == "fsync"
    assert config["priority"] == 1000  # clamped


async def test_put_without_body_creates_all_default(client: httpx.AsyncClient) -> None:
    r = await client.put("/v0/topics/bare")
    assert r.status_code == 201
    assert r.json()["config"] == CONFIG_DEFAULTS


async def test_explicit_durability_wins_over_durable(client: httpx.AsyncClient) -> None:
    r = await client.put("/v0/topics/e", json={"durable": True, "durability": "ephemeral"})
    assert r.json()["config"]["durability"] == "ephemeral"
    assert r.json()["config"]["durable"] is False


async def test_type_change_is_409(client: httpx.AsyncClient) -> None:
    await client.put("/v0/topics/q", json={"type": "queue"})
    r = await client.put("/v0/topics/q", json={"type": "log"})
    assert_error(r, 409, "topic_exists_incompatible")
    # omitted type keeps the current one
    r = await client.put("/v0/topics/q", json={"lease_ms": 50})
    assert r.status_code == 200
    assert r.json()["config"]["type"] == "queue" and r.json()["config"]["lease_ms"] == 100


async def test_put_rejects_bad_names_and_fields(client: httpx.AsyncClient) -> None:
    assert_error(await client.put("/v0/topics/-bad", json={}), 400, "invalid_request")
    assert_error(await client.put("/v0/topics/x", json={"ttl_ms": -1}), 400, "invalid_request")
    assert_error(await client.put("/v0/topics/x", json={"nope": 1}), 400, "invalid_request")
    assert_error(await client.put("/v0/topics/x", json={"dead_letter": "x"}), 400, "invalid_request")
    assert_error(await client.put("/v0/topics/x", json={"discard": "new"}), 400, "invalid_request")
    assert (await client.get("/v0/topics/x")).status_code == 404


async def test_state_fields_and_touch(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await client.post("/v0/topics/s", json={"records": [{"data": 1}, {"data": 2}]})
    clock.advance(5)
    r = await client.get("/v0/topics/s", params={"touch": "false"})
    state = r.json()
    assert state["type"] == "log"
    assert (state["head_seq"], state["earliest_seq"], state["next_seq"], state["count"]) == (2, 1, 3, 2)
    assert state["bytes"] > 0
    assert state["last_write_ts"] == clock.now_ms() - 5
    assert state["last_read_ts"] is None
    assert state["effective_priority"] == 0
    r = await client.get("/v0/topics/s")
    assert r.json()["last_read_ts"] == clock.now_ms()
    assert r.json()["effective_priority"] == 1000


async def test_get_missing_topic_is_404(client: httpx.AsyncClient) -> None:
    error = assert_error(await client.get("/v0/topics/absent"), 404, "topic_not_found")
    assert error["detail"] == {"topic": "absent"}


async def test_list_paginates_with_prefix_and_cursor(client: httpx.AsyncClient) -> None:
    for name in ["a1", "a2", "a3", "b1"]:
        await client.put(f"/v0/topics/{name}", json={})
    r = await client.get("/v0/topics", params={"prefix": "a", "page_size": 2})
    page = r.json()
    assert [t["topic"] for t in page["topics"]] == ["a1", "a2"]
    assert set(page["topics"][0]) >= {
        "topic",
        "head_seq",
        "earliest_seq",
        "count",
        "bytes",
        "durable",
        "effective_priority",
    }
    r = await client.get("/v0/topics", params={"prefix": "a", "page_size": 2, "cursor": page["next_cursor"]})
    last = r.json()
    assert [t["topic"] for t in last["topics"]] == ["a3"]
    assert "next_cursor" not in last
    r = await client.get("/v0/topics", params={"page_size": 5000})
    assert len(r.json()["topics"]) == 4


async def test_list_cursor_not_issued_starts_after_it_and_empty_is_400(client: httpx.AsyncClient) -> None:
    """docs/DECISIONS.md, "List cursors": every cursor the served schema admits has a meaning."""
    await client.put("/v0/topics/m", json={})
    for cursor, names in (("%%%not-base64", ["m"]), ("bm90IGpzb24=", ["m"]), ("m", []), ("n", [])):
        r = await client.get("/v0/topics", params={"cursor": cursor})
        assert r.status_code == 200 and [t["topic"] for t in r.json()["topics"]] == names, r.text
    assert_error(await client.get("/v0/topics", params={"cursor": ""}), 400, "invalid_request")


async def test_delete_is_idempotent_and_honours_if_empty(client: httpx.AsyncClient) -> None:
    await client.post("/v0/topics/d", json={"records": [{"data": 1}]})
    assert_error(await client.delete("/v0/topics/d", params={"if_empty": "true"}), 409, "topic_not_empty")
    r = await client.delete("/v0/topics/d")
    assert r.json() == {**r.json(), "topic": "d", "deleted": True, "routers_removed": []}
    r = await client.delete("/v0/topics/d")
    assert r.status_code == 200 and r.json()["deleted"] is False and r.json()["routers_removed"] == []
